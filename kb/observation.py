"""What a tool returns: the text the agent sees plus structured payloads.

The text is the observation the agent reads (docs/method.md#the-agent-and-its-tools). The structured fields let code
(the guided policy, the evaluation, the UI) use the same result without re-parsing
text. Nothing here knows about stores, models or search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ObservationStatus = Literal["ok", "empty", "error"]


@dataclass(frozen=True)
class Value:
    """One result value: an entity (with id) or a literal (id is None)."""

    name: str
    id: str | None = None  # e.g. "m.0dl567" (Freebase, no prefix) or "Q42"; None for literals
    datatype: str | None = None  # literal datatype local name, e.g. "date", "integer"


@dataclass(frozen=True)
class EntityHit:
    """One SearchNodes hit."""

    id: str
    name: str
    description: str = ""
    score: float = 0.0


@dataclass(frozen=True)
class GraphPattern:
    """One relation around `?e` found by SearchGraphPatterns.

    `predicates` has one element for a direct relation and two for a CVT pair
    (`p1 -> p2`), as relation ids (Freebase: bare, e.g. "film.actor.film"; Wikidata:
    prefixed, e.g. "wdt:P19", "p:P39 -> pq:P580"). `direction` is
    "out" for (?e, p, x) and "in" for (x, p, ?e).
    """

    direction: Literal["out", "in"]
    predicates: tuple[str, ...]
    sample: Value
    score: float = 0.0
    # Readable text of the relation from the KB itself, where ids do not read (Wikidata:
    # property labels, "position held: start time" for `p:P39 -> pq:P580`); "" otherwise.
    label: str = ""

    def relation_text(self) -> str:
        return " -> ".join(self.predicates)


@dataclass(frozen=True)
class Observation:
    text: str
    status: ObservationStatus = "ok"
    values: tuple[Value, ...] = ()  # ExecuteSPARQL results (ASK gives one Value "True"/"False")
    entities: tuple[EntityHit, ...] = ()  # SearchNodes hits
    patterns: tuple[GraphPattern, ...] = ()  # SearchGraphPatterns results
    types: tuple[str, ...] = ()  # SearchTypes results
    sparql: str = ""  # the query actually executed (after normalisation), if any
    elapsed_s: float = 0.0
    meta: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_error(self) -> bool:
        return self.status == "error"

    @classmethod
    def error(cls, message: str, elapsed_s: float = 0.0) -> Observation:
        """One clear line; newlines in the cause are folded so the agent sees one line."""
        line = " ".join(str(message).split())
        return cls(text=f"Error: {line}", status="error", elapsed_s=elapsed_s)
