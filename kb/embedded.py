"""The embedded knowledge base: a pyoxigraph in-memory store plus a name index.

`EmbeddedKB(path)` bulk-loads N-Triples, Turtle, N-Quads or TriG files (each
optionally gzipped), or every such file in a folder, then builds the SQLite FTS5
name index (`kb.name_index`) from the names, aliases and descriptions of the flavour.

Time and memory limits: the store lives in a child process (`kb.query_worker`), which
is killed at a query's deadline (pyoxigraph has no cancellation API, and an abandoned
in-process query ran on for minutes and tens of GB) and runs under a memory ceiling.
A stopped query is a `QueryTimeout`; the next query gets a fresh child.

It runs queries it is given: guarding and normalising them is `kb.sparql`'s job.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from kb.base import QueryResult
from kb.flavour import FREEBASE, Flavour
from kb.name_index import NameIndex
from kb.observation import EntityHit
from kb.query_worker import (
    DEFAULT_MEMORY_MB,
    DEFAULT_SPARE,
    FORMATS,
    LOAD_TIMEOUT_S,
    WorkerPool,
    format_name,
    parser_pool,
)
from kb.store_names import name_index_from

# Query workers per store (env KB_QUERY_WORKERS): each holds a copy of the store; two
# let one session's slow query leave another session's queries running.
DEFAULT_WORKERS = int(os.environ.get("KB_QUERY_WORKERS", "1"))


def rdf_files(path: Path) -> list[Path]:
    """The loadable files of a file or folder; raises ValueError naming what is wrong."""
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    loadable = [p for p in files if format_name(p) is not None]
    if path.is_file() and not loadable:
        raise ValueError(f"{path.name}: not an RDF file (expected {', '.join(FORMATS)}, optionally .gz)")
    if not loadable:
        raise ValueError(f"{path}: no RDF files in folder (expected {', '.join(FORMATS)}, optionally .gz)")
    return loadable


class EmbeddedKB:
    """pyoxigraph store (in `workers` child processes) + name index, loaded from files.
    Implements `kb.base.KnowledgeBase`. `memory_mb`: what one query may use on top of the
    loaded store (each child's address-space ceiling is set from it once loaded); `spare`: keep
    a second child loaded to take over at once after a stopped query (twice the memory)."""

    def __init__(
        self,
        source: str | Path | Sequence[Path],
        *,
        flavour: Flavour = FREEBASE,
        spec: str | None = None,
        workers: int = DEFAULT_WORKERS,
        memory_mb: int = DEFAULT_MEMORY_MB,
        spare: bool = DEFAULT_SPARE,
    ):
        paths = [Path(source)] if isinstance(source, str | Path) else [Path(p) for p in source]
        files = [f for p in paths for f in rdf_files(p)]
        self.spec = spec if spec is not None else ", ".join(str(p) for p in paths)
        self.flavour = flavour
        self.files = tuple(files)
        started = time.perf_counter()
        parser_pool()  # the parse check's child loads while the store does (no wait here)
        self._pool = WorkerPool(self.files, size=workers, memory_mb=memory_mb, spare=spare)
        self.load_s = time.perf_counter() - started
        self.names = self._build_name_index()
        self.index_s = time.perf_counter() - started - self.load_s

    def __len__(self) -> int:
        return self._pool.size

    def __repr__(self) -> str:
        return f"EmbeddedKB({self.spec!r}, triples={len(self)}, entities={len(self.names)})"

    @property
    def restarts(self) -> int:
        """Query workers restarted after a stopped or crashed query."""
        return self._pool.restarts

    # ----- name index -----------------------------------------------------------------
    def _build_name_index(self) -> NameIndex:
        def select(sparql: str):
            return self.query(sparql, timeout_s=LOAD_TIMEOUT_S, max_rows=1 << 62).rows

        return name_index_from(select, self.flavour)

    def search_names(self, text: str, limit: int = 10) -> list[EntityHit]:
        return self.names.search(text, limit)

    def find_mentions(self, question: str, limit: int = 10) -> list[EntityHit]:
        """Entities named in `question` (longest spans first); see `NameIndex.find_mentions`."""
        return self.names.find_mentions(question, limit)

    def degree_of(self, entity_id: str) -> int:
        """The entity's number of edges as a subject (a rough popularity; 0 if unknown)."""
        return self.names.degree_of(entity_id)

    def description_of(self, entity_id: str) -> str:
        return self.names.description_of(entity_id)

    # ----- queries --------------------------------------------------------------------
    def query(self, sparql: str, *, timeout_s: float = 10.0, max_rows: int = 10_000) -> QueryResult:
        """Run a SELECT or ASK query; rows beyond `max_rows` are dropped (`truncated`).
        Past `timeout_s` (or the memory ceiling) the query is stopped: QueryTimeout/KBError."""
        result = self._pool.request("query", sparql, timeout_s=timeout_s, max_rows=max_rows)
        assert result is not None  # "query" always answers with a result
        return result

    def close(self) -> None:
        """Stop the query workers (the store goes with them)."""
        self._pool.close()
