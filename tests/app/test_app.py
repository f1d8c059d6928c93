"""The Gradio app in-process, driven through gradio_client like any API user.

The app runs the real bundled model on the demo KB, kept small (2 rounds, k = 2) so
the module stays within minutes on a CPU. One streamed run is shared by the tests
that only read it (its trace, re-scoring, the cached replay); Stop and bad input use
their own sessions. Outputs are read by component name (the wiring's own lists).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from mcts.search.cleaning import DEFAULT_RULES, CleaningRule
from tests.browser_support import private_run_cache, served
from ui.forms import SETTINGS_FIELDS
from ui.render import MAIN_OUTPUTS
from ui.run_start import LAB_OUTPUTS

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

QUESTION = "Who directed Inception?"  # an example question: it has a gold answer
RULES = sorted(r.value for r in DEFAULT_RULES)
PROMPT = "Based on this interaction history, the original question is:"
# The Run event's outputs (ui.events) less the Stop button (not an API value): a run clears the lab too.
RUN_OUTPUTS = (*MAIN_OUTPUTS, *LAB_OUTPUTS)
LOAD_OUTPUTS = (
    *MAIN_OUTPUTS, "replay_slider", "replay_plot", "replay_status", "question", "kb_spec", "method",
    *SETTINGS_FIELDS, "preset", "policy_kind", "rules", "ig_prompt",
)  # fmt: skip


def run_args(question: str = QUESTION, kb: str = "demo", rounds: int = 2, k: int = 2) -> dict:
    return {
        "question": question, "kb_spec": kb, "method": "fast", "rounds": rounds, "k": k, "c": 1.0, "alpha": 2.0,
        "beta": 10.0, "expected_depth": 7, "max_depth": 10, "early_stop": 5, "seed": 0, "policy_kind": "guided",
        "policy_model": "", "scorer_model": "", "policy_endpoint": "", "preset": "", "rules": RULES,
        "ig_prompt": PROMPT,
    }  # fmt: skip


def named(output: tuple, names: tuple[str, ...]) -> dict:
    """Outputs by name; a component the update left alone reads None."""
    assert len(output) == len(names)
    unchanged = {"__type__": "update"}
    return {name: (None if value == unchanged else value) for name, value in zip(names, output, strict=True)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        private_run_cache(mp, tmp_path_factory)
        with served() as url:
            yield url


def client(url: str):
    return gradio_client.Client(
        url, verbose=False, download_files=str(Path("/tmp") / "mcts-kbqa-test-downloads")
    )


def table_value(table: dict) -> dict:
    """The node table's value: it comes as an update that also sets each column's width."""
    return (table.get("value") or {}) if table.get("__type__") == "update" else table


def table_rows(df: dict) -> list[list]:
    return table_value(df)["data"]


def finish(job, minutes: int = 15) -> list[dict]:
    deadline = time.time() + 60 * minutes
    while not job.done():
        assert time.time() < deadline, f"the run did not finish in {minutes} minutes"
        time.sleep(0.5)
    return [named(o, RUN_OUTPUTS) for o in job.outputs()]


@pytest.fixture(scope="module")
def finished_run(server):
    """One small real run: (client holding the session, every streamed update by name)."""
    c = client(server)
    return c, finish(c.submit(**run_args(), api_name="/run"))


def tables(outputs: list[dict]) -> list[dict]:
    return [
        table_value(o["table"])
        for o in outputs
        if isinstance(o["table"], dict) and table_value(o["table"]).get("data")
    ]


def test_a_streamed_run_yields_several_updates_and_ends_with_an_answer_panel(finished_run) -> None:
    _, outputs = finished_run
    assert len(outputs) >= 3, "expected several streamed updates"
    statuses = [o["status"] for o in outputs]
    assert any(
        re.search(r"Running\*\* · .+ · round \d+ of 2 · \d+ nodes · elapsed", s or "") for s in statuses
    )
    assert all("Fast MCTS" in s for s in statuses if s and s.startswith(("**Running", "**Finished"))), (
        statuses
    )
    last = outputs[-1]
    assert last["status"].startswith("**Finished: ")
    node_counts = [len(table_rows(t)) for t in tables(outputs)]
    assert node_counts == sorted(node_counts) and node_counts[-1] >= 3, "the tree grows while streaming"
    assert last["answer"].startswith("### Answer:") and "Stopped:" in last["answer"]
    assert "**Gold answer** (example file): Christopher Nolan" in last["answer"]
    assert re.search(r"F1 \d\.\d\d", last["answer"]), "the run is scored against the gold answer"
    assert "policy generation calls" in last["cost"]
    assert last["trace_file"] and Path(last["trace_file"]).exists(), "the trace is downloadable"
    figure = json.loads(last["plot"]["plot"])
    ids = sorted(
        i
        for t in figure["data"]
        if t.get("customdata") and t["name"] not in ("collapsed children",)
        for i in t["customdata"]
    )
    assert ids == list(range(len(table_rows(last["table"]))))


def test_every_node_can_be_inspected_by_id(finished_run) -> None:
    c, outputs = finished_run
    n = len(table_rows(outputs[-1]["table"]))
    for node_id in range(n):
        detail, history, _plot, _dd = c.predict(node_id, api_name="/inspect")
        assert detail.startswith(f"### Node {node_id}")
        if node_id > 0:
            assert "PPL(H')" in detail and "UCT rank" in detail
            assert "Raw history H" in history and "Cleaned history H'" in history


def test_the_same_example_run_again_replays_from_the_cache_round_by_round(server, finished_run) -> None:
    _, first = finished_run
    c = client(server)  # another visitor, same question and settings
    outputs = finish(c.submit(**run_args(), api_name="/run"), minutes=2)
    replaying = [o["status"] for o in outputs if (o["status"] or "").startswith("**Replaying a cached run**")]
    assert len(replaying) >= 2, "the cached run is animated round by round"
    last = outputs[-1]
    assert last["status"].startswith("**Finished (cached run"), last["status"]
    assert table_rows(last["table"]) == table_rows(first[-1]["table"])
    assert last["answer"] == first[-1]["answer"]


def test_a_downloaded_trace_reuploads_to_the_same_tree_and_fills_the_form(server, finished_run) -> None:
    _, outputs = finished_run
    trace_path = outputs[-1]["trace_file"]
    fresh = client(server)  # another session: nothing on screen until the trace loads
    out = named(fresh.predict(gradio_client.handle_file(trace_path), api_name="/load_trace"), LOAD_OUTPUTS)
    assert out["status"].startswith("**Loaded a trace:")
    assert table_rows(out["table"]) == table_rows(outputs[-1]["table"])
    assert out["answer"] == outputs[-1]["answer"], "same answer panel"
    assert (out["question"], out["kb_spec"], out["method"], out["rounds"], out["k"]) == (
        QUESTION,
        "demo",
        "fast",
        2,
        2,
    )
    assert out["replay_slider"]["value"] >= 1 and "Round" in out["replay_status"]
    _fig0, status0 = fresh.predict(0, api_name="/replay")
    assert status0.startswith("Round 0 of") and "1 nodes" in status0


def test_rescore_with_a_rule_switched_off_changes_cleaned_history_and_rewards(finished_run) -> None:
    c, _outputs = finished_run
    rules = sorted(r.value for r in DEFAULT_RULES - {CleaningRule.DROP_THOUGHTS})
    out = c.predict(rules, PROMPT, "", api_name="/rescore")
    lab_status, _changes, reward_table = out[0], out[1], out[2]
    assert lab_status.startswith("**Re-scored**"), lab_status
    moved = int(re.search(r"(\d+) rewards changed", lab_status).group(1))
    assert re.search(r"\d+ nodes changed rank, ringed in the trees", lab_status), lab_status
    assert moved >= 1, "thoughts back in the history must move some reward"
    deltas = [row[4] for row in table_rows(reward_table) if row[4] is not None]
    assert any(abs(d) > 1e-6 for d in deltas)
    _detail, history, *_ = c.predict(1, api_name="/inspect")
    cleaned = history.split("Cleaned history H'")[1]
    assert "Thought:" in cleaned, "with the rule off the thought stays in H'"
    # And back: all rules on again restores the recorded rewards.
    c.predict(RULES, PROMPT, "", api_name="/rescore")
    _detail, history, *_ = c.predict(1, api_name="/inspect")
    assert "Thought:" not in history.split("Cleaned history H'")[1]


def test_stop_cancels_a_fresh_run(server) -> None:
    c = client(server)
    job = c.submit(**run_args(rounds=12, k=2), api_name="/fresh_run")
    deadline = time.time() + 600

    def nodes_shown() -> int:
        shown = tables([named(o, RUN_OUTPUTS) for o in job.outputs()])
        return len(shown[-1]["data"]) if shown else 0

    while nodes_shown() < 2:  # stop once the tree has grown, to see the partial tree kept
        assert time.time() < deadline and not job.done(), "the run never added a node"
        time.sleep(0.3)
    other_session = client(server)
    assert other_session.predict(api_name="/stop") == "Nothing is running.", (
        "one session cannot stop another's run"
    )
    assert "Stopping" in c.predict(api_name="/stop")
    last = finish(job, minutes=10)[-1]
    assert "cancelled" in last["status"], last["status"]
    assert len(table_rows(last["table"])) >= 2, "the partial tree is kept"
    assert c.predict(api_name="/stop") == "Nothing is running."


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"question": ""}, "The question is empty"),
        ({"question": "x" * 5000}, "5,000 characters"),
        ({"kb": "http://127.0.0.1:9/sparql"}, "cannot reach the SPARQL endpoint"),
        ({"kb": "/no/such/kb.ttl"}, "no such file"),
    ],
)
def test_bad_run_input_gives_one_clear_line_and_the_app_keeps_serving(server, args, expected) -> None:
    c = client(server)
    kwargs = run_args(**{k: v for k, v in args.items() if k in ("question", "kb", "rounds")})
    status = named(c.predict(**kwargs, api_name="/run"), RUN_OUTPUTS)["status"]
    assert status.startswith("**Problem:**") and expected in status, status
    assert c.predict(api_name="/stop") == "Nothing is running."  # still serving


def test_an_out_of_range_setting_is_refused_with_a_clear_message(server) -> None:
    # Refused as the run joins the queue (the run's validator): Gradio's validation error,
    # naming the field and its range; no place is left behind.
    c = client(server)
    for value, message in ((0, "rounds must be between 1 and 30 (got 0)."), (31, "(got 31)")):
        with pytest.raises(gradio_client.exceptions.ValidationError, match=r"- rounds: ") as refused:
            c.predict(**run_args(rounds=value), api_name="/run")
        assert message in str(refused.value), refused.value
    with pytest.raises(
        gradio_client.exceptions.ValidationError, match=r"- c: c must be at least 0 \(got -1\)"
    ):
        c.predict(**{**run_args(), "c": -1.0}, api_name="/run")
    assert c.predict(api_name="/stop") == "Nothing is running."


def test_off_spaces_the_rest_route_around_the_validator_is_held_to_the_ranges_too(server) -> None:
    # Local mode leaves Gradio's POST /gradio_api/run/<name> open, which skips the run's
    # validator; the form's own check refuses the setting there with the same sentence.
    import http.client
    from urllib.parse import urlsplit

    from ui.forms import RunInputs

    address = urlsplit(server)
    args = run_args(rounds=10**6)
    data = [None, *(args[name] for name in RunInputs.field_names())]  # the session state first
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    conn.request(
        "POST", "/gradio_api/run/run", json.dumps({"data": data}), {"Content-Type": "application/json"}
    )
    reply = conn.getresponse()
    status = json.loads(reply.read())["data"][0]
    assert reply.status == 200
    assert status == "**Problem:** bad setting: rounds must be between 1 and 30 (got 1000000).", status
    assert client(server).predict(api_name="/stop") == "Nothing is running."


def test_a_broken_trace_file_gives_a_clear_message(server, tmp_path) -> None:
    c = client(server)
    for text in ("{not json", json.dumps({"schema_version": 99, "question": "q"}), json.dumps([1, 2])):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        status = named(c.predict(gradio_client.handle_file(str(bad)), api_name="/load_trace"), LOAD_OUTPUTS)[
            "status"
        ]
        assert status.startswith("**Problem:** Could not load the trace:"), status
        assert "\n" not in status
    assert c.predict(api_name="/stop") == "Nothing is running."


def test_two_methods_run_side_by_side_under_their_question_and_settings(server) -> None:
    c = client(server)
    args = run_args(rounds=1, k=2)
    for key in ("method", "rules", "ig_prompt"):
        args.pop(key)
    job = c.submit(**args, method_a="fast", method_b="single", api_name="/compare")
    while not job.done():
        time.sleep(0.5)
    unchanged = {"__type__": "update"}
    # Each pane as last drawn (an update leaves the others alone).
    status, info, plot_a, cost_a, plot_b, cost_b = (
        [u[i] for u in job.outputs() if u[i] is not None and u[i] != unchanged][-1] for i in range(6)
    )
    assert status == "**Comparison finished.**"
    assert QUESTION in info and "rounds 1 · k 2" in info
    assert cost_a.startswith("**fast**") and cost_b.startswith("**single**")
    assert "policy generation calls" in cost_a and "policy generation calls" in cost_b
    assert json.loads(plot_a["plot"])["data"] and json.loads(plot_b["plot"])["data"]
