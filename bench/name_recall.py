"""Recall of the questions' topic entities by SearchNodes: embedded vs Virtuoso.

For every topic entity of the questions in ../shared/data/fbqa/dev.jsonl, the query is the
question's own span for it: the word span of the question closest to the entity's name
(rapidfuzz ratio over spans of up to the name's length + 1 words; "obama" for Barack
Obama, "us" for United States of America), as a user or the model would type it. A
second pass drops one letter from the span's longest word (its middle letter), a typo.
The hit counts when the entity is among SearchNodes' first 1 / 10 results, on

- embedded: the pyoxigraph store with its FTS5 + rapidfuzz name index;
- virtuoso-index: a real Virtuoso (tests/virtuoso_server.py) through `RemoteKB`, which
  reads the endpoint's names once into the same index (a small endpoint);
- virtuoso-bif: the same Virtuoso with `name_index=False`: `bif:contains` candidates
  re-ranked by rapidfuzz, as on full Freebase.

Prints a table; the last line is

    RESULT <store>_r1=<%> <store>_r10=<%> ... (typed spans), then typo_<store>_r10=<%>

Usage: python -m bench.name_recall [--questions 408]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "fbqa"


def question_span(question: str, name: str) -> str:
    """The word span of `question` closest to `name` (see the module docstring)."""
    from rapidfuzz import fuzz

    from kb.name_index import normalise

    words = question.rstrip("?.! ").split()
    target = normalise(name)
    longest = len(target.split()) + 1
    best, best_score = name, -1.0
    for n in range(1, min(longest, len(words)) + 1):
        for start in range(len(words) - n + 1):
            span = " ".join(words[start : start + n]).strip(",;:\"'()")
            score = fuzz.ratio(normalise(span), target)
            if score > best_score:
                best, best_score = span, score
    return best


def typo(span: str) -> str:
    """`span` with the middle letter of its longest word dropped (words of 4+ letters)."""
    words = span.split()
    i = max(range(len(words)), key=lambda j: len(words[j]))
    word = words[i]
    if len(word) < 4:
        return span
    words[i] = word[: len(word) // 2] + word[len(word) // 2 + 1 :]
    return " ".join(words)


def recall(kb, cases: list[tuple[str, str]]) -> tuple[float, float, float]:
    """(% found first, % found in the first 10, median ms) over (text, mid) cases."""
    import statistics

    first = top10 = 0
    times = []
    for i, (text, mid) in enumerate(cases):
        if i and i % 100 == 0:
            print(f"  {i}/{len(cases)}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            ids = [h.id for h in kb.search_names(text, 10)]
        except Exception as exc:  # noqa: BLE001  (a failed search is a miss, reported)
            print(f"warning: {text!r}: {exc}", file=sys.stderr)
            ids = []
        times.append((time.perf_counter() - started) * 1000)
        first += ids[:1] == [mid]
        top10 += mid in ids
    n = max(len(cases), 1)
    return 100 * first / n, 100 * top10 / n, statistics.median(times) if times else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--questions", type=int, default=408, help="questions from dev.jsonl (default all 408)"
    )
    args = parser.parse_args()
    if not (DATA / "kb.nt.gz").exists():
        print(f"real data absent: {DATA}", file=sys.stderr)
        return 2
    from kb.embedded import EmbeddedKB
    from kb.remote import RemoteKB
    from tests.virtuoso_server import binaries, virtuoso_server

    if binaries() is None:
        print("Virtuoso is not installed (apt-get install virtuoso-opensource)", file=sys.stderr)
        return 2
    with (DATA / "dev.jsonl").open(encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh][: args.questions]
    typed = [
        (question_span(r["question"], t["name"]), t["mid"]) for r in records for t in r["topic_entities"]
    ]
    typos = [(typo(text), mid) for text, mid in typed]
    print(f"{len(records)} questions, {len(typed)} topic entities; e.g. {typed[:3]} / {typos[:3]}")
    embedded = EmbeddedKB(DATA / "kb.nt.gz")
    rows = {}
    with virtuoso_server(DATA / "kb.nt.gz") as server:
        stores = {
            "embedded": embedded,
            "virtuoso-index": RemoteKB(server.url, timeout_s=10),
            "virtuoso-bif": RemoteKB(server.url, timeout_s=10, name_index=False),
        }
        for name, kb in stores.items():
            print(name, file=sys.stderr, flush=True)
            rows[name] = (recall(kb, typed), recall(kb, typos))
    embedded.close()
    print(f"\n{'store':<16}{'typed@1':>9}{'typed@10':>10}{'typo@1':>9}{'typo@10':>9}{'median ms':>11}")
    for name, ((t1, t10, ms), (y1, y10, _)) in rows.items():
        print(f"{name:<16}{t1:>9.1f}{t10:>10.1f}{y1:>9.1f}{y10:>9.1f}{ms:>11.1f}")
    typed_part = " ".join(f"{n}_r1={v[0][0]:.1f} {n}_r10={v[0][1]:.1f}" for n, v in rows.items())
    typo_part = " ".join(f"typo_{n}_r10={v[1][1]:.1f}" for n, v in rows.items())
    print(f"RESULT {typed_part} {typo_part}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
