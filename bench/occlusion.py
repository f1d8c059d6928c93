"""Occlusion cost: the IG lens's "evidence that moved the reward" against one scoring call.

The node: the deepest node of the shipped trace `examples/traces/fast-obama.json` ("Where
was Barack Obama born?", five steps down to a SearchGraphPatterns on the nationality), one
step further: a real ExecuteSPARQL on the bundled demo KB listing the people of that
nationality. Cleaned with the default rules, its history is the five steps' arguments and
the list of names, about 40 segments (`mcts.search.history_segments`).

Side by side in one process, interleaved `--repeats` times, on the bundled scorer model:
- one scoring call of the node (`IGScorer.score` on its one history), before, between and
  after the two below (the load of a shared machine drifts);
- occlusion with the cache reuse (`mcts.agents.ig_probe.occlude`);
- the naive way: `IGScorer.score` on every occluded text in one batch call.
Prints the median times, occlusion / one call (goal from the issue: under 15), naive / one
call, the tokens occlusion ran in lengths of the node (independent of the machine's load),
and the largest |delta r| between the two ways over all segments and repeats.

Last line:  RESULT segments=<n> occlusion_calls=<x> naive_calls=<y> token_calls=<t> max_abs_delta_r_diff=<z>

Usage: OMP_NUM_THREADS=1 python -m bench.occlusion [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from kb.actions import Action
from mcts.search.cleaning import clean_history
from mcts.search.trace import load_trace

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "examples" / "traces" / "fast-obama.json"
LAST = "SELECT DISTINCT ?x WHERE { ?x ns:people.person.nationality ns:m.demo_usa . }"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

ALPHA, BETA = 2.0, 10.0  # paper defaults


def build_node() -> tuple[str, str]:
    """(question, cleaned history) of the benchmark node."""
    from kb.spec import open_kb
    from kb.tools import Toolbox
    from mcts.search.steps import Step

    trace = load_trace(TRACE)
    tree = trace.to_tree()
    deepest = max(
        range(len(tree.nodes)), key=lambda i: (tree.nodes[i].depth, len(tree.nodes[i].cleaned_history))
    )
    action = Action("ExecuteSPARQL", LAST)
    observation = Toolbox(open_kb("demo")).run(action)
    if observation.is_error or len(observation.values) < 20:
        raise SystemExit(f"the demo KB did not list the people of one nationality: {observation.text[:200]}")
    steps = [*tree.steps(deepest), Step("List the people of that nationality.", action, observation)]
    return trace.question, clean_history(steps).text


def one_call(scorer: Any, question: str, history: str, times: list[float]) -> Any:
    """One scoring call of the node, timed into `times`; its score."""
    start = time.perf_counter()
    score = scorer.score(question, [history], alpha=ALPHA, beta=BETA)[0]
    times.append(time.perf_counter() - start)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    import torch

    from mcts.agents.ig_probe import occlude
    from mcts.agents.models import load_model
    from mcts.agents.scorer import IGScorer
    from mcts.search.history_segments import history_segments, without_segment

    torch.set_num_threads(args.threads)
    question, history = build_node()
    model = load_model()
    scorer = IGScorer(model)
    segments = history_segments(history)
    texts = [without_segment(history, seg) for seg in segments]
    tokens = len(scorer.builder.build(question, history).ids)
    print(f"model {model.id} on {model.device} ({model.dtype}), torch threads {torch.get_num_threads()}")
    print(f"question: {question}")
    print(f"node: {len(history)} characters, {tokens} tokens, {len(segments)} segments")
    scorer.score(question, [history], alpha=ALPHA, beta=BETA)  # warm-up: page the weights in
    times: dict[str, list[float]] = {"one call": [], "occlusion": [], "naive": []}
    worst = 0.0
    model_tokens = 0
    for rep in range(args.repeats):
        # One call before, between and after the long runs: on a shared machine the load
        # drifts, and the ratio should compare like with like.
        base = one_call(scorer, question, history, times["one call"])
        start = time.perf_counter()
        occ = occlude(scorer, question, history, alpha=ALPHA, beta=BETA)
        times["occlusion"].append(time.perf_counter() - start)
        model_tokens = occ.model_tokens
        one_call(scorer, question, history, times["one call"])
        start = time.perf_counter()
        naive = scorer.score(question, texts, alpha=ALPHA, beta=BETA)
        times["naive"].append(time.perf_counter() - start)
        one_call(scorer, question, history, times["one call"])
        for effect, ref in zip(occ.effects, naive, strict=True):
            worst = max(worst, abs(effect.delta_r - (ref.reward - base.reward)))
        calls = ", ".join(f"{t:.2f}" for t in times["one call"][-3:])
        print(
            f"repeat {rep + 1}: one call {calls} s, occlusion {times['occlusion'][-1]:.2f} s, "
            f"naive {times['naive'][-1]:.2f} s"
        )
    one = statistics.median(times["one call"])
    occ_calls = statistics.median(times["occlusion"]) / one
    naive_calls = statistics.median(times["naive"]) / one
    print(f"one scoring call  {one:7.2f} s  ({tokens} tokens)")
    print(
        f"occlusion         {statistics.median(times['occlusion']):7.2f} s  x{occ_calls:5.2f} calls  ({model_tokens} tokens run)"
    )
    print(f"naive, one batch  {statistics.median(times['naive']):7.2f} s  x{naive_calls:5.2f} calls")
    print(f"occlusion / naive: {occ_calls / naive_calls:.2f}; goal: occlusion under 15 calls")
    # Load-independent: the tokens occlusion ran, in lengths of the node (passes that group
    # neighbouring segments start at the earliest cut among them, so they run more tokens in
    # fewer passes).
    print(f"tokens run by occlusion / tokens of the node: {model_tokens / tokens:.2f}")
    print(
        f"RESULT segments={len(segments)} occlusion_calls={occ_calls:.2f} naive_calls={naive_calls:.2f} "
        f"token_calls={model_tokens / tokens:.2f} max_abs_delta_r_diff={worst:.2e}"
    )


if __name__ == "__main__":
    main()
