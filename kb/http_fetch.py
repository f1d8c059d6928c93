"""HTTP for SPARQL endpoints: one request with one deadline, no redirects, and in public
mode no internal addresses (docs/security.md). Used by `kb.remote.RemoteKB`, which adds retries
and result parsing.

- `resolve_endpoint` resolves the host once; in public mode every address must be public
  (not loopback, private, link-local, multicast, reserved or unspecified; IPv4-mapped
  IPv6 unwrapped), and the request then goes to the address checked (no second lookup a
  rebinding DNS could answer differently; TLS still verifies the host name);
- `fetch` sends one GET or form POST; a watchdog timer shuts the socket down at the
  deadline, so connect, headers trickled a byte at a time and a slow body all end
  there (socket timeouts alone restart on every byte);
- a 3xx is an error (never followed); an error reply's text appears in the message
  only outside public mode (`reply_line`), first line, printable characters only.

It knows nothing of SPARQL results or of the agent.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from kb.base import EndpointUnavailable, KBError, QueryRejected, QueryTimeout

CHUNK = 1 << 16
# Words in an error reply or a cut body that mean the server stopped the query at its limit.
# Virtuoso: S1T00 = MaxQueryExecutionTime reached; MTXNA = the transaction it stopped there.
TIMEOUT_WORDS = ("cancelled", "canceled", "timeout", "timed out", "S1T00", "MTXNA")


@dataclass(frozen=True)
class Response:
    body: bytes
    server: str  # the Server header ("" when absent)
    cut: bool  # the body was cut at max_bytes
    sql_state: str = ""  # Virtuoso's X-SQL-State header: S1TAT = partial results at its time limit
    # How long the server worked on it: Virtuoso's X-Exec-Milliseconds, else the time from
    # sending the request to its headers (a SPARQL server sends them once the query ran).
    answered_ms: float = 0.0


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class Transient(Exception):
    """A failure worth a retry (connection refused or reset, HTTP 502-504)."""


def reply_line(body: bytes, public: bool) -> str:
    """The first non-empty line of an endpoint's error reply, or "" in public mode (where
    the reply of an arbitrary host must never reach the page)."""
    if public:
        return ""
    text = body[:4096].decode("utf-8", "replace")
    first = next((line for line in text.splitlines() if line.strip()), "")
    return one_line("".join(ch for ch in first if ch.isprintable()))


def blocked(address: str) -> bool:
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
    if public and any(blocked(a) for a in addresses):
        raise KBError(
            f"endpoint host {parts.hostname!r} resolves to a loopback, private or link-local address; "
            "not allowed in public mode"
        )
    return parts.scheme, parts.hostname, port, addresses[0]


def _connection(url: str, deadline: float, public: bool) -> http.client.HTTPConnection:
    scheme, host, port, address = resolve_endpoint(url, public=public)
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


def fetch(
    url: str,
    sparql: str,
    deadline: float,
    *,
    public: bool,
    max_bytes: int,
    post_over: int,
    params: dict[str, str] | None = None,
) -> Response:
    """One request for `sparql` (GET, or a form POST past `post_over` characters; `params`
    go with the query) that ends by `deadline` (time.monotonic): the body up to `max_bytes`. Raises KBError
    (redirects, HTTP errors, refused addresses), Transient (worth a retry) or
    TimeoutError; other OSErrors are the caller's to sort."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    encoded = urllib.parse.urlencode({"query": sparql, **(params or {})})
    headers = {
        "Accept": "application/sparql-results+json, application/json;q=0.9",
        "User-Agent": "mcts-kbqa",
    }
    if len(sparql) > post_over:
        method, target, body = "POST", path + (f"?{parts.query}" if parts.query else ""), encoded.encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    else:
        method, target, body = "GET", f"{path}?{parts.query + '&' if parts.query else ''}{encoded}", None
    conn = _connection(url, deadline, public)
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
        sent = time.monotonic()
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        exec_ms = _exec_ms(response)
        answered_ms = exec_ms if exec_ms is not None else (time.monotonic() - sent) * 1000
        server = response.getheader("Server", "") or ""
        sql_state = response.getheader("X-SQL-State", "") or ""
        if response.status != 200:
            _raise_for_status(response, url, deadline, public)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
            if fired.is_set() or time.monotonic() > deadline:
                raise TimeoutError("deadline")
            if not chunk:
                return Response(b"".join(chunks), server, False, sql_state, answered_ms)
            chunks.append(chunk)
            size += len(chunk)
        return Response(b"".join(chunks)[:max_bytes], server, True, sql_state, answered_ms)
    except (OSError, http.client.HTTPException) as exc:
        if fired.is_set() or time.monotonic() > deadline:
            raise TimeoutError("deadline") from exc
        raise
    finally:
        watchdog.cancel()
        conn.close()


def _exec_ms(response: http.client.HTTPResponse) -> float | None:
    """Virtuoso's X-Exec-Milliseconds header as a number; None when absent or not one."""
    text = (response.getheader("X-Exec-Milliseconds", "") or "").strip()
    return float(text) if text.isascii() and text.isdigit() else None


def _raise_for_status(response: http.client.HTTPResponse, url: str, deadline: float, public: bool) -> None:
    status = response.status
    if 300 <= status < 400:
        raise KBError(f"endpoint answered with a redirect (HTTP {status}); redirects are not followed")
    if status in (502, 503, 504):
        raise Transient(f"HTTP {status}")
    if status == 404:
        raise EndpointUnavailable(f"no SPARQL endpoint at {url} (HTTP 404)")
    reply = response.read(4096) if time.monotonic() < deadline else b""
    line = reply_line(reply, public)
    if status == 400:
        raise QueryRejected(f"endpoint rejected the query: {line}" if line else "endpoint rejected the query")
    if status == 500 and any(w.lower() in reply.decode("utf-8", "replace").lower() for w in TIMEOUT_WORDS):
        raise QueryTimeout(f"endpoint timed out{': ' + line if line else ''}")
    raise KBError(f"endpoint error (HTTP {status}){': ' + line if line else ''}")
