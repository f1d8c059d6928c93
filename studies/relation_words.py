"""Relation texts from the KB's own schema words: does the zero-shot embedder choose better?

The relation retriever compares the question's relation phrase with a relation's words
(`kb.relation_ranker.readable`: `film.actor.film -> film.performance.film` reads
"film actor film, film performance film"). On a question family the training never saw,
relation choice is the frozen embedder's (`studies.retriever_study`), so what the
relation's text says is the one lever there that needs no family member. Here each stored
relation choice of the gold trajectories (the gold relation among every relation
SearchGraphPatterns showed around the anchor) is ranked zero-shot with the relation written
several ways, words the KB itself holds:

- `readable` (shipped): every predicate's words;
- `+ range type`: plus the type every object of the path's last predicate has (the KB's
  `type.object.type`; where several do, the rarest in the KB: `location.country` rather than
  `location.location`), "film actor film, film performance film (film)". The text the tool
  shows does not say a relation's direction, so for a relation into the anchor this names
  the anchor's own type, as a ranker reading the text would;
- `property words`: each predicate without its domain (`actor film, performance film`);
- `property words + range type`: both;
- the shipped text ranked against the whole question instead of the relation phrase
  (`mcts.agents.guided_options.relation_phrase`: the question without its names and
  filler), and against both.

Top-1 in % over the train and the choose parts' choices (no training: every family is
unseen to a zero-shot embedder), by gold path faithful or not:

    python -m mcts trajectories --kb ../shared/data/fbqa/kb.nt.gz --questions ../shared/data/fbqa/dev.jsonl --out runs/traj/dev.jsonl
    python -m studies.relation_words --kb ../shared/data/fbqa/kb.nt.gz --questions ../shared/data/fbqa/dev.jsonl --trajectories runs/traj/dev.jsonl

Loads only the sentence embedder; about a minute on two cores.
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kb.relation_ranker import readable

NS = "http://rdf.freebase.com/ns/"
_TRIPLE = re.compile(r"<([^>]*)> <([^>]*)> (<[^>]*>|.*) \.\s*$")
# Types every entity of the subset may carry; they say nothing about a relation.
_GENERIC = ("common.", "base.", "user.", "type.", "freebase.")


def range_types(kb_path: str | Path) -> dict[str, str]:
    """Predicate -> the type all its entity objects share (the rarest in the KB if several)."""
    types: dict[str, set[str]] = defaultdict(set)
    objects: dict[str, set[str]] = defaultdict(set)
    with gzip.open(kb_path, "rt", encoding="utf-8") as fh:
        for line in fh:
            m = _TRIPLE.match(line)
            if not m or not m.group(2).startswith(NS):
                continue
            s, p, o = m.group(1), m.group(2)[len(NS) :], m.group(3)
            if p == "type.object.type":
                types[s].add(o.strip("<>")[len(NS) :])
            elif o.startswith("<" + NS):
                objects[p].add(o.strip("<>"))
    popularity = Counter(t for ts in types.values() for t in ts)
    out: dict[str, str] = {}
    for p, objs in objects.items():
        shared = set.intersection(*(types.get(o, set()) for o in objs)) if objs else set()
        shared = {t for t in shared if not t.startswith(_GENERIC)}
        if shared:
            out[p] = min(shared, key=lambda t: (popularity[t], t))
    return out


def _predicates(relation_text: str) -> list[str]:
    return [p.strip().lstrip("^") for p in relation_text.split("->") if p.strip()]


def _words(name: str) -> str:
    return re.sub(r"[._]+", " ", name).strip()


@dataclass(frozen=True)
class Wording:
    """How a relation choice is put to the embedder: the relation's text and the phrase."""

    relation: Callable[[str], str]  # relation text as the tool shows it -> words to embed
    phrase: Callable[[str, str], str] = lambda semantic, question: semantic  # (phrase, question) -> query


def writers(ranges: dict[str, str]) -> dict[str, Wording]:
    def with_range(text: str, body: str) -> str:
        preds = _predicates(text)
        rng = ranges.get(preds[-1]) if preds else None
        return f"{body} ({_words(rng.split('.', 1)[-1])})" if rng else body

    def property_words(text: str) -> str:
        return ", ".join(_words(p.split(".", 1)[-1]) for p in _predicates(text))

    return {
        "readable (shipped)": Wording(readable),
        "+ range type": Wording(lambda t: with_range(t, readable(t))),
        "property words": Wording(property_words),
        "property words + range type": Wording(lambda t: with_range(t, property_words(t))),
        "readable, against the whole question": Wording(readable, lambda semantic, question: question),
        "readable, against phrase and question": Wording(
            readable, lambda semantic, question: f"{semantic} | {question}"
        ),
    }


def top1_table(trajectories: Sequence[dict], records: Sequence[dict], split: dict[str, list[str]],
               wordings: dict[str, Wording]) -> str:  # fmt: skip
    import numpy as np

    from kb.relation_ranker import default_ranker
    from studies.retriever_study import _choices_with_owners

    ranker = default_ranker()
    by_id = {str(r["id"]): r for r in records}
    faithful = {i: r.get("path_matches_gold_relations") for i, r in by_id.items()}
    hops = {i: r.get("hops") for i, r in by_id.items()}
    columns: list[tuple[str, str, Callable[[str], bool]]] = []
    for part in ("train", "choose"):
        columns += [(f"{part}: all", part, lambda i: True),
                    ("faithful", part, lambda i: faithful.get(i) is True),
                    ("faithful one-hop", part, lambda i: faithful.get(i) is True and hops.get(i) == 1),
                    ("not faithful", part, lambda i: faithful.get(i) is False)]  # fmt: skip
    owned = {part: _choices_with_owners(trajectories, set(split[part])) for part in ("train", "choose")}
    header = ["relation text"] + [f"{label} (n={sum(keep(i) for i, _ in owned[part])})"
                                  for label, part, keep in columns]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(columns)]
    for name, wording in wordings.items():
        right: dict[str, list[tuple[str, bool]]] = {}
        for part, pairs in owned.items():
            right[part] = []
            for qid, choice in pairs:
                rel = ranker.encode([wording.relation(t) for t in choice.candidates])
                asked = wording.phrase(choice.semantic.strip(), str(by_id[qid]["question"]))
                scores = rel @ ranker.encode([asked], persist=False)[0]
                right[part].append((qid, bool((scores > scores[choice.gold]).sum() == 0)))
        cells = []
        for _label, part, keep in columns:
            hits = [ok for qid, ok in right[part] if keep(qid)]
            cells.append(f"{100 * float(np.mean(hits)):.1f}" if hits else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", required=True, help="the N-Triples file (kb.nt.gz)")
    parser.add_argument("--questions", required=True, help="dev.jsonl: faithfulness and hops")
    parser.add_argument("--trajectories", required=True, help="from `python -m mcts trajectories`")
    args = parser.parse_args(argv)

    from mcts.training.split import load_split, read_jsonl
    from mcts.training.trajectories import read_trajectories

    table = top1_table(read_trajectories(args.trajectories, valid_only=False), read_jsonl(args.questions),
                       load_split(), writers(range_types(args.kb)))  # fmt: skip
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
