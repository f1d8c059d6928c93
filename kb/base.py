"""The one interface every knowledge base implements, and its plain result types.

Two implementations: `kb.embedded.EmbeddedKB` (pyoxigraph in memory + SQLite FTS5
name index) and `kb.remote.RemoteKB` (any SPARQL 1.1 endpoint). The agent tools
(`kb.tools`) are written once against this interface, so the same action gives the
same observation on both. This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from kb.observation import EntityHit


class KBError(RuntimeError):
    """A knowledge-base failure the agent should see as an observation (bad query,
    timeout, endpoint down, result too large). The message is one clear line."""


class QueryRejected(KBError):
    """The query is not allowed (not SELECT/ASK, SERVICE, update...) or does not parse."""


class QueryTimeout(KBError):
    """The query ran past its time limit."""


class EndpointUnavailable(KBError):
    """The remote endpoint could not be reached after bounded retries."""


@dataclass(frozen=True)
class Term:
    """One RDF term of a result row."""

    kind: Literal["iri", "literal", "bnode"]
    value: str  # full IRI, lexical form, or blank-node label
    datatype: str | None = None  # full datatype IRI for typed literals
    lang: str | None = None


@dataclass(frozen=True)
class QueryResult:
    variables: tuple[str, ...] = ()
    rows: tuple[tuple[Term | None, ...], ...] = ()
    boolean: bool | None = None  # ASK queries
    truncated: bool = False  # rows were capped


class KnowledgeBase(Protocol):
    spec: str  # the spec string it was opened from ("demo", a path, an URL)

    def query(self, sparql: str, *, timeout_s: float = 10.0, max_rows: int = 10_000) -> QueryResult:
        """Run an already guarded/normalised SELECT or ASK query. Raises KBError."""
        ...

    def search_names(self, text: str, limit: int = 10) -> list[EntityHit]:
        """Entities whose name (or alias) matches `text`, best first. Raises KBError."""
        ...

    def close(self) -> None: ...
