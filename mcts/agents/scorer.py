"""The IG reward (docs/method.md#the-ig-reward): fast one-pass scorer, naive reference, constant.
The formula itself, for every IG variant, is `mcts.search.ig_formula`.

r = alpha * sigmoid(beta * log(PPL(H') / PPL(H', Q))), where H' is the cleaned
history followed by the fixed prompt and Q the original question.

Text layout (identical for both perplexities; only the question is appended):
- chat template on (default when the tokenizer has one): one user message holding
  `<history>\\n\\n<prompt>` (just `<prompt>` for an empty history), rendered by the
  template with whatever it adds (SmolLM2: its default system prompt) and the assistant
  header it adds for a reply; the question is the assistant's reply, without
  the closing end-of-turn token. The prefix is everything before the question tokens.
- chat template off: `[BOS] <history>\\n\\n<prompt>` then ` <question>`.
The prefix pieces (template head, history, prompt + template tail) and the question are
tokenised separately and their ids concatenated, so the question's tokens never merge
with the prompt's. A history too long for the context is cut from its left, in tokens;
the template, prompt and question are never cut (IGScore.truncated says so).

Perplexity = exp(mean NLL) over target positions: every token but the first of the
sequence (the first has nothing to be predicted from). log PPL(H') averages the prefix
targets, log PPL(H', Q) averages all targets.

One pass: in a causal LM the logits at prefix positions do not depend on later tokens,
so one forward pass over prefix + question gives both means. Siblings go in right-padded
batches with an attention mask: one batch unless their lengths differ so much that
padding would waste more than `max_padding` (then batches of similar lengths; on CPU,
where a padded token costs as much as a real one, no padding at all by default). Their
longest common token prefix (chat header, shared earlier steps) is run once and its KV
cache reused by every batch. Target log-probs are computed per sequence from its own
hidden states (logsumexp minus the target logit): no full-vocabulary log-softmax over
the padded batch.

What the reward was computed from goes with it (`IGScore.detail`, for the inspector's IG
lens): n, the question's per-token NLLs after the history and its tokens as text, all
from the same pass, and the question's per-token NLLs after the prompt alone, one short
pass per (question, prompt), cached, which the question-only variants read too.

Cost accounting (`usage`): calls = IG forward passes counted per node (one per node
for IGScorer, two for NaiveIGScorer, none for ConstantScorer); tokens = tokens run
through the model (a shared prefix counts once); seconds = wall time in the model.
`model_invocations` counts actual model calls (batches and shared-prefix passes).

This module knows nothing of search, trees or how histories are cleaned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcts.agents.models import LoadedModel
from mcts.search.ig_formula import NodeNLL as NodeNLL  # re-exported: callers import them from here
from mcts.search.ig_formula import ig_input as ig_input
from mcts.search.ig_formula import ig_reward as ig_reward
from mcts.search.ig_formula import ig_reward_from_logs as ig_reward_from_logs
from mcts.search.ig_formula import reward_from_input
from mcts.search.protocols import DEFAULT_IG_PROMPT, Usage
from mcts.search.settings import IGVariant
from mcts.search.steps import IGDetail, IGScore

_SENTINEL = "\u2063HISTORY\u2063"  # marks where the history goes inside the chat template
_MIN_SHARED_PREFIX = 16  # tokens; shorter common prefixes are not worth an extra model call
# Padded tokens allowed per real token in one batch (see plan_batches). On CPU a padded
# token costs as much as a real one and batching buys nothing, so rows run unpadded:
# in bench/scorer.py (5 siblings, 333-578 tokens, one thread, one run) naive 30.1 s,
# no padding 11.3 s (2.66x), <= 25% padding 12.5 s (2.41x). On a GPU wider batches pay.
CPU_MAX_PADDING = 0.0
DEFAULT_MAX_PADDING = 0.25
_NLL_CHUNK = 128  # positions per logits chunk: 128 x 49k vocab x 4 B = 25 MB (SmolLM2)


@dataclass(frozen=True)
class TokenizedNode:
    """Token ids of one node's scored text: prefix (history + prompt, chat-wrapped) and question."""

    prefix: tuple[int, ...]
    question: tuple[int, ...]
    truncated: bool = False

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prefix + self.question


class PromptBuilder:
    """Turns (question, cleaned history, prompt) into `TokenizedNode`s for one tokenizer."""

    def __init__(self, tokenizer: Any, *, chat_template: bool, max_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.max_tokens = max_tokens
        self._frames: dict[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def _encode(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else ()

    def _frame(self, prompt: str, has_history: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(ids before the history, ids after it up to where the question starts)."""
        key = (prompt, has_history)
        if key not in self._frames:
            after = f"\n\n{prompt}" if has_history else prompt
            if self.chat_template:
                user = f"{_SENTINEL}{after}"
                rendered = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
                )
                if rendered.count(_SENTINEL) != 1:
                    raise ValueError("the tokenizer's chat template does not keep the user message verbatim")
                head, tail = rendered.split(_SENTINEL)
                self._frames[key] = (self._encode(head), self._encode(tail))
            else:
                bos = self.tokenizer.bos_token_id
                self._frames[key] = (() if bos is None else (bos,), self._encode(after))
        return self._frames[key]

    def build(self, question: str, history: str, prompt: str = DEFAULT_IG_PROMPT) -> TokenizedNode:
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        history_ids = self._encode(history.strip())
        head, tail = self._frame(prompt, bool(history_ids))
        q_ids = self._encode(question if self.chat_template else f" {question}")
        room = self.max_tokens - len(head) - len(tail) - len(q_ids)
        if room < 0:
            raise ValueError(
                f"question and prompt alone take {len(head) + len(tail) + len(q_ids)} tokens, "
                f"more than the limit of {self.max_tokens}"
            )
        truncated = len(history_ids) > room
        if truncated:
            history_ids = history_ids[len(history_ids) - room :] if room else ()
        return TokenizedNode(prefix=head + history_ids + tail, question=q_ids, truncated=truncated)

    def pieces(self, ids: Sequence[int]) -> tuple[str, ...]:
        """Each token of `ids` as the text it adds: decode(ids[:i+1]) minus decode(ids[:i]).

        Decoding the growing prefix, not each token alone, keeps a character split over
        several byte-level tokens whole: it belongs to the token that completes it (the
        tokens before it add ""). The pieces join to decode(ids).
        """
        pieces, shown = [], ""
        for i in range(len(ids)):
            text = self.tokenizer.decode(list(ids[: i + 1]))
            if (text.endswith("\ufffd") and i < len(ids) - 1) or not text.startswith(shown):
                pieces.append("")  # an unfinished character: it shows with a later token
                continue
            pieces.append(text[len(shown) :])
            shown = text
        return tuple(pieces)


# ---------------------------------------------------------------- core on token ids


def _logits_fn(model: Any) -> Callable[[Any], Any] | None:
    """hidden states -> logits, when the model's head is a plain linear map (else None)."""
    cfg = model.config
    if getattr(cfg, "final_logit_softcapping", None) or getattr(cfg, "logit_scale", None):
        return None
    head = model.get_output_embeddings()
    if head is None:
        return None
    return lambda h: head(h.to(head.weight.device))


def _run(model: Any, ids: Any, mask: Any, cache: Any = None) -> tuple[Any, Any, bool]:
    """(hidden states or logits, KV cache, whether the first output is hidden states)."""
    if _logits_fn(model) is not None:
        out = model.get_decoder()(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True)
        return out.last_hidden_state, out.cache, True
    out = model(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True)
    return out.logits, out.cache, False


def _target_nll(model: Any, states: Any, is_hidden: bool, targets: Any) -> Any:
    """NLL (float32) of `targets` given per-position states of one sequence [T, H or V].

    In chunks of positions, so at most [_NLL_CHUNK, vocab] logits exist at a time.
    """
    import torch

    to_logits = _logits_fn(model) if is_hidden else None
    out = [torch.zeros(0, device=states.device)]
    for start in range(0, states.shape[0], _NLL_CHUNK):
        part = states[start : start + _NLL_CHUNK]
        logits = (to_logits(part) if to_logits is not None else part).float()
        tgt = targets[start : start + _NLL_CHUNK].to(logits.device)
        out.append(torch.logsumexp(logits, dim=-1) - logits.gather(-1, tgt[:, None]).squeeze(-1))
    return torch.cat([o.to(out[-1].device) for o in out])


def _common_prefix(seqs: Sequence[tuple[int, ...]]) -> int:
    if len(seqs) < 2:
        return 0
    n = min(len(s) for s in seqs) - 1  # every sequence keeps at least one token of its own
    first = seqs[0]
    for i in range(n):
        if any(s[i] != first[i] for s in seqs[1:]):
            return i
    return max(n, 0)


def _means(node: TokenizedNode, nll: Any) -> NodeNLL:
    p = len(node.prefix)  # nll[j] is the NLL of token j + 1: the question's tokens are nll[p - 1:]
    return NodeNLL(float(nll[: p - 1].mean()), float(nll.mean()), tuple(float(x) for x in nll[p - 1 :]))


def plan_batches(lengths: Sequence[int], *, batch_size: int, max_padding: float) -> list[list[int]]:
    """Group sequence indices, longest first, into right-padded batches.

    A batch grows while its padded size (rows x longest) stays within
    (1 + max_padding) x its real tokens and it has at most batch_size rows: padding is
    computed like real tokens on CPU and on a compute-bound GPU, so sibling batches of
    very different lengths are split (max_padding = inf: one batch per batch_size rows).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    real = 0
    for i in order:
        if batches and len(batches[-1]) < batch_size:
            width = lengths[batches[-1][0]]
            if width * (len(batches[-1]) + 1) <= (1 + max_padding) * (real + lengths[i]):
                batches[-1].append(i)
                real += lengths[i]
                continue
        batches.append([i])
        real = lengths[i]
    return batches


def one_pass_nlls(
    model: Any,
    nodes: Sequence[TokenizedNode],
    *,
    device: str,
    batch_size: int = 8,
    pad_id: int = 0,
    min_shared_prefix: int = _MIN_SHARED_PREFIX,
    max_padding: float = DEFAULT_MAX_PADDING,
) -> tuple[list[NodeNLL], int, int]:
    """Both mean NLLs of every node from one forward pass per node, batched.

    The nodes' common token prefix (chat header, shared earlier steps), if at least
    `min_shared_prefix` tokens, is run once and its KV cache reused by every batch (a
    huge value switches that off). The rest is batched by `plan_batches`.
    Returns (NLLs in input order, model invocations, tokens run through the model).
    """
    import copy

    import torch

    for node in nodes:
        if len(node.prefix) < 2 or not node.question:
            raise ValueError("a scored sequence needs a prefix of >= 2 tokens and a non-empty question")
    if not nodes:
        return [], 0, 0
    seqs = [node.ids for node in nodes]
    shared = _common_prefix(seqs)
    shared = shared if shared >= min_shared_prefix else 0
    rests = [s[shared:] for s in seqs]
    batches = plan_batches([len(r) for r in rests], batch_size=batch_size, max_padding=max_padding)
    results: dict[int, NodeNLL] = {}
    invocations, tokens = len(batches), sum(len(r) for r in rests)
    with torch.inference_mode():
        prefix_cache, shared_nll, last_state = None, None, None
        if shared:
            ids = torch.tensor([seqs[0][:shared]], device=device)
            states, prefix_cache, is_hidden = _run(model, ids, torch.ones_like(ids))
            shared_nll = _target_nll(model, states[0, :-1], is_hidden, ids[0, 1:])
            last_state = states[0, -1:]
            invocations += 1
            tokens += shared
        for b, idx in enumerate(batches):
            cache = None
            if prefix_cache is not None:
                # The forward pass extends the cache: later batches need their own copy.
                cache = prefix_cache if b == len(batches) - 1 else copy.deepcopy(prefix_cache)
                cache.batch_repeat_interleave(len(idx))
            width = len(rests[idx[0]])
            ids = torch.full((len(idx), width), pad_id, dtype=torch.long, device=device)
            mask = torch.zeros((len(idx), shared + width), dtype=torch.long, device=device)
            for row, i in enumerate(idx):
                ids[row, : len(rests[i])] = torch.tensor(rests[i], device=device)
                mask[row, : shared + len(rests[i])] = 1
            states, _, is_hidden = _run(model, ids, mask, cache)
            for row, i in enumerate(idx):
                n = len(rests[i])
                parts = []
                if shared:
                    # Position shared-1 (last cached) predicts the first token of this row.
                    parts += [shared_nll, _target_nll(model, last_state, is_hidden, ids[row, :1])]
                parts.append(_target_nll(model, states[row, : n - 1], is_hidden, ids[row, 1:n]))
                results[i] = _means(nodes[i], torch.cat(parts))
    return [results[i] for i in range(len(nodes))], invocations, tokens


def naive_nlls(model: Any, nodes: Sequence[TokenizedNode], *, device: str) -> tuple[list[NodeNLL], int, int]:
    """The reference: per node, one pass over the prefix and one over prefix + question,
    each with a full-vocabulary log-softmax. Returns (NLLs, model invocations, tokens)."""
    import torch

    def token_nlls(seq: tuple[int, ...]) -> Any:
        ids = torch.tensor([seq], device=device)
        logits = model(input_ids=ids).logits[0, :-1].float()
        # A full log-softmax, written as x - logsumexp(x): torch's fp32 log_softmax on
        # CPU errs by ~4e-5 nats per token here (measured against fp64), this by ~2e-6.
        logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        return -logp.gather(-1, ids[0, 1:, None].to(logp.device))[:, 0]

    out = []
    with torch.inference_mode():
        for node in nodes:
            prefix, full = token_nlls(node.prefix), token_nlls(node.ids)
            question = tuple(float(x) for x in full[len(node.prefix) - 1 :])
            out.append(NodeNLL(float(prefix.mean()), float(full.mean()), question))
    return out, 2 * len(nodes), sum(len(n.prefix) + len(n.ids) for n in nodes)


# ---------------------------------------------------------------- scorers


class IGScorer:
    """IG rewards with one forward pass per node, siblings batched (implements `Scorer`)."""

    name = "ig"
    passes_per_node = 1

    def __init__(
        self,
        model: LoadedModel,
        *,
        chat_template: bool | None = None,
        max_tokens: int | None = None,
        batch_size: int = 8,
        max_padding: float | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.chat_template = model.has_chat_template if chat_template is None else chat_template
        if self.chat_template and not model.has_chat_template:
            raise ValueError(f"model {model.id!r} has no chat template; use chat_template=False")
        limit = model.max_context if max_tokens is None else min(max_tokens, model.max_context)
        self.builder = PromptBuilder(model.tokenizer, chat_template=self.chat_template, max_tokens=limit)
        self.batch_size = batch_size
        if max_padding is None:
            max_padding = CPU_MAX_PADDING if str(model.device).startswith("cpu") else DEFAULT_MAX_PADDING
        self.max_padding = max_padding
        self.usage = Usage()
        self.model_invocations = 0
        self._base_cache: dict[tuple[str, str], tuple[tuple[float, ...], tuple[str, ...]]] = {}

    def _nlls(self, nodes: Sequence[TokenizedNode]) -> tuple[list[NodeNLL], int, int]:
        pad = self.model.tokenizer.pad_token_id or 0
        return one_pass_nlls(
            self.model.model,
            nodes,
            device=self.model.device,
            batch_size=self.batch_size,
            pad_id=pad,
            max_padding=self.max_padding,
        )

    def _base_question(self, question: str, prompt: str) -> tuple[tuple[float, ...], tuple[str, ...]]:
        """(NLL of each question token after the prompt alone, the tokens as text): one
        short pass per (question, prompt), cached, shared by every node of the question.
        The question is tokenised on its own, so its tokens are the same with any history."""
        key = (question.strip(), prompt)
        if key not in self._base_cache:
            node = self.builder.build(question, "", prompt)
            start = time.perf_counter()
            nlls, invocations, tokens = self._nlls([node])
            self.usage.seconds += time.perf_counter() - start
            self.usage.tokens += tokens
            self.model_invocations += invocations
            if len(self._base_cache) > 256:  # one entry per question: bound it for a long-lived app
                self._base_cache.clear()
            self._base_cache[key] = (nlls[0].question_nlls, self.builder.pieces(node.question))
        return self._base_cache[key]

    def score(
        self,
        question: str,
        cleaned_histories: Sequence[str],
        *,
        alpha: float,
        beta: float,
        prompt: str = DEFAULT_IG_PROMPT,
        variant: IGVariant | str = IGVariant.PAPER,
    ) -> list[IGScore]:
        variant = IGVariant(variant)
        if not cleaned_histories:
            return []
        nodes = [self.builder.build(question, h, prompt) for h in cleaned_histories]
        # Every variant gets the baseline: the inspector's IG lens reads it (steps.IGDetail).
        base, pieces = self._base_question(question, prompt)
        start = time.perf_counter()
        nlls, invocations, tokens = self._nlls(nodes)
        self.usage.seconds += time.perf_counter() - start
        self.usage.calls += self.passes_per_node * len(nodes)
        self.usage.tokens += tokens
        self.model_invocations += invocations
        return [
            IGScore(
                ppl_history=math.exp(n.log_ppl_history),
                ppl_with_question=math.exp(n.log_ppl_with_question),
                reward=reward_from_input(ig_input(variant, n, base), alpha, beta),
                tokens=len(node.ids),
                truncated=node.truncated,
                detail=IGDetail(
                    history_tokens=len(node.prefix) - 1,  # n: every prefix token but the first
                    question_nlls=n.question_nlls,
                    question_pieces=pieces,
                    base_question_nlls=base,
                ),
            )
            for node, n in zip(nodes, nlls, strict=True)
        ]

    def score_variants(
        self,
        question: str,
        cleaned_histories: Sequence[str],
        *,
        alpha: float,
        beta: float,
        variants: Sequence[IGVariant | str],
        prompt: str = DEFAULT_IG_PROMPT,
    ) -> dict[str, list[float]]:
        """Rewards of every variant from ONE pass per node (the scorer study re-scores
        stored trees with all variants; each is a function of the same NLLs)."""
        if not cleaned_histories:
            return {IGVariant(v).value: [] for v in variants}
        nodes = [self.builder.build(question, h, prompt) for h in cleaned_histories]
        needs_base = any(IGVariant(v) != IGVariant.PAPER for v in variants)
        base = self._base_question(question, prompt)[0] if needs_base else ()
        nlls, invocations, tokens = self._nlls(nodes)
        self.usage.calls += self.passes_per_node * len(nodes)
        self.usage.tokens += tokens
        self.model_invocations += invocations
        return {
            IGVariant(v).value: [reward_from_input(ig_input(v, n, base), alpha, beta) for n in nlls]
            for v in variants
        }


class NaiveIGScorer(IGScorer):
    """The reference: two separate passes per node, one node at a time, full log-softmax."""

    name = "ig-naive"
    passes_per_node = 2

    def _nlls(self, nodes: Sequence[TokenizedNode]) -> tuple[list[NodeNLL], int, int]:
        return naive_nlls(self.model.model, nodes, device=self.model.device)


class ConstantScorer:
    """Constant reward for the ablation (paper: CWQ 70.15 -> 57.99). Runs no model.

    Perplexities are NaN (not measured) so no display mistakes them for real values.
    """

    name = "constant"

    def __init__(self, value: float = 1.0) -> None:
        if not math.isfinite(value):
            raise ValueError(f"constant reward must be finite, got {value}")
        self.value = value
        self.usage = Usage()

    def score(
        self,
        question: str,
        cleaned_histories: Sequence[str],
        *,
        alpha: float,
        beta: float,
        prompt: str = DEFAULT_IG_PROMPT,
        variant: IGVariant | str = IGVariant.PAPER,
    ) -> list[IGScore]:
        return [IGScore(math.nan, math.nan, self.value) for _ in cleaned_histories]
