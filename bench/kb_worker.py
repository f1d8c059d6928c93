"""What the killable query worker costs: per-query latency, worker vs in-process.

Every embedded query runs in a child process (`kb.query_worker`) that is
killed at its deadline. This measures, in one run on the real Freebase subset, the
median latency of the same queries three ways:

- `inproc`: pyoxigraph in this process, rows converted to `Term`s (the floor);
- `thread`: the old path, a daemon thread per query that the caller stops waiting for;
- `worker`: `EmbeddedKB.query` (a round trip to the worker process).

Queries: 1-hop lookups (`<entity> ?p ?o LIMIT 20`) of the dev questions' topic entities,
the shape the guided policy issues most, plus the `parse` check of `kb.sparql`.
Then the cost of a stop: a self-join stopped at 0.3 s, and how long until the next
query is answered, with the spare child (the default) and without (`spare=False`).
Prints ratios; the last line is

    RESULT worker_ms=<median> inproc_ms=<median> worker_over_thread=<ratio> worker_over_inproc=<ratio>
           ... after_stop_spare_s=<s> after_stop_reload_s=<s>

Usage: python -m bench.kb_worker [--repeats 200]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import statistics
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "fbqa"


def _queries(limit: int) -> list[str]:
    ids: list[str] = []
    for line in (DATA / "dev.jsonl").read_text().splitlines():
        for entity in json.loads(line).get("topic_entities", []):
            if entity["mid"] not in ids:
                ids.append(entity["mid"])
    return [f"SELECT ?p ?o WHERE {{ <http://rdf.freebase.com/ns/{i}> ?p ?o }} LIMIT 20" for i in ids[:limit]]


def _median_ms(run, queries: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        for q in queries:
            started = time.perf_counter()
            run(q)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()

    import pyoxigraph as ox

    from kb.base import QueryTimeout, Term
    from kb.embedded import EmbeddedKB
    from kb.query_worker import _term, parser_pool

    store = ox.Store()
    with gzip.open(DATA / "kb.nt.gz", "rb") as fh:
        store.bulk_load(fh, format=ox.RdfFormat.N_TRIPLES)
    kb = EmbeddedKB(DATA / "kb.nt.gz")
    queries = _queries(20)

    def inproc(q: str) -> object:
        result = store.query(q, use_default_graph_as_union=True)
        n = len(result.variables)
        return [tuple(Term(*t) if (t := _term(s[i])) else None for i in range(n)) for s in result]

    def thread(q: str) -> object:
        box: dict[str, object] = {}
        done = threading.Event()

        def work() -> None:
            box["r"] = inproc(q)
            done.set()

        threading.Thread(target=work, daemon=True).start()
        done.wait(10)
        return box["r"]

    def worker(q: str) -> object:
        return kb.query(q)

    empty = ox.Store()
    parse = parser_pool()
    for run in (inproc, thread, worker):  # warm-up
        _median_ms(run, queries, 2)
    rows = {
        "inproc": _median_ms(inproc, queries, args.repeats),
        "thread": _median_ms(thread, queries, args.repeats),
        "worker": _median_ms(worker, queries, args.repeats),
        "parse_inproc": _median_ms(lambda q: empty.query(q), queries, args.repeats),
        "parse_worker": _median_ms(lambda q: parse.request("parse", q, timeout_s=5), queries, args.repeats),
    }
    kb.close()
    after_stop: dict[bool, float] = {}
    for spare in (True, False):
        store_kb = EmbeddedKB(DATA / "kb.nt.gz", spare=spare)
        time.sleep(10)  # the spare finishes loading
        with contextlib.suppress(QueryTimeout):
            store_kb.query("SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?b ?q ?c2 }", timeout_s=0.3)
        started = time.perf_counter()
        store_kb.query("ASK { ?s ?p ?o }", timeout_s=60)
        after_stop[spare] = time.perf_counter() - started
        store_kb.close()
    for name, ms in rows.items():
        print(f"{name:>13}: {ms:7.3f} ms median over {args.repeats * len(queries)} queries")
    print(
        f"RESULT worker_ms={rows['worker']:.3f} inproc_ms={rows['inproc']:.3f} "
        f"worker_over_thread={rows['worker'] / rows['thread']:.2f} "
        f"worker_over_inproc={rows['worker'] / rows['inproc']:.2f} "
        f"parse_worker_ms={rows['parse_worker']:.3f} parse_inproc_ms={rows['parse_inproc']:.3f} "
        f"after_stop_spare_s={after_stop[True]:.2f} after_stop_reload_s={after_stop[False]:.2f}"
    )


if __name__ == "__main__":
    main()
