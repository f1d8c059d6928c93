"""Score continuations of one prompt with a causal LM: mean log-likelihood per token.

The guided policy asks: given this prompt, how likely is each candidate step
`Thought: ...\\nAction: ...`? All candidates share the prompt, so the prompt runs
through the model ONCE (its key/value cache kept); the caches of the last few prompts
are kept, and a prompt that extends one of them (the next step of the same path) runs
only its new tokens. Prompt and candidate are tokenised separately and the ids
concatenated (as the IG scorer does), so a candidate's tokens never depend on the
prompt's last characters.

The candidates then run PACKED: merged into a token trie (their shared beginnings, e.g.
"Thought: Look at the relations of", once), laid out in one row on top of the prompt's
cache, each token at its own position (the prompt's length + its depth) with an attention
mask that lets it see the prompt and its ancestors only. A candidate's last token is only
a target, so it is never run. One forward pass scores them all; the prompt's cache is
used in place (cropped back afterwards), never copied. (`packed=False` keeps the earlier
path for the benchmark: right-padded batches, each on a copy of the cache repeated once
per row; bench/demo_speed.py measures both.) Target log-probs are gathered per position.

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
# Candidate tokens per packed pass: the pass keeps logits of 49k floats per token
# (SmolLM2), ~200 KB each, and a mask of packed x (prompt + packed) entries.
PACKED_TOKENS = 1024
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

    def __init__(self, loaded: Any, *, batch_size: int = 16, packed: bool = True) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.loaded = loaded
        self.batch_size = batch_size  # rows per padded batch (packed=False only)
        self.packed = packed
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
        tok = self.loaded.tokenizer
        segments = [prompt] if isinstance(prompt, str) else list(prompt)
        cont_ids = [self._ids(c) or [tok.eos_token_id] for c in continuations]
        longest = max(len(c) for c in cont_ids)
        prefix = self._prompt_ids(segments) or [tok.eos_token_id]
        # Keep the end of a prompt that would not fit (the question and latest steps).
        prefix = prefix[-max(1, self.loaded.max_context - longest) :]
        prefix_len = len(prefix)
        cache, first = self._prefix_state(prefix)  # `first` predicts each candidate's token 1
        with torch.inference_mode():
            if self.packed:
                results, passes = self._score_packed(cache, first, prefix_len, cont_ids)
            else:
                results, passes = self._score_padded(cache, first, prefix_len, cont_ids)
        self.usage.candidate_passes += passes
        self.usage.tokens += sum(len(c) for c in cont_ids)
        self.usage.seconds += time.perf_counter() - started
        return results

    def _score_packed(
        self, cache: Any, first: Any, prefix_len: int, cont_ids: list[list[int]]
    ) -> tuple[list[ContinuationScore], int]:
        """The candidates as one token trie per pass (see the module docstring)."""
        results: list[ContinuationScore] = []
        passes = 0
        chunk: list[list[int]] = []
        for i, ids in enumerate(cont_ids):
            chunk.append(ids)
            nxt = len(cont_ids[i + 1]) if i + 1 < len(cont_ids) else None
            if nxt is not None and sum(map(len, chunk)) + nxt <= PACKED_TOKENS:
                continue
            results += self._score_trie(cache, first, prefix_len, chunk)
            passes += 1
            chunk = []
        return results, passes

    def _score_trie(
        self, cache: Any, first: Any, prefix_len: int, chunk: list[list[int]]
    ) -> list[ContinuationScore]:
        import torch

        trie = TokenTrie(chunk)
        device, dtype = self.loaded.device, self.loaded.model.dtype
        logprobs = None
        if trie.run:  # else every candidate is one token: `first` scores them all
            width = len(trie.run)
            # Each run node sees the prompt, its ancestors and itself.
            allowed = torch.ones(width, prefix_len + width, dtype=torch.bool)
            allowed[:, prefix_len:] = torch.tensor(trie.ancestry())
            mask = torch.zeros(allowed.shape, dtype=dtype)
            mask.masked_fill_(~allowed, torch.finfo(dtype).min)
            positions = torch.tensor([prefix_len + trie.depth[n] for n in trie.run])
            try:
                out = self.loaded.model(
                    torch.tensor([[trie.token[n] for n in trie.run]], device=device),
                    position_ids=positions.unsqueeze(0).to(device),
                    attention_mask=mask[None, None].to(device),
                    use_cache=True,
                    **{self._kw: cache},
                )
            except BaseException:
                self._prefixes.clear()  # some layers may hold the candidates' tokens: rebuild next time
                raise
            cache.crop(-width)  # the prompt's cache is shared: drop the candidates' tokens (a view)
            logprobs = torch.log_softmax(out.logits[0].float(), dim=-1)
        results = []
        for ids, path in zip(chunk, trie.paths, strict=True):
            total = first[ids[0]]
            if len(ids) > 1:
                assert logprobs is not None
                rows = torch.tensor([trie.row[n] for n in path[:-1]], device=logprobs.device)
                total = (
                    total
                    + logprobs[rows].gather(-1, torch.tensor(ids[1:], device=logprobs.device)[:, None]).sum()
                )
            results.append(ContinuationScore(float(total) / len(ids), len(ids)))
        return results

    def _score_padded(
        self, cache: Any, first: Any, prefix_len: int, cont_ids: list[list[int]]
    ) -> tuple[list[ContinuationScore], int]:
        """The earlier path: right-padded batches on copies of the repeated prompt cache."""
        import torch

        tok, model, device = self.loaded.tokenizer, self.loaded.model, self.loaded.device
        results: list[ContinuationScore | None] = [None] * len(cont_ids)
        passes = 0
        longest = max(len(c) for c in cont_ids)
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
        return [r for r in results if r is not None], passes


class TokenTrie:
    """Candidates' token ids merged on shared prefixes ("Thought: Look at the relations of").

    Node n holds `token[n]` at `depth[n]` (0 = a candidate's first token) under
    `parent[n]` (-1: the prompt). `paths[c]` are candidate c's nodes. Only nodes with a
    child are run through the model (`run`, parents before children; `row[n]` = n's row
    there): a candidate's last token is a target and is never read.
    """

    def __init__(self, candidates: Sequence[Sequence[int]]) -> None:
        self.token: list[int] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.paths: list[list[int]] = []
        index: dict[tuple[int, int], int] = {}
        for ids in candidates:
            node, path = -1, []
            for t in ids:
                key = (node, t)
                if key not in index:
                    index[key] = len(self.token)
                    self.token.append(t)
                    self.parent.append(node)
                    self.depth.append(self.depth[node] + 1 if node >= 0 else 0)
                node = index[key]
                path.append(node)
            self.paths.append(path)
        has_child = {p for p in self.parent if p >= 0}
        self.run = [n for n in range(len(self.token)) if n in has_child]
        self.row = {n: r for r, n in enumerate(self.run)}

    def ancestry(self) -> list[list[bool]]:
        """ancestry()[i][j]: run node j is run node i or one of its ancestors."""
        rows: list[list[bool]] = []
        for n in self.run:
            parent = self.parent[n]
            row = list(rows[self.row[parent]]) if parent >= 0 else [False] * len(self.run)
            row[self.row[n]] = True
            rows.append(row)
        return rows


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
