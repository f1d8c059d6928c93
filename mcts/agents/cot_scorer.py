"""A prompted rating scorer: the baseline the IG reward is compared with in the ranking analysis.

The model is asked to rate, from 1 to 10, how well an interaction history progresses
toward answering the question (the paper's "prompted chain-of-thought scorer"
comparison). Nothing is sampled: the rating is read from the model's next-token
distribution right after `Rating:` as an expectation,

    E = sum_r r * p(r) / sum_r p(r),   r = 1..10,

so the same history always gets the same score. With tokenizers that write " 10" as
" ", "1", "0" (SmolLM2, Qwen) one forward pass over prompt + " 1" gives everything:
p(r) for r = 2..9 is the probability of digit r, p(10) = p("1") * p("0" | "1") and
p(1) = p("1") * (1 - p("0" | "1")). Tokenizers where "10" is one token need only the
first distribution. Other tokenizers are refused with a clear error.

`CotScorer` implements the `Scorer` protocol (reward = E in [1, 10]; alpha, beta and
the IG prompt are ignored; perplexities are NaN because none is measured), so it can
re-score a tree's sibling groups without re-running the policy or the tools. It is
for analysis, not for steering a search. torch is imported where used.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcts.search.protocols import DEFAULT_IG_PROMPT, Usage
from mcts.search.steps import IGScore

RATING_INSTRUCTION = (
    "You judge an agent that answers a question by querying a knowledge base step by step.\n\n"
    "Question: {question}\n\n"
    "Interaction history so far:\n{history}\n\n"
    "Think about whether these steps found the entities and relations the question needs "
    "and whether the last result answers it. Rate from 1 (useless) to 10 (the answer is found) "
    "how well this history progresses toward answering the question. Reply with the number only."
)
RATING_LEAD = "Rating:"  # the assistant's reply starts here; the next token is the rating
_RESERVED_TOKENS = 64  # room kept for the question, the instruction's tail and the rating


@dataclass(frozen=True)
class RatingTokens:
    """Token ids that spell the ratings after the lead."""

    shared: tuple[int, ...]  # ids every rating starts with (e.g. the space)
    digits: tuple[int, ...]  # ratings 1..9: one id each
    ten: tuple[int, ...]  # rating 10: one id, or (id of "1", id of "0")


def rating_tokens(tokenizer: Any) -> RatingTokens:
    spelled = [tuple(tokenizer(f" {r}", add_special_tokens=False)["input_ids"]) for r in range(1, 11)]
    shared: list[int] = []
    for column in zip(*spelled, strict=False):
        if len(set(column)) != 1:
            break
        shared.append(column[0])
    rest = [s[len(shared) :] for s in spelled]
    ok_digits = all(len(r) == 1 for r in rest[:9])
    ten = rest[9]
    ok_ten = len(ten) == 1 or (len(ten) == 2 and ten[0] == rest[0][0])
    if not (ok_digits and ok_ten and len(set(rest[:9])) == 9):
        raise ValueError(
            "this tokenizer does not spell ratings 1-10 as single digit tokens; the CoT scorer needs that"
        )
    return RatingTokens(tuple(shared), tuple(r[0] for r in rest[:9]), tuple(ten))


def expected_rating(
    p_next: Sequence[float], p_after_one: Sequence[float] | None, tokens: RatingTokens
) -> float:
    """E[rating] from the next-token probabilities (and those after "1" for a two-token 10)."""
    probs = [p_next[t] for t in tokens.digits]
    if len(tokens.ten) == 1:
        probs.append(p_next[tokens.ten[0]])
    else:
        if p_after_one is None:
            raise ValueError("a two-token 10 needs the distribution after '1'")
        zero = p_after_one[tokens.ten[1]]
        one = probs[0]
        probs[0] = one * (1.0 - zero)
        probs.append(one * zero)
    total = sum(probs)
    if total <= 0 or not math.isfinite(total):
        return 5.5  # no mass on any rating: the midpoint, i.e. no preference
    return sum((i + 1) * p for i, p in enumerate(probs)) / total


class CotScorer:
    """Rating scorer over one loaded model (`mcts.agents.models.LoadedModel`)."""

    name = "cot-rating"

    def __init__(
        self, model: Any, *, instruction: str = RATING_INSTRUCTION, max_tokens: int | None = None
    ) -> None:
        self.model = model
        self.instruction = instruction
        self.tokens = rating_tokens(model.tokenizer)
        self.max_tokens = model.max_context if max_tokens is None else min(max_tokens, model.max_context)
        self.usage = Usage()

    def _encode(self, text: str) -> list[int]:
        return list(self.model.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def _prompt_ids(self, question: str, history: str) -> tuple[list[int], bool]:
        """Chat-formatted prompt ending in the rating lead; the history is cut from the left to fit."""
        sentinel = "\u0000HISTORY\u0000"
        user = self.instruction.format(question=question.strip(), history=sentinel)
        if self.model.has_chat_template:
            rendered = self.model.tokenizer.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
        else:
            rendered = user + "\n\n"
        head, tail = rendered.split(sentinel)
        head_ids, tail_ids = self._encode(head), self._encode(tail + RATING_LEAD)
        history_ids = self._encode(history.strip() or "(no steps yet)")
        room = self.max_tokens - len(head_ids) - len(tail_ids) - _RESERVED_TOKENS
        truncated = len(history_ids) > room
        if truncated:
            history_ids = history_ids[len(history_ids) - max(room, 0) :]
        return head_ids + history_ids + tail_ids, truncated

    def _distributions(self, ids: list[int]) -> tuple[list[float], list[float] | None]:
        import torch

        two = len(self.tokens.ten) == 2
        seq = ids + list(self.tokens.shared) + ([self.tokens.digits[0]] if two else [])
        keep = 2 if two else 1
        x = torch.tensor([seq], device=self.model.device)
        with torch.no_grad():
            try:
                logits = self.model.model(input_ids=x, logits_to_keep=keep).logits
            except TypeError:  # older model classes without logits_to_keep
                logits = self.model.model(input_ids=x).logits
        probs = torch.softmax(logits[0, -keep:].float(), dim=-1)
        return probs[0].tolist(), (probs[1].tolist() if two else None)

    def rate(self, question: str, history: str) -> tuple[float, int, bool]:
        """(expected rating, tokens read, history truncated) for one history."""
        ids, truncated = self._prompt_ids(question, history)
        p_next, p_after_one = self._distributions(ids)
        return expected_rating(p_next, p_after_one, self.tokens), len(ids), truncated

    def score(
        self,
        question: str,
        cleaned_histories: Sequence[str],
        *,
        alpha: float = 2.0,
        beta: float = 10.0,
        prompt: str = DEFAULT_IG_PROMPT,
        variant: str = "paper",  # IG variants do not apply to a rating; accepted for the protocol
    ) -> list[IGScore]:
        out: list[IGScore] = []
        start = time.perf_counter()
        for history in cleaned_histories:
            rating, n_tokens, truncated = self.rate(question, history)
            self.usage.calls += 1
            self.usage.tokens += n_tokens
            out.append(IGScore(math.nan, math.nan, rating, tokens=n_tokens, truncated=truncated))
        self.usage.seconds += time.perf_counter() - start
        return out
