"""`python -m mcts eval` in-process vs on 2 local Ray workers: wall time and model-load time.

Runs the same demo questions x methods with the same models, KB, settings and seed,
first in this process (one world, torch on `--threads` threads), then on a local Ray
started for the run with `--workers` workers (1 CPU each, so one torch thread each), and
prints both wall times, their ratio, each worker's KB + model load time, and whether
the two runs gave the same answers and node counts. Wall times include what a user
waits for: the in-process model load, and Ray's start-up plus the workers' loads.
On a 2-core machine the gain is bounded by the cores (the workers share them); the
point is that the same command scales out. The last line is

    RESULT ray_over_inprocess_wall=<x> ray_eval_only_over_inprocess_eval_only=<y> worker_load_s=<a,b>

Usage: python -m bench.ray_eval [--questions 8] [--methods single,fast] [--workers 2]
       [--rounds 3] [--k 2] [--max-depth 3] [--early-stop-terminals 2] [--seed 0] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", default="demo")
    parser.add_argument("--questions-file", default=str(REPO / "examples" / "questions.jsonl"))
    parser.add_argument("--questions", type=int, default=8, help="first N questions of the file")
    parser.add_argument("--methods", default="single,fast")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--early-stop-terminals", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the in-process run")
    args = parser.parse_args()

    import ray
    import torch

    from mcts.cli.eval_commands import WorldSpec
    from mcts.evaluation.distributed import RayOptions, run_eval_ray
    from mcts.evaluation.runner import load_questions, parse_methods, run_eval
    from mcts.search.settings import SearchSettings

    torch.set_num_threads(args.threads)
    spec = WorldSpec(args.kb, "guided", None, None, None, 1.0)
    questions = load_questions(args.questions_file, limit=args.questions)
    methods = parse_methods(args.methods)
    settings = SearchSettings(
        rounds=args.rounds,
        k=args.k,
        max_depth=args.max_depth,
        early_stop_terminals=args.early_stop_terminals,
        seed=args.seed,
    )
    pairs = len(questions) * len(methods)
    print(f"{len(questions)} questions x {len(methods)} methods = {pairs} pairs; {settings}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        for method in methods:
            spec(method)
        local_load = time.perf_counter() - started
        local = run_eval(questions, methods, spec, settings, Path(tmp) / "local", save_traces=False)
        local_wall = time.perf_counter() - started
        print(f"in-process: {local_wall:.1f} s wall ({local_load:.1f} s loading KB and models)")

        started = time.perf_counter()
        # Started here (as run_eval_ray would) only to time the start-up on its own.
        ray.init(num_cpus=max(os.cpu_count() or 1, args.workers), include_dashboard=False)
        ray_start = time.perf_counter() - started
        remote = run_eval_ray(
            questions, methods, spec, settings, Path(tmp) / "ray", RayOptions(workers=args.workers)
        )
        ray_wall = time.perf_counter() - started
        ray.shutdown()
    loads = [w.load_s for w in remote.workers]
    # The evaluation alone: in-process minus its load; Ray minus its start-up and the slowest
    # worker's load (pairs start as soon as the first worker is ready: a lower bound).
    ray_eval = ray_wall - ray_start - max(loads)
    print(f"ray, {args.workers} workers: {ray_wall:.1f} s wall ({ray_start:.1f} s starting Ray)")
    for w in remote.workers:
        print(f"  worker pid {w.pid}: KB and models loaded in {w.load_s:.1f} s")

    def key(rows):
        return {(r.question_id, r.method): (r.answer, r.nodes) for r in rows}

    same = key(local) == key(remote.rows)
    print(f"same answers and node counts: {same}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(
        f"RESULT ray_over_inprocess_wall={ray_wall / local_wall:.2f} "
        f"ray_eval_only_over_inprocess_eval_only={ray_eval / (local_wall - local_load):.2f} "
        f"worker_load_s={','.join(f'{x:.1f}' for x in loads)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
