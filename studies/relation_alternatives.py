#!/usr/bin/env python
"""How many right relations a faithful one-hop question has around its topic entity (no model).

    python -m studies.relation_alternatives --kb ../shared/data/fbqa/kb.nt.gz --questions ../shared/data/fbqa/dev.jsonl

Every relation SearchGraphPatterns could show around the question's topic entity is followed
(the one-hop query the guided policy writes for it) and its answers are compared with the
gold path's answers on the same KB (the record's `kb_answers`). Freebase states many
relations twice, once from each end (`film.actor.film -> film.performance.film` from an
actor, `film.film.starring -> film.performance.actor` into them), and which of the two the
gold query took is a convention of its author; on a subset of Freebase the two need not
hold the same triples. So a relation other than the gold one may answer the question
exactly, or only in part.

Columns: questions; gold path into the topic entity (`^r`); the gold predicates also shown
the other way round (the same text, so the ranker ties them); another relation answers
exactly the gold path's answers; of those, one in the other direction; questions where the
best other relation answers only part (0 < F1 < 1); their mean best F1 (x100). Rows: each
part of the dev split (faithful one-hop questions), all and by family seen / unseen (train:
seen when the other train fold holds a member, as `python -m mcts study folds` counts it).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcts.evaluation.facets import load_split_info
from mcts.training.option_states import family_seen_by_fold
from mcts.training.trajectories import path_patterns

if TYPE_CHECKING:
    from kb.tools import Toolbox

FOLDS = 2  # as `train-policy --mode options` splits the train part


@dataclass(frozen=True)
class Alternatives:
    """What the relations around one question's topic entity answer, against the gold path."""

    part: str
    family_seen: bool | None
    gold_in: bool
    gold_reversed_shown: bool  # the gold predicates are also there in the other direction
    exact_other: bool  # another relation answers exactly the gold path's answers
    exact_other_reversed: bool  # ... one whose direction is the other one
    best_other_f1: float  # the best F1 of another relation against the gold path's answers


def f1(found: set[str], gold: set[str]) -> float:
    hit = len(found & gold)
    if not hit:
        return 0.0
    precision, recall = hit / len(found), hit / len(gold)
    return 2 * precision * recall / (precision + recall)


def alternatives_of(record: dict, tools: Toolbox, part: str, family_seen: bool | None) -> Alternatives | None:
    """None when the record has no topic entity or no gold answer on the KB."""
    from kb.sparql import guard_and_normalise
    from mcts.agents.query_builder import one_hop

    topics = record.get("topic_entities") or []
    gold = {a["mid"] for a in record.get("kb_answers") or [] if a.get("mid")}
    if not topics or not gold:
        return None
    anchor = str(topics[0]["mid"])
    (gold_direction, gold_predicates) = path_patterns(record["path"])[0]
    best, exact, exact_reversed, reversed_shown = 0.0, False, False, False
    for pattern in tools.relations_around(anchor):
        if pattern.predicates == gold_predicates:
            reversed_shown |= pattern.direction != gold_direction
            if pattern.direction == gold_direction:
                continue  # the gold relation itself
        prepared = guard_and_normalise(one_hop(anchor, pattern).render(), tools.flavour.prefixes)
        rows = tools.kb.query(prepared.sparql, timeout_s=60).rows
        found = {tools.flavour.entity_id(r[0].value) for r in rows if r[0] is not None and r[0].kind == "iri"}
        score = f1(found, gold)
        best = max(best, score)
        if score >= 1.0:
            exact = True
            exact_reversed |= pattern.direction != gold_direction
    return Alternatives(
        part, family_seen, gold_direction == "in", reversed_shown, exact, exact_reversed, best
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", required=True, help="KB spec (the Freebase subset)")
    parser.add_argument("--questions", required=True, help="question JSONL with kb_answers (dev.jsonl)")
    args = parser.parse_args(argv)

    from kb.spec import open_kb
    from kb.tools import Toolbox

    info = load_split_info()
    with open(args.questions, encoding="utf-8") as fh:
        records = [r for r in map(json.loads, filter(str.strip, fh)) if str(r["id"]) in info.part_of]
    train_ids = [str(r["id"]) for r in records if info.part_of[str(r["id"])] == "train"]
    seen_by_fold = family_seen_by_fold(train_ids, FOLDS)
    tools = Toolbox(open_kb(args.kb), timeout_s=60)
    found: list[Alternatives] = []
    for record in records:
        qid = str(record["id"])
        if record.get("hops") != 1 or record.get("path_matches_gold_relations") is not True:
            continue
        part = info.part_of[qid]
        seen = seen_by_fold(qid) if part == "train" else info.facets(qid, record).family_in_train
        item = alternatives_of(record, tools, part, seen)
        if item is not None:
            found.append(item)
    print(
        "| faithful one-hop questions | n | gold path in | gold predicates also the other way |"
        " another relation exact | of which the other direction | another relation partly |"
        " best other F1 there |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for part in ("train", "choose", "test"):
        for label, keep in (("", None), (", family seen", True), (", family unseen", False)):
            mine = [a for a in found if a.part == part and (keep is None or a.family_seen is keep)]
            if not mine:
                continue
            partly = [a for a in mine if not a.exact_other and a.best_other_f1 > 0]
            mean = 100 * sum(a.best_other_f1 for a in partly) / len(partly) if partly else 0.0
            print(
                f"| {part}{label} | {len(mine)} | {sum(a.gold_in for a in mine)} |"
                f" {sum(a.gold_reversed_shown for a in mine)} | {sum(a.exact_other for a in mine)} |"
                f" {sum(a.exact_other_reversed for a in mine)} | {len(partly)} | {mean:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
