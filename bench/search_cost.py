"""Cost of Fast MCTS vs classic MCTS vs the N-sample vote, measured side by side.

Runs the three methods on the same demo questions with the same models, KB and seed,
interleaved per question (fast, classic, vote for question 1, then question 2, ...)
so that background load hits all three alike, after one warm-up search that loads
the models. Per method it sums policy generation calls, IG forward passes, wall
seconds and process CPU seconds (all threads; steadier than wall time on a shared
machine), then prints the ratios. The paper's figures: Fast/classic generation
calls 0.5, Fast/classic time 0.84, Fast/vote time 1.45; targets here: Fast/classic
time <= 0.6 and Fast/vote time <= 1.2. The last line is

    RESULT fast_over_classic_gen_calls=<x> fast_over_classic_time=<y> fast_over_vote_time=<z>

with wall-time ratios.

Usage: python -m bench.search_cost [--questions 3] [--rounds 12] [--k 5] [--seed 0]
       [--max-depth 10] [--early-stop-terminals 5] [--vote-samples 5] [--kb demo]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

METHODS = ("fast", "classic", "vote")


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", default="demo")
    parser.add_argument("--questions-file", default=str(REPO / "examples" / "questions.jsonl"))
    parser.add_argument("--questions", type=int, default=3, help="first N questions of the file")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--max-depth", type=int, default=10)
    parser.add_argument("--early-stop-terminals", type=int, default=5)
    parser.add_argument("--vote-samples", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from mcts.agents.world import build_world
    from mcts.search.loop import run_search
    from mcts.search.settings import Method, SearchSettings

    questions = [
        json.loads(x)["question"] for x in Path(args.questions_file).read_text().splitlines() if x.strip()
    ]
    questions = questions[: args.questions]
    base = SearchSettings(
        rounds=args.rounds,
        k=args.k,
        max_depth=args.max_depth,
        early_stop_terminals=args.early_stop_terminals,
        vote_samples=args.vote_samples,
        seed=args.seed,
    )
    worlds = {m: build_world(args.kb, method=Method(m)) for m in METHODS}
    # Warm-up: first forward passes allocate and fill caches; keep them out of the timing.
    run_search(questions[0], base.with_(method=Method.FAST, rounds=1), **_world_args(worlds["fast"]))

    totals = {m: {"gen": 0, "ig": 0, "wall": 0.0, "cpu": 0.0, "answered": 0} for m in METHODS}
    for i, q in enumerate(questions, 1):
        for m in METHODS:
            cpu0 = time.process_time()
            _, result = run_search(q, base.with_(method=Method(m)), **_world_args(worlds[m]))
            cpu = time.process_time() - cpu0
            t = totals[m]
            t["gen"] += result.cost.policy_calls
            t["ig"] += result.cost.ig_forward_passes
            t["wall"] += result.cost.wall_s
            t["cpu"] += cpu
            t["answered"] += bool(result.answer)
            print(
                f"q{i} {m:<8} gen calls {result.cost.policy_calls:4d}  IG passes {result.cost.ig_forward_passes:4d}  "
                f"wall {result.cost.wall_s:7.1f} s  cpu {cpu:7.1f} s  answer {', '.join(result.answer_names) or '-'}",
                flush=True,
            )
    print(
        f"\n{len(questions)} questions, settings: {json.dumps({k: v for k, v in base.to_dict().items() if k != 'method'})}"
    )
    print(f"{'method':<8} {'gen calls':>9} {'IG passes':>9} {'wall s':>8} {'cpu s':>8} {'answered':>8}")
    for m in METHODS:
        t = totals[m]
        print(f"{m:<8} {t['gen']:9d} {t['ig']:9d} {t['wall']:8.1f} {t['cpu']:8.1f} {t['answered']:8d}")
    f, c, v = totals["fast"], totals["classic"], totals["vote"]
    gen = _ratio(f["gen"], c["gen"])
    fc_time, fv_time = _ratio(f["wall"], c["wall"]), _ratio(f["wall"], v["wall"])
    print(
        f"cpu-time ratios: fast/classic {_ratio(f['cpu'], c['cpu']):.3f}  fast/vote {_ratio(f['cpu'], v['cpu']):.3f}"
    )
    print("paper: fast/classic gen calls 0.5, time 0.84; fast/vote time 1.45 (targets here: <= 0.6, <= 1.2)")
    print(
        f"RESULT fast_over_classic_gen_calls={gen:.3f} fast_over_classic_time={fc_time:.3f} fast_over_vote_time={fv_time:.3f}"
    )
    return 0


def _world_args(world: object) -> dict[str, object]:
    return {
        "policy": world.policy,  # type: ignore[attr-defined]
        "scorer": world.scorer,  # type: ignore[attr-defined]
        "tools": world.tools,  # type: ignore[attr-defined]
        "meta": world.meta,  # type: ignore[attr-defined]
    }


if __name__ == "__main__":
    sys.exit(main())
