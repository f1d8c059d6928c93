"""IG ranking analysis: Kendall tau-b, true-value backup and top-1/top-3 on hand-made cases."""

from __future__ import annotations

import random

import pytest

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.evaluation.metrics import GoldAnswer
from mcts.evaluation.ranking import (
    compare_parent,
    compare_tree,
    kendall_tau_b,
    random_scores,
    scorer_scores,
    summarise_rankings,
    terminal_outcomes,
    true_values,
)
from mcts.search.protocols import Usage
from mcts.search.steps import IGScore, Step
from mcts.search.tree import Tree

GOLD = [GoldAnswer("Paris", ("m.paris",))]


def _step(arg: str) -> Step:
    return Step(
        thought=f"think {arg}",
        action=Action("ExecuteSPARQL", arg),
        observation=Observation(text=f"obs {arg}"),
    )


def _tree() -> Tree:
    """root 0 -> 1, 2, 3; 1 -> 4 (F1 1), 5 (F1 0); 2 -> 6 (F1 .5: Paris + Lyon); 3 has no terminal."""
    t = Tree("What is the capital of France?")
    for arg in ("a", "bb", "ccc"):
        t.add_child(0, _step(arg))
    t.add_child(1, _step("d"), terminal=True, answer=(Value("Paris", "m.paris"),))
    t.add_child(1, _step("e"), terminal=True, answer=())
    t.add_child(2, _step("f"), terminal=True, answer=(Value("Paris", "m.paris"), Value("Lyon", "m.lyon")))
    return t


def test_kendall_tau_b_matches_hand_computed_values():
    assert kendall_tau_b([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # one discordant pair of six: (5 - 1) / 6
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # ties: C=4, D=0, n0=6, one pair tied in x, one in y -> 4 / sqrt(5 * 5) = 0.8
    assert kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    # a pair tied on both sides counts in both tie totals: C=0, D=2, n0=3, n1=n2=1 -> -2 / sqrt(2 * 2)
    assert kendall_tau_b([1, 1, 2], [1, 1, 0]) == pytest.approx((0 - 2) / 2)
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) is None  # undefined: all ties in x
    with pytest.raises(ValueError, match="equal lengths"):
        kendall_tau_b([1, 2], [1])


def test_true_values_are_mean_terminal_f1_of_each_subtree():
    t = _tree()
    f1 = terminal_outcomes(t, GOLD)
    assert f1 == [(4, 1.0), (5, 0.0), (6, pytest.approx(2 / 3))]
    values = true_values(t, f1)
    assert values[1] == pytest.approx(0.5)
    assert values[2] == pytest.approx(2 / 3)
    assert values[0] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert 3 not in values  # no terminal below: excluded


def test_classic_rollouts_count_as_terminal_states_below_their_node():
    t = _tree()
    rollout = t[3]
    rollout.simulation = (_step("g"), _step("h"))
    rollout.simulated_answer = (Value("Paris", "m.paris"),)
    rollout.cleaned_history = "the rollout's end state"  # classic MCTS stores this; rankers must not read it
    outcomes = terminal_outcomes(t, GOLD)
    assert (3, 1.0) in outcomes
    assert terminal_outcomes(t, GOLD, simulations=False) == [o for o in outcomes if o[0] != 3]
    values = true_values(t, outcomes)
    assert values[3] == 1.0
    assert values[0] == pytest.approx((1 + 0 + 2 / 3 + 1) / 4)
    scorer = _LengthScorer()
    scorer_scores(t, scorer, lambda i: i in values)
    assert all("rollout" not in h for batch in scorer.batches for h in batch)
    assert any("ccc" in h for batch in scorer.batches for h in batch)  # node 3's own step


def test_top1_top3_and_ties():
    # children 10, 11, 12, 13, 14; true best is 13 (value .9)
    kids = [10, 11, 12, 13, 14]
    values = [0.1, 0.2, 0.3, 0.9, 0.0]
    top1, top3, tau = compare_parent(kids, [5, 4, 3, 2, 1], values)
    assert (top1, top3) == (False, False)
    assert tau == pytest.approx(kendall_tau_b([5, 4, 3, 2, 1], values))
    assert compare_parent(kids, [5, 4, 6, 5.5, 1], values)[:2] == (False, True)  # 13 ranked 2nd
    assert compare_parent(kids, [0, 0, 0, 9, 0], values)[:2] == (True, True)
    # equal scores: the earlier child (lower id) is the ranker's top
    assert compare_parent([1, 2], [1.0, 1.0], [0.0, 1.0])[0] is False
    assert compare_parent([1, 2], [1.0, 1.0], [1.0, 0.0])[0] is True
    # tied true-best: either one counts as a hit
    assert compare_parent([1, 2, 3], [0.0, 1.0, 0.5], [1.0, 1.0, 0.0])[0] is True


def test_compare_tree_uses_parents_with_two_valued_children():
    t = _tree()
    values = true_values(t, terminal_outcomes(t, GOLD))
    # scores for 1, 2, 3 (3 has no value, so the root group is {1, 2}); 4, 5 under node 1
    scores = {1: 0.2, 2: 0.9, 3: 5.0, 4: 1.0, 5: 2.0, 6: 1.0}
    rows = compare_tree(t, scores, values, ranker="ig", question_id="q1")
    assert [(r.parent_id, r.children) for r in rows] == [(0, (1, 2)), (1, (4, 5))]
    root, inner = rows
    assert root.top1 and root.top3 and root.tau == pytest.approx(1.0)  # 2 (.67) ranked over 1 (.5)
    assert not inner.top1 and inner.top3 and inner.tau == pytest.approx(-1.0)
    summary = summarise_rankings(rows, "ig")
    assert (summary.parents, summary.top1, summary.top3, summary.mean_tau) == (2, 0.5, 1.0, 0.0)
    assert (summary.informative_parents, summary.top1_informative) == (2, 0.5)
    assert summarise_rankings(rows, "other").parents == 0


class _LengthScorer:
    """Test double: reward = history length, so the longer history ranks first."""

    name = "length"

    def __init__(self) -> None:
        self.usage = Usage()
        self.batches: list[list[str]] = []

    def score(self, question, cleaned_histories, *, alpha, beta, prompt="", variant="paper"):
        self.batches.append(list(cleaned_histories))
        return [IGScore(1.0, 1.0, float(len(h))) for h in cleaned_histories]


def test_scorer_scores_rescore_each_sibling_group_in_one_batch():
    t = _tree()
    values = true_values(t, terminal_outcomes(t, GOLD))
    scorer = _LengthScorer()
    scores = scorer_scores(t, scorer, lambda i: i in values)
    assert set(scores) == {1, 2, 4, 5}  # node 6 is an only child; 3 has no value
    assert len(scorer.batches) == 2
    assert scores[2] > scores[1]  # "bb" history is longer than "a"
    rng_a = random_scores(t, lambda i: i in values, random.Random(3))
    rng_b = random_scores(t, lambda i: i in values, random.Random(3))
    assert rng_a == rng_b  # seeded random order is reproducible


class _DigitTokenizer:
    """Spells " r" like SmolLM2: a space token, then one token per digit ("0" is id 20)."""

    def __init__(self, *, words: bool = False) -> None:
        self.words = words  # True: a whole number is one token (a tokenizer the scorer refuses)

    def __call__(self, text, add_special_tokens=False):
        if self.words:
            return {"input_ids": [0, 100 + int(text)]} if int(text) < 10 else {"input_ids": [0, 7, 7]}
        return {"input_ids": [0] + [20 if ch == "0" else int(ch) for ch in text.strip()]}


def test_rating_tokens_find_the_shared_space_and_the_two_token_ten():
    from mcts.agents.cot_scorer import rating_tokens

    tokens = rating_tokens(_DigitTokenizer())
    assert tokens.shared == (0,)
    assert tokens.digits == tuple(range(1, 10))
    assert tokens.ten == (1, 20)
    with pytest.raises(ValueError, match="single digit tokens"):
        rating_tokens(_DigitTokenizer(words=True))


def test_expected_rating_hand_computed():
    from mcts.agents.cot_scorer import RatingTokens, expected_rating

    tokens = RatingTokens(shared=(0,), digits=tuple(range(1, 10)), ten=(1, 20))  # "10" = "1", "0"(id 20)
    p_next = [0.0] * 30
    p_next[1] = 0.5  # "1"
    p_next[7] = 0.5  # "7"
    p_after_one = [0.0] * 30
    p_after_one[20] = 0.4  # "1" followed by "0": 10
    # p(1) = .5 * .6 = .3, p(10) = .5 * .4 = .2, p(7) = .5 -> E = (.3 + 3.5 + 2) / 1 = 5.8
    assert expected_rating(p_next, p_after_one, tokens) == pytest.approx(5.8)
    single_ten = RatingTokens(shared=(), digits=tuple(range(1, 10)), ten=(25,))
    p = [0.0] * 30
    p[25], p[2] = 0.75, 0.25
    assert expected_rating(p, None, single_ten) == pytest.approx(0.75 * 10 + 0.25 * 2)
    assert expected_rating([0.0] * 30, None, single_ten) == 5.5  # no mass on any rating


@pytest.mark.slow
def test_cot_scorer_on_the_real_model_is_deterministic_and_in_range(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from mcts.agents.cot_scorer import CotScorer
    from mcts.agents.models import ModelLoadError, load_model

    try:
        model = load_model(None)
    except ModelLoadError as exc:
        pytest.skip(f"bundled model not available: {exc}")
    scorer = CotScorer(model)
    histories = [
        'Action: ExecuteSPARQL("SELECT ?x WHERE { ns:m.0dl567 ns:film.actor.film ?c . ?c ns:film.performance.film ?x }")\n'
        "Observation: The Lorax, Valentine's Day",
        'Action: SearchNodes()\nObservation: "Taylor Swift" | Description: American singer-songwriter',
    ]
    first = scorer.score("What movie was Taylor Swift in?", histories, alpha=2.0, beta=10.0)
    again = scorer.score("What movie was Taylor Swift in?", histories, alpha=2.0, beta=10.0)
    assert [s.reward for s in first] == [s.reward for s in again]
    assert all(1.0 <= s.reward <= 10.0 for s in first)
    assert scorer.usage.calls == 4
