"""The IG reward's formula: a pure function of per-token NLLs, for every IG variant.

r = alpha * sigmoid(beta * x), where x depends on `settings.IGVariant`
(docs/method.md#the-ig-reward for the paper's form; the variants are documented at
`ig_input`). Nothing here runs a model: `mcts.agents.scorer` computes the NLLs, in one pass
or naively, and the inspector's IG lens (`viz.ig_lens`) re-reads the stored ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mcts.search.settings import IGVariant


def ig_reward_from_logs(
    log_ppl_history: float, log_ppl_with_question: float, alpha: float, beta: float
) -> float:
    """alpha * sigmoid(beta * (log PPL(H') - log PPL(H', Q))), stable for any magnitude."""
    return reward_from_input(log_ppl_history - log_ppl_with_question, alpha, beta)


def ig_reward(ppl_history: float, ppl_with_question: float, alpha: float = 2.0, beta: float = 10.0) -> float:
    """The paper's IG reward from the two perplexities (alpha = 2, beta = 10 by default).

    PPL 20 -> 16 gives ~1.81; PPL 20 -> 21 gives ~0.76.
    """
    if ppl_history <= 0 or ppl_with_question <= 0:
        raise ValueError(f"perplexities must be positive, got {ppl_history} and {ppl_with_question}")
    return ig_reward_from_logs(math.log(ppl_history), math.log(ppl_with_question), alpha, beta)


@dataclass(frozen=True)
class NodeNLL:
    """Mean NLLs (nats) of one node: log PPL(H') and log PPL(H', Q), and the NLL of each
    question token after the prefix (what the question-only IG variants read)."""

    log_ppl_history: float
    log_ppl_with_question: float
    question_nlls: tuple[float, ...] = ()


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def ig_input(variant: IGVariant | str, node: NodeNLL, base_question_nlls: Sequence[float] = ()) -> float:
    """x of r = alpha * sigmoid(beta * x) for one IG variant; a pure function of NLLs (nats).

    - paper: log PPL(H') - log PPL(H', Q), means over history+prompt vs over everything;
    - question: mean NLL(Q | prompt) - mean NLL(Q | H' + prompt): how much the history
      makes the question's own tokens more predictable (the baseline, no history, is the
      same for every node of a question);
    - question_clipped: the same mean of per-token gains, each clipped to [-1, 1] nat, so
      one token (an entity name copied from an observation) cannot decide the order alone.
    """
    variant = IGVariant(variant)
    if variant == IGVariant.PAPER:
        return node.log_ppl_history - node.log_ppl_with_question
    if len(base_question_nlls) != len(node.question_nlls) or not node.question_nlls:
        raise ValueError("question-only IG needs the question's NLLs with and without the history")
    gains = [b - h for b, h in zip(base_question_nlls, node.question_nlls, strict=True)]
    if variant == IGVariant.QUESTION:
        return _mean(gains)
    return _mean([max(-1.0, min(1.0, g)) for g in gains])


def reward_from_input(x: float, alpha: float, beta: float) -> float:
    """alpha * sigmoid(beta * x), stable for any magnitude."""
    x = beta * x
    if x >= 0:
        return alpha / (1.0 + math.exp(-x))
    ex = math.exp(x)
    return alpha * ex / (1.0 + ex)
