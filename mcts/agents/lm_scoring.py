"""Score continuations of one prompt with a causal LM: mean log-likelihood per token.

The guided policy asks: given this prompt, how likely is each candidate step
`Thought: ...\\nAction: ...`? All candidates share the prompt, so the prompt runs
through the model ONCE (its key/value cache kept); each batch of candidates then runs
only its own tokens on top of a copy of that cache. The caches of the last few prompts
are kept: a prompt that extends one of them (the next step of the same path) runs only
its new tokens. Prompt and candidate are
tokenised separately and the ids concatenated (as the IG scorer does), so a candidate's
tokens never depend on the prompt's last characters. Candidates in a batch are
right-padded; a causal model's real tokens never attend to the pads after them, so no
mask is needed, and the log-probs at pad positions are simply not read. Target
log-probs are gathered per position (no full log-softmax kept over the batch).

`naive_continuation_logprobs` is the one-sequence-at-a-time reference the tests compare
against. This module knows nothing of prompts, tools or search.
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcts.search.protocols import Usage

# Batches are shrunk so that batch x (prompt + candidate) tokens stays under this
# budget: the copied key/value cache grows with both (46 KB per token for SmolLM2-135M).
TOKEN_BUDGET_PER_BATCH = 24_000
# Prompt caches kept for reuse (each ~46 KB per token for SmolLM2-135M): a search
# path's prompt grows by whole steps, so the parent's cache usually serves the child.
PREFIXES_KEPT = 6


@dataclass(frozen=True)
class ContinuationScore:
    mean_logprob: float  # mean log p(token) over the continuation's tokens (nats)
    tokens: int


class ContinuationScorer(Protocol):
    usage: Usage

    def score(self, prompt: str | Sequence[str], continuations: Sequence[str]) -> list[ContinuationScore]: ...


def _cache_kwarg(model: Any) -> str:
    # transformers 5 renamed `past_key_values` to `cache` in forward(); older models keep it.
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class LMContinuationScorer:
    """Batched, prefix-cached continuation scoring with one loaded model."""

    def __init__(self, loaded: Any, *, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.loaded = loaded
        self.batch_size = batch_size
        self.usage = Usage()
        self._kw = _cache_kwarg(loaded.model)
        self._segment_ids: dict[str, list[int]] = {}
        self._prefixes: dict[
            tuple[int, ...], tuple[Any, Any]
        ] = {}  # LRU: prompt ids -> (cache, next log-probs)

    def _ids(self, text: str) -> list[int]:
        return list(self.loaded.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prompt_ids(self, segments: Sequence[str]) -> list[int]:
        ids: list[int] = []
        for seg in segments:
            if seg not in self._segment_ids:
                if len(self._segment_ids) > 4096:
                    self._segment_ids.clear()
                self._segment_ids[seg] = self._ids(seg)
            ids += self._segment_ids[seg]
        return ids

    def _prefix_state(self, prefix: list[int]) -> tuple[Any, Any]:
        """(key/value cache after `prefix`, log-probs of the token after it).

        Reuses the stored prompt sharing the longest common prefix: its cache is copied,
        cropped to the shared length and only the remaining tokens are run.
        """
        import torch

        best, shared = None, 0
        for key in self._prefixes:
            n = 0
            for a, b in zip(key, prefix, strict=False):
                if a != b:
                    break
                n += 1
            if n > shared:
                best, shared = key, n
        if best is not None and shared == len(best) == len(prefix):
            self._prefixes[best] = self._prefixes.pop(best)  # most recently used last
            return self._prefixes[best]
        kwargs: dict[str, Any] = {}
        start = 0
        if best is not None:
            start = min(shared, len(prefix) - 1)  # run at least one token for its logits
            cache = copy.deepcopy(self._prefixes[best][0])
            surplus = cache.get_seq_length() - start
            if surplus > 0:
                cache.crop(-surplus)  # negative = tokens to drop (the form every version accepts)
            kwargs[self._kw] = cache
            kwargs["position_ids"] = torch.arange(start, len(prefix), device=self.loaded.device).unsqueeze(0)
        with torch.inference_mode():
            out = self.loaded.model(
                torch.tensor([prefix[start:]], device=self.loaded.device), use_cache=True, **kwargs
            )
        self.usage.candidate_passes += 1
        self.usage.tokens += len(prefix) - start
        state = (
            getattr(out, "cache", None) or out.past_key_values,
            torch.log_softmax(out.logits[0, -1].float(), dim=-1),
        )
        if len(self._prefixes) >= PREFIXES_KEPT:
            self._prefixes.pop(next(iter(self._prefixes)))  # least recently used
        self._prefixes[tuple(prefix)] = state
        return state

    def score(self, prompt: str | Sequence[str], continuations: Sequence[str]) -> list[ContinuationScore]:
        """Mean log-prob per token of each continuation after `prompt`.

        `prompt` may be given as segments (e.g. one per chat message) whose texts join to
        the prompt: each is tokenised on its own, so a prompt that extends an earlier one
        by whole segments shares its token prefix, and that prefix's cache is reused.
        """
        import torch

        if not continuations:
            return []
        started = time.perf_counter()
        tok, model, device = self.loaded.tokenizer, self.loaded.model, self.loaded.device
        segments = [prompt] if isinstance(prompt, str) else list(prompt)
        cont_ids = [self._ids(c) or [tok.eos_token_id] for c in continuations]
        longest = max(len(c) for c in cont_ids)
        prefix = self._prompt_ids(segments) or [tok.eos_token_id]
        # Keep the end of a prompt that would not fit (the question and latest steps).
        prefix = prefix[-max(1, self.loaded.max_context - longest) :]
        prefix_len = len(prefix)
        cache, first = self._prefix_state(prefix)  # `first` predicts each candidate's token 1
        results: list[ContinuationScore | None] = [None] * len(continuations)
        passes = 0
        with torch.inference_mode():
            per_batch = max(1, min(self.batch_size, TOKEN_BUDGET_PER_BATCH // (prefix_len + longest)))
            # Similar lengths together: less padding.
            order = sorted(range(len(cont_ids)), key=lambda i: len(cont_ids[i]))
            pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
            for start in range(0, len(order), per_batch):
                idx = order[start : start + per_batch]
                width = max(len(cont_ids[i]) for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                for row, i in enumerate(idx):
                    ids[row, : len(cont_ids[i])] = torch.tensor(cont_ids[i])
                ids = ids.to(device)
                batch_cache = copy.deepcopy(cache)
                batch_cache.batch_repeat_interleave(len(idx))
                positions = torch.arange(prefix_len, prefix_len + width, device=device)
                step = model(
                    ids,
                    position_ids=positions.unsqueeze(0).expand(len(idx), -1),
                    use_cache=True,
                    **{self._kw: batch_cache},
                )
                passes += 1
                logits = step.logits[:, :-1].float()  # position j predicts token j + 1
                for row, i in enumerate(idx):
                    n = len(cont_ids[i])
                    target = ids[row, :n]
                    total = first[target[0]]
                    if n > 1:
                        lp = torch.log_softmax(logits[row, : n - 1], dim=-1)
                        total = total + lp.gather(-1, target[1:].unsqueeze(-1)).sum()
                    results[i] = ContinuationScore(float(total) / n, n)
                del batch_cache
        self.usage.candidate_passes += passes
        self.usage.tokens += sum(len(c) for c in cont_ids)
        self.usage.seconds += time.perf_counter() - started
        return [r for r in results if r is not None]


def naive_continuation_logprobs(
    loaded: Any, prompt: str | Sequence[str], continuation: str
) -> ContinuationScore:
    """Reference: one full forward pass over prompt + continuation, no cache, no batch."""
    import torch

    tok = loaded.tokenizer

    def ids(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    segments = [prompt] if isinstance(prompt, str) else list(prompt)
    prefix = [i for seg in segments for i in ids(seg)]
    cont = ids(continuation)
    seq = torch.tensor([prefix + cont], device=loaded.device)
    with torch.inference_mode():
        logits = loaded.model(seq).logits[0].float()
    lp = torch.log_softmax(logits[len(prefix) - 1 : -1], dim=-1)
    total = lp.gather(-1, seq[0, len(prefix) :].unsqueeze(-1)).sum()
    return ContinuationScore(float(total) / len(cont), len(cont))
