"""Why the selection entered a child: the statistics of each round rebuilt from the events
(`mcts.search.selection_replay`) against a live search on the toy world, and the bars
and lines drawn from them (`viz.selection_terms`)."""

from __future__ import annotations

import math

import pytest

from mcts.search.events import NodeSelected
from mcts.search.loop import Search
from mcts.search.selection_replay import (
    rank_among_open,
    rule_choice,
    selection_at,
    selection_steps,
    sibling_scores,
    steps_through,
    tree_before_round,
    why_unavailable,
)
from mcts.search.settings import Method, SearchSettings, Selection
from mcts.search.tree import Tree
from tests.toy_world import QUESTION, toy_world

RUNS = {
    "uct": SearchSettings(rounds=10, k=2, max_depth=4, early_stop_terminals=99),
    "uct_c3": SearchSettings(rounds=10, k=3, max_depth=3, early_stop_terminals=99, c=3.0, seed=4),
    "puct": SearchSettings(
        rounds=10, k=3, max_depth=4, early_stop_terminals=99, selection=Selection.PUCT, seed=1
    ),
    "small_like": SearchSettings(
        rounds=10, k=3, max_depth=4, early_stop_terminals=99, selection=Selection.PUCT, greedy_descent=True
    ),
    "classic": SearchSettings(method=Method.CLASSIC, rounds=8, k=2, max_depth=3, early_stop_terminals=99),
    "constant": SearchSettings(method=Method.CONSTANT, rounds=8, k=2, max_depth=3, early_stop_terminals=99),
}


def _stats(tree: Tree) -> list[tuple[int, float, bool]]:
    return [(n.visits, n.value_sum, tree.is_closed(n.id)) for n in tree.nodes]


def _live(settings: SearchSettings) -> tuple[Search, dict[int, list[tuple[int, float, bool]]]]:
    """Run the search; at each selection (the event comes before the expansion) keep the live
    tree's statistics, as the selection read them."""
    policy, scorer, tools = toy_world()
    search = Search(QUESTION, settings, policy=policy, scorer=scorer, tools=tools)
    seen = {}
    for event in search.run():
        if isinstance(event, NodeSelected):
            seen[event.round] = _stats(search.tree)
    return search, seen


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_round_rebuilt_equals_the_live_tree_when_it_selected(name: str) -> None:
    search, seen = _live(RUNS[name])
    tree, events = search.tree, search.events_log
    assert len(seen) >= 4  # the run had rounds to rebuild
    for round_no, live in seen.items():
        rebuilt = tree_before_round(tree, events, round_no)
        assert _stats(rebuilt) == live[: len(rebuilt)], round_no
        # Nodes the live tree held beyond the rebuilt ones were none: the selection runs first.
        assert len(rebuilt) == len(live)
    after = tree_before_round(tree, events, max(seen) + 1)
    assert _stats(after) == _stats(tree)  # past the last round: the final tree, exactly


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_child_entered_has_the_highest_score_among_open_siblings(name: str) -> None:
    search, _ = _live(RUNS[name])
    settings = RUNS[name]
    steps = selection_steps(search.tree, search.events_log, settings)
    by_rule = [s for s in steps if s.by_rule]
    assert by_rule  # every run selects by its rule at least once
    for step in by_rule:
        at = selection_at(search.tree, search.events_log, settings, step)
        assert at.best == step.entered, step
        assert rank_among_open(at.siblings, step.entered) == (1, sum(not r.closed for r in at.siblings))
        assert any(r.node_id == step.entered and not r.closed for r in at.siblings)


def test_greedy_descent_rounds_are_marked_not_by_rule() -> None:
    settings = RUNS["small_like"]
    search, _ = _live(settings)
    steps = selection_steps(search.tree, search.events_log, settings)
    descent = sorted({s.round for s in steps if not s.by_rule})
    assert descent and descent == list(range(2, descent[-1] + 1))  # round 1 selects the root: no step
    for step in steps:
        if not step.by_rule:  # the descent follows the first child each expansion added
            assert search.tree[step.parent_id].children[0] == step.entered


def test_a_wrong_rebuild_would_be_caught() -> None:
    """The equality above can fail: the statistics of an earlier round differ from the final tree's."""
    settings = RUNS["uct"]
    search, _ = _live(settings)
    early = tree_before_round(search.tree, search.events_log, 3)
    assert _stats(early) != _stats(search.tree)[: len(early)]


def test_scores_are_the_rules_own_sums() -> None:
    search, _ = _live(RUNS["puct"])
    tree, s = search.tree, RUNS["puct"]
    rows = sibling_scores(tree, 0, s)
    for r in rows:
        node = tree[r.node_id]
        assert r.score == tree.puct(r.node_id, s.c_puct)
        assert r.explore == pytest.approx(
            s.c_puct * node.prior * math.sqrt(tree.root.visits) / (1 + node.visits)
        )
        assert r.mean_value + r.explore == pytest.approx(r.score)
        assert r.prior == node.prior
    uct = sibling_scores(tree, 0, s.with_(selection=Selection.UCT, c=2.0))
    for r in uct:
        node = tree[r.node_id]
        assert r.explore == pytest.approx(2.0 * math.sqrt(math.log(tree.root.visits) / node.visits))
        assert r.prior is None


def test_rank_and_choice_skip_closed_siblings() -> None:
    from mcts.search.selection_replay import SiblingScore

    rows = (
        SiblingScore(1, 3, 1.0, 0.5, 1.5, closed=True),
        SiblingScore(2, 2, 0.8, 0.4, 1.2, closed=False),
        SiblingScore(3, 1, 0.7, 0.5, 1.2, closed=False),
    )
    assert rule_choice(rows) == 2  # ties: the lowest id
    assert rank_among_open(rows, 3) == (2, 2)
    assert rank_among_open(rows, 1) is None
    assert rule_choice(rows[:1]) is None


def test_why_unavailable_says_so_in_one_line() -> None:
    search, _ = _live(RUNS["uct"])
    tree, events, s = search.tree, search.events_log, RUNS["uct"]
    leaf = next(n.id for n in tree.nodes if n.depth == 2)
    assert why_unavailable(tree, events, s, leaf) is None
    assert "root" in why_unavailable(tree, events, s, 0)
    assert "No node" in why_unavailable(tree, events, s, len(tree))
    assert "no selection path" in why_unavailable(tree, [], s, leaf)
    beam = why_unavailable(tree, events, s.with_(method=Method.BEAM), leaf)
    assert "beam" in beam and "\n" not in beam
    no_backups = [e for e in events if e.kind != "values_backed_up"]
    assert "no backups" in why_unavailable(tree, no_backups, s, leaf)
    assert steps_through(tree, events, s, tree[leaf].parent)


# ---------------------------------------------------------------- the shipped traces


@pytest.mark.parametrize("name", ["fast-obama.json", "fast-inception.json", "constant-inception.json"])
def test_shipped_traces_rebuild_to_their_stored_tree_and_follow_their_rule(name: str) -> None:
    from mcts.search.trace import load_trace
    from ui.config import TRACES_DIR

    trace = load_trace(TRACES_DIR / name)
    tree, events, s = trace.to_tree(), trace.events, trace.settings
    rounds = max(e.round for e in events if isinstance(e, NodeSelected))
    assert _stats(tree_before_round(tree, events, rounds + 1)) == _stats(tree)
    steps = selection_steps(tree, events, s)
    assert any(not st.by_rule for st in steps) and any(
        st.by_rule for st in steps
    )  # small: descent, then PUCT
    for step in steps:
        if step.by_rule:
            assert selection_at(tree, events, s, step).best == step.entered


# ---------------------------------------------------------------- what the inspector shows


def _obama() -> tuple[Tree, list, SearchSettings]:
    from mcts.search.trace import load_trace
    from ui.config import TRACES_DIR

    trace = load_trace(TRACES_DIR / "fast-obama.json")
    return trace.to_tree(), list(trace.events), trace.settings


def test_score_cells_and_line_name_the_runs_rule_and_its_terms() -> None:
    from viz.selection_terms import score_cells, score_line

    tree, _, s = _obama()  # PUCT; node 3: N = 7, the most visited and followed
    assert score_cells(tree, 3, s) == [("PUCT", "1.645"), ("PUCT rank", "1 of 3 open")]
    line = score_line(tree, 3, s)
    assert "1.284 + 1·0.914·√10 / (1 + 7) = 1.284 + 0.361 = **1.645**" in line
    assert "rank 1 of 3 open siblings" in line and "closed branches" in line
    uct = s.with_(selection=Selection.UCT)
    assert score_cells(tree, 3, uct)[0][0] == "UCT" and "ln 10 / 7" in score_line(tree, 3, uct)
    assert score_cells(tree, 0, s) == [] and score_line(tree, 0, s) == ""
    closed = next(n.id for n in tree.nodes if n.terminal)
    assert score_cells(tree, closed, s)[1][1].startswith("closed")


def test_the_figure_stacks_the_two_terms_and_marks_the_child_entered() -> None:
    from viz.selection_terms import round_choices, selection_caption, selection_figure

    tree, events, s = _obama()
    steps = steps_through(tree, events, s, 2)
    assert [r for _, r in round_choices(steps)] == [5, 4]
    at = selection_at(tree, events, s, steps[-1])
    fig = selection_figure(at, 4, {3: "SPARQL"})
    wn, explore = fig.data
    assert fig.layout.barmode == "stack" and wn.orientation == "h"
    assert [a + b for a, b in zip(wn.x, explore.x, strict=True)] == pytest.approx(
        [r.score for r in at.siblings]
    )
    assert wn.y[0] == "▶ 3" and wn.y[1] == "<b>4</b>"  # entered ▶, inspected bold
    assert wn.text[0] == "SPARQL" and wn.text[1] == ""  # the step's name inside its bar
    caption = selection_caption(at, 4)
    assert "Round 5" in caption and "Node 4: rank 3 of 3 open" in caption


def test_unvisited_uct_children_and_markup_are_drawn_safely() -> None:
    from mcts.search.selection_replay import SelectionAt, SelectionStep, SiblingScore
    from viz.selection_terms import selection_figure

    rows = (
        SiblingScore(1, 2, 0.9, 0.8, 1.7, closed=False),
        SiblingScore(2, 0, 0.0, math.inf, math.inf, closed=False),
    )
    at = SelectionAt(SelectionStep(3, 0, 2, True), Selection.UCT, 1.0, 2, rows)
    fig = selection_figure(at, 1, {1: "<script>x</script>", 2: "SPARQL"})
    assert list(fig.data[1].x) == [0.8, 0.0] and "∞" in fig.data[1].text[1]
    assert "<script>" not in "".join(fig.data[0].text)
