"""Occlusion: which pieces of a cleaned history moved a node's IG reward.

The history is cut into pieces of evidence (`mcts.search.history_segments`); each is
removed in turn and the node re-scored, exactly as `IGScorer.score` scores that shorter
text (its own tokenisation, its own truncation). The change in reward per piece is what
the inspector's IG lens shades over the history.

Reuse: an occluded text is the original up to the cut, so its token ids share a prefix
with the original's. The original runs once with its key/value cache and hidden states
kept; each occluded text then runs only from the first token where its ids differ, on a
copy of that cache cropped to the shared length (a forward pass extends the cache it is
given). The NLLs of the shared targets are the original's. Pieces near the end (an
observation's values) cost a few tokens plus the prompt and the question.

`stop()` is asked before every occluded pass, so a caller can cancel; nothing here touches
a tree. The work counts in the scorer's `usage` (tokens, seconds) and `model_invocations`,
not as IG `calls` (no node of a search was scored). NaiveIGScorer, the reference, scores
each occluded text with its own two passes; ConstantScorer has no model and is refused.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcts.agents.scorer import IGScorer, NaiveIGScorer, NodeNLL, TokenizedNode
from mcts.agents.scorer import _means as token_means  # the scorer's own reduction: exactly its numbers
from mcts.agents.scorer import _run as run_model
from mcts.agents.scorer import _target_nll as target_nll
from mcts.search.history_segments import (
    DEFAULT_MAX_SEGMENTS,
    HistorySegment,
    history_segments,
    without_segment,
)
from mcts.search.ig_formula import ig_input, reward_from_input
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.settings import IGVariant
from mcts.search.steps import IGDetail, IGScore


@dataclass(frozen=True)
class SegmentEffect:
    segment: HistorySegment
    score: IGScore  # the node re-scored with that segment removed
    delta_r: float  # score.reward - base.reward (negative: the segment raised the reward)


@dataclass(frozen=True)
class Occlusion:
    base: IGScore  # the node as it is
    effects: tuple[SegmentEffect, ...]  # in segment order; fewer than the segments when stopped
    complete: bool  # False when `stop` ended it early
    seconds: float
    model_tokens: int  # tokens run through the model


@dataclass(frozen=True)
class _Setting:
    question: str
    prompt: str
    variant: IGVariant
    alpha: float
    beta: float


def _score(scorer: IGScorer, node: TokenizedNode, nll: NodeNLL, s: _Setting) -> IGScore:
    """What `IGScorer.score` returns for this node and these NLLs (the same fields, the same math)."""
    base, pieces = scorer._base_question(s.question, s.prompt)  # cached per question
    return IGScore(
        ppl_history=math.exp(nll.log_ppl_history),
        ppl_with_question=math.exp(nll.log_ppl_with_question),
        reward=reward_from_input(ig_input(s.variant, nll, base), s.alpha, s.beta),
        tokens=len(node.ids),
        truncated=node.truncated,
        detail=IGDetail(
            history_tokens=len(node.prefix) - 1,
            question_nlls=nll.question_nlls,
            question_pieces=pieces,
            base_question_nlls=base,
        ),
    )


def _shared_length(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class _Reuse:
    """The original node's pass (cache, hidden states, target NLLs) and passes that start from it."""

    def __init__(self, scorer: IGScorer, node: TokenizedNode) -> None:
        import torch

        self.model = scorer.model.model
        self.device = scorer.model.device
        self.ids = node.ids
        ids = torch.tensor([node.ids], device=self.device)
        states, self.cache, self.is_hidden = run_model(self.model, ids, torch.ones_like(ids))
        self.states = states[0]
        self.nll = target_nll(self.model, self.states[:-1], self.is_hidden, ids[0, 1:])
        self.tokens = len(node.ids)

    def nlls(self, node: TokenizedNode) -> tuple[Any, int]:
        """(NLL of every target of `node`, tokens run): only the tokens after the shared prefix run."""
        import torch

        seq = node.ids
        shared = min(_shared_length(self.ids, seq), len(seq) - 1)  # at least one token of its own runs
        if shared < 1:  # nothing in common (another chat header): a pass of its own
            ids = torch.tensor([seq], device=self.device)
            states, _, is_hidden = run_model(self.model, ids, torch.ones_like(ids))
            return target_nll(self.model, states[0, :-1], is_hidden, ids[0, 1:]), len(seq)
        cache = copy.deepcopy(self.cache)  # the pass extends the cache it is given
        surplus = cache.get_seq_length() - shared
        if surplus > 0:
            cache.crop(-surplus)  # negative = tokens to drop (the form every version accepts)
        rest = torch.tensor([seq[shared:]], device=self.device)
        mask = torch.ones((1, len(seq)), dtype=torch.long, device=self.device)
        states, _, is_hidden = run_model(self.model, rest, mask, cache)
        parts = [
            self.nll[: shared - 1],  # targets 1 .. shared-1: the original's, same context
            target_nll(self.model, self.states[shared - 1 : shared], self.is_hidden, rest[0, :1]),
            target_nll(self.model, states[0, :-1], is_hidden, rest[0, 1:]),
        ]
        return torch.cat([p.to(parts[-1].device) for p in parts]), len(seq) - shared


def _check(scorer: Any) -> IGScorer:
    if not isinstance(scorer, IGScorer):
        name = getattr(scorer, "name", type(scorer).__name__)
        raise ValueError(f"occlusion re-scores the node with a language model; the {name!r} scorer has none")
    return scorer


def occlude(
    scorer: IGScorer,
    question: str,
    cleaned_history: str,
    *,
    alpha: float,
    beta: float,
    prompt: str = DEFAULT_IG_PROMPT,
    variant: IGVariant | str = IGVariant.PAPER,
    max_segments: int = DEFAULT_MAX_SEGMENTS,
    stop: Callable[[], bool] | None = None,
) -> Occlusion:
    """The node's IG score, and its score with each segment of its history removed in turn."""
    scorer = _check(scorer)
    setting = _Setting(question, prompt, IGVariant(variant), alpha, beta)
    segments = history_segments(cleaned_history, max_segments)
    node = scorer.builder.build(question, cleaned_history, prompt)
    texts = [without_segment(cleaned_history, seg) for seg in segments]
    occluded = [scorer.builder.build(question, text, prompt) for text in texts]
    tokens_before, started = scorer.usage.tokens, time.perf_counter()
    scorer._base_question(question, prompt)  # its own pass, accounted by the scorer, outside the timing below
    if isinstance(scorer, NaiveIGScorer):
        base, effects = _occlude_each(scorer, node, occluded, segments, setting, stop)
    else:
        base, effects = _occlude_reusing(scorer, node, occluded, segments, setting, stop)
    return Occlusion(
        base=base,
        effects=tuple(effects),
        complete=len(effects) == len(segments),
        seconds=time.perf_counter() - started,
        model_tokens=scorer.usage.tokens - tokens_before,
    )


def _effect(segment: HistorySegment, score: IGScore, base: IGScore) -> SegmentEffect:
    return SegmentEffect(segment, score, score.reward - base.reward)


def _occlude_reusing(
    scorer: IGScorer,
    node: TokenizedNode,
    occluded: Sequence[TokenizedNode],
    segments: Sequence[HistorySegment],
    setting: _Setting,
    stop: Callable[[], bool] | None,
) -> tuple[IGScore, list[SegmentEffect]]:
    import torch

    _require_scoreable([node, *occluded])
    effects: list[SegmentEffect] = []
    with torch.inference_mode():
        start = time.perf_counter()
        reuse = _Reuse(scorer, node)
        _account(scorer, reuse.tokens, start)
        base = _score(scorer, node, token_means(node, reuse.nll), setting)
        for seg, other in zip(segments, occluded, strict=True):
            if stop is not None and stop():
                break
            start = time.perf_counter()
            nll, tokens = reuse.nlls(other)
            _account(scorer, tokens, start)
            effects.append(_effect(seg, _score(scorer, other, token_means(other, nll), setting), base))
    return base, effects


def _occlude_each(
    scorer: IGScorer,
    node: TokenizedNode,
    occluded: Sequence[TokenizedNode],
    segments: Sequence[HistorySegment],
    setting: _Setting,
    stop: Callable[[], bool] | None,
) -> tuple[IGScore, list[SegmentEffect]]:
    """The reference path: every text scored from scratch by the scorer's own passes."""

    def one(n: TokenizedNode) -> IGScore:
        start = time.perf_counter()
        nlls, invocations, tokens = scorer._nlls([n])
        _account(scorer, tokens, start, invocations)
        return _score(scorer, n, nlls[0], setting)

    base = one(node)
    effects: list[SegmentEffect] = []
    for seg, other in zip(segments, occluded, strict=True):
        if stop is not None and stop():
            break
        effects.append(_effect(seg, one(other), base))
    return base, effects


def _require_scoreable(nodes: Sequence[TokenizedNode]) -> None:
    for n in nodes:
        if len(n.prefix) < 2 or not n.question:
            raise ValueError("a scored sequence needs a prefix of >= 2 tokens and a non-empty question")


def _account(scorer: IGScorer, tokens: int, start: float, invocations: int = 1) -> None:
    scorer.usage.seconds += time.perf_counter() - start
    scorer.usage.tokens += tokens
    scorer.model_invocations += invocations
