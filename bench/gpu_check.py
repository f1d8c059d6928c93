"""GPU check: one-pass batched IG scoring vs the naive two-pass reference at 8B scale.

Builds a randomly initialised model with Llama-3.1-8B-Instruct's shape (the paper's
scorer) in bf16 directly on the GPU: no hub access and no weight files are needed, and
speed does not depend on weight values. No tokenizer either: the scorer's core works on
token ids (`mcts.agents.scorer.one_pass_nlls`, `naive_nlls`), fed here with random ids shaped
like one expansion: 5 siblings x ~400 tokens that share a 120-token head (chat header
and earlier steps), each ending in a 24-token question.

Prints nodes scored per second for the naive scorer, the one-pass batched scorer
without and with the shared-prefix cache, their ratios, the largest |delta reward|
(bf16: expect ~1e-2, not the fp32 1e-4) and peak GPU memory of each.
Without CUDA it says so and exits with status 0. Runs well under 3 minutes on one GPU.

Last line:  RESULT nodes_per_s_naive=<a> nodes_per_s_fast=<b> speedup=<x> max_abs_delta_r=<y>

Usage: python -m bench.gpu_check [--repeats 5] [--siblings 5] [--tokens 400]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from mcts.agents.scorer import NodeNLL, TokenizedNode, ig_reward_from_logs, naive_nlls, one_pass_nlls

LLAMA_31_8B = dict(
    hidden_size=4096,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    intermediate_size=14336,
    vocab_size=128256,
    rope_theta=500000.0,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)


def build_model() -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA_31_8B)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    model.eval().requires_grad_(False)
    return model


def make_nodes(siblings: int, tokens: int, vocab: int) -> list[TokenizedNode]:
    import random

    rng = random.Random(0)
    head = [rng.randrange(vocab) for _ in range(120)]
    question = tuple(rng.randrange(vocab) for _ in range(24))
    nodes = []
    for j in range(siblings):
        own = tokens - len(head) - len(question) + 30 * (j - siblings // 2)  # mixed lengths
        nodes.append(TokenizedNode(tuple(head + [rng.randrange(vocab) for _ in range(own)]), question))
    return nodes


def timed(fn: Callable[[], list[NodeNLL]], repeats: int) -> tuple[float, float, list[NodeNLL]]:
    """(median seconds, peak GPU MB above the start, last result)."""
    import torch

    fn()  # warm-up: kernels, allocator
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times: list[float] = []
    result: list[NodeNLL] = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), (torch.cuda.max_memory_allocated() - base) / 2**20, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--siblings", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=400)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; nothing to measure (run it on a machine with a GPU).")
        return
    start = time.perf_counter()
    model = build_model()
    print(
        f"{torch.cuda.get_device_name(0)}: random Llama-3.1-8B-shaped model in bf16 built in "
        f"{time.perf_counter() - start:.1f} s, {torch.cuda.memory_allocated() / 2**30:.1f} GiB"
    )
    nodes = make_nodes(args.siblings, args.tokens, LLAMA_31_8B["vocab_size"])
    print(f"{len(nodes)} siblings, tokens per node: {[len(n.ids) for n in nodes]}")
    runs = {
        "naive two-pass, one at a time": lambda: naive_nlls(model, nodes, device="cuda")[0],
        "one pass, batched": lambda: one_pass_nlls(model, nodes, device="cuda", min_shared_prefix=10**9)[0],
        "one pass, batched, shared prefix": lambda: one_pass_nlls(model, nodes, device="cuda")[0],
    }
    results = {}
    for name, fn in runs.items():
        results[name] = timed(fn, args.repeats)
        secs, peak, _ = results[name]
        print(f"{name:34s} {secs * 1000:8.1f} ms  {len(nodes) / secs:7.1f} nodes/s  peak +{peak:.0f} MB")
    ref = results["naive two-pass, one at a time"]
    best = results["one pass, batched, shared prefix"]
    rewards = {
        name: [ig_reward_from_logs(n.log_ppl_history, n.log_ppl_with_question, 2.0, 10.0) for n in r[2]]
        for name, r in results.items()
    }
    delta = max(
        abs(a - b)
        for a, b in zip(
            rewards["naive two-pass, one at a time"], rewards["one pass, batched, shared prefix"], strict=True
        )
    )
    for name in list(runs)[1:]:
        print(f"speedup of '{name}' over naive: {ref[0] / results[name][0]:.2f}x")
    print(f"max |delta r| vs naive (bf16): {delta:.2e}; total {time.perf_counter() - start:.0f} s")
    print(
        f"RESULT nodes_per_s_naive={len(nodes) / ref[0]:.1f} nodes_per_s_fast={len(nodes) / best[0]:.1f} "
        f"speedup={ref[0] / best[0]:.2f} max_abs_delta_r={delta:.2e}"
    )


if __name__ == "__main__":
    main()
