"""Median latency of each agent tool on the real Freebase subset: embedded vs HTTP endpoint.

Runs the same actions, built from the questions in ../shared/data/fbqa/dev.jsonl
(topic-entity names, `SELECT ?e` by name with the question as `semantic`, the
questions' 1-2 hop `kb_sparql`, a few type queries), through `kb.tools.Toolbox` on

- the embedded store (`EmbeddedKB`, pyoxigraph in memory + FTS5 names), and
- the same file served by `oxigraph serve` on 127.0.0.1 (`RemoteKB` over HTTP),

side by side, after one warm-up pass (embedding cache warm, label caches cleared per
pass so names are looked up every time). Prints a table with ratios; the last line is

    RESULT searchnodes_ms=<median> patterns_ms=<median> sparql_ms=<median> http_over_embedded=<ratio>

with the embedded medians, and `http_over_embedded` = (sum of the three HTTP medians) /
(sum of the three embedded medians). Targets (embedded): SearchNodes < 2 ms,
SearchGraphPatterns < 20 ms, simple ExecuteSPARQL < 5 ms.

Usage: .venv/bin/python bench/kb_tools.py [--questions 40] [--repeats 3]
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
sys.path.insert(0, str(REPO))
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

    from kb.embedded import EmbeddedKB
    from kb.relation_ranker import EmbeddingRanker
    from kb.remote import RemoteKB
    from kb.tools import Toolbox
    from tests.oxigraph_server import oxigraph_server

    actions = workload(args.questions)
    ranker = EmbeddingRanker()  # one warm cache shared by both sides
    started = time.perf_counter()
    embedded_kb = EmbeddedKB(DATA / "kb.nt.gz")
    print(f"embedded load + name index: {time.perf_counter() - started:.2f} s ({len(embedded_kb)} triples)")
    embedded = Toolbox(embedded_kb, ranker=ranker)
    with oxigraph_server(DATA / "kb.nt.gz") as server:
        remote = Toolbox(RemoteKB(server.url), ranker=ranker)
        for toolbox in (embedded, remote):  # warm-up: model, relation vectors, type lists
            timings(toolbox, actions, 1)
        emb = timings(embedded, actions, args.repeats)
        http = timings(remote, actions, args.repeats)

    medians = {t: (statistics.median(emb[t]), statistics.median(http[t])) for t in TOOLS}
    print(f"\n{len(actions)} actions x {args.repeats} passes; median ms per call")
    print(f"{'tool':<22}{'embedded':>10}{'http':>10}{'http/emb':>10}{'p90 emb':>10}")
    for tool in TOOLS:
        e, h = medians[tool]
        p90 = statistics.quantiles(emb[tool], n=10)[-1] if len(emb[tool]) > 1 else e
        print(f"{tool:<22}{e:>10.2f}{h:>10.2f}{h / e:>10.1f}{p90:>10.2f}")
    main3 = ("SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL")
    ratio = sum(medians[t][1] for t in main3) / sum(medians[t][0] for t in main3)
    # Remote SearchNodes is a SPARQL substring scan (kb.remote), not an index: show the
    # store-only ratio too, so the HTTP cost of the other tools is visible on its own.
    store_only = sum(medians[t][1] for t in main3[1:]) / sum(medians[t][0] for t in main3[1:])
    print(f"http/embedded over the three tools: {ratio:.1f}x; without SearchNodes: {store_only:.1f}x")
    print(
        f"RESULT searchnodes_ms={medians['SearchNodes'][0]:.2f} patterns_ms={medians['SearchGraphPatterns'][0]:.2f} "
        f"sparql_ms={medians['ExecuteSPARQL'][0]:.2f} http_over_embedded={ratio:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
