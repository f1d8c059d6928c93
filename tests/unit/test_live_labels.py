"""A live tree grows in the search's thread while the page draws it: a node added after the
labels were taken waits for the next redraw instead of failing the run (KeyError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcts.search.trace import load_trace
from viz import labels, panels

TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "fast-obama.json"


@pytest.fixture()
def labels_taken_early(monkeypatch: pytest.MonkeyPatch):
    """step_labels as if the last node was added just after it ran."""
    real = labels.step_labels

    def early(tree):
        out = real(tree)
        out.pop(len(tree) - 1)
        return out

    monkeypatch.setattr(panels, "step_labels", early)


def test_the_node_table_and_list_skip_a_node_newer_than_their_labels(labels_taken_early) -> None:
    tree = load_trace(TRACE).to_tree()
    rows = panels.node_table(tree, 1.0)
    assert [r[0] for r in rows] == list(range(len(tree) - 1))
    choices = panels.node_choices(tree)
    assert [i for _, i in choices] == list(range(len(tree) - 1))
