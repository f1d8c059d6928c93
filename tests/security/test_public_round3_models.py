"""Every path that runs a model goes through the run gate, its clock and its limits.

The re-score used to run beside the gate: 217 s on a 17 KB trace, and a second re-score
of the same visitor from another session was queued, not refused; 16 queue/join calls with
fresh session hashes were all accepted while one model job ran. A run's API could pick the
react policy in public mode. The handlers, the gate and the app's wiring are the real ones;
the scorer is the toy one (no model load).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import toy_world
from ui import public, rescoring, traces
from ui.public import PUBLIC_LIMITS, PublicMode, RunGate, enforce
from ui.session import Session

gr = pytest.importorskip("gradio")
TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


@pytest.fixture()
def public_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PublicMode:
    mode = PublicMode.from_env({"PUBLIC_DEMO": "1"})
    monkeypatch.setattr(public, "MODE", mode)
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, per_range=4))
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    monkeypatch.setattr(rescoring, "get_scorer", lambda name: (toy_world.ToyScorer(), "toy"))
    return mode


def _request(ip: str, session: str) -> Any:
    return SimpleNamespace(headers={}, client=SimpleNamespace(host=ip), session_hash=session)


def _loaded(path: Path = TRACES / "fast-obama.json") -> Session:
    session = Session()
    out = traces.load(session, str(path))
    assert session.tree is not None, out.get("status")
    return session


def _rescore_fn(demo: Any) -> Any:
    return next(fn for fn in demo.fns.values() if fn.api_name == "rescore")


def test_the_rescore_event_is_gated_like_a_run(public_mode) -> None:
    """The wired re-score event has the run's validator and shares the one models slot."""
    import app

    demo = app.build_app()
    rescore, run = _rescore_fn(demo), next(fn for fn in demo.fns.values() if fn.api_name == "run")
    assert rescore.validator is not None
    assert rescore.concurrency_id == run.concurrency_id and rescore.concurrency_limit == 1


def test_fresh_session_hashes_of_one_visitor_hold_one_model_place(public_mode) -> None:
    """16 joins of the re-score from one address, each with a new session hash: one place,
    15 refusals at the door (before the queue); another visitor still gets in."""
    validator = public.run_validator()
    validator(Session(), _request("203.0.113.5", "fresh-0"))
    for i in range(1, 16):
        with pytest.raises(gr.Error, match="already have a run"):
            validator(Session(), _request("203.0.113.5", f"fresh-{i}"))
    assert public.GATE.counts() == (1, 0)
    validator(Session(), _request("198.51.100.9", "someone-else"))
    for i in range(3):  # a neighbour in the same /24 counts against the range's cap, not the visitor's
        validator(Session(), _request(f"198.51.100.{20 + i}", f"n{i}"))
    with pytest.raises(gr.Error, match="Your network already has 4"):
        validator(Session(), _request("198.51.100.99", "n-last"))


def test_a_second_model_job_of_the_visitor_is_refused_while_a_rescore_holds_its_place(public_mode) -> None:
    session, request = _loaded(), _request("203.0.113.5", "lab")
    public.run_validator()(session, request)  # the re-score joins the queue
    ticket = public.claim(session, request)  # ... and starts
    with pytest.raises(gr.Error, match="already have a run"):
        public.run_validator()(Session(), _request("203.0.113.5", "other-tab"))
    public.release(ticket)
    out = rescoring.rescore(session, [], "Based on this history, the question is:", "", request)
    assert out["lab_status"].startswith("**Re-scored**"), out["lab_status"]
    assert public.GATE.counts() == (0, 0)  # the place is given back when the re-score ends


def test_a_rescore_holds_the_place_while_the_scorer_runs(public_mode, monkeypatch) -> None:
    seen: list[tuple[int, int]] = []

    class Watching(toy_world.ToyScorer):
        def score(self, *args: Any, **kwargs: Any) -> Any:
            seen.append(public.GATE.counts())
            return super().score(*args, **kwargs)

    monkeypatch.setattr(rescoring, "get_scorer", lambda name: (Watching(), "toy"))
    session, request = _loaded(), _request("203.0.113.5", "lab")
    rescoring.rescore(session, [], "prompt", "", request)
    assert seen and all(counts == (0, 1) for counts in seen)  # one place, running


def test_an_expensive_rescore_is_refused_before_the_scorer_starts(public_mode, tmp_path, monkeypatch) -> None:
    """Root + 5 children with 3,000-digit observations and a one-character prompt: refused
    with the estimate and the limit, and the scorer never called."""
    data = json.loads((TRACES / "fast-obama.json").read_text())
    for node in data["nodes"][1:]:
        node["step"]["observation"]["text"] = "9" * 3000
    path = tmp_path / "digits.json"
    path.write_text(json.dumps(data))
    session = _loaded(path)
    called: list[int] = []

    class Counting(toy_world.ToyScorer):
        def score(self, *args: Any, **kwargs: Any) -> Any:
            called.append(1)
            return super().score(*args, **kwargs)

    monkeypatch.setattr(rescoring, "get_scorer", lambda name: (Counting(), "toy"))
    out = rescoring.rescore(session, [], "x", "", _request("203.0.113.5", "lab"))
    assert "tokens" in out["lab_status"] and "at most 10,000" in out["lab_status"], out["lab_status"]
    assert not called
    assert public.GATE.counts() == (0, 0)


def test_a_rescore_past_the_clock_stops_with_what_it_has(public_mode, monkeypatch) -> None:
    monkeypatch.setattr(public, "MODE", replace(public_mode, limits=replace(PUBLIC_LIMITS, run_wall_s=0.0)))
    session = _loaded()
    before = [n.reward for n in session.tree.nodes]
    out = rescoring.rescore(session, [], "another prompt", "", _request("203.0.113.5", "lab"))
    assert out["lab_status"].startswith("**Stopped at the 0 s limit:**"), out["lab_status"]
    assert [n.reward for n in session.tree.nodes] == before  # nothing reached: old rewards kept
    assert public.GATE.counts() == (0, 0)


def test_public_mode_runs_the_operators_policy_kind_whatever_the_api_sends() -> None:
    @dataclass_form
    class Form:
        question: str = "Who directed Inception?"
        kb_spec: str = "demo"
        policy_kind: str = "react"
        policy_model: str = ""
        scorer_model: str = ""
        policy_endpoint: str = ""
        ig_prompt: str = ""

    mode = PublicMode.from_env({"PUBLIC_DEMO": "1"})
    assert enforce(Form(), mode).policy_kind == "guided"
    operator = PublicMode.from_env({"PUBLIC_DEMO": "1", "POLICY_KIND": "react"})
    assert enforce(Form(policy_kind="guided"), operator).policy_kind == "react"
    local = PublicMode.from_env({"PUBLIC_DEMO": "0"})
    assert enforce(Form(), local).policy_kind == "react"  # a laptop user picks their own


def dataclass_form(cls: type) -> type:
    from dataclasses import dataclass

    return dataclass(frozen=True)(cls)
