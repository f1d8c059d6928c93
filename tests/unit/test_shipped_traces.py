"""The shipped example traces match the code that would record them today.

Users debugging cleaning rules by eye read these traces in the replay tab, so a trace
recorded by an older policy, prompt, cleaning rule or scorer shows them something the
product no longer does. `scripts/record_traces.py` re-records them and stamps the
manifest with the agent-code fingerprint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcts.agents.fingerprint import agent_code_fingerprint
from mcts.search.cleaning import CleaningRule, clean_history, raw_history
from mcts.search.trace import load_trace
from mcts.search.tree import ROOT_ID

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
MANIFEST = json.loads((TRACES / "manifest.json").read_text())
SHIPPED = sorted(TRACES.glob("*.json"))
SHIPPED = [p for p in SHIPPED if p.name != "manifest.json"]


def test_manifest_lists_every_shipped_trace() -> None:
    assert sorted(e["file"] for e in MANIFEST["traces"]) == [p.name for p in SHIPPED]


def test_shipped_traces_were_recorded_with_the_current_agent_code() -> None:
    assert MANIFEST["fingerprint"] == agent_code_fingerprint(), (
        "policy, prompts, cleaning or scorer changed since examples/traces/ was recorded: "
        "run `python scripts/record_traces.py`"
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_cleaned_histories_are_what_the_current_rules_give(path: Path) -> None:
    trace = load_trace(path)
    tree = trace.to_tree()
    rules = frozenset(CleaningRule(r) for r in trace.cleaning_rules)
    for node in tree.nodes:
        if node.id == ROOT_ID or node.simulation:
            continue  # classic-MCTS nodes store the simulation's end state
        steps = tree.steps(node.id)
        assert node.cleaned_history == clean_history(steps, rules).text, node.id
        assert node.raw_history == raw_history(steps), node.id


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_no_cleaned_history_carries_the_question(path: Path) -> None:
    """The leak cleaning exists to prevent: the question copied into a kept argument."""
    trace = load_trace(path)
    tree = trace.to_tree()
    for node in tree.nodes:
        assert trace.question not in (node.cleaned_history or ""), node.id


def test_fingerprint_ignores_formatting_but_not_substance(tmp_path: Path) -> None:
    from mcts.agents import fingerprint

    for rel in fingerprint.FINGERPRINTED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n" if rel.endswith(".py") else "demo\n")
    base = agent_code_fingerprint(tmp_path)
    (tmp_path / fingerprint.FINGERPRINTED[0]).write_text("# a comment\nx  =  1\n")
    assert agent_code_fingerprint(tmp_path) == base
    # A docstring says why; a reworded one does not change what a run records.
    (tmp_path / fingerprint.FINGERPRINTED[0]).write_text(
        '"""Module."""\n\ndef f():\n    """Why."""\n    return 1\nx = 1\n'
    )
    with_docs = agent_code_fingerprint(tmp_path)
    (tmp_path / fingerprint.FINGERPRINTED[0]).write_text(
        '"""Other."""\n\ndef f():\n    """Other why."""\n    return 1\nx = 1\n'
    )
    assert agent_code_fingerprint(tmp_path) == with_docs
    (tmp_path / fingerprint.FINGERPRINTED[0]).write_text("x = 2\n")
    assert agent_code_fingerprint(tmp_path) != base
