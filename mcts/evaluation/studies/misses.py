"""Where an eval run's answers are lost: each question not answered exactly, by the step that
went wrong, read off the final query against the gold record (no model run).

Kinds, in this order: `no answer` (the method answered nothing), `other entity` (the query
starts at none of the question's topic entities), `other relation` (right entity, but its
relations are not the gold path's), `gold path, other answers` (the gold path's relations
from a topic entity, yet the answers differ: a constraint the path cannot express, or answers
the subset lacks). Counted per kind of question (the report's facets). Knows Freebase IRIs
and the CWQ record fields (`topic_entities`, `path`); not other KBs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcts.evaluation.report import informative_groups
from mcts.evaluation.runner import EvalRow

FREEBASE = "http://rdf.freebase.com/ns/"
IRI = re.compile(r"<" + re.escape(FREEBASE) + r"([^>]+)>|\bns:([A-Za-z_][\w.]*)")
KINDS = ("exact", "no answer", "other entity", "other relation", "gold path, other answers")


def query_names(sparql: str) -> tuple[set[str], set[str]]:
    """(entity ids, relation names) a Freebase query mentions."""
    names = {a or b for a, b in IRI.findall(sparql)}
    entities = {n for n in names if re.fullmatch(r"[mg]\.[\w]+", n)}
    return entities, names - entities


def gold_relations(record: Mapping[str, Any]) -> set[str]:
    return {rel.strip() for hop in record.get("path", []) for rel in hop.split("->") if rel.strip()}


def kind_of_miss(row: EvalRow, record: Mapping[str, Any]) -> str:
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


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """question id -> its record, from a question JSONL."""
    with path.open(encoding="utf-8") as fh:
        return {str(r["id"]): r for r in map(json.loads, filter(str.strip, fh))}


def misses_markdown(rows: Sequence[EvalRow], records: Mapping[str, Mapping[str, Any]], method: str) -> str:
    """Counts of each kind of miss, one row per informative group of questions."""
    lines = [
        f"| questions ({method}) | n | " + " | ".join(KINDS) + " |",
        "|---|---:|" + "---:|" * len(KINDS),
    ]
    for group, mine in informative_groups(rows):
        counts = Counter(kind_of_miss(r, records[r.question_id]) for r in mine)
        lines.append(f"| {group.label} | {len(mine)} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    return "\n".join(lines)
