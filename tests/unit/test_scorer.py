"""IG scoring: the reward formula, the one-pass scorer against the naive reference
(with the real bundled model), truncation, empty and Unicode histories, the constant scorer."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence

import pytest

from mcts.agents.models import LoadedModel, load_model
from mcts.agents.scorer import (
    ConstantScorer,
    IGScorer,
    NaiveIGScorer,
    NodeNLL,
    TokenizedNode,
    ig_input,
    ig_reward,
    plan_batches,
)
from mcts.search.settings import IGVariant
from mcts.search.steps import IGScore

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTION = "What is the place of birth of the director of Inception?"
SPARQL = "SELECT ?x WHERE { ns:m.04f9z ns:people.person.place_of_birth ?x }"
BASE = f'Action: SearchNodes()\nAction: ExecuteSPARQL("{SPARQL}")\n'
HISTORIES = [
    BASE + "Observation: London",
    BASE + "Observation: " + ", ".join(f"Film {i} (directed {1990 + i})" for i in range(12)),
    "",
    'Action: SearchNodes()\nObservation: "Zürich" | Description: Größte Stadt der Schweiz… 東京 🚀 — Москва',
    BASE + "Observation: Error: the query returned no result",
]


def _assert_agree(fast: list[IGScore], naive: list[IGScore]) -> None:
    assert len(fast) == len(naive)
    for f, n in zip(fast, naive, strict=True):
        # fp32 noise is ~5e-7 nats in log PPL; PPLs compared relatively, rewards absolutely.
        assert f.ppl_history == pytest.approx(n.ppl_history, rel=1e-4)
        assert f.ppl_with_question == pytest.approx(n.ppl_with_question, rel=1e-4)
        assert abs(f.reward - n.reward) < 1e-4
        assert (f.tokens, f.truncated) == (n.tokens, n.truncated)
        # What the inspector's IG lens reads agrees too, token by token.
        assert f.detail is not None and n.detail is not None
        assert f.detail.history_tokens == n.detail.history_tokens
        assert f.detail.question_pieces == n.detail.question_pieces
        assert f.detail.question_nlls == pytest.approx(n.detail.question_nlls, abs=1e-4)
        assert f.detail.base_question_nlls == pytest.approx(n.detail.base_question_nlls, abs=1e-4)


def test_ig_reward_matches_the_worked_examples() -> None:
    assert ig_reward(20, 16, alpha=2, beta=10) == pytest.approx(1.81, abs=5e-3)
    assert ig_reward(20, 21, alpha=2, beta=10) == pytest.approx(0.76, abs=5e-3)
    assert ig_reward(20, 20) == pytest.approx(1.0)  # no information: alpha / 2


def test_ig_reward_is_stable_at_extreme_ratios() -> None:
    assert ig_reward(1e300, 1.0) == pytest.approx(2.0)
    assert ig_reward(1.0, 1e300) == pytest.approx(0.0, abs=1e-300)
    with pytest.raises(ValueError):
        ig_reward(0.0, 1.0)


def test_batches_group_similar_lengths_and_respect_the_row_limit() -> None:
    lengths = [100, 460, 300, 290, 150]
    assert plan_batches(lengths, batch_size=8, max_padding=math.inf) == [[1, 2, 3, 4, 0]]
    assert plan_batches(lengths, batch_size=2, max_padding=math.inf) == [[1, 2], [3, 4], [0]]
    assert plan_batches(lengths, batch_size=8, max_padding=0.25) == [[1, 2], [3], [4, 0]]
    assert plan_batches(lengths, batch_size=8, max_padding=0.0) == [[1], [2], [3], [4], [0]]
    assert plan_batches([], batch_size=8, max_padding=0.25) == []


def test_ig_variants_read_the_documented_nlls() -> None:
    node = NodeNLL(log_ppl_history=3.0, log_ppl_with_question=2.5, question_nlls=(1.0, 4.0))
    base = (2.0, 1.0)  # without the history: token 1 harder (+1), token 2 easier (-3)
    assert ig_input(IGVariant.PAPER, node) == pytest.approx(0.5)
    assert ig_input(IGVariant.QUESTION, node, base) == pytest.approx((1.0 - 3.0) / 2)
    assert ig_input(IGVariant.QUESTION_CLIPPED, node, base) == pytest.approx((1.0 - 1.0) / 2)
    with pytest.raises(ValueError):
        ig_input(IGVariant.QUESTION, node, ())


def test_constant_scorer_gives_its_value_and_runs_no_model() -> None:
    scorer = ConstantScorer(0.5)
    scores = scorer.score(QUESTION, ["a", "", "b"], alpha=2, beta=10)
    assert [s.reward for s in scores] == [0.5, 0.5, 0.5]
    assert all(math.isnan(s.ppl_history) and math.isnan(s.ppl_with_question) for s in scores)
    assert scorer.usage.calls == 0 and scorer.score(QUESTION, [], alpha=2, beta=10) == []
    assert all(s.detail is None for s in scores)  # nothing measured, nothing to explain
    with pytest.raises(ValueError):
        ConstantScorer(math.inf)


@pytest.fixture(scope="module")
def model() -> Iterator[LoadedModel]:
    import torch

    # On a CPU shared by several processes one torch thread ran these tests ~5x faster
    # than two (measured); the results agree either way. Restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_model()  # cached process-wide: every test shares one copy
    torch.set_num_threads(threads)


class RememberedNaive(NaiveIGScorer):
    """The naive reference, writing its NLLs per node (token ids) into `memo`; with `reuse`
    it takes the nodes already there from it instead of running them again, so the tests
    that compare against nodes scored naively before share that pass (the naive arithmetic
    is deterministic). Without `reuse` every pass runs and is counted as usual."""

    def __init__(
        self, model: LoadedModel, memo: dict[TokenizedNode, NodeNLL], *, reuse: bool = True, **options
    ) -> None:
        super().__init__(model, **options)
        self.memo, self.reuse = memo, reuse

    def _nlls(self, nodes: Sequence[TokenizedNode]) -> tuple[list[NodeNLL], int, int]:
        todo = [n for n in nodes if not (self.reuse and n in self.memo)]
        got, invocations, tokens = super()._nlls(todo)
        self.memo.update(zip(todo, got, strict=True))
        return [self.memo[n] for n in nodes], invocations, tokens


@pytest.fixture(scope="module")
def naive_memo() -> dict[TokenizedNode, NodeNLL]:
    return {}


@pytest.fixture(scope="module")
def naive_reference(
    model: LoadedModel, naive_memo: dict[TokenizedNode, NodeNLL]
) -> tuple[NaiveIGScorer, list[IGScore]]:
    """The naive scorer after scoring every history (alpha 2, beta 10), and its scores:
    every pass runs and is counted; the module's memo keeps their NLLs."""
    naive = RememberedNaive(model, naive_memo, reuse=False)
    return naive, naive.score(QUESTION, HISTORIES, alpha=2, beta=10)


@pytest.fixture(scope="module")
def default_fast(model: LoadedModel) -> tuple[IGScorer, list[IGScore]]:
    """The scorer as shipped (CPU defaults) after scoring every history (alpha 2, beta 10)."""
    fast = IGScorer(model)
    return fast, fast.score(QUESTION, HISTORIES, alpha=2, beta=10)


@pytest.mark.slow
def test_one_pass_batched_agrees_with_naive_two_pass(model: LoadedModel, naive_reference) -> None:
    fast, (naive, ref) = IGScorer(model, max_padding=math.inf), naive_reference
    got = fast.score(QUESTION, HISTORIES, alpha=2, beta=10)
    _assert_agree(got, ref)
    assert len({s.tokens for s in got}) == len(HISTORIES)  # mixed lengths in one batch
    assert not any(s.truncated for s in got)
    assert all(s.ppl_history > 1 and s.ppl_with_question > 1 and 0 < s.reward < 2 for s in got)
    # Cost accounting: one pass per node against two; the shared chat header runs once.
    assert fast.usage.calls == len(HISTORIES) and naive.usage.calls == 2 * len(HISTORIES)
    # + the no-history pass (the lens's baseline): one call for the fast scorer, two naive.
    assert fast.model_invocations < len(HISTORIES) and naive.model_invocations == 2 * len(HISTORIES) + 2
    assert fast.usage.tokens < sum(s.tokens for s in got) < naive.usage.tokens


@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in IGVariant if v != IGVariant.PAPER])
def test_every_ig_variant_one_pass_agrees_with_naive(
    model: LoadedModel, naive_reference, naive_memo, variant: IGVariant
) -> None:
    histories = HISTORIES[:3]
    fast = IGScorer(model)
    got = fast.score(QUESTION, histories, alpha=2, beta=1, variant=variant)
    ref = RememberedNaive(model, naive_memo).score(QUESTION, histories, alpha=2, beta=1, variant=variant)
    _assert_agree(got, ref)
    invocations = fast.model_invocations
    fast.score(QUESTION, histories[:1], alpha=2, beta=1, variant=variant)
    assert fast.model_invocations == invocations + 1  # the no-history pass is cached per question
    # The study's one-pass-for-all-variants path gives the same rewards.
    every = fast.score_variants(QUESTION, histories, alpha=2, beta=1, variants=list(IGVariant))
    assert every[variant.value] == pytest.approx([s.reward for s in got], abs=1e-6)


@pytest.mark.slow
def test_detail_gives_the_reward_by_the_exact_algebra(default_fast) -> None:
    """x = log PPL(H') - log PPL(H', Q) = m / (n + m) * (a - q), a = log PPL(H'),
    q = the question tokens' mean NLL; the pieces spell the question."""
    got = default_fast[1]
    for s in got:
        d = s.detail
        assert d is not None and d.history_tokens + d.question_tokens == s.tokens - 1
        assert "".join(d.question_pieces).strip() == QUESTION
        a, q = math.log(s.ppl_history), sum(d.question_nlls) / d.question_tokens
        weight = d.question_tokens / (d.history_tokens + d.question_tokens)
        x = math.log(s.ppl_history / s.ppl_with_question)
        assert weight * (a - q) == pytest.approx(x, abs=1e-5)
    assert got[0].detail.base_question_nlls == got[2].detail.base_question_nlls  # one cached baseline


@pytest.mark.slow
def test_cpu_default_runs_rows_unpadded_and_agrees_with_naive(default_fast, naive_reference) -> None:
    # On CPU a padded token costs as much as a real one, so the default pads nothing.
    fast, got = default_fast
    assert fast.max_padding == 0.0
    _assert_agree(got, naive_reference[1])
    assert fast.usage.tokens < sum(s.tokens for s in got)  # the shared prefix still runs once


@pytest.mark.slow
def test_small_batches_and_plain_text_layout_agree_with_naive(model: LoadedModel) -> None:
    histories = [HISTORIES[0], HISTORIES[2], HISTORIES[3]]
    fast = IGScorer(model, chat_template=False, batch_size=2, max_padding=math.inf)
    naive = NaiveIGScorer(model, chat_template=False)
    _assert_agree(
        fast.score(QUESTION, histories, alpha=2, beta=10), naive.score(QUESTION, histories, alpha=2, beta=10)
    )
    assert fast.model_invocations == 3  # batches of 2 + 1 and the no-history pass; no common prefix


@pytest.mark.slow
def test_long_history_is_cut_from_the_left_keeping_prompt_and_question(
    model: LoadedModel, naive_reference, naive_memo
) -> None:
    # The memo is keyed by token ids: the cut history is a new node, the others are not.
    fast, naive = IGScorer(model, max_tokens=160), RememberedNaive(model, naive_memo, max_tokens=160)
    histories = HISTORIES[:3]
    got = fast.score(QUESTION, histories, alpha=2, beta=10)
    _assert_agree(got, naive.score(QUESTION, histories, alpha=2, beta=10))
    assert [s.truncated for s in got] == [False, True, False]
    assert got[1].tokens == 160
    node = fast.builder.build(QUESTION, HISTORIES[1])
    text = model.tokenizer.decode(node.ids)
    assert text.endswith(
        "Based on this interaction history, the original question is:<|im_end|>\n"
        "<|im_start|>assistant\n" + QUESTION
    )
    assert "Film 11 (directed 2001)" in text and "Film 0 " not in text  # the left end went


@pytest.mark.slow
def test_question_too_long_for_the_limit_is_a_clear_error(model: LoadedModel) -> None:
    with pytest.raises(ValueError, match="more than the limit"):
        IGScorer(model, max_tokens=30).score(QUESTION, ["x"], alpha=2, beta=10)


@pytest.mark.slow
def test_prefix_is_the_same_text_with_and_without_the_question(model: LoadedModel) -> None:
    node = IGScorer(model).builder.build(QUESTION, HISTORIES[0])
    prefix = model.tokenizer.decode(node.prefix)
    assert prefix.startswith("<|im_start|>system\n")
    assert "<|im_start|>user\n" + HISTORIES[0] + "\n\nBased on this interaction history" in prefix
    assert prefix.endswith("<|im_start|>assistant\n")
    assert model.tokenizer.decode(node.question) == QUESTION


@pytest.mark.slow
def test_a_history_restating_the_question_earns_a_higher_reward(model: LoadedModel) -> None:
    # Why cleaning exists: a leaked question makes the question easy to predict.
    leaked, clean = IGScorer(model).score(
        QUESTION, [f"Thought: {QUESTION}\nAction: SearchNodes()", "Action: SearchNodes()"], alpha=2, beta=10
    )
    assert leaked.ppl_with_question < clean.ppl_with_question
    assert leaked.reward > clean.reward


def test_core_on_token_ids_handles_identical_and_one_token_apart_sequences() -> None:
    # A tiny random Llama (a test double for speed) exercises the id-level edge cases;
    # the real-model tests above cover real text.
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from mcts.agents.scorer import naive_nlls, one_pass_nlls

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=300,
        max_position_embeddings=512,
    )
    tiny = LlamaForCausalLM(config).eval()
    head = tuple(range(1, 41))
    nodes = [
        TokenizedNode(head + (50, 51), (7, 8)),
        TokenizedNode(head + (50, 51), (7, 8)),  # identical: the shared prefix stops one short
        TokenizedNode(head + (50, 51), (7, 9)),  # differs from the others in its last token only
        TokenizedNode(head + tuple(range(100, 260)), (7, 8, 9)),  # long: a batch of its own
    ]
    ref, ref_calls, _ = naive_nlls(tiny, nodes, device="cpu")
    got, calls, tokens = one_pass_nlls(tiny, nodes, device="cpu", max_padding=0.25)
    assert ref_calls == 8 and calls == 3  # shared 40-token head + batches [long], [3 short]
    assert tokens == 40 + 3 * 4 + (len(nodes[3].ids) - 40)
    short, short_calls, short_tokens = one_pass_nlls(tiny, nodes[:3], device="cpu")
    assert short_calls == 2 and short_tokens == 43 + 3  # each keeps one token of its own
    for a, b in zip(got + short, ref + ref[:3], strict=True):
        assert a.log_ppl_history == pytest.approx(b.log_ppl_history, abs=1e-5)
        assert a.log_ppl_with_question == pytest.approx(b.log_ppl_with_question, abs=1e-5)


@pytest.mark.slow
def test_question_pieces_keep_characters_split_over_tokens_whole(model: LoadedModel) -> None:
    builder = IGScorer(model).builder
    text = "Wo liegt Zürich, 東京 or 🚀?"
    ids = builder.build(text, "").question
    pieces = builder.pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
