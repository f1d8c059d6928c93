"""One demo question at a small CPU setting: where the seconds go, and packed vs padded scoring.

The guided policy scores every candidate step after the prompt (`mcts.agents.lm_scoring`).
Two paths over the same prompt cache, in the same process and on the same model:
- padded (the earlier path): right-padded batches of candidates, each batch on a deep
  copy of the prompt's key/value cache repeated once per row;
- packed (the default): all candidates in one row on the prompt's cache, a block mask
  keeping each candidate to the prompt and its own tokens; no cache copy.

What it does, with the models loaded and warmed first (one search run and discarded):
1. runs `--method` on the question with each path, alternating, `--repeats` times, and
   prints per run: wall seconds, time to the first scored child (Run -> first
   NodeScored event), and seconds in policy proposals (of which LM scoring), IG scoring,
   tools and figure building (`viz.build_figure` after every event, as the app redraws);
   then the ratio median(padded) / median(packed) of the wall time and of the policy time;
2. checks the greedy choices: greedy single paths on the first `--greedy-questions`
   demo questions with the packed path, and at every state the padded path's top choice
   (same candidates) is the same; prints identical/total and the largest score delta;
3. `--profile`: cProfile of one packed run, the functions with the most own time.

Last line: RESULT wall_ratio=<x> policy_ratio=<y> first_child_s=<packed median> greedy_same=<a>/<b>

Usage: python -m bench.demo_speed [--question-id demo:001] [--method fast]
       [--rounds 6] [--k 3] [--max-depth 5] [--repeats 2] [--greedy-questions 10] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "examples" / "questions.jsonl"


class Timed:
    """Wraps one method of an object and sums the seconds spent in it."""

    def __init__(self, target: Any, method: str) -> None:
        self.target, self.seconds = target, 0.0
        self._inner: Callable[..., Any] = getattr(target, method)
        setattr(self, method, self._call)

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self._inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def one_run(world: Any, question: str, settings: Any, packed: bool) -> dict[str, float]:
    from mcts.agents.lm_scoring import LMContinuationScorer
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.search.events import NodeScored
    from mcts.search.loop import Search
    from viz.figure import build_figure

    base = world.policy
    lm = LMContinuationScorer(base.model, packed=packed)  # a cold prompt cache, as after Run
    policy = Timed(GuidedPolicy(base.model, world.tools, scorer=lm, mentions=base.mention_finder), "propose")
    scorer, tools = Timed(world.scorer, "score"), Timed(world.tools, "run")
    search = Search(question, settings, policy=policy, scorer=scorer, tools=tools, meta=world.meta)
    figure_s, first_child = 0.0, float("nan")
    t0 = time.perf_counter()
    for event in search.run():
        if isinstance(event, NodeScored) and first_child != first_child:
            first_child = time.perf_counter() - t0
        f0 = time.perf_counter()
        build_figure(search.tree)
        figure_s += time.perf_counter() - f0
    assert search.result is not None
    return {
        "wall": time.perf_counter() - t0,
        "first_child": first_child,
        "policy": policy.seconds,
        "lm": lm.usage.seconds,
        "ig": scorer.seconds,
        "tools": tools.seconds,
        "figure": figure_s,
        "nodes": float(len(search.tree)),
        "answer": " | ".join(sorted(v.name for v in search.result.answer)),  # type: ignore[dict-item]
    }


def demo_world() -> Any:
    """The demo KB, its tools, the bundled model as guided policy and as IG scorer (what
    `build_world("demo")` builds, written out so the bench depends on nothing else)."""
    from types import SimpleNamespace

    from kb.spec import open_kb
    from kb.tools import Toolbox
    from mcts.agents.models import DEFAULT_MODEL, load_model
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.agents.scorer import IGScorer

    tools = Toolbox(open_kb("demo"))
    model = load_model(DEFAULT_MODEL)
    return SimpleNamespace(tools=tools, policy=GuidedPolicy(model, tools), scorer=IGScorer(model), meta=None)


def greedy_check(world: Any, questions: list[str], max_depth: int) -> tuple[int, int, float]:
    """(states where padded's top choice equals packed's, states, largest |score delta|)."""
    from mcts.agents.lm_scoring import LMContinuationScorer
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.search.steps import Step

    model = world.policy.model
    finder = world.policy.mention_finder
    packed = GuidedPolicy(model, world.tools, scorer=LMContinuationScorer(model), mentions=finder)
    padded = GuidedPolicy(
        model, world.tools, scorer=LMContinuationScorer(model, packed=False), mentions=finder
    )
    same = states = 0
    delta = 0.0
    for question in questions:
        history: list[Step] = []
        for _ in range(max_depth):
            opts = packed.options(question, history)
            if not opts:
                break
            a, b = (
                packed.score_options(question, history, opts),
                padded.score_options(question, history, opts),
            )
            delta = max(delta, *(abs(x - y) for x, y in zip(a, b, strict=True)))
            top = max(range(len(opts)), key=lambda i: a[i])
            states += 1
            same += top == max(range(len(opts)), key=lambda i: b[i])
            cand = packed.propose(question, history, 1, rng=random.Random(0), greedy=True)[0]
            history.append(Step(cand.thought, cand.action, world.tools.run(cand.action), cand.raw_text))
            if history[-1].is_done:
                break
    return same, states, delta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question-id", default="demo:001")
    parser.add_argument("--method", default="fast")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--max-depth", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--greedy-questions", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    from mcts.search.settings import Method, SearchSettings

    records = [json.loads(x) for x in QUESTIONS.read_text(encoding="utf-8").splitlines() if x.strip()]
    question = next(r["question"] for r in records if r["id"] == args.question_id)
    settings = SearchSettings(
        method=Method(args.method), rounds=args.rounds, k=args.k, max_depth=args.max_depth
    )
    t0 = time.perf_counter()
    world = demo_world()
    print(f"models and KB loaded in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    one_run(world, question, settings, packed=True)  # warm-up: ranker, type list, kernels
    print(f"warm-up run {time.perf_counter() - t0:.1f} s; question: {question}")
    print(f"settings: {args.method}, rounds {args.rounds}, k {args.k}, max depth {args.max_depth}")

    runs: dict[str, list[dict[str, float]]] = {"padded": [], "packed": []}
    head = "path     wall_s  first_child_s  policy_s  (lm_s)   ig_s  tools_s  figure_s  nodes  answer"
    print(head)
    for _ in range(args.repeats):
        for name in ("padded", "packed"):
            r = one_run(world, question, settings, packed=name == "packed")
            runs[name].append(r)
            print(
                f"{name:<7} {r['wall']:>7.1f} {r['first_child']:>14.1f} {r['policy']:>9.1f} ({r['lm']:>5.1f})"
                f" {r['ig']:>6.1f} {r['tools']:>8.1f} {r['figure']:>9.2f} {r['nodes']:>6.0f}  {r['answer']}"
            )

    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    wall_ratio = med("padded", "wall") / med("packed", "wall")
    policy_ratio = med("padded", "policy") / med("packed", "policy")
    print(f"padded/packed: wall {wall_ratio:.2f}x, policy {policy_ratio:.2f}x (medians of {args.repeats})")

    qs = [r["question"] for r in records[: args.greedy_questions]]
    same, states, delta = greedy_check(world, qs, max_depth=args.max_depth)
    print(f"greedy top choice, padded == packed: {same}/{states} states; max |score delta| {delta:.2e}")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        one_run(world, question, settings, packed=True)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
        print(out.getvalue())
    print(
        f"RESULT wall_ratio={wall_ratio:.2f} policy_ratio={policy_ratio:.2f} "
        f"first_child_s={med('packed', 'first_child'):.1f} greedy_same={same}/{states}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
