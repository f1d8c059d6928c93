"""A hostile HTTP endpoint on 127.0.0.1 for tests: it misbehaves on purpose.

    with hostile_server() as server:
        RemoteKB(server.url("/trickle")).query("ASK {}")

Paths (any method; only `/virtuoso-silent` reads the query string):

- `/trickle`: 200 headers, then one byte of body every 0.5 s, for minutes;
- `/trickle-headers`: the status line and headers one byte every 0.5 s;
- `/redirect`: 302 to `/ok` (a client that follows it would succeed);
- `/deep-json`: a 200 JSON body nested 100,000 `[` deep;
- `/not-sparql`: 200 JSON of the wrong shape (`{"head": 1, "results": [2]}`);
- `/secret-400` and `/secret-500`: an error whose body holds a secret line;
- `/ok`: a correct SPARQL JSON ASK result;
- `/virtuoso-silent`: a Virtuoso that stops at the `timeout` it was sent and answers its
  partial COUNT without the X-SQL-State header (X-Exec-Milliseconds = that timeout);
  `/virtuoso-quick` answers the same COUNT in 3 ms (X-Exec-Milliseconds: 3);
- `/v1/...`: an OpenAI-compatible stub (`/v1/models`, `/v1/chat/completions`) answering
  `Done()`; `/deep/v1/...` answers 100k-deep JSON instead.

Every request's path and `Authorization` header are recorded in `server.requests`.
Runs in a daemon thread; one thread per connection, so a trickle never blocks the rest.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "SECRET-INTERNAL-TOKEN-42"
OK_BODY = json.dumps({"head": {}, "boolean": True}).encode()
COUNT_BODY = json.dumps(
    {"head": {"vars": ["n"]}, "results": {"bindings": [{"n": {"type": "literal", "value": "7"}}]}}
).encode()


@dataclass
class HostileServer:
    port: int
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, Authorization)
    stop: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(server: HostileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _body(self, status: int, body: bytes, kind: str = "application/sparql-results+json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _trickle(self, data: bytes) -> None:
            for i in range(len(data)):
                if server.stop.is_set():
                    return
                try:
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                except OSError:
                    return  # the client gave up: what a good client does
                time.sleep(0.5)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.do_GET()

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            server.requests.append((path, self.headers.get("Authorization", "")))
            if path == "/trickle":
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.end_headers()
                self.wfile.flush()
                self._trickle(b" " * 600 + OK_BODY)
            elif path == "/trickle-headers":
                self._trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 600 + b"\r\n\r\n")
            elif path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/deep-json" or path.startswith("/deep/"):
                self._body(200, b"[" * 100_000 + b"]" * 100_000)
            elif path == "/not-sparql":
                self._body(200, b'{"head": 1, "results": [2]}')
            elif path == "/secret-400":
                self._body(400, f"{SECRET}\nmore".encode(), "text/plain")
            elif path == "/secret-500":
                self._body(500, f"{SECRET}\nmore".encode(), "text/plain")
            elif path == "/ok":
                self._body(200, OK_BODY)
            elif path in ("/virtuoso-silent", "/virtuoso-quick"):
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                exec_ms = query.get("timeout", ["0"])[0] if path == "/virtuoso-silent" else "3"
                self.send_response(200)
                self.send_header("Server", "Virtuoso/07.20.3240 (Linux) x86_64-pc-linux-gnu")
                self.send_header("X-Exec-Milliseconds", exec_ms)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(COUNT_BODY)))
                self.end_headers()
                self.wfile.write(COUNT_BODY)
            elif path.endswith("/models"):
                self._body(
                    200, json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]}).encode()
                )
            elif path.endswith("/chat/completions"):
                reply = {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "stub",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "Thought: done.\nAction: Done()"},
                        }
                    ],
                }
                self._body(200, json.dumps(reply).encode(), "application/json")
            else:
                self._body(404, b"no", "text/plain")

    return Handler


@contextmanager
def hostile_server() -> Iterator[HostileServer]:
    state = HostileServer(port=0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, name="hostile-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
