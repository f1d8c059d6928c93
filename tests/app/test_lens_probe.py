"""The IG lens's scorer tools through the app's handlers: what-if and the evidence (occlusion).

The real bundled scorer scores a shipped trace's node as recorded and an edit of it; bad
input (a 100,000-character edit, an empty one, markup, a node that does not exist, the
root, no tree) gets one clear line and only the lens's own output; in public mode both
tools hold a place in the run gate like any model job and refuse a second one.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ui import lens_probe, public, traces
from ui.public import PublicMode, RunGate
from ui.session import Session

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def _loaded(name: str = "fast-inception.json") -> Session:
    session = Session()
    out = traces.load(session, str(TRACES / name))
    assert session.tree is not None, out.get("status")
    return session


def _deepest_scored(session: Session) -> int:
    tree = session.tree
    assert tree is not None
    scored = [n for n in tree.nodes if not n.is_root and n.reward is not None and n.cleaned_history]
    return max(scored, key=lambda n: (n.depth, len(tree[n.parent].children), -n.id)).id


@pytest.fixture(scope="module")
def real_scorer() -> Any:
    from ui.worlds import get_scorer

    return get_scorer("")  # the bundled model, the one the shipped traces were scored with


def test_what_if_scores_the_node_as_recorded_and_an_edit_moves_r(real_scorer) -> None:
    session = _loaded()
    node_id = _deepest_scored(session)
    node = session.tree[node_id]
    same = lens_probe.what_if(session, str(node_id), node.cleaned_history, "")
    assert set(same) == {"whatif_result"}
    text = same["whatif_result"]
    assert "Problem" not in text, text
    assert "moves r by +0.0000" in text or "moves r by -0.0000" in text  # the same text, the same r
    # Without its last observation the history says less: r changes and the table shows both.
    cut = node.cleaned_history.rsplit("Observation:", 1)[0].rstrip()
    edited = lens_probe.what_if(session, str(node_id), cut, "")["whatif_result"]
    assert "rank" in edited and "moves r by" in edited
    assert "moves r by +0.0000" not in edited and "moves r by -0.0000" not in edited
    assert session.tree[node_id].reward == node.reward  # the tree is untouched


@pytest.mark.parametrize(
    ("node", "edited", "message"),
    [
        ("3", "x" * 100_000, "too long"),
        ("3", "   \n ", "is empty"),
        ("999", "Action: SearchNodes()", "No node 999"),
        ("<b>7</b>", "Action: SearchNodes()", "No node"),
        ("0", "Action: SearchNodes()", "root has no history"),
        ("3", "bad \ud800 surrogate", "not valid Unicode"),
    ],
)
def test_what_if_refuses_bad_input_with_one_line_and_changes_nothing(node, edited, message) -> None:
    session = _loaded()
    before = [(n.reward, n.cleaned_history) for n in session.tree.nodes]
    out = lens_probe.what_if(session, node, edited, "")
    assert set(out) == {"whatif_result"}
    assert out["whatif_result"].startswith("**Problem:**") and message in out["whatif_result"]
    assert "<b>" not in out["whatif_result"]  # a visitor's markup is shown as text
    assert [(n.reward, n.cleaned_history) for n in session.tree.nodes] == before


def test_the_lens_tools_need_a_tree() -> None:
    session = Session()
    assert "No tree yet" in lens_probe.what_if(session, "1", "text", "")["whatif_result"]
    out = list(lens_probe.find_evidence(session, "1", ""))
    assert len(out) == 1 and "No tree yet" in out[0]["evidence_status"]


def test_picking_a_node_fills_the_edit_box_and_clears_old_results() -> None:
    session = _loaded()
    node_id = _deepest_scored(session)
    out = lens_probe.lens_for_node(session, node_id)
    assert out["whatif_text"] == session.tree[node_id].cleaned_history
    assert out["whatif_result"] == "" and out["evidence_view"] == ""
    assert lens_probe.lens_for_node(session, "not a node")["whatif_text"] == ""


def test_evidence_is_refused_past_the_token_budget(monkeypatch) -> None:
    session = _loaded("fast-obama.json")
    node_id = _deepest_scored(session)
    tight = PublicMode(enabled=False, limits=public.Limits(max_rescore_tokens=50))
    monkeypatch.setattr(public, "MODE", tight)
    (out,) = list(lens_probe.find_evidence(session, node_id, ""))
    assert "tokens" in out["evidence_status"] and "allows 50" in out["evidence_status"]
    assert session.lens_cache == {}


def _request(ip: str, session: str) -> Any:
    return SimpleNamespace(headers={}, client=SimpleNamespace(host=ip), session_hash=session)


def test_in_public_mode_a_lens_tool_is_a_model_job_of_the_run_gate(monkeypatch, tmp_path) -> None:
    """While the visitor's run holds its place, what-if and the evidence are refused at the
    gate (one model job per visitor), with the gate's own line; another visitor's go through
    to their own checks."""
    monkeypatch.setattr(public, "MODE", PublicMode.from_env({"PUBLIC_DEMO": "1"}))
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, per_range=4))
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    session = _loaded()
    public.GATE.claim(public.visitor_of(_request("203.0.113.5", "tab-1"), session))
    busy = lens_probe.what_if(session, "3", "text", "", request=_request("203.0.113.5", "tab-2"))
    assert "already have a run" in busy["whatif_result"]
    (busy_ev,) = list(lens_probe.find_evidence(session, "3", "", request=_request("203.0.113.5", "tab-2")))
    assert "already have a run" in busy_ev["evidence_status"]
    other = lens_probe.what_if(session, "3", "x" * 4_001, "", request=_request("198.51.100.9", "b"))
    assert "at most 4,000" in other["whatif_result"]  # the public limit, checked server-side
    assert public.GATE.counts() == (0, 1)  # (waiting, running): only the first run; theirs given back


def test_the_lens_events_are_wired_as_gated_model_jobs() -> None:
    import app

    demo = app.build_app()
    fns = {fn.api_name: fn for fn in demo.fns.values() if fn.api_name}
    for name in ("find_evidence", "what_if"):
        assert fns[name].validator is not None
        assert fns[name].concurrency_id == fns["run"].concurrency_id
    assert fns["stop_evidence"].concurrency_limit is None
