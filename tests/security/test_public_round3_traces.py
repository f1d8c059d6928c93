"""What an uploaded trace can make the app do: its text stays text, its tree stays cheap,
its settings stay in the form's ranges, and its files stay the visitor's own.

The trace loader, the form, the inspector, the twin and the trace store are the real ones;
traces are the shipped ones changed one field at a time, or synthetic (tests/synthetic_tree.py).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcts.search.settings import MAX_SEED, SearchSettings
from mcts.search.trace import TraceError, load_trace, save_trace, trace_from_tree
from mcts.search.trace_validation import PUBLIC_TRACE_BUDGET, TraceBudget
from tests.synthetic_tree import synthetic_tree
from ui import inspector, public, traces, twin
from ui.forms import SETTING_RANGES, settings_problem
from ui.public import PUBLIC_LIMITS, PublicMode, RunGate
from ui.session import Session
from ui.trace_store import StorePolicy, owner_folder, tidy

pytest.importorskip("gradio")
TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
MARKUP = '<img src=x onerror="alert(1)"><b>kb</b>'


@pytest.fixture()
def public_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PublicMode:
    mode = PublicMode.from_env({"PUBLIC_DEMO": "1"})
    monkeypatch.setattr(public, "MODE", mode)
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1))
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    return mode


def _trace_file(tmp_path: Path, change: Any, name: str = "changed.json") -> Path:
    data = json.loads((TRACES / "fast-obama.json").read_text())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("mode_on", [True, False])
def test_a_trace_kb_that_is_not_a_choice_never_reaches_the_dropdown(
    public_mode, monkeypatch, tmp_path, mode_on
) -> None:
    if not mode_on:
        monkeypatch.setattr(public, "MODE", PublicMode.from_env({"PUBLIC_DEMO": "0"}))
    path = _trace_file(tmp_path, lambda d: d["meta"].update(kb_spec=MARKUP))
    out = traces.load(Session(), str(path))
    assert "kb_spec" not in out  # the form keeps its KB: no toast quoting the trace
    assert "does not offer" in out["status"]
    assert "<img" not in out["status"] and "<b>" not in out["status"] and "&lt;img" in out["status"]


def test_an_allowed_trace_kb_still_fills_the_form(public_mode, tmp_path) -> None:
    path = _trace_file(tmp_path, lambda d: d["meta"].update(kb_spec="demo-wikidata"))
    out = traces.load(Session(), str(path))
    assert out["kb_spec"] == "demo-wikidata" and "does not offer" not in out["status"]


def _synthetic_file(tmp_path: Path, n_nodes: int) -> Path:
    tree = synthetic_tree(n_nodes, seed=1)
    trace = trace_from_tree(tree, SearchSettings(rounds=max(n.round for n in tree.nodes)))
    return save_trace(trace, tmp_path / f"synthetic-{n_nodes}.json")


def test_a_tree_over_the_budget_is_refused_naming_the_limit_and_quickly(public_mode, tmp_path) -> None:
    path = _synthetic_file(tmp_path, PUBLIC_TRACE_BUDGET.max_nodes + 1)
    session = Session()
    started = time.perf_counter()
    out = traces.load(session, str(path))
    assert time.perf_counter() - started < 2.0
    assert f"at most {PUBLIC_TRACE_BUDGET.max_nodes:,}" in out["status"], out["status"]
    assert session.tree is None


def test_the_budget_counts_text_per_node_and_in_all(tmp_path) -> None:
    path = _synthetic_file(tmp_path, 40)
    with pytest.raises(TraceError, match="characters of text; at most 50 per node"):
        load_trace(path, TraceBudget(max_nodes=100, max_text_chars=10**9, max_node_chars=50))
    with pytest.raises(TraceError, match="over 1,000 characters of text"):
        load_trace(path, TraceBudget(max_nodes=100, max_text_chars=1_000, max_node_chars=10**9))
    assert len(load_trace(path, PUBLIC_TRACE_BUDGET).nodes) == 40


def test_a_tree_at_the_budget_loads_replays_inspects_and_toggles_well_under_a_second(
    public_mode, tmp_path
) -> None:
    from ui import overlay, replay

    path = _synthetic_file(tmp_path, PUBLIC_TRACE_BUDGET.max_nodes)
    session = Session()
    out = traces.load(session, str(path))  # the first load imports the views' modules
    assert session.tree is not None and len(session.tree) == PUBLIC_TRACE_BUDGET.max_nodes, out["status"]
    timings = {}
    for name, step in (
        ("load", lambda: traces.load(session, str(path))),
        ("replay step", lambda: replay.replay(session, 1)),
        ("inspect", lambda: inspector.inspect_node(session, len(session.tree) - 1)),
        ("truth toggle", lambda: overlay.toggle_truth(session, True)),
    ):
        started = time.perf_counter()
        step()
        timings[name] = time.perf_counter() - started
    assert all(seconds < 1.5 for seconds in timings.values()), timings  # slack for a shared CI machine


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "9" * 400, float("inf"), "nan", 10**400])
def test_an_overflowing_node_id_gets_the_bad_node_line(public_mode, value) -> None:
    session = Session()
    traces.load(session, str(TRACES / "fast-obama.json"))
    out = inspector.inspect_node(session, value)
    assert out["detail"].startswith("*No node "), out


def test_one_seed_range_for_the_form_the_settings_and_traces(tmp_path) -> None:
    assert SETTING_RANGES["seed"] == (0, MAX_SEED)
    with pytest.raises(ValueError, match="seed"):
        SearchSettings(seed=2**40)  # a run cannot start with a seed its own trace could not hold
    assert settings_problem(SearchSettings(seed=MAX_SEED)) is None


def test_the_seed_field_refuses_a_seed_the_trace_reader_would_refuse() -> None:
    import app

    demo = app.build_app()
    seed = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "seed")
    assert seed.problem("seed", 2**40) and seed.problem("seed", -1)
    assert seed.problem("seed", MAX_SEED) is None
    # The refusal names the largest seed in full: "4.29497e+09" read as if 4294967296's
    # neighbours below were refused too.
    assert (
        seed.problem("seed", MAX_SEED + 1) == f"seed must be between 0 and {MAX_SEED} (got {MAX_SEED + 1})."
    )


def test_the_twin_refuses_a_loaded_trace_whose_settings_the_form_would_refuse(public_mode, tmp_path) -> None:
    path = _trace_file(tmp_path, lambda d: d["settings"].update(rounds=10**6))
    session = Session()
    traces.load(session, str(path))
    assert session.settings.rounds == 10**6
    with pytest.raises(ValueError, match="rounds must be between 1 and 30"):
        twin.twin_inputs(session, _form())


def _form() -> Any:
    from dataclasses import fields

    from ui.forms import RunInputs

    values: dict[str, Any] = {f.name: "" for f in fields(RunInputs)}
    values.update(rounds=2, k=2, c=1.0, alpha=2.0, beta=10.0, expected_depth=7, max_depth=4, early_stop=5, seed=0,
                  method="fast", rules=[], policy_kind="guided", kb_spec="demo")  # fmt: skip
    return RunInputs(**values)


def test_one_visitors_flood_of_traces_never_evicts_anothers(public_mode, monkeypatch) -> None:
    monkeypatch.setattr(
        public,
        "MODE",
        replace(public_mode, limits=replace(PUBLIC_LIMITS, traces_kept=30, traces_per_visitor=5)),
    )
    trace = load_trace(TRACES / "fast-obama.json")
    victim, flooder = Session(owner="198.51.100.7"), Session(owner="203.0.113.5")
    kept = traces.write_trace(trace, "victim", owner=victim)
    for i in range(40):
        traces.write_trace(trace, f"flood{i}", owner=flooder)
    assert kept and Path(kept).is_file()
    assert len(list(owner_folder(traces.TRACE_DIR, flooder.owner).glob("*.json"))) == 5


def test_the_fullest_folder_pays_for_the_total_cap_and_old_files_expire(tmp_path) -> None:
    root = tmp_path / "store"
    a, b = owner_folder(root, "a"), owner_folder(root, "b")
    for folder, count in ((a, 1), (b, 3)):
        folder.mkdir(parents=True)
        for i in range(count):
            (folder / f"{i}.json").write_text("{}")
    tidy(root, b, StorePolicy(per_owner=10, total=3))
    assert len(list(a.glob("*.json"))) == 1 and len(list(b.glob("*.json"))) == 2
    old = a / "0.json"
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    tidy(root, b, StorePolicy(per_owner=10, total=10, max_age_s=3600))
    assert not old.exists()
