#!/usr/bin/env python
"""What an agent that only follows relation paths can score: the gold path's own answers on
the KB against the gold answers, per kind of question (no model run).

    python -m studies.path_ceiling --questions ../shared/data/fbqa/dev.jsonl --part test

A CWQ question often ties its answer to a second entity, a type, a number or an order the
relation path does not hold ("What language spoken in Canada is the language of Daedalus?"):
the path then answers a superset, and its F1 against the gold answers (the record's
`f1_kb_vs_gold`) is below 100 however well an agent picks entity and relations. Beside it,
how many of those questions tie the answer to a second entity the guided policy could
constrain by: one the question names (`find_mentions`), and the gold query's relation to it (`gold_ties`).

Columns: questions; the path's F1 (mean, x100); questions the path answers exactly; questions
whose gold query ties the answer to a named second entity. Rows: the report's breakdown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcts.evaluation.facets import load_split_info
from mcts.evaluation.report import informative_groups


@dataclass(frozen=True)
class QuestionKind:
    """The attributes the report's breakdown reads, for a question record with no run."""

    hops: int
    faithful: bool | None
    family_in_train: bool | None
    held_out: bool | None
    path_f1: float
    tied: bool


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", required=True, help="question JSONL with f1_kb_vs_gold (dev.jsonl)")
    parser.add_argument("--part", choices=["train", "choose", "test"], required=True)
    parser.add_argument("--kb", default=None, help="KB spec: also count ties to a named second entity")
    args = parser.parse_args(argv)
    info = load_split_info()
    wanted = {i for i, part in info.part_of.items() if part == args.part}
    with open(args.questions, encoding="utf-8") as fh:
        records = [r for r in map(json.loads, filter(str.strip, fh)) if str(r["id"]) in wanted]
    if not records:
        print(f"error: no question of the {args.part} part in {args.questions}", file=sys.stderr)
        return 2
    tied_to = _named_ties(args.kb) if args.kb else None
    kinds = []
    for r in records:
        facets = info.facets(str(r["id"]), r)
        kinds.append(
            QuestionKind(
                hops=int(r.get("hops") or 0),
                faithful=facets.faithful,
                family_in_train=facets.family_in_train,
                held_out=facets.held_out,
                path_f1=float(r.get("f1_kb_vs_gold") or 0.0),
                tied=bool(tied_to and tied_to(r)),
            )
        )
    header = "| questions | n | gold path F1 | path exact |" + (
        " tied to a named entity |" if tied_to else ""
    )
    print(header)
    print("|---|---:|---:|---:|" + ("---:|" if tied_to else ""))
    for group, mine in informative_groups(kinds):
        f1 = 100 * sum(k.path_f1 for k in mine) / len(mine)
        exact = sum(k.path_f1 >= 1.0 for k in mine)
        row = f"| {group.label} | {len(mine)} | {f1:.2f} | {exact} |"
        print(row + (f" {sum(k.tied for k in mine)} |" if tied_to else ""))
    return 0


_TRIPLE = re.compile(r"(\?\w+|ns:[\w.]+)\s+ns:([\w.]+)\s+(\?\w+|ns:[\w.]+)\s*\.")
_ENTITY = re.compile(r"ns:([mg]\.\w+)$")


def gold_ties(gold_sparql: str, topic_id: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(entity, direction, predicates) of each tie of the answer `?x` to an entity other than
    the topic in a Freebase gold query: `?x p E` is E's pattern in (p,), `E p ?x` out (p,),
    and through one node `?x p1 ?c . ?c p2 E` in (p1, p2), `E p1 ?c . ?c p2 ?x` out (p1, p2)
    (the tools' `GraphPattern` terms, see `mcts.agents.query_builder.pattern_triples`)."""
    triples = [m.groups() for m in _TRIPLE.finditer(gold_sparql)]

    def other(term: str) -> str | None:
        m = _ENTITY.match(term)
        return m.group(1) if m and m.group(1) != topic_id else None

    ties = [(e, "in", (p,)) for s, p, o in triples if s == "?x" and (e := other(o))]
    ties += [(e, "out", (p,)) for s, p, o in triples if o == "?x" and (e := other(s))]
    for s1, p1, o1 in triples:
        if not o1.startswith("?") or o1 == "?x":
            continue
        for s2, p2, o2 in triples:
            if s2 != o1:
                continue
            if s1 == "?x" and (e := other(o2)):
                ties.append((e, "in", (p1, p2)))
            elif o2 == "?x" and (e := other(s1)):
                ties.append((e, "out", (p1, p2)))
    return ties


def _named_ties(kb_spec: str) -> Callable[[dict[str, Any]], bool]:
    """Does a record's gold query tie the answer to a second entity the question names?"""
    from kb.spec import open_kb

    kb = open_kb(kb_spec)

    def tied(record: dict[str, Any]) -> bool:
        topics = record.get("topic_entities") or []
        if not topics:
            return False
        ties = gold_ties(str(record.get("gold_sparql") or ""), str(topics[0]["mid"]))
        named = {h.id for h in kb.find_mentions(str(record["question"]), 10)}
        return any(entity in named for entity, _, _ in ties)

    return tied


if __name__ == "__main__":
    raise SystemExit(main())
