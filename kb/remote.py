"""A knowledge base behind any SPARQL 1.1 endpoint (Virtuoso, QLever, Oxigraph, Wikidata).

`RemoteKB(url)` implements `kb.base.KnowledgeBase` over HTTP through `kb.http_fetch`
(a small `http.client` client: SPARQLWrapper's urllib followed redirects and had no
deadline for a body trickled one byte at a time):

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
  cancelled the query: Oxigraph's cut body, Virtuoso's S1T00 error, or its partial
  "anytime" answer, known by its S1TAT state or, when that header is missing, by taking
  the whole per-request `timeout` Virtuoso is sent from our deadline),
  `EndpointUnavailable` (connection refused/reset, HTTP 502-504,
  after `retries` retries with exponential back-off, each logged), `QueryRejected`
  (HTTP 400: the endpoint's first message line, outside public mode), `KBError` for
  the rest, malformed replies included (bad JSON, 100k-deep JSON, wrong shapes).

Every query goes through `kb.sparql.guard_and_normalise` first (only SELECT/ASK leave
this machine, and the row cap becomes a LIMIT the server applies).

Name search (`search_names`, `find_mentions`) is `kb.endpoint_names`: a small endpoint's
names are read once into the embedded store's index (`name_index=False` skips it); a big
one is searched with its text index (Virtuoso's `bif:contains`) or substring filters,
over the flavour's name and alias predicates (Freebase or Wikidata: pass
`flavour=WIKIDATA`, an endpoint does not say). It knows nothing of the agent's tools or
of search.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import time
from typing import Any

from kb.base import EndpointUnavailable, KBError, QueryRejected, QueryResult, QueryTimeout, Term
from kb.endpoint_names import EndpointNames
from kb.flavour import FREEBASE, Flavour
from kb.http_fetch import TIMEOUT_WORDS, Response, Transient, fetch, one_line
from kb.name_index import NameIndex
from kb.observation import EntityHit
from kb.sparql import guard_and_normalise

log = logging.getLogger(__name__)

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# Between two JSON result rows: `}}` closes a term and its row, `,{"` opens the next.
# Inside a JSON string every `"` is escaped, so this cannot match within a value.
# Virtuoso's own per-request limit: this share of what is left of our deadline. Its
# anytime answer came about 1.5 s after the limit it was given (measured on the test
# subset), and it must come before our deadline to be an answer rather than a hang-up.
SERVER_SHARE = 0.5
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


def stopped_at_limit(response: Response, limit_ms: int | None) -> bool:
    """Whether this is Virtuoso's "anytime" answer, the rows found when the time limit hit
    rather than the result: its S1TAT state, or, when the state header is missing (Virtuoso
    does not always send it), an answer that took the whole limit it was given."""
    if response.sql_state.startswith("S1TAT"):
        return True
    return limit_ms is not None and response.answered_ms >= limit_ms


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
    keeps the endpoint's reply text out of error messages (see the module docstring);
    `name_index`: hold the endpoint's names in memory (True), never (False), or when it
    has at most `kb.endpoint_names.MAX_INDEXED_NAMES` of them (None).
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
        name_index: bool | None = None,
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
        self._names = EndpointNames(self, name_index)

    def __repr__(self) -> str:
        return f"RemoteKB({self.url!r})"

    # ----- HTTP -----------------------------------------------------------------------
    def _fetch(
        self, sparql: str, timeout_s: float, max_bytes: int | None = None
    ) -> tuple[Response, int | None]:
        """The response and the server-side limit it was sent with (ms; None: none sent)."""
        deadline = time.monotonic() + timeout_s
        for attempt in range(self.retries + 1):
            limit_ms = self._server_limit_ms(deadline)
            try:
                response = fetch(
                    self.url,
                    sparql,
                    deadline,
                    public=self.public,
                    max_bytes=max_bytes or self.max_bytes,
                    post_over=self.post_over,
                    params=None if limit_ms is None else {"timeout": str(limit_ms)},
                )
                return response, limit_ms
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

    def _server_limit_ms(self, deadline: float) -> int | None:
        """Virtuoso's own per-request limit (`timeout`, ms; `SERVER_SHARE` of the time left):
        at it Virtuoso stops the query and answers (S1TAT) instead of running on after we
        gave up; a COUNT over a three-way join otherwise ran past its MaxQueryExecutionTime."""
        if not self._virtuoso:
            return None
        return max(int((deadline - time.monotonic()) * 1000 * SERVER_SHARE), 1)

    # ----- KnowledgeBase ----------------------------------------------------------------
    def query(self, sparql: str, *, timeout_s: float | None = None, max_rows: int = 10_000) -> QueryResult:
        """Guard, normalise (LIMIT max_rows + 1) and run a SELECT/ASK query. Raises KBError."""
        prepared = guard_and_normalise(sparql, self.flavour.prefixes, max_rows=max_rows)
        return self.run_as_is(prepared.sparql, timeout_s, max_rows)

    def run_as_is(
        self,
        sparql: str,
        timeout_s: float | None = None,
        max_rows: int = 10_000,
        max_bytes: int | None = None,
    ) -> QueryResult:
        """Run `sparql` without the guard (our own queries, which may use the endpoint's
        dialect, e.g. `bif:contains`); `max_bytes` overrides the byte cap. Raises KBError."""
        response, limit_ms = self._fetch(
            sparql, timeout_s if timeout_s is not None else self.timeout_s, max_bytes
        )
        if self._virtuoso is None and response.server:
            self._virtuoso = "virtuoso" in response.server.lower()
        if stopped_at_limit(response, limit_ms):
            raise QueryTimeout("the endpoint stopped the query at its time limit (partial results not shown)")
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

    # ----- names ------------------------------------------------------------------------
    @property
    def names(self) -> NameIndex | None:
        """The endpoint's in-memory name index (a small endpoint, `kb.endpoint_names`), or None."""
        return self._names.index

    def search_names(self, text: str, limit: int = 10) -> list[EntityHit]:
        """Entities whose name or alias matches `text`, best first (`kb.endpoint_names`:
        the embedded index for a small endpoint, text-index candidates on a big one)."""
        return self._names.search(text, limit)

    def contains_query(self, text: str) -> str:
        """The every-word query of the search on the endpoint (without LIMIT)."""
        return self._names.contains_query(text)

    def find_mentions(self, question: str, limit: int = 10) -> list[EntityHit]:
        """Entities named in `question` (`NameIndex.find_mentions`); needs the name index."""
        index = self.names
        if index is None:
            raise KBError("no name index for this endpoint: find mentions with SearchNodes")
        return index.find_mentions(question, limit)

    def degree_of(self, entity_id: str) -> int:
        index = self.names
        return 0 if index is None else index.degree_of(entity_id)

    def description_of(self, entity_id: str) -> str:
        index = self.names
        return "" if index is None else index.description_of(entity_id)

    def close(self) -> None:
        """Nothing to release: each request opens and closes its own connection."""
