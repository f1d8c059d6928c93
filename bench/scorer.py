"""IG scoring speed: naive two-pass unbatched reference vs one-pass batched scorer.

Builds one expansion of 5 siblings from real data in ../shared/data/fbqa/dev.jsonl: a
CWQ question, the shared earlier steps (SearchNodes on its topic entity,
SearchGraphPatterns with a `SELECT ?e` by name), and per sibling a different last step
(ExecuteSPARQL with another question's real `kb_sparql`, or SearchGraphPatterns) whose
observation lists real entity names and relations of the KB. The histories are cleaned
with the default rules (docs/method.md#the-ig-reward) and come to ~200-600 tokens each with the
bundled model's chat template.

Both scorers run on the same model in this process, interleaved, `--repeats` times;
the speedup is median(naive) / median(fast). max_abs_delta_r is over all nodes and
repeats.

Peak memory: torch's CPU allocations are invisible to tracemalloc, so each scorer is
run once more in its own fresh subprocess, where a thread samples the process RSS
(psutil, every 2 ms) during one `score` call; peak_mb = peak RSS during the call minus
RSS just before it (model already loaded), i.e. the scoring's own working memory.

Last line:  RESULT speedup=<x> max_abs_delta_r=<y> peak_mb_naive=<a> peak_mb_fast=<b>

Usage: python -m bench.scorer [--repeats 3] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from kb.actions import Action
from kb.observation import Observation
from mcts.agents.models import LoadedModel
from mcts.agents.scorer import IGScorer
from mcts.search.cleaning import clean_history
from mcts.search.protocols import Usage
from mcts.search.steps import Step

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "fbqa"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

ALPHA, BETA = 2.0, 10.0  # paper defaults
_IRI = re.compile(r"<http://rdf\.freebase\.com/ns/([^>]+)>")


def _ns(sparql: str) -> str:
    """Full Freebase IRIs -> the `ns:` form the agent writes."""
    return _IRI.sub(r"ns:\1", sparql)


def build_expansion(siblings: int = 5) -> tuple[str, list[str]]:
    """(question, cleaned histories of `siblings` children of one depth-3 node)."""
    if not (DATA / "dev.jsonl").is_file():
        sys.exit(f"data not found: {DATA / 'dev.jsonl'} (the bench reads ../shared/data/fbqa)")
    rows = [json.loads(line) for line in (DATA / "dev.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if r.get("kb_sparql") and r.get("topic_entities") and r.get("path")]
    names = [a["name"] for r in rows for a in r["kb_answers"] if a.get("name")]
    paths = [p for r in rows for p in r["path"]]
    main = rows[0]
    topic = main["topic_entities"][0]["name"]
    by_name = f'SELECT ?e WHERE {{ ?e ns:type.object.name "{topic}"@en }}'
    shared = [  # the path root -> expanded node, as a guided or ReAct policy writes it
        Step(
            f"I need the entity {topic} from the question.",
            Action("SearchNodes", topic),
            Observation(f'"{topic}" | Description: American singer-songwriter...'),
        ),
        Step(
            f"Find relations of {topic} relevant to: {main['question']}",
            Action("SearchGraphPatterns", by_name, semantic=main["question"]),
            Observation("\n".join(f"(?e, {p}, {names[i]})" for i, p in enumerate(paths[:10]))),
        ),
        Step(
            "Follow the film relation.",
            Action("ExecuteSPARQL", _ns(main["kb_sparql"])),
            Observation(", ".join(a["name"] for a in main["kb_answers"])),
        ),
    ]
    histories = []
    for j in range(siblings):
        other = rows[1 + j]
        if j % 2 == 0:  # an ExecuteSPARQL child with a real query and a value list
            count = 8 + 20 * j
            obs = ", ".join(names[30 * j : 30 * j + count])
            last = Step("Run the query.", Action("ExecuteSPARQL", _ns(other["kb_sparql"])), Observation(obs))
        else:  # a SearchGraphPatterns child around another entity
            ent = other["topic_entities"][0]["name"]
            lines = [
                f"(?e, {p}, {names[(7 * j + i) % len(names)]})"
                for i, p in enumerate(paths[10 * j : 10 * j + 10])
            ]
            sgp = f'SELECT ?e WHERE {{ ?e ns:type.object.name "{ent}"@en }}'
            last = Step(
                "Explore.",
                Action("SearchGraphPatterns", sgp, semantic="film character"),
                Observation("\n".join(lines)),
            )
        histories.append(clean_history([*shared, last], question=main["question"]).text)
    return main["question"], histories


class _RssSampler:
    """Peak RSS (bytes) of this process while active, sampled by a thread."""

    def __init__(self, interval_s: float = 0.002) -> None:
        import psutil

        self._proc = psutil.Process()
        self._interval = interval_s
        self._stop = threading.Event()
        self.peak = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(self._interval)

    def __enter__(self) -> _RssSampler:
        self.base = self._proc.memory_info().rss
        self.peak = self.base
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)

    @property
    def delta_mb(self) -> float:
        return (self.peak - self.base) / 2**20


def _make(kind: str, model: LoadedModel) -> IGScorer:
    from mcts.agents.scorer import NaiveIGScorer

    return NaiveIGScorer(model) if kind == "naive" else IGScorer(model)


def memory_child(kind: str) -> None:
    from mcts.agents.models import load_model

    question, histories = build_expansion()
    scorer = _make(kind, load_model())
    # Warm-up: the first forward pass pages the memory-mapped weights in (~520 MB of RSS
    # that is the model's, not the scoring's).
    scorer.score(question, ["Action: Done()"], alpha=ALPHA, beta=BETA)
    with _RssSampler() as sampler:
        scorer.score(question, histories, alpha=ALPHA, beta=BETA)
    print(f"PEAK_MB {sampler.delta_mb:.1f}")


def _peak_mb(kind: str, threads: int | None) -> float:
    cmd = [sys.executable, __file__, "--memory-child", kind]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.findall(r"PEAK_MB ([\d.]+)", out)[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--memory-child", choices=["naive", "fast"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_child:
        memory_child(args.memory_child)
        return
    from mcts.agents.models import load_model

    question, histories = build_expansion()
    model = load_model()
    scorers = {
        "naive two-pass, unbatched": _make("naive", model),
        "one pass, batched": _make("fast", model),
        "one pass, <= 25% padding": IGScorer(model, max_padding=0.25),
        "one pass, one padded batch": IGScorer(model, max_padding=math.inf),
    }
    fast = scorers["one pass, batched"]
    nodes = [fast.builder.build(question, h) for h in histories]
    print(f"model {model.id} on {model.device} ({model.dtype}), torch threads {torch.get_num_threads()}")
    print(f"question: {question}")
    print(
        f"{len(histories)} siblings, tokens per node: {[len(n.ids) for n in nodes]}, "
        f"common prefix {len(os.path.commonprefix([list(n.ids) for n in nodes]))} tokens"
    )
    for scorer in scorers.values():  # warm-up: page the weights in, first-call overheads
        scorer.score(question, ["Action: Done()"], alpha=ALPHA, beta=BETA)
    for scorer in scorers.values():
        scorer.usage = Usage()
        scorer.model_invocations = 0
    times: dict[str, list[float]] = {name: [] for name in scorers}
    deltas: dict[str, float] = {name: 0.0 for name in scorers}
    for rep in range(args.repeats):
        results = {}
        for name, scorer in scorers.items():
            start = time.perf_counter()
            results[name] = scorer.score(question, histories, alpha=ALPHA, beta=BETA)
            times[name].append(time.perf_counter() - start)
            pairs = zip(results[name], results["naive two-pass, unbatched"], strict=True)
            deltas[name] = max(deltas[name], *(abs(a.reward - b.reward) for a, b in pairs))
        print(f"repeat {rep + 1}: " + ", ".join(f"{name} {t[-1]:.2f} s" for name, t in times.items()))
    print(f"rewards: {[round(s.reward, 4) for s in results['one pass, batched']]}")
    t_naive = statistics.median(times["naive two-pass, unbatched"])
    n = len(histories)
    for name, scorer in scorers.items():
        t = statistics.median(times[name])
        print(
            f"{name:28s} {t:7.2f} s  {n / t:5.2f} nodes/s  x{t_naive / t:4.2f}  "
            f"model calls {getattr(scorer, 'model_invocations', 0) // args.repeats:2d}  "
            f"tokens {scorer.usage.tokens // args.repeats:5d}  max|dr| {deltas[name]:.1e}"
        )
    speedup = t_naive / statistics.median(times["one pass, batched"])
    peak_naive, peak_fast = _peak_mb("naive", args.threads), _peak_mb("fast", args.threads)
    print(
        f"peak RSS above the warmed-up model during one expansion: naive {peak_naive:.0f} MB, fast {peak_fast:.0f} MB"
    )
    print(
        f"RESULT speedup={speedup:.2f} max_abs_delta_r={deltas['one pass, batched']:.2e} "
        f"peak_mb_naive={peak_naive:.0f} peak_mb_fast={peak_fast:.0f}"
    )


if __name__ == "__main__":
    main()
