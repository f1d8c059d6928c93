"""Median latency of each agent tool on the real Freebase subset: embedded vs HTTP endpoints.

Runs the same actions, built from the questions in ../shared/data/fbqa/dev.jsonl
(topic-entity names, `SELECT ?e` by name with the question as `semantic`, the
questions' 1-2 hop `kb_sparql`, a few type queries), through `kb.tools.Toolbox` on

- the embedded store (`EmbeddedKB`, pyoxigraph in memory + FTS5 names),
- the same file served by `oxigraph serve` on 127.0.0.1 (`RemoteKB` over HTTP), and
- the same file bulk-loaded into a real Virtuoso 7.2 on 127.0.0.1
  (tests/virtuoso_server.py; skipped with a note when the package is not installed),

side by side in one run, after one warm-up pass (embedding cache warm, label caches cleared per
pass so names are looked up every time). Prints a table with ratios; the last line is

    RESULT searchnodes_ms=<median> patterns_ms=<median> sparql_ms=<median> http_over_embedded=<ratio>

with the embedded medians, `http_over_embedded` = (sum of the three oxigraph-HTTP medians) /
(sum of the three embedded medians), and `virtuoso_over_embedded` the same for Virtuoso.
Both endpoints hold the subset's names in `RemoteKB`'s name index (a small endpoint), so
SearchNodes is the same index search plus nothing over HTTP once it is read. Targets (embedded): SearchNodes < 2 ms,
SearchGraphPatterns < 20 ms, simple ExecuteSPARQL < 5 ms.

Usage: python -m bench.kb_tools [--questions 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "fbqa"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

TOOLS = ("SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes")
TYPE_QUERIES = (
    "film actor",
    "sports team",
    "country",
    "music genre",
    "university",
    "award",
    "city town",
    "book author",
)


def workload(n_questions: int) -> list:
    from kb.actions import Action
    from kb.flavour import sparql_string

    actions = []
    with (DATA / "dev.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line) for line in fh][:n_questions]
    for q in questions:
        name = q["topic_entities"][0]["name"]
        actions.append(Action("SearchNodes", name))
        by_name = f"SELECT ?e WHERE {{ ?e ns:type.object.name {sparql_string(name)}@en }}"
        actions.append(Action("SearchGraphPatterns", by_name, semantic=q["question"]))
        actions.append(Action("ExecuteSPARQL", q["kb_sparql"]))
    actions += [Action("SearchTypes", t) for t in TYPE_QUERIES]
    return actions


def timings(toolbox, actions, repeats: int) -> dict[str, list[float]]:
    """Milliseconds per tool over `repeats` passes; errors are counted and reported."""
    out: dict[str, list[float]] = {t: [] for t in TOOLS}
    errors = 0
    for _ in range(repeats):
        toolbox._names.clear()  # look names up every pass, as a fresh toolbox would
        for action in actions:
            started = time.perf_counter()
            obs = toolbox.run(action)
            out[action.tool].append((time.perf_counter() - started) * 1000)
            errors += obs.is_error
    if errors:
        print(f"warning: {errors} tool errors in {type(toolbox.kb).__name__} runs", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40, help="questions from dev.jsonl (default 40)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes after the warm-up (default 3)")
    args = parser.parse_args()
    if not (DATA / "kb.nt.gz").exists():
        print(f"real data absent: {DATA}", file=sys.stderr)
        return 2

    from contextlib import ExitStack

    from kb.embedded import EmbeddedKB
    from kb.relation_ranker import EmbeddingRanker
    from kb.remote import RemoteKB
    from kb.tools import Toolbox
    from tests.oxigraph_server import oxigraph_server
    from tests.virtuoso_server import binaries, virtuoso_server

    actions = workload(args.questions)
    ranker = EmbeddingRanker()  # one warm cache shared by all sides
    started = time.perf_counter()
    embedded_kb = EmbeddedKB(DATA / "kb.nt.gz")
    print(f"embedded load + name index: {time.perf_counter() - started:.2f} s ({len(embedded_kb)} triples)")
    boxes = {"embedded": Toolbox(embedded_kb, ranker=ranker)}
    with ExitStack() as stack:
        server = stack.enter_context(oxigraph_server(DATA / "kb.nt.gz"))
        boxes["oxigraph"] = Toolbox(RemoteKB(server.url), ranker=ranker)
        if binaries() is not None:
            started = time.perf_counter()
            virtuoso = stack.enter_context(virtuoso_server(DATA / "kb.nt.gz"))
            print(
                f"virtuoso start + bulk load: {time.perf_counter() - started:.2f} s (load {virtuoso.load_s:.2f} s)"
            )
            boxes["virtuoso"] = Toolbox(RemoteKB(virtuoso.url), ranker=ranker)
        else:
            print("virtuoso-t not installed: no Virtuoso column (apt-get install virtuoso-opensource)")
        for toolbox in boxes.values():  # warm-up: model, relation vectors, type lists, name index
            timings(toolbox, actions, 1)
        runs = {name: timings(toolbox, actions, args.repeats) for name, toolbox in boxes.items()}

    medians = {name: {t: statistics.median(run[t]) for t in TOOLS} for name, run in runs.items()}
    emb = runs["embedded"]
    print(f"\n{len(actions)} actions x {args.repeats} passes; median ms per call")
    header = "".join(f"{name:>10}" for name in medians) + "".join(
        f"{n[:4] + '/emb':>10}" for n in medians if n != "embedded"
    )
    print(f"{'tool':<22}{header}{'p90 emb':>10}")
    for tool in TOOLS:
        e = medians["embedded"][tool]
        p90 = statistics.quantiles(emb[tool], n=10)[-1] if len(emb[tool]) > 1 else e
        cells = "".join(f"{m[tool]:>10.2f}" for m in medians.values())
        ratios = "".join(f"{m[tool] / e:>10.1f}" for n, m in medians.items() if n != "embedded")
        print(f"{tool:<22}{cells}{ratios}{p90:>10.2f}")
    main3 = ("SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL")

    def over_embedded(name: str, tools: tuple[str, ...] = main3) -> float:
        return sum(medians[name][t] for t in tools) / sum(medians["embedded"][t] for t in tools)

    for name in medians:
        if name != "embedded":
            print(
                f"{name}/embedded over the three tools: {over_embedded(name):.1f}x; "
                f"without SearchNodes: {over_embedded(name, main3[1:]):.1f}x"
            )
    m = medians["embedded"]
    virtuoso_part = (
        f" virtuoso_over_embedded={over_embedded('virtuoso'):.2f}" if "virtuoso" in medians else ""
    )
    print(
        f"RESULT searchnodes_ms={m['SearchNodes']:.2f} patterns_ms={m['SearchGraphPatterns']:.2f} "
        f"sparql_ms={m['ExecuteSPARQL']:.2f} http_over_embedded={over_embedded('oxigraph'):.2f}{virtuoso_part}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
