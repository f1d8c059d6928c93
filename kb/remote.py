"""A knowledge base behind any SPARQL 1.1 endpoint (Virtuoso, QLever, Oxigraph, Wikidata).

`RemoteKB(url)` implements `kb.base.KnowledgeBase` over HTTP with `http.client` (a
small client of its own: SPARQLWrapper's urllib followed redirects and had no deadline
for a body trickled one byte at a time, issue 15):

- one deadline (`timeout_s`) covers resolving, connecting, every retry and the whole
  body: a watchdog shuts the socket down when it passes;
- redirects are not followed (a 3xx is an error naming the status);
- `public=True` (the app's public mode) refuses endpoints whose resolved addresses are
  loopback, private, link-local, multicast or reserved, connects to the address it
  checked (no second lookup to rebind), and never puts the endpoint's reply text into
  an error message;
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

import contextlib
import http.client
import ipaddress
import json
import logging
import re
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from kb.base import EndpointUnavailable, KBError, QueryRejected, QueryResult, QueryTimeout, Term
from kb.flavour import FREEBASE, Flavour, iri_ref, sparql_string
from kb.observation import EntityHit
from kb.sparql import guard_and_normalise

log = logging.getLogger(__name__)

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_CHUNK = 1 << 16
# Between two JSON result rows: `}}` closes a term and its row, `,{"` opens the next.
# Inside a JSON string every `"` is escaped, so this cannot match within a value.
_ROW_BOUNDARY = re.compile(rb'\}\s*\}\s*,\s*\{\s*"')
_TIMEOUT_WORDS = ("cancelled", "canceled", "timeout", "timed out", "S1T00")


@dataclass(frozen=True)
class _Response:
    body: bytes
    server: str  # the Server header ("" when absent)
    cut: bool  # the body was cut at max_bytes


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Transient(Exception):
    """A failure worth a retry (connection refused or reset, HTTP 502-504)."""


def _reply_line(body: bytes, public: bool) -> str:
    """The first non-empty line of an endpoint's error reply, or "" in public mode (where
    the reply of an arbitrary host must never reach the page)."""
    if public:
        return ""
    text = body[:4096].decode("utf-8", "replace")
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _one_line("".join(ch for ch in first if ch.isprintable()))


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def resolve_endpoint(url: str, *, public: bool) -> tuple[str, str, int, str]:
    """(scheme, host, port, the address to connect to) of an endpoint URL. In public mode
    every resolved address must be a public one. Raises KBError / EndpointUnavailable."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KBError(f"not an http(s) endpoint URL: {url[:100]!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise KBError(f"bad port in endpoint URL {url[:100]!r}") from None
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise EndpointUnavailable(f"cannot resolve the endpoint host {parts.hostname!r}: {exc}") from None
    addresses = [info[4][0] for info in infos]
    if public and any(_blocked(a) for a in addresses):
        raise KBError(
            f"endpoint host {parts.hostname!r} resolves to a loopback, private or link-local address; "
            "not allowed in public mode"
        )
    return parts.scheme, parts.hostname, port, addresses[0]


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
        if any(word in tail for word in _TIMEOUT_WORDS):
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
    def _connection(self, deadline: float) -> http.client.HTTPConnection:
        scheme, host, port, address = resolve_endpoint(self.url, public=self.public)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline passed while resolving")
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        conn = cls(host, port, timeout=remaining)
        # Connect to the address checked above (TLS still verifies `host`): a second
        # lookup could answer differently (DNS rebinding).
        conn._create_connection = lambda _addr, timeout, source=None: socket.create_connection(  # type: ignore[attr-defined]
            (address, port), timeout, source
        )
        return conn

    def _fetch_once(self, sparql: str, deadline: float) -> _Response:
        parts = urllib.parse.urlsplit(self.url)
        path = parts.path or "/"
        encoded = urllib.parse.urlencode({"query": sparql})
        headers = {
            "Accept": "application/sparql-results+json, application/json;q=0.9",
            "User-Agent": "mcts-kbqa",
        }
        if len(sparql) > self.post_over:
            method, target, body = "POST", path + (f"?{parts.query}" if parts.query else ""), encoded.encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            method, target, body = "GET", f"{path}?{parts.query + '&' if parts.query else ''}{encoded}", None
        conn = self._connection(deadline)
        fired = threading.Event()

        def stop() -> None:  # at the deadline: unblock whatever read is waiting
            fired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), stop)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request(method, target, body=body, headers=headers)
            response = conn.getresponse()
            server = response.getheader("Server", "") or ""
            if response.status != 200:
                self._raise_for_status(response, deadline)
            chunks: list[bytes] = []
            size = 0
            while size <= self.max_bytes:
                chunk = response.read1(_CHUNK) if hasattr(response, "read1") else response.read(_CHUNK)
                if fired.is_set() or time.monotonic() > deadline:
                    raise TimeoutError("deadline")
                if not chunk:
                    return _Response(b"".join(chunks), server, cut=False)
                chunks.append(chunk)
                size += len(chunk)
            return _Response(b"".join(chunks)[: self.max_bytes], server, cut=True)
        except (OSError, http.client.HTTPException) as exc:
            if fired.is_set() or time.monotonic() > deadline:
                raise TimeoutError("deadline") from exc
            raise
        finally:
            watchdog.cancel()
            conn.close()

    def _raise_for_status(self, response: http.client.HTTPResponse, deadline: float) -> None:
        status = response.status
        if 300 <= status < 400:
            raise KBError(f"endpoint answered with a redirect (HTTP {status}); redirects are not followed")
        if status in (502, 503, 504):
            raise _Transient(f"HTTP {status}")
        if status == 404:
            raise EndpointUnavailable(f"no SPARQL endpoint at {self.url} (HTTP 404)")
        reply = response.read(4096) if time.monotonic() < deadline else b""
        line = _reply_line(reply, self.public)
        if status == 400:
            raise QueryRejected(
                f"endpoint rejected the query: {line}" if line else "endpoint rejected the query"
            )
        if status == 500 and any(
            w.lower() in reply.decode("utf-8", "replace").lower() for w in _TIMEOUT_WORDS
        ):
            raise QueryTimeout(f"endpoint timed out{': ' + line if line else ''}")
        raise KBError(f"endpoint error (HTTP {status}){': ' + line if line else ''}")

    def _fetch(self, sparql: str, timeout_s: float) -> _Response:
        deadline = time.monotonic() + timeout_s
        for attempt in range(self.retries + 1):
            try:
                return self._fetch_once(sparql, deadline)
            except KBError:
                raise
            except TimeoutError:
                raise QueryTimeout(f"query ran past its {timeout_s:g} s time limit") from None
            except (
                _Transient,
                ConnectionError,
                http.client.RemoteDisconnected,
                http.client.BadStatusLine,
            ) as exc:
                cause = _one_line(str(exc) or type(exc).__name__)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise KBError(
                    f"endpoint request failed: {_one_line(str(exc) or type(exc).__name__)}"
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
