"""A knowledge base behind any SPARQL 1.1 endpoint (Virtuoso, QLever, Oxigraph, Wikidata).

`RemoteKB(url)` implements `kb.base.KnowledgeBase` over HTTP through `kb.http_fetch`
(a small `http.client` client: SPARQLWrapper's urllib followed redirects and had no
deadline for a body trickled one byte at a time, issue 15):

- one deadline (`timeout_s`) covers resolving, connecting, every retry and the whole
  body; redirects are not followed;
- `public=True` (the app's public mode) refuses endpoints whose resolved addresses are
  not public and never puts the endpoint's reply text into an error message;
- one new TCP connection per request (cheap on 127.0.0.1; no pool to leak);
- GET for short queries, POST (form-encoded) for long ones (URL length limits);
- JSON results, read in chunks with a byte cap (`max_bytes`, 10 MB): a larger result
  is cut at the last complete row and flagged `truncated` instead of being read whole;
  rows beyond `max_rows` are dropped and flagged the same way;
- errors are one-line `KBError`s: `QueryTimeout` (client deadline, or the server
  cancelled the query), `EndpointUnavailable` (connection refused/reset, HTTP 502-504,
  after `retries` retries with exponential back-off, each logged), `QueryRejected`
  (HTTP 400: the endpoint's first message line, outside public mode), `KBError` for
  the rest, malformed replies included (bad JSON, 100k-deep JSON, wrong shapes).

Every query goes through `kb.sparql.guard_and_normalise` first (only SELECT/ASK leave
this machine, and the row cap becomes a LIMIT the server applies).

Name search (`search_names`) is plain SPARQL over the flavour's name and alias
predicates (Freebase or Wikidata: pass `flavour=WIKIDATA`, an endpoint does not say);
see its docstring for the choice and the cost. It knows nothing of the agent's tools
or of search.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import time
from typing import Any

from kb.base import EndpointUnavailable, KBError, QueryRejected, QueryResult, QueryTimeout, Term
from kb.flavour import FREEBASE, Flavour, iri_ref, sparql_string
from kb.http_fetch import TIMEOUT_WORDS, Response, Transient, fetch, one_line
from kb.observation import EntityHit
from kb.sparql import guard_and_normalise

log = logging.getLogger(__name__)

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# Between two JSON result rows: `}}` closes a term and its row, `,{"` opens the next.
# Inside a JSON string every `"` is escaped, so this cannot match within a value.
_ROW_BOUNDARY = re.compile(rb'\}\s*\}\s*,\s*\{\s*"')


def _to_term(binding: dict[str, Any]) -> Term:
    kind = binding.get("type")
    value = binding.get("value", "")
    if not isinstance(value, str):
        raise TypeError("value")
    if kind == "uri":
        return Term("iri", value)
    if kind == "bnode":
        return Term("bnode", value)
    datatype = binding.get("datatype")
    if datatype in (_XSD_STRING, _LANG_STRING):
        datatype = None  # as embedded results: plain and language strings carry none
    lang = binding.get("xml:lang")
    if not isinstance(datatype, str | None) or not isinstance(lang, str | None):
        raise TypeError("datatype/lang")
    return Term("literal", value, datatype, lang)


def _salvage(body: bytes) -> bytes:
    """Close a JSON result cut mid-stream after its last complete row."""
    boundaries = list(_ROW_BOUNDARY.finditer(body))
    if not boundaries:
        raise KBError("result too large: not even one row fits the byte cap; select fewer or shorter values")
    close_at = body.index(b"}", boundaries[-1].start()) + 1
    close_at = body.index(b"}", close_at) + 1
    return body[:close_at] + b"]}}"


def parse_json_result(body: bytes, *, max_rows: int, cut: bool = False) -> QueryResult:
    """SPARQL 1.1 JSON results -> QueryResult; `cut` = the body was cut at the byte cap."""
    if cut:
        body = _salvage(body)
    try:
        doc = json.loads(body.decode("utf-8"))
    except RecursionError:
        raise KBError("endpoint sent a malformed JSON result (nested too deeply)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        tail = body[-300:].decode("utf-8", "replace")
        if any(word in tail for word in TIMEOUT_WORDS):
            # Oxigraph's own timeout: status 200 already sent, then the body stops
            # with "The SPARQL operation has been cancelled".
            raise QueryTimeout("the endpoint cancelled the query at its time limit") from None
        raise KBError(f"endpoint sent a malformed JSON result ({exc.__class__.__name__})") from None
    try:
        return _result_of(doc, max_rows, cut)
    except (TypeError, AttributeError, KeyError, ValueError):
        raise KBError("endpoint sent a JSON reply that is not a SPARQL result") from None


def _result_of(doc: Any, max_rows: int, cut: bool) -> QueryResult:
    if not isinstance(doc, dict):
        raise TypeError("not an object")
    if "boolean" in doc:
        if not isinstance(doc["boolean"], bool):
            raise TypeError("boolean")
        return QueryResult(boolean=doc["boolean"])
    variables = tuple(doc["head"].get("vars", []))
    bindings = doc["results"]["bindings"]
    if not all(isinstance(v, str) for v in variables) or not isinstance(bindings, list):
        raise TypeError("vars/bindings")
    truncated = cut or len(bindings) > max_rows
    rows = tuple(tuple(_to_term(b[v]) if v in b else None for v in variables) for b in bindings[:max_rows])
    return QueryResult(variables=variables, rows=rows, truncated=truncated)


class RemoteKB:
    """A SPARQL 1.1 endpoint as a `KnowledgeBase`.

    `timeout_s` is the default per-query deadline (resolve + connect + retries + whole
    response); `retries` connection failures are retried after `backoff_s * 2**i`
    seconds; `max_bytes` caps the bytes read per result; `post_over` is the query length
    (in characters) from which POST is used; `public` refuses non-public addresses and
    keeps the endpoint's reply text out of error messages (see the module docstring).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        flavour: Flavour | None = None,
        max_bytes: int = 10_000_000,
        post_over: int = 1_500,
        public: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"not an http(s) endpoint URL: {url[:100]!r}")
        if retries < 0 or backoff_s < 0 or timeout_s <= 0 or max_bytes <= 0:
            raise ValueError("retries and backoff_s must be >= 0, timeout_s and max_bytes > 0")
        self.spec = url
        self.url = url
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.flavour = flavour or FREEBASE
        self.max_bytes = max_bytes
        self.post_over = post_over
        self.public = public
        self._virtuoso: bool | None = None

    def __repr__(self) -> str:
        return f"RemoteKB({self.url!r})"

    # ----- HTTP -----------------------------------------------------------------------
    def _fetch(self, sparql: str, timeout_s: float) -> Response:
        deadline = time.monotonic() + timeout_s
        for attempt in range(self.retries + 1):
            try:
                return fetch(
                    self.url,
                    sparql,
                    deadline,
                    public=self.public,
                    max_bytes=self.max_bytes,
                    post_over=self.post_over,
                )
            except KBError:
                raise
            except TimeoutError:
                raise QueryTimeout(f"query ran past its {timeout_s:g} s time limit") from None
            except (
                Transient,
                ConnectionError,
                http.client.RemoteDisconnected,
                http.client.BadStatusLine,
            ) as exc:
                cause = one_line(str(exc) or type(exc).__name__)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise KBError(
                    f"endpoint request failed: {one_line(str(exc) or type(exc).__name__)}"
                ) from None
            delay = self.backoff_s * 2**attempt
            if attempt == self.retries or time.monotonic() + delay >= deadline:
                raise EndpointUnavailable(
                    f"endpoint {self.url} unreachable after {attempt + 1} attempts: {cause}"
                ) from None
            log.warning(
                "endpoint %s: %s; retry %d of %d in %.2f s", self.url, cause, attempt + 1, self.retries, delay
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    # ----- KnowledgeBase ----------------------------------------------------------------
    def query(self, sparql: str, *, timeout_s: float | None = None, max_rows: int = 10_000) -> QueryResult:
        """Guard, normalise (LIMIT max_rows + 1) and run a SELECT/ASK query. Raises KBError."""
        prepared = guard_and_normalise(sparql, self.flavour.prefixes, max_rows=max_rows)
        return self.run_as_is(prepared.sparql, timeout_s, max_rows)

    def run_as_is(self, sparql: str, timeout_s: float | None = None, max_rows: int = 10_000) -> QueryResult:
        """Run `sparql` without the guard (our own queries, which may use the endpoint's
        dialect, e.g. `bif:contains`). Raises KBError."""
        response = self._fetch(sparql, timeout_s if timeout_s is not None else self.timeout_s)
        if self._virtuoso is None and response.server:
            self._virtuoso = "virtuoso" in response.server.lower()
        return parse_json_result(response.body, max_rows=max_rows, cut=response.cut)

    def is_virtuoso(self) -> bool:
        """Whether the endpoint is Virtuoso: its Server header, else a `bif:contains` probe.

        Asked once and cached (a cheap `ASK {}` when no query has run yet).
        """
        if self._virtuoso is None:
            self.run_as_is("ASK {}", None, 1)
        if self._virtuoso is None:  # no Server header: does the endpoint know bif:contains?
            try:
                self.run_as_is('SELECT ?s WHERE { ?s ?p ?o . ?o bif:contains "probe" } LIMIT 1', None, 1)
                self._virtuoso = True
            except (QueryRejected, KBError) as exc:
                if isinstance(exc, EndpointUnavailable | QueryTimeout):
                    raise
                self._virtuoso = False
        return self._virtuoso

    def search_names(self, text: str, limit: int = 10) -> list[EntityHit]:
        """Entities whose name or alias contains `text`, best first.

        Two SPARQL queries: (1) exact name/alias match (an index lookup on any store);
        (2) if that found fewer than `limit`, a substring match:
        - on Virtuoso, `bif:contains` with every word of `text` (its full-text index:
          milliseconds even on all of Freebase's ~100M names);
        - elsewhere, `FILTER(CONTAINS(LCASE(STR(?label)), LCASE("text")))` with a LIMIT.
          Standard SPARQL has no text index, so this scans every name and alias: fine
          for a few million labels (Oxigraph on the test subset: milliseconds), slow on
          full Freebase - serve that from Virtuoso (or QLever, whose `ql:contains-word`
          this does not use yet).
        Ranking (here, not in SPARQL): exact name, exact alias, name starting with the
        text, then containing it; ties go to the shorter name, then the id. The embedded
        KB's FTS5/typo ranking is richer; results on the same data can differ in order.

        Wikidata flavour: the same two queries over `rdfs:label` / `skos:altLabel`
        (English). The Wikidata Query Service's own search (`SERVICE wikibase:mwapi`
        with `mwapi:search` / EntitySearch) calls the MediaWiki API of wikidata.org,
        which is not reachable offline (nor from a local QLever/Virtuoso mirror), and
        SERVICE is refused by our guard; so plain label filters are used. Their cost:
        the exact match is an index lookup (milliseconds, also on WDQS's ~100M English
        labels), but CONTAINS scans every label - fine for a local mirror of a few
        million labels, on all of Wikidata it runs into the server's time limit. When
        the exact match found something and the substring scan times out, the exact
        hits are returned (logged) instead of an error. Property entities (`wd:P...`)
        are labelled too but are not entities to search: hits keep only item ids.
        """
        query = " ".join(text.split())
        if not query:
            raise KBError("empty name: nothing to search for")
        lang = f"@{self.flavour.name_lang}" if self.flavour.name_lang else ""
        exact = f"VALUES ?label {{ {sparql_string(query)}{lang} }}"
        found = self._label_matches(f"SELECT DISTINCT ?e WHERE {{ {self._labels(exact)} }}", limit)
        if len(found) < limit:
            try:
                more = self._label_matches(self.contains_query(query), limit * 5)
            except QueryTimeout:
                if not found:
                    raise
                log.warning("endpoint %s: substring name search timed out; exact matches only", self.url)
                more = []
            found += [e for e in more if e not in found]
        if self.flavour.index_entities_only:
            found = [e for e in found if self.flavour.is_entity_iri(e)]
        return self._rank(query, found)[:limit]

    def _labels(self, condition: str) -> str:
        """`{ ?e name ?label . COND } UNION { ?e alias ?label . COND }` (the condition
        sits inside each branch: Virtuoso wants bif:contains next to its triple)."""
        fl = self.flavour
        predicates = [fl.name_predicate] + ([fl.alias_predicate] if fl.alias_predicate else [])
        return " UNION ".join(f"{{ ?e {iri_ref(p)} ?label . {condition} }}" for p in predicates)

    def contains_query(self, text: str) -> str:
        """The substring-match query of `search_names` (without LIMIT) for this endpoint."""
        condition = ""
        if self.flavour.name_lang:
            condition = f'FILTER(lang(?label) = "" || langMatches(lang(?label), "{self.flavour.name_lang}")) '
        words = re.findall(r"\w+", text)
        if self.is_virtuoso() and words:
            # bif:contains takes its own expression language: quote each word, AND them.
            expression = sparql_string(" AND ".join(f'"{w}"' for w in words))
            condition = f"?label bif:contains {expression} . {condition}"
        else:
            condition += f"FILTER(CONTAINS(LCASE(STR(?label)), {sparql_string(text.lower())}))"
        return f"SELECT DISTINCT ?e WHERE {{ {self._labels(condition)} }}"

    def _label_matches(self, sparql: str, limit: int) -> list[str]:
        result = self.run_as_is(f"{sparql} LIMIT {limit}", None, limit)
        return [row[0].value for row in result.rows if row and row[0] is not None and row[0].kind == "iri"]

    def _rank(self, query: str, iris: list[str]) -> list[EntityHit]:
        if not iris:
            return []
        fl = self.flavour
        values = " ".join(iri_ref(i) for i in iris)
        desc = ""
        if fl.description_predicate:
            desc = f"OPTIONAL {{ ?e {iri_ref(fl.description_predicate)} ?d }}"
        alias = f"OPTIONAL {{ ?e {iri_ref(fl.alias_predicate)} ?a }}" if fl.alias_predicate else ""
        sparql = (
            f"SELECT ?e ?n ?d ?a WHERE {{ VALUES ?e {{ {values} }} "
            f"OPTIONAL {{ ?e {iri_ref(fl.name_predicate)} ?n }} {desc} {alias} }}"
        )
        result = self.run_as_is(sparql, None, 10_000)
        names: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        aliases: dict[str, set[str]] = {}
        for e, n, d, a in result.rows:
            if e is None:
                continue
            if n is not None and (e.value not in names or n.lang == fl.name_lang):
                names[e.value] = n.value
            if d is not None and (e.value not in descriptions or d.lang == fl.name_lang):
                descriptions[e.value] = d.value
            if a is not None:
                aliases.setdefault(e.value, set()).add(a.value.casefold())
        needle = query.casefold()
        hits = []
        for iri in iris:
            name = names.get(iri, "")
            folded = name.casefold()
            if folded == needle:
                tier = 3.0
            elif needle in aliases.get(iri, set()):
                tier = 2.0
            elif folded.startswith(needle):
                tier = 1.0
            else:
                tier = 0.0
            closeness = len(needle) / max(len(folded), len(needle), 1)  # in (0, 1]
            hits.append(EntityHit(fl.entity_id(iri), name, descriptions.get(iri, ""), (tier + closeness) / 4))
        hits.sort(key=lambda h: (-h.score, len(h.name), h.id))
        return hits

    def close(self) -> None:
        """Nothing to release: each request opens and closes its own connection."""
