"""What the `small` preset's greedy descent costs: Fast MCTS with and without it against
the greedy path, measured side by side.

Runs three configurations on the same questions with the same models, KB and seed,
interleaved per question (greedy path, Fast MCTS with the descent, Fast MCTS without it)
so background load hits all alike, after one warm-up search that loads the models. The
descent asks the policy twice at each of its nodes (the sampled k, then the greedy top);
the guided policy scores a node once and answers the second ask from that, so the descent
should cost about what the search without it costs. The issue's bound: Fast MCTS at most
3x the greedy path's time. Per configuration it sums wall seconds, process CPU seconds,
the policy's scoring passes and the questions answered as the greedy path answers. The last
line is

    RESULT fast_over_single_time=<x> no_descent_over_single_time=<y> descent_over_no_descent_time=<z>

with wall-time ratios.

Usage: python -m studies.greedy_descent [--questions 4] [--kb demo]
       [--questions-file examples/questions.jsonl]
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

CONFIGS = ("single", "fast", "fast-no-descent")


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", default="demo")
    parser.add_argument("--questions-file", default=str(REPO / "examples" / "questions.jsonl"))
    parser.add_argument("--questions", type=int, default=4, help="first N questions of the file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from mcts.agents.world import build_world
    from mcts.search.loop import run_search
    from mcts.search.presets import preset_settings
    from mcts.search.settings import Method

    questions = [
        json.loads(x)["question"] for x in Path(args.questions_file).read_text().splitlines() if x.strip()
    ][: args.questions]
    small = preset_settings("small").with_(seed=args.seed)
    settings = {
        "single": small.with_(method=Method.SINGLE),
        "fast": small.with_(method=Method.FAST, greedy_descent=True),
        "fast-no-descent": small.with_(method=Method.FAST, greedy_descent=False),
    }
    world = build_world(args.kb, method=Method.FAST)
    options = {"policy": world.policy, "scorer": world.scorer, "tools": world.tools, "meta": world.meta}
    # Warm-up: first forward passes allocate and fill caches; keep them out of the timing.
    run_search(questions[0], settings["fast"].with_(rounds=1), **options)

    usage = world.policy.usage
    totals = {c: {"wall": 0.0, "cpu": 0.0, "passes": 0, "as_greedy": 0} for c in CONFIGS}
    for i, q in enumerate(questions, 1):
        greedy_answer: tuple[str, ...] = ()
        for c in CONFIGS:
            cpu0, passes0 = time.process_time(), usage.candidate_passes
            _, result = run_search(q, settings[c], **options)
            t = totals[c]
            t["wall"] += result.cost.wall_s
            t["cpu"] += time.process_time() - cpu0
            t["passes"] += usage.candidate_passes - passes0
            if c == "single":
                greedy_answer = result.answer_names
            t["as_greedy"] += result.answer_names == greedy_answer
            print(
                f"q{i} {c:<16} wall {result.cost.wall_s:6.1f} s  scoring passes {usage.candidate_passes - passes0:4d}  "
                f"nodes {result.nodes:3d}  answer {', '.join(result.answer_names) or '-'}",
                flush=True,
            )
    print(f"\n{len(questions)} questions on {args.kb}, small preset, seed {args.seed}")
    print(f"{'configuration':<16} {'wall s':>8} {'cpu s':>8} {'passes':>7} {'answer as greedy':>17}")
    for c in CONFIGS:
        t = totals[c]
        print(f"{c:<16} {t['wall']:8.1f} {t['cpu']:8.1f} {t['passes']:7d} {t['as_greedy']:17d}")
    s, f, n = totals["single"], totals["fast"], totals["fast-no-descent"]
    print(
        f"cpu-time ratios: fast/single {_ratio(f['cpu'], s['cpu']):.3f}  descent/no descent {_ratio(f['cpu'], n['cpu']):.3f}"
    )
    print("target: fast/single <= 3")
    print(
        f"RESULT fast_over_single_time={_ratio(f['wall'], s['wall']):.3f} "
        f"no_descent_over_single_time={_ratio(n['wall'], s['wall']):.3f} "
        f"descent_over_no_descent_time={_ratio(f['wall'], n['wall']):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
