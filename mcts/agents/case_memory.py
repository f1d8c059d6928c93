"""Case memory: the training questions, their topic entities and gold relations, as evidence
for the guided policy's choices.

Questions over one knowledge base come in families: CWQ builds several questions from one
WebQuestionsSP seed (same topic entity, same relation, a different constraint), and on the
Freebase subset 30 of the 40 choose questions share a topic entity with a train question;
for 24 of them one of those train questions follows the same first relation. A retriever
that embeds relations generalises that only loosely (its top-1 is 90% on its own training
questions, 50% on new ones), so the memory keeps the cases themselves: an option gets the
similarity of the question to the most similar training question that took the same step.

- `case_entity`: an entity option (a span to search, a hit to explore) -> the best
  similarity among the cases whose topic entities include that entity;
- `case_relation`: a first hop from an anchor -> the best similarity among the cases with
  that anchor as topic entity and that first hop;
- `case_relation_any`: any hop (first or further) -> the best similarity among the cases
  that take that relation at any hop, whatever the entity.

0 where no case took the step. Only a trained option ranker weighs these (`LEARNED_ONLY`).
Saved as `cases.jsonl` in a policy-adapter folder, next to the ranker that learned the
weights; states of train questions are collected with the memory of the other fold
(stacking, as for the retriever), so a weight measures what a case is worth on a new question.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.observation import GraphPattern

CASES_FILE = "cases.jsonl"
Hop = tuple[str, tuple[str, ...]]  # (direction, predicates) of a GraphPattern from the anchor
_Evidence = tuple[dict[str, float], dict[tuple[str, Hop], float], dict[Hop, float]]


@dataclass(frozen=True)
class Case:
    question: str
    entities: tuple[str, ...]
    hops: tuple[Hop, ...]

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "entities": list(self.entities),
                "hops": [[d, list(p)] for d, p in self.hops]}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        hops = tuple((str(d), tuple(str(x) for x in p)) for d, p in data["hops"])
        return cls(str(data["question"]), tuple(str(e) for e in data["entities"]), hops)


@dataclass(frozen=True)
class CaseFit:
    """The case features of one state's options (see the module docstring)."""

    entity: Mapping[str, float] = field(default_factory=dict)
    relation: Mapping[tuple[str, GraphPattern], float] = field(default_factory=dict)
    relation_any: Mapping[GraphPattern, float] = field(default_factory=dict)


def save_cases(cases: Sequence[Case], folder: str | Path) -> Path:
    path = Path(folder) / CASES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c.to_json()) + "\n" for c in cases), encoding="utf-8")
    return path


def has_cases(folder: str | Path) -> bool:
    return (Path(folder) / CASES_FILE).is_file()


def load_cases(folder: str | Path) -> list[Case]:
    with (Path(folder) / CASES_FILE).open(encoding="utf-8") as fh:
        return [Case.from_json(json.loads(line)) for line in fh if line.strip()]


class CaseMemory:
    """Cases and a sentence embedder (`encode(texts, persist=False)` -> unit vectors)."""

    def __init__(self, cases: Sequence[Case], embedder: Callable[[], Any]) -> None:
        self.cases = list(cases)
        self._embedder = embedder  # called on first need: the memory loads before the model
        self._vectors: Any = None
        self._last: tuple[str, _Evidence] | None = None

    def similarities(self, question: str) -> list[float]:
        """The question's similarity to each case (0 for a case with the very same text:
        a question is no evidence for itself)."""
        encode = self._embedder().encode
        if self._vectors is None:
            self._vectors = encode([c.question for c in self.cases], persist=False)
        q = encode([question], persist=False)[0]
        return [
            0.0 if c.question == question else float(x)
            for c, x in zip(self.cases, self._vectors @ q, strict=True)
        ]

    def _evidence(self, question: str) -> _Evidence:
        """Best similarity per entity, per (entity, first hop) and per hop, for `question`;
        kept for the last question, since every state of a search asks again."""
        last = self._last  # one read: the app's sessions share the policy across threads
        if last is not None and last[0] == question:
            return last[1]
        evidence: _Evidence = ({}, {}, {})
        by_entity, by_first, by_hop = evidence
        for case, s in zip(self.cases, self.similarities(question), strict=True):
            for e in case.entities:
                by_entity[e] = max(by_entity.get(e, 0.0), s)
                by_first[e, case.hops[0]] = max(by_first.get((e, case.hops[0]), 0.0), s)
            for hop in case.hops:
                by_hop[hop] = max(by_hop.get(hop, 0.0), s)
        self._last = (question, evidence)
        return evidence

    def fit(
        self,
        question: str,
        entities: Iterable[str],
        anchored: Iterable[tuple[str, GraphPattern]],
        patterns: Iterable[GraphPattern],
    ) -> CaseFit:
        """Case features for these entity ids, (anchor id, first-hop pattern) pairs and patterns."""
        if not self.cases:
            return CaseFit()
        by_entity, by_first, by_hop = self._evidence(question)

        def hop(p: GraphPattern) -> Hop:
            return (p.direction, tuple(p.predicates))

        return CaseFit(
            entity={e: by_entity.get(e, 0.0) for e in entities},
            relation={(a, p): by_first.get((a, hop(p)), 0.0) for a, p in anchored},
            relation_any={p: by_hop.get(hop(p), 0.0) for p in patterns},
        )
