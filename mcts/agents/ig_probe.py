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
observation's values) cost a few tokens plus the prompt and the question. Neighbouring
pieces share a right-padded pass (`plan_passes`) while that saves more than the padding
and the earlier start cost.

`stop()` is asked before every pass, so a caller can cancel; nothing here touches
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

# The fixed cost of one forward pass, in tokens' worth of compute: reading the weights once.
# On bench/occlusion.py's node (SmolLM2-135M, one thread on a shared 2-core CPU) a 26-token pass
# on a 460-token cache took 1.75 s, a 136-token one 3.34 s: ~0.014 s per token on top of
# ~1.4 s per pass. Occlusion of that node, one run each: a pass per segment 294 s, grouped
# with 48: 247 s, with 96: 233 s (rewards alike within 4e-6).
PASS_TOKENS = 96


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

    def shared(self, node: TokenizedNode) -> int:
        """Leading tokens `node` shares with the original (at least one token of its own runs)."""
        return min(_shared_length(self.ids, node.ids), len(node.ids) - 1)

    def nlls(self, nodes: Sequence[TokenizedNode], pad_id: int) -> tuple[list[Any], int]:
        """(NLL of every target of each node, tokens run), in one right-padded pass that starts
        where the nodes' ids first differ from the original's (their targets before that are
        the original's, in the same context)."""
        import torch

        seqs = [n.ids for n in nodes]
        start = min(self.shared(n) for n in nodes)
        if start < 1:  # nothing in common (another chat header): passes of their own
            return [self._full(seq) for seq in seqs], sum(map(len, seqs))
        cache = copy.deepcopy(self.cache)  # the pass extends the cache it is given
        cache.crop(-(cache.get_seq_length() - start))  # negative = tokens to drop (every version)
        if len(seqs) > 1:
            cache.batch_repeat_interleave(len(seqs))
        width = max(len(seq) for seq in seqs) - start
        ids = torch.full((len(seqs), width), pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((len(seqs), start + width), dtype=torch.long, device=self.device)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq) - start] = torch.tensor(seq[start:], device=self.device)
            mask[row, : len(seq)] = 1
        states, _, is_hidden = run_model(self.model, ids, mask, cache)
        first = self.states[start - 1 : start]  # the last shared position predicts each row's first token
        out = []
        for row, seq in enumerate(seqs):
            n = len(seq) - start
            parts = [
                self.nll[: start - 1],
                target_nll(self.model, first, self.is_hidden, ids[row, :1]),
                target_nll(self.model, states[row, : n - 1], is_hidden, ids[row, 1:n]),
            ]
            out.append(torch.cat([p.to(parts[-1].device) for p in parts]))
        return out, sum(len(seq) - start for seq in seqs)

    def _full(self, seq: tuple[int, ...]) -> Any:
        import torch

        ids = torch.tensor([seq], device=self.device)
        states, _, is_hidden = run_model(self.model, ids, torch.ones_like(ids))
        return target_nll(self.model, states[0, :-1], is_hidden, ids[0, 1:])


def plan_passes(spans: Sequence[tuple[int, int]], *, pass_tokens: int, max_rows: int) -> list[list[int]]:
    """Neighbouring occluded texts, given as (shared tokens, length), grouped into passes.

    A pass runs every row from the smallest shared length among them, right-padded to the
    longest: a text joins the pass before it while that costs no more tokens than a pass of
    its own, counted as its tokens plus `pass_tokens` (the fixed cost of a forward pass:
    reading every weight once, whatever the rows).
    """
    passes: list[list[int]] = []
    for i, (shared, length) in enumerate(spans):
        if passes and len(passes[-1]) < max_rows:
            rows = passes[-1]
            start = min(spans[k][0] for k in rows)
            longest = max(spans[k][1] for k in rows)
            now = len(rows) * (longest - start)
            joined = (len(rows) + 1) * (max(longest, length) - min(start, shared))
            if joined <= now + pass_tokens + length - shared:
                rows.append(i)
                continue
        passes.append([i])
    return passes


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
    scorer._base_question(question, prompt)  # one pass per question (cached), accounted by the scorer
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
        spans = [(reuse.shared(n), len(n.ids)) for n in occluded]
        pad = scorer.model.tokenizer.pad_token_id or 0
        for rows in plan_passes(spans, pass_tokens=PASS_TOKENS, max_rows=scorer.batch_size):
            if stop is not None and stop():
                break
            start = time.perf_counter()
            nlls, tokens = reuse.nlls([occluded[i] for i in rows], pad)
            _account(scorer, tokens, start)
            for i, nll in zip(rows, nlls, strict=True):
                score = _score(scorer, occluded[i], token_means(occluded[i], nll), setting)
                effects.append(_effect(segments[i], score, base))
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
