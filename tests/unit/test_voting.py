"""The final vote over terminal branches, against hand-built trees."""

from __future__ import annotations

import math

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.settings import VoteMode
from mcts.search.steps import Step
from mcts.search.tree import ROOT_ID, Tree
from mcts.search.voting import (
    SearchResult,
    best_terminal_by_ig,
    best_terminal_by_value,
    decide,
    tally_votes,
    tie_break,
)

STEP = Step(thought="", action=Action("Done"), observation=Observation(text="Done."))
A = (Value("Alpha", "m.a"),)
B = (Value("Beta", "m.b"), Value("Beta", "m.b2"))  # two entities named alike: one answer name
C = (Value("Gamma", "m.c"),)


def _terminal(tree: Tree, answer, mean: float, reward: float, sparql: str = ""):
    node = tree.add_child(
        ROOT_ID, STEP, terminal=True, answer=answer, answer_sparql=sparql or f"q{len(tree)}"
    )
    node.visits, node.value_sum, node.reward = 2, 2 * mean, reward
    return node


def _tree() -> Tree:
    tree = Tree("q")
    _terminal(tree, A, mean=0.5, reward=0.4)  # 1
    _terminal(tree, B, mean=0.9, reward=0.3)  # 2
    _terminal(tree, A, mean=0.7, reward=1.9)  # 3
    _terminal(tree, B, mean=0.1, reward=0.2)  # 4
    _terminal(tree, C, mean=2.0, reward=1.0)  # 5
    _terminal(tree, (), mean=5.0, reward=5.0)  # 6: empty result, does not vote
    tree.add_child(ROOT_ID, STEP).value_sum = 99.0  # 7: not terminal, does not vote
    return tree


def test_plurality_tie_goes_to_the_answer_whose_best_branch_has_higher_mean_value():
    rows = tally_votes(_tree(), VoteMode.PLURALITY)
    assert [r.answer for r in rows] == [("Beta",), ("Alpha",), ("Gamma",)]
    assert [r.count for r in rows] == [2, 2, 1]
    assert rows[0].node_ids == (2, 4)  # best branch first
    assert rows[1].node_ids == (3, 1)


def test_value_weighted_vote_sums_mean_values():
    rows = tally_votes(_tree(), VoteMode.VALUE_WEIGHTED)
    assert [r.answer for r in rows] == [("Gamma",), ("Alpha",), ("Beta",)]
    assert [round(r.weight, 6) for r in rows] == [2.0, 1.2, 1.0]


def test_plurality_majority_beats_value():
    tree = _tree()
    _terminal(tree, A, mean=0.0, reward=0.0)
    answer, sparql, ids, rows = decide(tree, VoteMode.PLURALITY)
    assert answer == A and ids == (3, 1, 8) and sparql == "q3"  # the best Alpha branch's query


def test_best_terminals_by_mean_value_and_by_reward_ignore_empty_results():
    tree = _tree()
    assert best_terminal_by_value(tree) == 5
    assert best_terminal_by_ig(tree) == 3


def test_no_answering_branch_gives_an_empty_answer():
    tree = Tree("q")
    _terminal(tree, (), mean=1.0, reward=1.0)
    assert decide(tree, VoteMode.PLURALITY) == ((), "", (), ())
    assert best_terminal_by_value(tree) is None


def test_unscored_branches_have_no_best_by_value():
    tree = Tree("q")
    node = tree.add_child(ROOT_ID, STEP, terminal=True, answer=A)
    node.visits = 1
    assert best_terminal_by_value(tree) is None and best_terminal_by_ig(tree) is None
    assert tally_votes(tree)[0].answer == ("Alpha",)


def test_search_result_round_trips_through_a_dict():
    from mcts.search.cost import CostSummary

    answer, sparql, ids, rows = decide(_tree(), VoteMode.PLURALITY)
    result = SearchResult(
        question="q",
        answer=answer,
        sparql=sparql,
        answer_node_ids=ids,
        votes=rows,
        best_by_value=5,
        best_by_ig=3,
        stop_reason="budget",
        detail="all 12 rounds used",
        rounds=12,
        nodes=8,
        cost=CostSummary(policy_calls=3, tool_calls={"ExecuteSPARQL": 2}, wall_s=1.5),
        terminals=6,
    )
    assert SearchResult.from_dict(result.to_dict()) == result
    assert result.answer_names == ("Beta",)


def test_plurality_tie_is_recorded_with_how_it_was_broken():
    tree = Tree("q")
    _terminal(tree, A, mean=0.5, reward=0.4)
    _terminal(tree, B, mean=0.9, reward=0.3)
    _terminal(tree, C, mean=0.2, reward=0.3)
    assert tally_votes(tree)[0].answer == ("Beta",)
    assert (
        tie_break(tree)
        == "3 answer sets tied on votes; broken by the higher W/N of its best branch, then the lower node id"
    )
    _terminal(tree, A, mean=0.1, reward=0.1)
    assert tie_break(tree) == ""  # Alpha wins 2-1-1: no tie


def test_visits_rule_follows_the_most_visited_branch_from_the_root():
    tree = Tree("q")
    busy = tree.add_child(ROOT_ID, STEP)
    busy.visits = 5
    deep = tree.add_child(busy.id, STEP, terminal=True, answer=C)
    deep.visits, deep.value_sum = 1, 0.1
    _terminal(tree, A, mean=1.5, reward=1.5)  # visits 2 at the top level, high W/N
    _terminal(tree, A, mean=1.5, reward=1.5)
    rows = tally_votes(tree, VoteMode.VISITS)
    assert rows[0].answer == ("Gamma",) and rows[0].weight == 5.0
    assert tally_votes(tree, VoteMode.PLURALITY)[0].answer == ("Alpha",)


def test_likelihood_rule_picks_the_branch_the_policy_prefers():
    tree = Tree("q")
    a = _terminal(tree, A, mean=1.9, reward=1.9)
    b = _terminal(tree, B, mean=0.1, reward=0.1)
    a.policy_score, b.policy_score = -3.0, -1.0  # no stored prior: recomputed from the scores
    assert decide(tree, VoteMode.LIKELIHOOD)[2] == (b.id,)
    assert decide(tree, VoteMode.BEST_VALUE)[2] == (a.id,)


def test_the_per_step_likelihood_does_not_favour_a_branch_for_stopping_early():
    tree = Tree("q")
    short = _terminal(tree, A, mean=0.5, reward=0.5)  # one step, P 0.5
    short.prior = 0.5
    hop = tree.add_child(ROOT_ID, STEP)
    hop.prior = 0.5
    longer = tree.add_child(hop.id, STEP, terminal=True, answer=C, answer_sparql="q-long")
    longer.visits, longer.value_sum, longer.prior = 1, 0.5, 0.9  # two steps, P 0.5 then 0.9
    # Sum of log P: log 0.5 against log 0.45, so the short branch wins.
    assert decide(tree, VoteMode.LIKELIHOOD)[0] == A
    # Per step: log 0.5 against (log 0.5 + log 0.9) / 2, so the longer one does.
    answer, sparql, voters, rows = decide(tree, VoteMode.LIKELIHOOD_PER_STEP)
    assert (answer, sparql, voters) == (C, "q-long", (longer.id,))
    assert abs(rows[0].weight - (math.log(0.5) + math.log(0.9)) / 2) < 1e-9


def test_the_per_step_rule_is_named_and_glossed_for_the_app():
    from viz.answer_rule import rule_name, weight_gloss

    assert rule_name("likelihood_per_step") == "likeliest branch per step"
    assert "mean log P per step" in weight_gloss(VoteMode.LIKELIHOOD_PER_STEP)


def test_likelihoods_apart_by_float_noise_tie_and_more_votes_break_it():
    # A 5-path vote: the same first step sampled twice scores -0.863917 once and -0.863916
    # the next time (cached vs fresh passes). Branches that close must not be told apart.
    tree = Tree("q")
    first = _terminal(tree, A, mean=0.0, reward=0.0)
    second = _terminal(tree, B, mean=0.0, reward=0.0)
    third = _terminal(tree, B, mean=0.0, reward=0.0)
    first.policy_score, second.policy_score, third.policy_score = -0.863916, -0.863917, -0.863917
    answer, _, voters, rows = decide(tree, VoteMode.LIKELIHOOD)
    assert answer == B and voters == (second.id, third.id)  # two votes beat one
    assert tie_break(tree, VoteMode.LIKELIHOOD).startswith(
        "2 answer sets tied on policy path log-probability"
    )
    # A real difference in likelihood still decides.
    first.policy_score = -0.5
    assert decide(tree, VoteMode.LIKELIHOOD)[0] == A and tie_break(tree, VoteMode.LIKELIHOOD) == ""
