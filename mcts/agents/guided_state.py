"""What the guided policy knows at a state: entities found, patterns seen, the current query.

Read from the history's structured observations only (`Observation.entities`,
`.patterns`, `.values`), never from observation text. Queries of the history are read
back with `mcts.agents.query_builder.parse_query`; SPARQL in any other form is remembered as
executed but not extended. This module knows nothing of models or prompts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kb.flavour import Flavour
from kb.observation import EntityHit, GraphPattern, Value
from mcts.agents.query_builder import Query, answer_pattern_query, parse_query
from mcts.search.steps import Step


def squash(text: str) -> str:
    """Whitespace-insensitive key for comparing query texts."""
    return " ".join(text.split())


@dataclass
class GuidedState:
    question: str
    searched: set[str] = field(default_factory=set)  # casefolded SearchNodes arguments
    hits: list[EntityHit] = field(default_factory=list)  # SearchNodes hits, first seen first
    # New hits of each SearchNodes that carry the searched name (all homonyms), else its
    # best hit: partial matches ("Dunedin" for "New Zealand") are not what was meant.
    hit_groups: list[tuple[EntityHit, ...]] = field(default_factory=list)
    hit_queries: dict[str, str] = field(default_factory=dict)  # entity id -> its SELECT ?e query
    entity_patterns: dict[str, tuple[GraphPattern, ...]] = field(default_factory=dict)  # id -> patterns
    answer_patterns: dict[str, tuple[GraphPattern, ...]] = field(
        default_factory=dict
    )  # query key -> patterns
    explored: set[str] = field(default_factory=set)  # squashed SearchGraphPatterns arguments
    executed: set[str] = field(default_factory=set)  # squashed ExecuteSPARQL arguments
    taken: set[str] = field(default_factory=set)  # rendered actions already in the history
    current: Query | None = None  # last non-empty ExecuteSPARQL in canonical form
    current_values: tuple[Value, ...] = ()
    last_nonempty: bool = False  # the last step is an ExecuteSPARQL with results
    last_values: tuple[Value, ...] = ()
    depth: int = 0

    def name_of(self, entity_id: str) -> str:
        for h in self.hits:
            if h.id == entity_id:
                return h.name or entity_id
        return entity_id

    def relation_words(self, relations: Sequence[str]) -> str:
        """The relations as words: a relation's label where a pattern seen so far gives
        one (Wikidata: `wdt:P19` -> "place of birth"), else its id (Freebase ids read)."""
        labels: dict[str, str] = {}
        for patterns in (*self.entity_patterns.values(), *self.answer_patterns.values()):
            for p in patterns:
                if p.label:
                    # A statement path's label joins its properties' labels with ": ".
                    for pred, word in zip(p.predicates, p.label.split(": "), strict=False):
                        labels.setdefault(pred, word)
        return " ".join(labels.get(r, r) for r in relations)

    def current_patterns(self) -> tuple[GraphPattern, ...]:
        if self.current is None:
            return ()
        return self.answer_patterns.get(squash(answer_pattern_query(self.current)), ())


def read_state(question: str, history: Sequence[Step], flavour: Flavour) -> GuidedState:
    state = GuidedState(question=question, depth=len(history))
    for step in history:
        action, obs = step.action, step.observation
        state.last_nonempty = False
        if action is None:
            continue
        state.taken.add(action.render())
        if action.tool == "SearchNodes":
            state.searched.add(action.argument.strip().casefold())
            known = {h.id for h in state.hits}
            new = [h for h in obs.entities if h.id not in known]
            state.hits.extend(new)
            state.hit_groups.append(_named_as(action.argument, new))
            for ident, query in flavour.entity_queries(list(obs.entities)).items():
                state.hit_queries.setdefault(ident, query)
        elif action.tool == "SearchGraphPatterns":
            key = squash(action.argument)
            state.explored.add(key)
            owner = _entity_of_query(state, key, flavour)
            if owner is not None:
                state.entity_patterns[owner] = obs.patterns
            else:
                state.answer_patterns[key] = obs.patterns
        elif action.tool == "ExecuteSPARQL":
            state.executed.add(squash(action.argument))
            if obs.values and not obs.is_error and obs.values != (Value("False"),):
                state.last_nonempty = True
                state.last_values = obs.values
                parsed = parse_query(action.argument)
                if parsed is not None:
                    state.current, state.current_values = parsed, obs.values
    return state


def _named_as(name: str, hits: Sequence[EntityHit]) -> tuple[EntityHit, ...]:
    exact = tuple(h for h in hits if h.name.casefold() == name.strip().casefold())
    return exact or tuple(hits[:1])


def _entity_of_query(state: GuidedState, key: str, flavour: Flavour) -> str | None:
    """The entity a `SELECT ?e` query is about, if it is one of the hits' own queries."""
    for ident, query in state.hit_queries.items():
        if squash(query) == key:
            return ident
    for hit in state.hits:
        for homonym in (False, True):
            if squash(flavour.entity_query(hit, homonym=homonym)) == key:
                return hit.id
    m = re.fullmatch(r"SELECT \?e WHERE \{ VALUES \?e \{ (\S+) \} \}", key)
    return flavour.entity_id(flavour.entity_iri(m.group(1))) if m else None
