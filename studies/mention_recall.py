#!/usr/bin/env python
"""How often the entities a question names include its topic entity: the guided policy's
first step can only search what `find_mentions` found (no model run).

    python -m studies.mention_recall --kb ../shared/data/fbqa/kb.nt.gz --questions ../shared/data/fbqa/dev.jsonl

Per part of the fixed split (`examples/splits/fbqa_dev.json`): questions with a topic entity,
and how many have it among their mentions, with the name index's exact and shortened names
only, and with near spellings too (a place named by its adjective, "Chilean"; a misspelt name
standing alone, "Skovakia"). Then the questions the near spellings changed, each with the
entities they added and whether one is the topic entity (`--list`).
"""

from __future__ import annotations

import argparse
import json
import sys

from mcts.evaluation.facets import SPLIT_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kb", required=True, help="KB spec with a name index (e.g. ../shared/data/fbqa/kb.nt.gz)"
    )
    parser.add_argument("--questions", required=True, help="question JSONL with topic_entities (dev.jsonl)")
    parser.add_argument("--list", action="store_true", help="also list the questions near spellings changed")
    args = parser.parse_args(argv)
    from kb.spec import open_kb

    index = getattr(open_kb(args.kb), "names", None)
    if index is None:
        print(f"error: {args.kb} has no name index", file=sys.stderr)
        return 2
    split = json.loads(SPLIT_FILE.read_text(encoding="utf-8"))
    with open(args.questions, encoding="utf-8") as fh:
        records = {str(r["id"]): r for r in map(json.loads, filter(str.strip, fh))}
    print("| part | questions | topic entity among mentions | with near spellings |")
    print("|---|---:|---:|---:|")
    changed = []
    for part in ("train", "choose", "test"):
        found = {False: 0, True: 0}
        mine = [records[i] for i in split[part] if i in records and records[i].get("topic_entities")]
        for record in mine:
            topics = {str(t["mid"]) for t in record["topic_entities"]}
            ids = {}
            for near in (False, True):
                ids[near] = [
                    h.id for h in index.find_mentions(str(record["question"]), 10, near_spellings=near)
                ]
                found[near] += bool(topics & set(ids[near]))
            added = [i for i in ids[True] if i not in ids[False]]
            if added:
                names = ", ".join(index.name_of(i) or i for i in added)
                right = "topic" if topics & set(added) else "other"
                changed.append(f"- {part}, {right}: {record['question']} -> {names}")
        print(f"| {part} | {len(mine)} | {found[False]} | {found[True]} |")
    if args.list:
        print("\nQuestions whose mentions the near spellings changed:\n")
        print("\n".join(changed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
