"""The method's rules have one home (mcts.search.rules); every screen names the same best branch."""

from __future__ import annotations

import math

import pytest

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.rules import (
    best_branch,
    best_branch_path,
    principal_path,
    priors,
    recompute_values,
)
from mcts.search.settings import SearchSettings
from mcts.search.steps import Step
from mcts.search.trace import load_trace
from mcts.search.tree import Tree
from viz.figure import best_value_path
from viz.replay import tree_at_round


def _step(tool: str = "SearchNodes") -> Step:
    return Step("t", Action(tool, "x"), Observation("o"))


def test_best_branch_is_the_answering_terminal_with_the_highest_mean_value() -> None:
    tree = Tree("q")
    a = tree.add_child(0, _step(), reward=1.9, visits=5, value_sum=9.0)  # most visited, higher W/N
    b = tree.add_child(0, _step(), reward=1.0, visits=1, value_sum=1.0)
    tree.add_child(a.id, _step("Done"), terminal=True, reward=1.0, visits=1, value_sum=1.0)  # answers nothing
    c = tree.add_child(
        b.id, _step("Done"), terminal=True, answer=(Value("x"),), reward=1.0, visits=1, value_sum=1.0
    )
    assert principal_path(tree) == [0, a.id, 3]
    assert best_branch(tree) == c.id
    assert best_value_path(tree) == best_branch_path(tree) == [0, b.id, c.id]


def test_best_branch_falls_back_to_the_principal_leaf_before_any_answer() -> None:
    tree = Tree("q")
    tree.add_child(0, _step(), reward=1.0, visits=1, value_sum=1.0)
    b = tree.add_child(0, _step(), reward=1.5, visits=1, value_sum=1.5)
    assert best_branch(tree) == b.id


def test_search_tab_replay_and_answer_panel_agree_on_the_shipped_trace() -> None:
    trace = load_trace("examples/traces/fast-obama.json")
    tree = trace.to_tree()
    replayed = tree_at_round(tree, trace.events, 10**6)
    assert trace.result is not None
    assert best_branch(tree) == replayed.best_node_id == trace.result.best_by_value
    assert best_value_path(tree)[-1] == best_branch(tree)


def test_recomputed_values_equal_a_fresh_decayed_backup() -> None:
    settings = SearchSettings(expected_depth=1, decay_rate=0.5)
    tree = Tree("q")
    a = tree.add_child(0, _step(), reward=2.0, visits=2)
    tree.add_child(a.id, _step(), reward=1.0, visits=1)  # depth 2: decay 0.5
    recompute_values(tree, settings)
    assert tree[a.id].value_sum == pytest.approx(2.0 + 0.5)
    assert tree.root.value_sum == pytest.approx(2.5)


def test_priors_are_a_softmax_of_policy_scores_at_the_temperature() -> None:
    p = priors([-1.0, -2.0, None], temperature=0.5)
    assert sum(p) == pytest.approx(1.0)
    assert p[0] / p[1] == pytest.approx(math.exp(2.0))
    assert p[1] == pytest.approx(p[2])  # a missing score counts as the lowest
    assert priors([None, None], 0.7) == [0.5, 0.5]
    assert priors([1.0, 0.0], 0.0) == [1.0, 0.0]


def test_puct_takes_unvisited_children_in_order_of_prior() -> None:
    tree = Tree("q")
    tree.root.visits = 1
    a = tree.add_child(0, _step(), prior=0.2)
    b = tree.add_child(0, _step(), prior=0.8)
    assert tree.puct(b.id, 1.0) > tree.puct(a.id, 1.0)
    assert tree.puct(b.id, 1.5) == pytest.approx(0.0 + 1.5 * 0.8 * 1.0 / 1)
