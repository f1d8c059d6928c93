"""Occlusion with the real bundled model: each segment's effect is exactly the node re-scored
without it (`IGScorer.score` on that text), reusing the original's cache; cancellable;
the naive scorer agrees; a history cut to fit the context; no model, no occlusion."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mcts.agents import ig_probe
from mcts.agents.ig_probe import Occlusion, occlude, plan_passes
from mcts.agents.models import LoadedModel, load_model
from mcts.agents.scorer import ConstantScorer, IGScorer, NaiveIGScorer
from mcts.search.history_segments import history_segments, without_segment
from mcts.search.settings import IGVariant
from mcts.search.steps import IGScore

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTION = "Where was Barack Obama born?"
SPARQL = "SELECT ?x WHERE { ns:m.demo_barack_obama ns:people.person.place_of_birth ?x }"
HISTORY = (
    f'Action: SearchNodes()\nAction: SearchGraphPatterns("{SPARQL}", semantic="born in")\n'
    'Observation: ["Honolulu", "Zürich 東京", "1961-08-04"^^xsd:date]'
)


def _assert_same(got: IGScore, ref: IGScore) -> None:
    assert got.ppl_history == pytest.approx(ref.ppl_history, rel=1e-4)
    assert got.ppl_with_question == pytest.approx(ref.ppl_with_question, rel=1e-4)
    assert abs(got.reward - ref.reward) < 1e-4
    assert (got.tokens, got.truncated) == (ref.tokens, ref.truncated)
    assert got.detail is not None and ref.detail is not None
    assert got.detail.history_tokens == ref.detail.history_tokens
    assert got.detail.question_pieces == ref.detail.question_pieces
    assert got.detail.question_nlls == pytest.approx(ref.detail.question_nlls, abs=1e-4)
    assert got.detail.base_question_nlls == pytest.approx(ref.detail.base_question_nlls, abs=1e-4)


def _assert_exact(scorer: IGScorer, occ: Occlusion, history: str, **kw: object) -> None:
    """Every effect equals the scorer's own score of the occluded text."""
    texts = [history] + [without_segment(history, e.segment) for e in occ.effects]
    refs = scorer.score(QUESTION, texts, alpha=2, beta=10, **kw)
    _assert_same(occ.base, refs[0])
    for effect, ref in zip(occ.effects, refs[1:], strict=True):
        _assert_same(effect.score, ref)
        assert effect.delta_r == pytest.approx(effect.score.reward - occ.base.reward, abs=1e-12)


@pytest.fixture(scope="module")
def model() -> Iterator[LoadedModel]:
    import torch

    # One torch thread: several processes share the CPU (as in test_scorer.py). Restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_model()
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_each_effect_is_the_node_rescored_without_that_segment(model: LoadedModel) -> None:
    scorer = IGScorer(model)
    segments = history_segments(HISTORY)
    assert [s.kind for s in segments] == ["argument", "semantic", "value", "value", "value"]
    occ = occlude(scorer, QUESTION, HISTORY, alpha=2, beta=10, variant="question")
    assert occ.complete and [e.segment for e in occ.effects] == segments
    assert occ.base.truncated is False and occ.seconds > 0
    # Reuse: fewer tokens than running the node and each occluded text in full, and no IG
    # calls counted (no search node was scored).
    assert scorer.usage.calls == 0
    assert 0 < occ.model_tokens < occ.base.tokens + sum(e.score.tokens for e in occ.effects)
    assert scorer.usage.tokens == occ.model_tokens
    _assert_exact(scorer, occ, HISTORY, variant=IGVariant.QUESTION)
    # Removing a value changes the scored text only near its end: some effect is nonzero.
    assert any(abs(e.delta_r) > 1e-6 for e in occ.effects)


@pytest.mark.slow
def test_stop_ends_it_early_and_says_so(model: LoadedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    scorer = IGScorer(model)
    at_once = occlude(scorer, QUESTION, HISTORY, alpha=2, beta=10, stop=lambda: True)
    assert not at_once.complete and at_once.effects == () and at_once.base.reward > 0
    monkeypatch.setattr(ig_probe, "PASS_TOKENS", 0)  # one pass per segment
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    occ = occlude(scorer, QUESTION, HISTORY, alpha=2, beta=10, stop=stop)
    assert not occ.complete and len(occ.effects) == 2 and len(asked) == 3  # asked before each pass
    assert [e.segment for e in occ.effects] == history_segments(HISTORY)[:2]


@pytest.mark.slow
def test_a_long_history_cut_to_fit_and_grouped(model: LoadedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ig_probe, "PASS_TOKENS", 0)  # one pass per segment (the others share passes)
    names = ", ".join(f'"Person number {i}"' for i in range(80))
    history = f'Action: ExecuteSPARQL("{SPARQL}")\nObservation: [{names}]'
    scorer = IGScorer(model, max_tokens=200)  # the history is cut from its left to fit
    occ = occlude(scorer, QUESTION, history, alpha=2, beta=10, max_segments=4)
    assert occ.complete and len(occ.effects) == 4 and occ.base.truncated
    assert {e.segment.kind for e in occ.effects} == {"argument", "group"}
    _assert_exact(scorer, occ, history)


@pytest.mark.slow
def test_the_naive_reference_agrees(model: LoadedModel) -> None:
    history = 'Action: SearchNodes()\nObservation: ["Honolulu", "Chicago"]'
    fast = occlude(IGScorer(model), QUESTION, history, alpha=2, beta=10)
    naive = occlude(NaiveIGScorer(model), QUESTION, history, alpha=2, beta=10)
    _assert_same(fast.base, naive.base)
    for a, b in zip(fast.effects, naive.effects, strict=True):
        _assert_same(a.score, b.score)
    assert len(naive.effects) == 2 and naive.complete


def test_passes_group_neighbours_only_while_that_saves_work() -> None:
    # (shared tokens, length): three texts cut close together near the end, one cut early.
    spans = [(40, 480), (300, 482), (306, 481), (312, 483)]
    assert plan_passes(spans, pass_tokens=48, max_rows=8) == [[0], [1, 2, 3]]
    assert plan_passes(spans, pass_tokens=48, max_rows=2) == [[0], [1, 2], [3]]
    assert plan_passes(spans, pass_tokens=0, max_rows=8) == [[0], [1], [2], [3]]  # padding never free
    assert plan_passes([], pass_tokens=48, max_rows=8) == []


def test_no_model_no_occlusion() -> None:
    scorer = ConstantScorer()
    with pytest.raises(ValueError, match="'constant' scorer has none"):
        occlude(scorer, QUESTION, HISTORY, alpha=2, beta=10)  # type: ignore[arg-type]
    assert scorer.usage.tokens == 0
