"""Entity name search over a SPARQL endpoint, as forgiving as the embedded index.

`EndpointNames(kb).search(text, limit)` answers `RemoteKB.search_names` two ways:

- a small endpoint (at most `MAX_INDEXED_NAMES` names) gets the embedded store's own
  index: the same four SPARQL queries as `kb.embedded` (`kb.store_names`), read once in
  pages of `PAGE_ROWS` (a stock Virtuoso answers at most `ResultSetMaxRows` = 10,000
  rows per query, silently; each page is at most that, and the offset moves by what
  came back), held in memory. Same data, same index: the same hits in the same order,
  typos, word prefixes, case and accents included. The subset of ~14k names loads in
  about a second; `name_index=False` on the KB skips it.
- a big one (full Freebase: tens of millions of names) is searched where it lies:
  (1) exact name or alias (an index lookup on any store); (2) candidates whose labels
  hold every word, the last one as a prefix; (3) when that found too few, candidates
  holding any word's first four letters (a missing, extra or wrong letter after them
  still matches). On Virtuoso (2) and (3) are `bif:contains` over its text index
  (`"tom" AND "hank*"`; a wildcard needs at least four leading letters, FT370), elsewhere
  `CONTAINS(LCASE(...))` filters, which scan every label (fine for a few million).
  The candidates' names, aliases, descriptions and degrees are fetched and ranked by a
  `NameIndex` over just them, so the ranking (tiers, rapidfuzz for typos, degree for
  ties) is the embedded one. Typos inside a word's first four letters are only found
  through its other words.

Wikidata flavour: the same queries over `rdfs:label` / `skos:altLabel` (English). The
Wikidata Query Service's own search (`SERVICE wikibase:mwapi`) calls the MediaWiki API
of wikidata.org, not reachable offline nor from a local mirror, and SERVICE is refused
by our guard. When the exact match found something and a candidate scan times out, the
hits so far are ranked (logged) instead of an error. Property entities are labelled too
but are not entities to search: hits keep only item ids.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kb.base import EndpointUnavailable, KBError, QueryResult, QueryTimeout, Term
from kb.flavour import Flavour, iri_ref, sparql_string
from kb.name_index import STOPWORDS, NameIndex, normalise
from kb.observation import EntityHit
from kb.store_names import name_index_from

log = logging.getLogger(__name__)

MAX_INDEXED_NAMES = 200_000  # more names than this: search the endpoint, hold no index
PAGE_ROWS = 10_000  # rows per index page: Virtuoso's default ResultSetMaxRows
INDEX_TIMEOUT_S = 120.0  # per index query
INDEX_PAGE_BYTES = 64_000_000  # per index page (descriptions are long)
RETRY_INDEX_AFTER_S = 30.0  # after the endpoint was down while building the index
CANDIDATES = 200  # fuzzy candidates fetched from the endpoint per search
PREFIX_LETTERS = 4  # Virtuoso's minimum before a `*`; also the fuzzy prefix elsewhere


class Endpoint(Protocol):
    """What this module needs of `kb.remote.RemoteKB`."""

    flavour: Flavour
    url: str
    timeout_s: float

    def run_as_is(
        self,
        sparql: str,
        timeout_s: float | None = None,
        max_rows: int = 10_000,
        max_bytes: int | None = None,
    ) -> QueryResult: ...

    def is_virtuoso(self) -> bool: ...


class _TooBig(Exception):
    """The endpoint holds more names than an in-memory index should."""


class EndpointNames:
    """Name search for one endpoint; `index_wanted`: True/False, or None = when small."""

    def __init__(self, kb: Endpoint, index_wanted: bool | None = None) -> None:
        self.kb = kb
        self.index_wanted = index_wanted
        self._index: NameIndex | None = None
        self._decided = index_wanted is False
        self._retry_at = 0.0
        self._lock = threading.Lock()

    # ----- the in-memory index of a small endpoint -----------------------------------
    @property
    def index(self) -> NameIndex | None:
        """The endpoint's name index, built on first use; None for a big endpoint (or
        while it is unreachable: tried again after `RETRY_INDEX_AFTER_S`)."""
        with self._lock:
            if not self._decided and time.monotonic() >= self._retry_at:
                try:
                    started = time.perf_counter()
                    self._index = self._build()
                    log.info(
                        "endpoint %s: name index of %d entities in %.1f s",
                        self.kb.url,
                        len(self._index),
                        time.perf_counter() - started,
                    )
                    self._decided = True
                except _TooBig as exc:
                    log.info("endpoint %s: %s; names are searched on the endpoint", self.kb.url, exc)
                    self._decided = True
                except (EndpointUnavailable, QueryTimeout) as exc:
                    log.warning("endpoint %s: no name index for now (%s)", self.kb.url, exc)
                    self._retry_at = time.monotonic() + RETRY_INDEX_AFTER_S
                except KBError as exc:  # an endpoint that cannot run the index queries
                    log.warning("endpoint %s: no name index (%s)", self.kb.url, exc)
                    self._decided = True
            return self._index

    def _build(self) -> NameIndex:
        fl = self.kb.flavour
        if self.index_wanted is None:
            probe = f"SELECT ?e WHERE {{ ?e {iri_ref(fl.name_predicate)} ?v }} LIMIT {MAX_INDEXED_NAMES + 1}"
            if self._count(probe) > MAX_INDEXED_NAMES:
                raise _TooBig(f"more than {MAX_INDEXED_NAMES:,} names")
        return name_index_from(self._all_rows, fl)

    def _count(self, sparql: str) -> int:
        result = self.kb.run_as_is(f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ {sparql} }} }}", INDEX_TIMEOUT_S, 1)
        term = result.rows[0][0] if result.rows else None
        return int(term.value) if term is not None else 0

    def _all_rows(self, sparql: str) -> list[tuple[Term | None, ...]]:
        """Every row of `sparql` (a `kb.store_names` query, `?e` first), in pages.

        Pages go by entity IRI (`ORDER BY STR(?e)`, the next page from the last IRI on):
        Virtuoso refuses to sort past offset + limit = 10,000 (SR353), so OFFSET paging
        stops there, and a stock Virtuoso cuts any result at 10,000 rows. The last
        entity of a page is read again in the next one (its rows may span both); rows
        are unique, so repeats are dropped. Ends when the rows the endpoint counts are in.
        """
        expected = self._count(sparql)
        where_end = sparql.rindex("}")  # the store_names queries end their WHERE there
        rows: dict[tuple[Term | None, ...], None] = {}
        after = ""
        while len(rows) < expected:
            keyset = f"FILTER(STR(?e) >= {sparql_string(after)}) " if after else ""
            page = self.kb.run_as_is(
                f"{sparql[:where_end]}{keyset}{sparql[where_end:]} ORDER BY STR(?e) LIMIT {PAGE_ROWS}",
                INDEX_TIMEOUT_S,
                PAGE_ROWS,
                INDEX_PAGE_BYTES,
            )
            if page.truncated:
                raise KBError("a page of labels ran past the byte cap")
            before = len(rows)
            rows.update(dict.fromkeys(page.rows))
            last = page.rows[-1][0] if page.rows else None
            if len(rows) == before or last is None or last.value == after:
                break  # nothing new, or one entity fills a page: what came is what there is
            after = last.value
        if len(rows) < expected:
            raise KBError(f"read {len(rows):,} of {expected:,} label rows")
        return list(rows)

    # ----- search -----------------------------------------------------------------------
    def search(self, text: str, limit: int = 10) -> list[EntityHit]:
        query = " ".join(text.split())
        if not query:
            raise KBError("empty name: nothing to search for")
        index = self.index
        if index is not None:
            return index.search(query, limit)
        return self.search_endpoint(query, limit)

    def search_endpoint(self, query: str, limit: int = 10) -> list[EntityHit]:
        """Search the endpoint itself (no index): candidates, ranked as the index would."""
        fl = self.kb.flavour
        lang = f"@{fl.name_lang}" if fl.name_lang else ""
        exact = f"VALUES ?label {{ {sparql_string(query)}{lang} }}"
        found = self._matches(f"SELECT DISTINCT ?e WHERE {{ {self.labels(exact)} }}", limit)
        steps: list[Callable[[], str | None]] = [
            lambda: self.contains_query(query),
            lambda: self.fuzzy_query(query),
        ]
        for step in steps:
            if len(found) >= limit:
                break
            sparql = step()
            if sparql is None:
                continue
            try:
                more = self._matches(sparql, CANDIDATES)
            except QueryTimeout:
                if not found:
                    raise
                log.warning("endpoint %s: a name scan timed out; ranking the matches so far", self.kb.url)
                break
            except EndpointUnavailable:
                raise
            except KBError as exc:
                # A text-index expression the endpoint refuses (a noise word, a wildcard that
                # matches too many words): the other step may still find candidates.
                log.warning("endpoint %s: name search step refused (%s)", self.kb.url, exc)
                continue
            found += [e for e in more if e not in found]
        if fl.index_entities_only:
            found = [e for e in found if fl.is_entity_iri(e)]
        return self._rank(query, found, limit)

    def labels(self, condition: str) -> str:
        """`{ ?e name ?label . COND } UNION { ?e alias ?label . COND }` (the condition
        sits inside each branch: Virtuoso wants bif:contains next to its triple)."""
        fl = self.kb.flavour
        predicates = [fl.name_predicate] + ([fl.alias_predicate] if fl.alias_predicate else [])
        return " UNION ".join(f"{{ ?e {iri_ref(p)} ?label . {condition} }}" for p in predicates)

    def _lang_filter(self) -> str:
        lang = self.kb.flavour.name_lang
        return f'FILTER(lang(?label) = "" || langMatches(lang(?label), "{lang}")) ' if lang else ""

    def contains_query(self, text: str) -> str:
        """Labels holding every word of `text`, the last one possibly unfinished."""
        words = re.findall(r"\w+", text.casefold())
        if self.kb.is_virtuoso() and words:
            terms = [_quoted(w) for w in words[:-1]] + [_prefix(words[-1], whole=False)]
            condition = f"?label bif:contains {sparql_string(' AND '.join(terms))} . "
        else:
            parts = words or [text.casefold()]
            condition = "FILTER(" + " && ".join(_contains(p) for p in parts) + ")"
        return f"SELECT DISTINCT ?e WHERE {{ {self.labels(self._lang_filter() + condition)} }}"

    def fuzzy_query(self, text: str) -> str | None:
        """Labels holding any content word's first `PREFIX_LETTERS` letters (None: no word)."""
        words = [w for w in re.findall(r"\w+", normalise(text)) if len(w) >= 2]
        words = [w for w in words if w not in STOPWORDS] or words
        if not words:
            return None
        if self.kb.is_virtuoso():
            expression = " OR ".join(_prefix(w, whole=True) for w in dict.fromkeys(words))
            condition = f"?label bif:contains {sparql_string(expression)} . "
        else:
            stems = dict.fromkeys(w[:PREFIX_LETTERS] for w in words)
            condition = "FILTER(" + " || ".join(_contains(s) for s in stems) + ")"
        return f"SELECT DISTINCT ?e WHERE {{ {self.labels(self._lang_filter() + condition)} }}"

    def _matches(self, sparql: str, limit: int) -> list[str]:
        result = self.kb.run_as_is(f"{sparql} LIMIT {limit}", None, limit)
        return [row[0].value for row in result.rows if row and row[0] is not None and row[0].kind == "iri"]

    def _rank(self, query: str, iris: list[str], limit: int) -> list[EntityHit]:
        """The candidates ranked by a `NameIndex` over just them (the embedded ranking)."""
        if not iris:
            return []
        fl = self.kb.flavour
        values = " ".join(iri_ref(i) for i in iris)
        desc = f"OPTIONAL {{ ?e {iri_ref(fl.description_predicate)} ?d }}" if fl.description_predicate else ""
        alias = f"OPTIONAL {{ ?e {iri_ref(fl.alias_predicate)} ?a }}" if fl.alias_predicate else ""
        sparql = (
            f"SELECT ?e ?n ?d ?a WHERE {{ VALUES ?e {{ {values} }} "
            f"OPTIONAL {{ ?e {iri_ref(fl.name_predicate)} ?n }} {desc} {alias} }}"
        )
        names: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        aliases: list[tuple[str, str]] = []
        for e, n, d, a in self.kb.run_as_is(sparql, None, 10_000).rows:
            if e is None:
                continue
            key = fl.entity_id(e.value)
            if n is not None and (key not in names or n.lang == fl.name_lang):
                names[key] = n.value
            if d is not None and (key not in descriptions or d.lang == fl.name_lang):
                descriptions[key] = d.value
            if a is not None:
                aliases.append((key, a.value))
        index = NameIndex(sorted(names.items()), aliases, descriptions, self._degrees(values))
        return index.search(query, limit)

    def _degrees(self, values: str) -> dict[str, int]:
        """Edges per candidate (the index's tie-break); none when the endpoint is slow."""
        fl = self.kb.flavour
        # Counted as `kb.store_names.degree_query` counts them: once per name.
        name = iri_ref(fl.name_predicate)
        sparql = f"SELECT ?e (COUNT(*) AS ?n) WHERE {{ VALUES ?e {{ {values} }} ?e {name} ?x . ?e ?p ?o }} GROUP BY ?e"
        try:
            rows = self.kb.run_as_is(sparql, min(self.kb.timeout_s, 5.0), 10_000).rows
        except QueryTimeout:
            return {}
        return {fl.entity_id(e.value): int(n.value) for e, n in rows if e and n}


def _quoted(word: str) -> str:
    return f'"{word}"'


def _prefix(word: str, *, whole: bool) -> str:
    """A bif:contains term: `"word*"` (or its first letters with `whole`), a short word as is."""
    if len(word) < PREFIX_LETTERS:
        return _quoted(word)
    return f'"{word[:PREFIX_LETTERS] if whole else word}*"'


def _contains(text: str) -> str:
    return f"CONTAINS(LCASE(STR(?label)), {sparql_string(text)})"
