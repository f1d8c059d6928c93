"""An ASGI middleware in front of Gradio's app: a request that names no event gets a 404.

Gradio looks an event up by the `fn_index` of a queue/join body, or by the name in
`/gradio_api/run/<name>` (and its aliases), without a guard: an index it does not hold
(999, -1, 2**64) or a name it does not know (`predict`) surfaces as a KeyError or an
inference error, answered HTTP 500 with a stack trace in the log. This middleware reads
the body of those few POST routes first and answers such a request itself, 404 with one
line, before Gradio sees it; everything else passes untouched. Installed where the app is
launched (`app.launch_kwargs`: FastAPI's `middleware`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX = "/gradio_api/"
NAMED = ("run/", "api/", "call/v2/", "call/")  # routes that name their event after the prefix
MAX_BODY_BYTES = 8_000_000  # a queue/join body holds the event's inputs (text, a file reference)


def event_problem(path: str, body: bytes, fns: dict[int, Any]) -> str | None:
    """Why a POST to `path` (below the root path) with `body` names no event of `fns`, or None.
    Only the routes that look an event up are judged; a body that is not JSON is left to Gradio."""
    if not path.startswith(PREFIX):
        return None
    route = path[len(PREFIX) :]
    name: str | None = None
    if route.rstrip("/") == "queue/join":
        pass
    else:
        prefix = next((p for p in NAMED if route.startswith(p)), None)
        if prefix is None:
            return None
        name = route[len(prefix) :].strip("/")
        if "/" in name:  # /call/<name>/<event_id> and the like: a GET's business
            return None
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None
    index = data.get("fn_index") if isinstance(data, dict) else None
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) or index not in fns:
            return "no such event"
        return None
    if name is not None and not any(getattr(fn, "api_name", None) == name for fn in fns.values()):
        return f"no event named {name[:60]!r}"
    return None


class RouteGuard:
    """ASGI middleware: `blocks` is the Gradio app whose events the requests must name."""

    def __init__(self, app: ASGIApp, blocks: Any) -> None:
        self.app = app
        self.blocks = blocks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if not path.startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        body, more = await _read_body(receive)
        if more:  # larger than any event's inputs: refuse rather than buffer it
            await _answer(send, 413, "request body too large")
            return
        problem = event_problem(path, body, dict(self.blocks.fns))
        if problem is not None:
            await _answer(send, 404, problem)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The whole body, and whether it ran past MAX_BODY_BYTES (then it is cut there)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the buffered body once, then whatever the client sends next."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(send: Send, status: int, detail: str) -> None:
    payload = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
