"""Where an eval run's answers are lost: each question not answered exactly, by the step that
went wrong, read off the final query against the gold record (no model run).

    python scripts/miss_analysis.py runs/dev-test --questions ../shared/data/fbqa/dev.jsonl --method single
    python scripts/miss_analysis.py runs/folds/0 runs/folds/1 --questions ../shared/data/fbqa/dev.jsonl --folds 2

Kinds, in this order: `no answer` (the method answered nothing), `other entity` (the query
starts at none of the question's topic entities), `other relation` (right entity, but its
relations are not the gold path's), `gold path, other answers` (the gold path's relations
from a topic entity, yet the answers differ: a constraint the path cannot express, or answers
the subset lacks). Printed per kind of question (the report's facets), as counts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcts.evaluation.report import ReportInputError, collect_rows, informative_groups  # noqa: E402  (repo root first on the path)
from mcts.evaluation.runner import EvalRow  # noqa: E402
from mcts.training.split import load_split  # noqa: E402
from scripts.fold_report import with_fold_families  # noqa: E402

FREEBASE = "http://rdf.freebase.com/ns/"
IRI = re.compile(r"<" + re.escape(FREEBASE) + r"([^>]+)>|\bns:([A-Za-z_][\w.]*)")
KINDS = ("exact", "no answer", "other entity", "other relation", "gold path, other answers")


def query_names(sparql: str) -> tuple[set[str], set[str]]:
    """(entity ids, relation names) a Freebase query mentions."""
    names = {a or b for a, b in IRI.findall(sparql)}
    entities = {n for n in names if re.fullmatch(r"[mg]\.[\w]+", n)}
    return entities, names - entities


def gold_relations(record: dict) -> set[str]:
    return {rel.strip() for hop in record.get("path", []) for rel in hop.split("->") if rel.strip()}


def kind_of_miss(row: EvalRow, record: dict) -> str:
    if row.exact:
        return "exact"
    if not row.answer:
        return "no answer"
    entities, relations = query_names(row.answer_sparql)
    topic = {t["mid"] for t in record.get("topic_entities", [])}
    if not entities & topic:
        return "other entity"
    if not gold_relations(record) <= relations:
        return "other relation"
    return "gold path, other answers"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", help="eval output folders or results files")
    parser.add_argument("--questions", required=True, help="the question JSONL the run answered")
    parser.add_argument("--method", default="single")
    parser.add_argument(
        "--folds",
        type=int,
        default=0,
        help="the runs are held-out train folds (scripts/fold_report.py): count a family as seen "
        "only when another of this many folds holds it",
    )
    args = parser.parse_args(argv)
    with open(args.questions, encoding="utf-8") as fh:
        records = {str(r["id"]): r for r in map(json.loads, filter(str.strip, fh))}
    rows = [r for r in collect_rows(args.runs) if r.method == args.method]
    if rows and args.folds:
        try:
            rows = with_fold_families(rows, load_split()["train"], args.folds)
        except ReportInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if not rows:
        print(f"error: no {args.method} rows in {', '.join(args.runs)}", file=sys.stderr)
        return 2
    unknown = [r.question_id for r in rows if r.question_id not in records]
    if unknown:
        print(
            f"error: {len(unknown)} questions are not in {args.questions} (e.g. {unknown[0]})",
            file=sys.stderr,
        )
        return 2
    print(f"| questions ({args.method}) | n | " + " | ".join(KINDS) + " |")
    print("|---|---:|" + "---:|" * len(KINDS))
    for group, mine in informative_groups(rows):
        counts = Counter(kind_of_miss(r, records[r.question_id]) for r in mine)
        print(f"| {group.label} | {len(mine)} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
