"""Public mode, visitor traces and the run queue through the app's own handlers.

The handlers, forms, trace loader and app layout are the real ones; only the world a
run gets is the toy world (no model load), beside tests/app/test_app.py which runs the
real model through the same handlers.
"""

from __future__ import annotations

import json
import time
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcts.search.run_meta import RunMeta
from tests import toy_world
from ui import handlers, public, traces
from ui.forms import RunInputs
from ui.public import PUBLIC_LIMITS, PublicMode, RunGate
from ui.session import Session

gr = pytest.importorskip("gradio")
TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


@pytest.fixture()
def public_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PublicMode:
    mode = PublicMode.from_env({"PUBLIC_DEMO": "1", "POLICY_ENDPOINT": ""})
    monkeypatch.setattr(public, "MODE", mode)
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=4, per_visitor=1))
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    monkeypatch.setenv("MCTS_KBQA_CACHE", str(tmp_path / "run-cache"))  # toy runs stay out of the real cache
    return mode


def _form(**overrides: Any) -> RunInputs:
    values: dict[str, Any] = {f.name: "" for f in fields(RunInputs)}
    values.update(
        question=toy_world.QUESTION, kb_spec="demo", method="fast", rounds=2, k=2, c=1.0, alpha=2.0, beta=10.0,
        expected_depth=7, max_depth=4, early_stop=5, seed=0, policy_kind="guided", rules=[],
        ig_prompt="Based on this interaction history, the original question is:",
    )  # fmt: skip
    values.update(overrides)
    return RunInputs(**values)


def _request(ip: str, session: str) -> Any:
    return SimpleNamespace(headers={}, client=SimpleNamespace(host=ip), session_hash=session)


class _World:
    def __init__(self, model_call_s: float = 0.0) -> None:
        self.policy, self.scorer, self.tools = toy_world.toy_world()
        self.meta = RunMeta(kb_spec="demo", policy_model="toy", scorer_model="toy")
        if model_call_s:  # a policy as slow as a model, so the run is still going when checked
            propose = self.policy.propose

            def slow(*args: Any, **kwargs: Any) -> Any:
                time.sleep(model_call_s)
                return propose(*args, **kwargs)

            self.policy.propose = slow  # type: ignore[method-assign]


def test_visitor_models_endpoint_and_kb_are_ignored_server_side(public_mode, monkeypatch) -> None:
    asked: list[RunInputs] = []

    def fake_world(form: RunInputs, method: Any) -> Any:
        asked.append(form)
        return _World()

    monkeypatch.setattr(handlers, "get_world", fake_world)
    sent = _form(policy_model="/root", scorer_model="huge/model", policy_endpoint="http://169.254.169.254/v1")
    updates = list(handlers.run(Session(), sent, _request("1.2.3.4", "s1"), fresh=True))
    assert asked and (asked[0].policy_model, asked[0].scorer_model, asked[0].policy_endpoint) == ("", "", "")
    assert "Finished" in updates[-1]["status"]
    refused = list(
        handlers.run(Session(), _form(kb_spec="/tmp/gradio/upload.ttl"), _request("1.2.3.4", "s2"))
    )
    assert "knowledge bases only" in refused[-1]["status"] and len(asked) == 1


def test_a_run_past_the_wall_clock_limit_is_stopped_and_keeps_its_tree(public_mode, monkeypatch) -> None:
    monkeypatch.setattr(public, "MODE", replace(public_mode, limits=replace(PUBLIC_LIMITS, run_wall_s=0.0)))
    monkeypatch.setattr(handlers, "get_world", lambda form, method: _World(model_call_s=0.2))
    session = Session()
    updates = list(handlers.run(session, _form(rounds=12), _request("1.2.3.4", "s3"), fresh=True))
    assert "cancelled" in updates[-1]["status"]
    assert session.tree is not None and len(session.tree) >= 1


def test_one_visitor_holds_one_place_and_others_see_how_many_are_ahead(public_mode) -> None:
    first = public.admitter()(Session(), _request("1.1.1.1", "a"))
    assert "Starting" in first["status"]
    with pytest.raises(gr.Error, match="already have a run"):
        public.admitter()(Session(), _request("1.1.1.1", "b"))  # a second tab, same visitor
    other = public.admitter()(Session(), _request("2.2.2.2", "c"))
    assert "1 run ahead of you" in other["status"]


def test_trace_meta_is_shown_escaped(public_mode, tmp_path: Path) -> None:
    data = json.loads((TRACES / "fast-obama.json").read_text())
    data["meta"]["policy_model"] = '<img src="http://attacker.example/x.png">'
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(data))
    status = traces.load(Session(), str(path))["status"]
    assert "<img" not in status and "&lt;img" in status


def test_trace_files_go_to_per_session_folders_and_the_oldest_are_removed(public_mode, monkeypatch) -> None:
    monkeypatch.setattr(public, "MODE", replace(public_mode, limits=replace(PUBLIC_LIMITS, traces_kept=2)))
    trace = traces.load_trace(TRACES / "fast-obama.json")
    one, two = Session(), Session()
    paths = [traces.write_trace(trace, "x", owner=s) for s in (one, two, one)]
    assert Path(paths[0]).parent != Path(paths[1]).parent
    assert sorted(p.name for p in traces.TRACE_DIR.glob("*/*.json")) == sorted(
        Path(p).name for p in paths[1:]
    )


def test_a_huge_uploaded_tree_is_not_re_scored_in_public_mode(public_mode, monkeypatch) -> None:
    from ui import rescoring

    monkeypatch.setattr(
        public, "MODE", replace(public_mode, limits=replace(PUBLIC_LIMITS, max_rescore_nodes=3))
    )
    session = Session()
    traces.load(session, str(TRACES / "fast-obama.json"))
    assert len(session.tree) > 3
    out = rescoring.rescore(session, [], "prompt", "any/model")
    assert "re-scores trees of at most 3" in out["lab_status"]


def test_the_public_page_hides_the_fields_and_its_api_cannot_override_them(
    public_mode, monkeypatch, tmp_path: Path
) -> None:
    """The layout, then the launched app driven with gradio_client as the issue's probes did."""
    gradio_client = pytest.importorskip("gradio_client")
    import app

    asked: list[RunInputs] = []

    def fake_world(form: RunInputs, method: Any) -> Any:
        asked.append(form)
        return _World()

    monkeypatch.setattr(handlers, "get_world", fake_world)
    demo = app.build_app()
    by_label = {getattr(b, "label", None): b for b in demo.blocks.values()}
    assert by_label["Models"].visible is False
    kb = by_label["Knowledge base"]
    assert kb.allow_custom_value is False
    assert {choice[1] for choice in kb.choices} == set(public_mode.allowed_kbs)
    assert app.launch_kwargs(demo)["max_file_size"] == PUBLIC_LIMITS.max_upload_bytes
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs(demo))
    try:
        client = gradio_client.Client(demo.local_url, verbose=False, download_files=str(tmp_path / "dl"))
        args = {f.name: v for f, v in zip(fields(RunInputs), _form().__dict__.values(), strict=True)}
        args.update(policy_endpoint="http://169.254.169.254/v1", scorer_model="/root", method="fast")
        # Gradio checks the choice first (at the queue door since the run gate validates joins: a 400)
        with pytest.raises(Exception, match="not in the list of choices|400 Bad Request"):
            client.predict(**{**args, "kb_spec": "/etc/passwd"}, api_name="/run")
        assert asked == []  # refused before any world was built
        client.predict(**args, api_name="/run")
        assert asked and (asked[-1].policy_endpoint, asked[-1].scorer_model) == ("", "")
        big = tmp_path / "big.json"
        big.write_bytes(b" " * (PUBLIC_LIMITS.max_upload_bytes + 1))
        with pytest.raises(Exception, match="(?i)size|large|exceed"):
            client.predict(gradio_client.handle_file(str(big)), api_name="/load_trace")
    finally:
        demo.close()


def test_a_run_refused_by_its_form_leaves_no_place_behind(public_mode) -> None:
    """The validator holds the place as the run joins the queue; a form the run then refuses
    (too long a question, a KB off the allow-list) gives it back, so Stop finds nothing and
    the visitor's next run is not refused."""
    validator = public.run_validator()
    for n, bad in enumerate(({"question": "x" * 5000}, {"kb_spec": "/etc/passwd"})):
        session, request = Session(), _request("1.2.3.4", f"refused-{n}")
        validator(session, request)
        refused = list(handlers.run(session, _form(**bad), request))
        assert refused[-1]["status"].startswith("**Problem:**"), refused
        assert public.GATE.counts() == (0, 0)
        assert handlers.stop(session, request) == "Nothing is running."


def test_a_setting_out_of_its_range_is_refused_at_the_door_naming_the_field(public_mode) -> None:
    from ui.fields import SettingNumber, SettingSlider

    rounds, c = (
        SettingSlider(1, 30, value=2, step=1, render=False),
        SettingNumber(1.0, minimum=0, render=False),
    )
    validator = public.run_validator({"rounds": rounds, "c": c})
    session, request = Session(), _request("1.2.3.4", "ranges")
    for values, field, message in (
        ({"rounds": 0, "c": 1.0}, "rounds", "rounds must be between 1 and 30 (got 0)."),
        ({"rounds": 31, "c": 1.0}, "rounds", "rounds must be between 1 and 30 (got 31)."),
        ({"rounds": 2, "c": -1.0}, "c", "c must be at least 0 (got -1)."),
        (
            {"rounds": 10**400, "c": 1.0},
            "rounds",
            "rounds must be between 1 and 30 (got a number of 401 digits).",
        ),
        (
            {"rounds": "abc", "c": 1.0},
            "rounds",
            "rounds must be a number between 1 and 30 (got a value of type str).",
        ),
        ({"rounds": 2, "c": None}, "c", "c must be a number at least 0 (got no value)."),
    ):
        answers = dict(zip(["session", *values], validator(session, request, **values), strict=True))
        assert [name for name, a in answers.items() if not a["is_valid"]] == [field], answers
        assert answers[field]["message"] == message
        assert public.GATE.counts() == (0, 0), "a refused run holds no place"
    assert (rounds.preprocess(0), c.preprocess(-1.5)) == (0, -1.5)  # the validator refuses them, not Gradio
    answers = validator(session, request, rounds=2, c=1.0)
    assert all(a["is_valid"] for a in answers) and public.GATE.counts() == (1, 0)
