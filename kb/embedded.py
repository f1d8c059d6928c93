"""The embedded knowledge base: a pyoxigraph in-memory store plus a name index.

`EmbeddedKB(path)` bulk-loads N-Triples, Turtle, N-Quads or TriG files (each
optionally gzipped), or every such file in a folder, then builds the SQLite FTS5
name index (`kb.name_index`) from the names, aliases and descriptions of the flavour.

Time limit: pyoxigraph has no cancellation API, so a query runs in a daemon worker
thread (pyoxigraph releases the GIL while evaluating) and the caller stops waiting
at the deadline. The worker stops pulling rows at its next row, but a query that
blocks inside one Rust call (ORDER BY, GROUP BY over everything) keeps running in the
background until it finishes; its result is then dropped. Daemon threads never hold
up interpreter exit.

It runs queries it is given: guarding and normalising them is `kb.sparql`'s job.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kb.base import KBError, QueryRejected, QueryResult, QueryTimeout, Term
from kb.flavour import FREEBASE, Flavour, iri_ref
from kb.name_index import NameIndex
from kb.observation import EntityHit

# Suffix (after an optional .gz) -> pyoxigraph RdfFormat attribute name.
FORMATS = {".nt": "N_TRIPLES", ".ttl": "TURTLE", ".nq": "N_QUADS", ".trig": "TRIG"}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


def rdf_files(path: Path) -> list[Path]:
    """The loadable files of a file or folder; raises ValueError naming what is wrong."""
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    loadable = [p for p in files if _format_name(p) is not None]
    if path.is_file() and not loadable:
        raise ValueError(f"{path.name}: not an RDF file (expected {', '.join(FORMATS)}, optionally .gz)")
    if not loadable:
        raise ValueError(f"{path}: no RDF files in folder (expected {', '.join(FORMATS)}, optionally .gz)")
    return loadable


def _format_name(path: Path) -> str | None:
    suffixes = path.suffixes
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return FORMATS.get(suffixes[-1]) if suffixes else None


def to_term(node: Any) -> Term | None:
    """A pyoxigraph term as a plain `Term` (plain and language strings carry no datatype,
    as in SPARQL JSON results, so embedded and remote results compare equal)."""
    import pyoxigraph as ox

    if node is None:
        return None
    if isinstance(node, ox.NamedNode):
        return Term("iri", node.value)
    if isinstance(node, ox.Literal):
        dt = node.datatype.value
        return Term("literal", node.value, None if dt in (_XSD_STRING, _LANG_STRING) else dt, node.language)
    if isinstance(node, ox.BlankNode):
        return Term("bnode", node.value)
    return Term("literal", str(node))  # RDF-star quoted triple: shown as text


class EmbeddedKB:
    """pyoxigraph store + name index, loaded from files. Implements `kb.base.KnowledgeBase`."""

    def __init__(
        self, source: str | Path | Sequence[Path], *, flavour: Flavour = FREEBASE, spec: str | None = None
    ):
        import pyoxigraph as ox

        paths = [Path(source)] if isinstance(source, str | Path) else [Path(p) for p in source]
        files = [f for p in paths for f in rdf_files(p)]
        self.spec = spec if spec is not None else ", ".join(str(p) for p in paths)
        self.flavour = flavour
        self.files = tuple(files)
        started = time.perf_counter()
        self._store = ox.Store()
        for f in files:
            fmt = getattr(ox.RdfFormat, _format_name(f) or "")
            try:
                if f.suffix == ".gz":
                    with gzip.open(f, "rb") as fh:
                        self._store.bulk_load(fh, format=fmt)
                else:
                    self._store.bulk_load(path=str(f), format=fmt)
            except (SyntaxError, OSError, EOFError) as exc:
                raise ValueError(f"{f.name}: cannot load: {' '.join(str(exc).split())}") from exc
        self.load_s = time.perf_counter() - started
        self.names = self._build_name_index()
        self.index_s = time.perf_counter() - started - self.load_s

    def __len__(self) -> int:
        return len(self._store)

    def __repr__(self) -> str:
        return f"EmbeddedKB({self.spec!r}, triples={len(self)}, entities={len(self.names)})"

    # ----- name index -----------------------------------------------------------------
    def _pairs(self, predicate: str) -> list[tuple[str, str, str | None]]:
        sparql = f"SELECT ?e ?v WHERE {{ ?e {iri_ref(predicate)} ?v . FILTER(isIRI(?e) && isLiteral(?v)) }}"
        return [(s[0].value, s[1].value, s[1].language) for s in self._store.query(sparql)]

    def _build_name_index(self) -> NameIndex:
        fl = self.flavour

        def preferred(rows: list[tuple[str, str, str | None]]) -> list[tuple[str, str]]:
            # Names in the flavour's language first, so an entity's display name is that one.
            rows.sort(key=lambda r: (r[2] not in (fl.name_lang, None, ""), r[0]))
            if fl.index_entities_only:  # Wikidata: items only, not the labelled properties
                rows = [r for r in rows if fl.is_entity_iri(r[0])]
            return [(fl.entity_id(e), v) for e, v, _ in rows]

        names = preferred(self._pairs(fl.name_predicate))
        aliases = preferred(self._pairs(fl.alias_predicate)) if fl.alias_predicate else []
        descriptions: dict[str, str] = {}
        if fl.description_predicate:
            for e, v in preferred(self._pairs(fl.description_predicate)):
                descriptions.setdefault(e, v)
        degrees = {
            fl.entity_id(s[0].value): int(s[1].value)
            for s in self._store.query(
                f"SELECT ?e (COUNT(*) AS ?n) WHERE {{ ?e {iri_ref(fl.name_predicate)} ?x . ?e ?p ?o }} GROUP BY ?e"
            )
        }
        return NameIndex(names, aliases, descriptions, degrees)

    def search_names(self, text: str, limit: int = 10) -> list[EntityHit]:
        return self.names.search(text, limit)

    def find_mentions(self, question: str, limit: int = 10) -> list[EntityHit]:
        """Entities named in `question` (longest spans first); see `NameIndex.find_mentions`."""
        return self.names.find_mentions(question, limit)

    # ----- queries --------------------------------------------------------------------
    def query(self, sparql: str, *, timeout_s: float = 10.0, max_rows: int = 10_000) -> QueryResult:
        """Run a SELECT or ASK query; rows beyond `max_rows` are dropped (`truncated`)."""
        box: dict[str, Any] = {}
        done = threading.Event()
        cancelled = threading.Event()

        def work() -> None:
            try:
                box["result"] = self._evaluate(sparql, max_rows, cancelled)
            except BaseException as exc:  # handed to the caller's thread below
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="kb-query", daemon=True).start()
        if not done.wait(timeout_s):
            cancelled.set()
            raise QueryTimeout(f"query ran past its {timeout_s:g} s time limit and was abandoned")
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, KBError):
                raise exc
            if isinstance(exc, SyntaxError):
                raise QueryRejected(f"SPARQL does not parse: {' '.join(str(exc).split())}") from exc
            if isinstance(exc, (OSError, ValueError, TypeError, RuntimeError)):
                raise KBError(f"query failed: {' '.join(str(exc).split())}") from exc
            raise exc
        return box["result"]

    def _evaluate(self, sparql: str, max_rows: int, cancelled: threading.Event) -> QueryResult:
        import pyoxigraph as ox

        result = self._store.query(sparql, use_default_graph_as_union=True)
        if isinstance(result, ox.QueryBoolean):
            return QueryResult(boolean=bool(result))
        if not isinstance(result, ox.QuerySolutions):
            raise QueryRejected("only SELECT and ASK queries are answered (CONSTRUCT/DESCRIBE are not)")
        variables = tuple(v.value for v in result.variables)
        rows: list[tuple[Term | None, ...]] = []
        truncated = False
        for solution in result:
            if cancelled.is_set():
                break
            if len(rows) >= max_rows:
                truncated = True
                break
            rows.append(tuple(to_term(solution[i]) for i in range(len(variables))))
        return QueryResult(variables=variables, rows=tuple(rows), truncated=truncated)

    def close(self) -> None:
        """Nothing to release beyond memory; kept for the KnowledgeBase interface."""
