"""The truth overlay and the constant-reward twin without a server or a model.

The overlay (`ui.truth`) on a synthetic tree and on a toy run, checked against the
ranking analysis it reuses; the tree is identical, every node field, with the overlay on
and off; the twin runs through the app's handlers with a toy world, is cached like an
example run and refuses what it cannot compare.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from mcts.agents.scorer import ConstantScorer
from mcts.evaluation.metrics import GoldAnswer, f1_score
from mcts.evaluation.ranking import compare_tree, stored_rewards, terminal_outcomes, true_values
from mcts.search.cleaning import DEFAULT_RULES
from mcts.search.loop import run_search
from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method, SearchSettings
from mcts.search.tree import Tree
from tests import toy_world
from tests.synthetic_tree import synthetic_tree
from ui import handlers, overlay, traces, twin
from ui.forms import RunInputs
from ui.render import node_table_frame
from ui.session import Session
from ui.truth import overlay as truth_overlay
from ui.truth import overlay_for, summary_markdown
from viz import build_figure
from viz.figure import TruthMarks
from viz.twin import diff_trees, path_keys

gr = pytest.importorskip("gradio")
NOLAN = (GoldAnswer("Christopher Nolan", ("m.nolan",)),)


def test_on_a_synthetic_tree_true_values_and_verdicts_are_the_ranking_analysis() -> None:
    tree = synthetic_tree(160, seed=3)
    gold = (GoldAnswer("Answer 1"),)
    before = copy.deepcopy(tree)
    truth = truth_overlay(tree, gold, seed=5)
    assert dataclasses.asdict(tree) == dataclasses.asdict(before), "the overlay only reads the tree"

    outcomes = terminal_outcomes(tree, gold)
    assert dict(outcomes) == truth.outcomes and any(f1 == 1.0 for _, f1 in outcomes)
    values = true_values(tree, outcomes)
    assert truth.values == values
    comparisons = compare_tree(tree, stored_rewards(tree, values.__contains__), values, ranker="r")
    assert len(truth.groups) == len(comparisons) > 3
    for group, c in zip(truth.groups, comparisons, strict=True):
        assert group.parent_id == c.parent_id and group.right == c.top1
        scores = dict(zip(c.children, c.scores, strict=True))
        assert scores[group.top_child] == max(c.scores)  # the child r puts first
        best = max(c.true_values)
        assert values[group.top_child] == best if group.right else values[group.top_child] < best
    # Rings right or wrong only where the children's true values differ; grey where they are all equal.
    assert truth.right | truth.wrong == {g.top_child for g in truth.groups if not g.even}
    assert truth.nowhere | truth.even_groups == {g.top_child for g in truth.groups if g.even}
    assert truth.reward.top1 == sum(c.top1 for c in comparisons) / len(comparisons)
    # A random order's expected hits: 1/size per group when one child is best.
    assert 0 < truth.chance_top1 <= len(truth.groups)
    assert truth.chance_top1 == pytest.approx(sum(len(g.best_children) / g.size for g in truth.groups))


def test_the_summary_gives_the_runs_figures_beside_random_and_the_papers_in_words() -> None:
    tree = synthetic_tree(160, seed=3)
    truth = truth_overlay(tree, (GoldAnswer("Answer 1"),))
    text = summary_markdown(truth)
    hits = sum(g.right for g in truth.groups)
    assert f"picked the truly best child in {hits} of {len(truth.groups)} sibling group" in text
    assert f"a random order would pick ~{truth.chance_top1:.1f}" in text
    assert "76%" in text and "+0.37" in text and "random order (seed 0)" in text
    assert "needs gold answers" in summary_markdown(None)


def _toy_tree(method: Method = Method.FAST) -> Tree:
    policy, scorer, tools = toy_world.toy_world()
    if method == Method.CONSTANT:
        scorer = ConstantScorer(1.0)
    settings = SearchSettings(method=method, rounds=6, k=3, max_depth=4, early_stop_terminals=5, seed=0)
    search, _ = run_search(toy_world.QUESTION, settings, policy=policy, scorer=scorer, tools=tools)
    return search.tree


def test_on_a_toy_run_the_reward_picks_the_nolan_branch_and_the_constant_reward_does_not_order() -> None:
    tree = _toy_tree()
    truth = truth_overlay(tree, NOLAN)
    nolan = [n.id for n in tree.terminals() if toy_world.NOLAN in n.answer]
    assert nolan and all(truth.outcomes[i] == 1.0 for i in nolan)
    assert all(truth.values[i] == f1_score(tree[i].answer, NOLAN) for i in truth.outcomes)
    assert truth.groups and truth.right, "the toy scorer rewards the right query: IG's top child is best"
    assert not truth.constant_reward
    flat = truth_overlay(_toy_tree(Method.CONSTANT), NOLAN, constant_reward=True)
    assert flat.constant_reward
    assert "rewards of this run are constant" in summary_markdown(flat)


def test_the_figure_rings_top_children_and_the_hover_carries_the_true_value() -> None:
    tree = _toy_tree()
    truth = truth_overlay(tree, NOLAN)
    fig = build_figure(tree, truth=TruthMarks(dict(truth.values), truth.right, truth.wrong))
    names = [t.name for t in fig.data]
    assert (
        "IG's top child is truly best (gold)" in names and "IG's top child is not truly best (gold)" in names
    )
    hovers = " ".join(h for t in fig.data for h in (t.hovertext or ()) if isinstance(h, str))
    assert "true value" in hovers
    plain = build_figure(tree)
    assert not any("truly best" in (t.name or "") for t in plain.data)
    assert "true value" not in " ".join(
        h for t in plain.data for h in (t.hovertext or ()) if isinstance(h, str)
    )


# ---- through the app's handlers, with the toy world ----------------------------------


def _form(**overrides: Any) -> RunInputs:
    values: dict[str, Any] = {f.name: "" for f in dataclasses.fields(RunInputs)}
    values.update(
        question=toy_world.QUESTION, kb_spec="demo", method="fast", rounds=6, k=3, c=1.0, alpha=2.0, beta=10.0,
        expected_depth=7, max_depth=4, early_stop=5, seed=0, policy_kind="guided",
        rules=sorted(r.value for r in DEFAULT_RULES),
        ig_prompt="Based on this interaction history, the original question is:",
    )  # fmt: skip
    values.update(overrides)
    return RunInputs(**values)


class _World:
    def __init__(self, method: Method) -> None:
        self.policy, self.scorer, self.tools = toy_world.toy_world()
        if method == Method.CONSTANT:
            self.scorer = ConstantScorer(1.0)
        self.meta = RunMeta(kb_spec="demo", policy_model="toy", scorer_model="toy")


@pytest.fixture()
def toy_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Method]:
    worlds: list[Method] = []

    def world(form: RunInputs, method: Method) -> _World:
        worlds.append(method)
        return _World(method)

    monkeypatch.setattr(handlers, "get_world", world)
    monkeypatch.setattr(handlers, "is_warm", lambda form, method: True)
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    monkeypatch.setenv("MCTS_KBQA_RUN_CACHE", str(tmp_path / "run-cache"))
    return worlds


def _run(session: Session) -> list[dict[str, Any]]:
    return list(handlers.run(session, _form(), None, fresh=True))


def _fields(tree: Tree) -> list[dict[str, Any]]:
    return [dataclasses.asdict(n) for n in tree.nodes]


def test_the_tree_is_identical_every_node_field_with_and_without_the_overlay(toy_app) -> None:
    plain, shown = Session(), Session(show_truth=True)
    _run(plain)
    updates = _run(shown)
    assert shown.show_truth, "the toggle survives the run's reset"
    assert "picked the truly best child" in updates[-1]["truth"], "the overlay was drawn"
    assert plain.tree is not None and shown.tree is not None
    assert _fields(plain.tree) == _fields(shown.tree)
    assert plain.result is not None and shown.result is not None
    assert (plain.result.answer, plain.result.votes) == (shown.result.answer, shown.result.votes)
    # Switching the overlay on and off afterwards reads the tree and changes nothing in it.
    before = _fields(plain.tree)
    on = overlay.toggle_truth(plain, True)
    shown_cols = list(on["table"]["value"].columns)
    assert "true value (gold)" in shown_cols and on["truth"]
    # each column keeps its own width when the overlay's column shifts it
    assert on["table"]["column_widths"][shown_cols.index("true value (gold)")] == "164px"
    assert on["table"]["column_widths"][shown_cols.index("PPL(H',Q)")] == "98px"
    off = overlay.toggle_truth(plain, False)
    off_cols = list(off["table"]["value"].columns)
    assert "true value (gold)" not in off_cols and off["truth"] == ""
    assert len(off["table"]["column_widths"]) == len(off_cols)
    assert _fields(plain.tree) == before


def test_the_inspector_and_the_table_show_the_true_value_beside_r_and_wn(toy_app) -> None:
    session = Session(show_truth=True)
    _run(session)
    frame = node_table_frame(session)
    cols = list(frame.columns)
    assert cols.index("true value (gold)") == cols.index("r") + 1
    assert frame["true value (gold)"].iloc[0] is not None  # the root has terminals below
    terminal = next(n.id for n in session.tree.terminals())
    from ui.render import inspector

    session.inspected = terminal
    detail, _ = inspector(session)
    assert "true value (gold)" in detail and "answer F1 (gold)" in detail


def test_the_twin_runs_the_same_question_settings_and_seed_with_a_constant_reward_and_is_cached(
    toy_app,
) -> None:
    session = Session()
    _run(session)
    source = session.tree
    updates = list(twin.run_twin(session, _form(), None))
    assert toy_app == [Method.FAST, Method.CONSTANT]
    assert session.twin is not None and session.twin.source is source
    assert session.twin.settings == session.settings.with_(method=Method.CONSTANT)
    assert {n.reward for n in session.twin.tree.nodes[1:] if n.reward is not None} == {1.0}
    last = updates[-1]
    assert last["twin_plot_a"]["visible"] and last["twin_plot_b"]["visible"]
    fig_a = last["twin_plot_a"]["value"]
    assert fig_a is not None and last["twin_plot_b"]["value"] is not None
    text = last["twin_diff"]
    assert "only the reward differs" in text and "F1 against gold" in text
    diff = diff_trees(source, session.twin.tree)
    assert diff.only_a and diff.only_b, "the reward moved the search: the toy trees differ"
    assert f"{len(diff.only_a)} by the IG run only" in text
    # What one visited and the other did not is drawn squared in its own tree.
    squares = [t for t in fig_a.data if t.name == "visited by this run only"]
    assert squares and len([x for x in squares[0].x if x is not None]) == len(diff.only_a)

    again = list(twin.run_twin(session, _form(), None))
    assert toy_app == [Method.FAST, Method.CONSTANT], "the second twin is replayed from the run cache"
    assert "replayed from the run cache" in again[-1]["twin_status"]
    # A new run on screen drops the twin from the view.
    _run(session)
    view = handlers.main_view(session, "")
    assert view["twin_diff"] == "" and view["twin_plot_a"]["visible"] is False


def test_the_twin_refuses_without_a_fast_mcts_run_on_screen(toy_app) -> None:
    empty = list(twin.run_twin(Session(), _form(), None))
    assert "first" in empty[-1]["twin_status"]
    session = Session(settings=SearchSettings(method=Method.CONSTANT))
    session.tree = _toy_tree(Method.CONSTANT)
    assert "already has a constant reward" in list(twin.run_twin(session, _form(), None))[-1]["twin_status"]
    assert toy_app == []


def test_action_paths_match_nodes_across_trees_whatever_their_ids() -> None:
    tree = _toy_tree()
    shuffled = Tree(question=tree.question)
    order = list(tree.nodes[1:])
    random.Random(0).shuffle(order)
    ids = {0: 0}
    pending = order
    while pending:  # re-add in another order: parents first, ids change
        rest = []
        for node in pending:
            if node.parent in ids:
                new = shuffled.add_child(ids[node.parent], node.step, visits=node.visits)
                ids[node.id] = new.id
            else:
                rest.append(node)
        pending = rest
    diff = diff_trees(tree, shuffled)
    assert not diff.only_a and not diff.only_b and diff.shared == len(path_keys(tree))
    assert overlay_for(tree, "demo") is not None, "the toy question is an example question"
    assert overlay_for(tree, "some-other-kb") is None


def test_in_public_mode_the_twin_takes_the_visitors_one_place_like_a_run(toy_app, monkeypatch) -> None:
    from types import SimpleNamespace

    from ui import public
    from ui.public import PublicMode, RunGate

    monkeypatch.setattr(public, "MODE", PublicMode.from_env({"PUBLIC_DEMO": "1", "POLICY_ENDPOINT": ""}))
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=4, per_visitor=1))
    request = SimpleNamespace(headers={}, client=SimpleNamespace(host="1.2.3.4"), session_hash="s1")
    session = Session()
    list(handlers.run(session, _form(), request, fresh=True))
    held = public.claim(Session(), SimpleNamespace(headers={}, client=request.client, session_hash="s2"))
    try:  # the visitor's other tab holds its one place: the twin waits its turn like a run
        refused = list(twin.run_twin(session, _form(), request))
        assert "Problem" in refused[-1]["twin_status"] and session.twin is None
    finally:
        public.release(held)
    list(twin.run_twin(session, _form(), request))
    assert session.twin is not None
    public.release(public.claim(Session(), request))  # the twin gave its place back when it ended
