"""UCT, depth decay, back-up and selection against hand-computed values, plus a
property test that visits and values stay consistent on random trees."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.actions import Action
from kb.observation import Observation
from mcts.search.drivers import select_leaf
from mcts.search.loop import Search
from mcts.search.rules import depth_decay
from mcts.search.settings import Method, SearchSettings, Selection
from mcts.search.steps import Step
from mcts.search.tree import ROOT_ID, Tree
from tests.toy_world import QUESTION, toy_world

STEP = Step(thought="t", action=Action("SearchNodes", "x"), observation=Observation(text="o"))


def _search(**changes) -> Search:
    policy, scorer, tools = toy_world()
    return Search(QUESTION, SearchSettings(**changes), policy=policy, scorer=scorer, tools=tools)


def test_uct_is_mean_value_plus_exploration_term():
    tree = Tree("q")
    child = tree.add_child(ROOT_ID, STEP)
    tree.root.visits = 4
    child.visits, child.value_sum = 1, 1.8
    assert tree.uct(child.id, 1.0) == pytest.approx(1.8 + math.sqrt(math.log(4) / 1))
    child.visits, child.value_sum = 2, 3.0
    assert tree.uct(child.id, 0.5) == pytest.approx(1.5 + 0.5 * math.sqrt(math.log(4) / 2))


def test_uct_of_unvisited_child_is_infinite_so_it_is_taken_first():
    tree = Tree("q")
    a = tree.add_child(ROOT_ID, STEP)
    b = tree.add_child(ROOT_ID, STEP)
    tree.root.visits = 3
    a.visits, a.value_sum = 3, 6.0
    assert tree.uct(b.id, 1.0) == math.inf
    assert select_leaf(tree, 1.0) == b.id


def test_depth_decay_matches_the_paper():
    assert depth_decay(1) == 1.0
    assert depth_decay(7) == 1.0
    assert depth_decay(8) == pytest.approx(0.9)
    assert depth_decay(9) == pytest.approx(0.8)  # paper's worked example
    assert depth_decay(17) == 0.0
    assert depth_decay(30) == 0.0  # never negative


def test_backup_adds_decayed_reward_to_every_node_on_the_path():
    search = _search()
    tree = search.tree
    node_id = ROOT_ID
    for _ in range(9):
        node_id = tree.add_child(node_id, STEP).id
    tree[node_id].reward = 1.5
    event = search.backup(node_id)
    assert tree[node_id].decay == pytest.approx(0.8)
    assert event.decayed_reward == pytest.approx(1.2)
    assert event.path == tuple(range(10))
    for i in range(10):
        assert tree[i].visits == 1
        assert tree[i].value_sum == pytest.approx(1.2)


def test_unscored_node_backs_up_visits_only():
    search = _search(method=Method.SINGLE)
    child = search.tree.add_child(ROOT_ID, STEP)
    search.backup(child.id)
    assert (child.visits, child.value_sum, search.tree.root.visits) == (1, 0.0, 1)


def test_selection_follows_highest_uct_and_skips_closed_children():
    tree = Tree("q")
    a = tree.add_child(ROOT_ID, STEP)
    b = tree.add_child(ROOT_ID, STEP)
    tree.root.visits = 2
    a.visits, a.value_sum = 1, 1.8
    b.visits, b.value_sum = 1, 0.6
    assert select_leaf(tree, 1.0) == a.id
    a.terminal = True
    assert select_leaf(tree, 1.0) == b.id
    # Exploration wins with a large c once visits differ.
    a.terminal = False
    a.visits, a.value_sum, tree.root.visits = 9, 9 * 1.0, 10
    b.visits, b.value_sum = 1, 0.9
    assert select_leaf(tree, 0.0) == a.id
    assert select_leaf(tree, 1.0) == b.id  # 0.9 + sqrt(ln 10) = 2.42 > 1.0 + sqrt(ln 10 / 9) = 1.51


def test_a_node_whose_children_are_all_closed_is_exhausted_and_reopens_when_a_child_is_added():
    search = _search()
    tree = search.tree
    a = tree.add_child(ROOT_ID, STEP, terminal=True)
    b = tree.add_child(ROOT_ID, STEP)
    search.refresh_closed(ROOT_ID)
    assert not tree.root.exhausted
    b.exhausted = True
    search.refresh_closed(b.id)
    assert tree.root.exhausted and tree.is_closed(ROOT_ID)
    assert a.terminal
    tree.add_child(ROOT_ID, STEP)
    search.refresh_closed(ROOT_ID)
    assert not tree.root.exhausted


@settings(max_examples=60, deadline=None)
@given(
    parents=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=40),
    rewards=st.lists(st.floats(min_value=0.0, max_value=2.0), min_size=40, max_size=40),
)
def test_visits_and_values_stay_consistent_on_random_trees(parents, rewards):
    search = _search()
    tree = search.tree
    for i, pick in enumerate(parents):
        node = tree.add_child(pick % len(tree), STEP)
        node.reward = rewards[i]
        search.backup(node.id)  # as Fast MCTS: each node backed up once, when it is scored
    for node in tree.nodes:
        child_visits = sum(tree[c].visits for c in node.children)
        child_values = sum(tree[c].value_sum for c in node.children)
        own = 0 if node.is_root else 1
        assert node.visits == own + child_visits
        own_value = 0.0 if node.is_root else node.reward * node.decay
        assert node.value_sum == pytest.approx(own_value + child_values, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=10**6),
    k=st.integers(min_value=1, max_value=5),
    rounds=st.integers(min_value=1, max_value=8),
    method=st.sampled_from(list(Method)),
)
def test_every_method_keeps_visits_consistent_with_backups(seed, k, rounds, method):
    from mcts.search.loop import run_search

    policy, scorer, tools = toy_world()
    cfg = SearchSettings(method=method, seed=seed, k=k, rounds=rounds, max_depth=4)
    search, result = run_search(QUESTION, cfg, policy=policy, scorer=scorer, tools=tools)
    tree = search.tree
    assert result.nodes == len(tree)
    for node in tree.nodes:
        child_visits = sum(tree[c].visits for c in node.children)
        own = 0 if node.is_root else 1
        assert node.visits == own + child_visits
        assert node.depth <= cfg.max_depth
        if node.depth == cfg.max_depth:
            assert node.terminal


def test_puct_adds_the_prior_term_and_uct_ignores_the_prior():
    tree = Tree("q")
    tree.root.visits = 4
    a = tree.add_child(ROOT_ID, STEP, prior=0.9)
    b = tree.add_child(ROOT_ID, STEP, prior=0.1)
    a.visits, a.value_sum = 3, 3 * 1.0
    b.visits, b.value_sum = 1, 1.2
    # PUCT = W/N + c_puct * P * sqrt(N_parent) / (1 + N): a 1.0 + 2*0.9*2/4 = 1.9; b 1.2 + 2*0.1*2/2 = 1.4
    assert tree.puct(a.id, 2.0) == pytest.approx(1.9) and tree.puct(b.id, 2.0) == pytest.approx(1.4)
    assert select_leaf(tree, 1.0, selection=Selection.PUCT, c_puct=2.0) == a.id
    assert select_leaf(tree, 1.0, selection=Selection.UCT) == b.id  # 1.2 + sqrt(ln 4) > 1.0 + sqrt(ln 4 / 3)


def test_a_puct_search_stores_priors_that_sum_to_one_per_expansion():
    search = _search(method=Method.FAST, selection=Selection.PUCT, rounds=4)
    for _ in search.run():
        pass
    expanded = [n for n in search.tree.nodes if n.children]
    assert expanded and search.result is not None and search.result.stop_reason != "error"
    for parent in expanded:
        assert sum(search.tree[c].prior for c in parent.children) == pytest.approx(1.0)
