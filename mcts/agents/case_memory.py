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

Whether to stop or go one hop further: questions of one family also share their length
(on the train folds, 34 two-hop questions have a same-entity, same-first-hop case that goes
on, and 3 one-hop questions do; on the choose questions 6 against 0). So with a current
chain query (`mcts.agents.query_builder.edge_path`):

- `case_stop` (on Done): the best similarity among the cases from that anchor whose path
  is exactly that chain; `case_further` (on looking at the answers' relations): among
  those whose path starts with it and goes on. `case_stop_any` and `case_further_any` are
  the same, whatever the entity;
- `case_relation` on an extension: the best similarity among the cases from that anchor
  whose path starts with the extended chain.

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
from mcts.agents.query_builder import Edge, pattern_edges

CASES_FILE = "cases.jsonl"
Hop = tuple[str, tuple[str, ...]]  # (direction, predicates) of a GraphPattern from the anchor
Chain = tuple[Edge, ...]  # the edges of a path from its anchor (`query_builder.edge_path`)


@dataclass(frozen=True)
class _Evidence:
    """Best similarities for one question, keyed by the step a case took (see `CaseMemory.fit`)."""

    entity: dict[str, float] = field(default_factory=dict)
    first: dict[tuple[str, Hop], float] = field(default_factory=dict)
    hop: dict[Hop, float] = field(default_factory=dict)
    # Per (anchor, chain) where a case's path ends (`stop`) or goes on (`further`); chains are
    # cut at hop boundaries. `*_any`: per chain, whatever the anchor.
    stop: dict[tuple[str, Chain], float] = field(default_factory=dict)
    further: dict[tuple[str, Chain], float] = field(default_factory=dict)
    stop_any: dict[Chain, float] = field(default_factory=dict)
    further_any: dict[Chain, float] = field(default_factory=dict)


def _keep_max(table: dict[Any, float], key: Any, value: float) -> None:
    table[key] = max(table.get(key, 0.0), value)


@dataclass(frozen=True)
class Case:
    question: str
    entities: tuple[str, ...]
    hops: tuple[Hop, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "entities": list(self.entities),
            "hops": [[d, list(p)] for d, p in self.hops],
        }

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
    stop: float = 0.0
    further: float = 0.0
    stop_any: float = 0.0
    further_any: float = 0.0
    extension: Mapping[GraphPattern, float] = field(default_factory=dict)


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
        """The best similarities of `question` per step the cases took; kept for the last
        question, since every state of a search asks again."""
        last = self._last  # one read: the app's sessions share the policy across threads
        if last is not None and last[0] == question:
            return last[1]
        ev = _Evidence()
        for case, s in zip(self.cases, self.similarities(question), strict=True):
            chains, walked = [], ()
            for hop in case.hops:
                _keep_max(ev.hop, hop, s)
                walked += pattern_edges(*hop)
                chains.append(walked)
            *inner, whole = chains
            _keep_max(ev.stop_any, whole, s)
            for chain in inner:
                _keep_max(ev.further_any, chain, s)
            for e in case.entities:
                _keep_max(ev.entity, e, s)
                _keep_max(ev.first, (e, case.hops[0]), s)
                _keep_max(ev.stop, (e, whole), s)
                for chain in inner:
                    _keep_max(ev.further, (e, chain), s)
        self._last = (question, ev)
        return ev

    def fit(
        self,
        question: str,
        entities: Iterable[str],
        anchored: Iterable[tuple[str, GraphPattern]],
        patterns: Iterable[GraphPattern],
        current: tuple[str, Chain] | None = None,
        extensions: Iterable[GraphPattern] = (),
    ) -> CaseFit:
        """Case features for these entity ids, (anchor id, first-hop pattern) pairs and
        patterns; with `current` (the current chain query's anchor and edges), for stopping
        there or going on, and for each of `extensions` (patterns from its answers)."""
        if not self.cases:
            return CaseFit()
        ev = self._evidence(question)

        def hop(p: GraphPattern) -> Hop:
            return (p.direction, tuple(p.predicates))

        def taken(key: tuple[str, Chain]) -> float:  # a case's path ends there or goes on
            return max(ev.stop.get(key, 0.0), ev.further.get(key, 0.0))

        chain_fit: dict[str, Any] = {}
        if current is not None:
            anchor, chain = current
            chain_fit = {
                "stop": ev.stop.get(current, 0.0),
                "further": ev.further.get(current, 0.0),
                "stop_any": ev.stop_any.get(chain, 0.0),
                "further_any": ev.further_any.get(chain, 0.0),
                "extension": {p: taken((anchor, chain + pattern_edges(*hop(p)))) for p in extensions},
            }
        return CaseFit(
            entity={e: ev.entity.get(e, 0.0) for e in entities},
            relation={(a, p): ev.first.get((a, hop(p)), 0.0) for a, p in anchored},
            relation_any={p: ev.hop.get(hop(p), 0.0) for p in patterns},
            **chain_fit,
        )
