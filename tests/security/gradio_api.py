"""A plain-HTTP client of a running Gradio app, as an attacker talks to it (api_probes.py).

The queue protocol (`POST /gradio_api/queue/join`, then the session's event stream),
private events by `fn_index`, the REST routes and uploads; no gradio_client, so headers,
session hashes and bodies are whatever the caller chooses. Knows nothing of the app
beyond its `/config`.
"""

from __future__ import annotations

import http.client
import json
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

RENDERED = ("markdown", "html", "plot")  # outputs that render markup (text boxes and tables show text)


class Api:
    """The queue protocol and the REST routes of one running app, over plain HTTP."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.config = self.get_json("/config")
        self.components = {c["id"]: c for c in self.config["components"]}
        self.deps = self.config["dependencies"]

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
                timeout: float = 30.0) -> tuple[int, bytes]:  # fmt: skip
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            reply = conn.getresponse()
            return reply.status, reply.read(2_000_000)
        finally:
            conn.close()

    def get_json(self, path: str) -> Any:
        status, body = self.request("GET", path)
        assert status == 200, (path, status)
        return json.loads(body)

    def alive(self) -> bool:
        try:
            return self.request("GET", "/config", timeout=10)[0] == 200
        except OSError:
            return False

    def fn(self, api_name: str) -> int:
        return next(i for i, d in enumerate(self.deps) if d.get("api_name") == api_name)

    def admit_fn(self, before: str = "run") -> int:
        """The private admit event chained before `before` (the page's first step of a run)."""
        return self.fn(before) - 1

    def defaults(self, fn_index: int, **values: Any) -> list[Any]:
        """Data for `fn_index`: each input component's value on the page, or `values` by elem_id/label."""
        out = []
        for cid in self.deps[fn_index]["inputs"]:
            comp = self.components[cid]
            props = comp["props"]
            key = props.get("elem_id") or props.get("label")
            out.append(values.get(str(key), None if comp["type"] == "state" else props.get("value")))
        return out

    def call(self, fn_index: int, data: list[Any], *, session: str | None = None,
             headers: dict[str, str] | None = None, timeout: float = 60.0) -> dict[str, Any]:  # fmt: skip
        """Join the queue and read the event stream to the end: {"success", "output" | "error", "join"}."""
        session = session or uuid.uuid4().hex[:10]
        body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                           "trigger_id": None}).encode()  # fmt: skip
        status, reply = self.request("POST", "/gradio_api/queue/join", body,
                                     {"Content-Type": "application/json", **(headers or {})})  # fmt: skip
        if status != 200:
            return {"success": False, "join": status, "error": reply[:200].decode(errors="replace")}
        event_id = json.loads(reply).get("event_id")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("GET", f"/gradio_api/queue/data?session_hash={session}", headers=headers or {})
            stream = conn.getresponse()
            deadline = time.monotonic() + timeout
            last: dict[str, Any] = {}
            while time.monotonic() < deadline:
                line = stream.readline()
                if not line:
                    break
                if not line.startswith(b"data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") not in (None, event_id):
                    continue
                if msg.get("msg") == "process_generating":
                    last = msg.get("output") or last
                if msg.get("msg") == "process_completed":
                    output = msg.get("output") or {}
                    data = output.get("data") or last.get("data") or []
                    kinds = [self.components[c]["type"] for c in self.deps[fn_index]["outputs"]]
                    # Only Markdown, HTML and plots render markup; text boxes and table cells show text.
                    shown = [d for d, kind in zip(data, kinds, strict=False) if kind in RENDERED]
                    return {"success": msg.get("success"), "output": data, "rendered": shown,
                            "error": output.get("error"), "join": 200}  # fmt: skip
            return {"success": False, "join": 200, "error": "no end of stream"}
        finally:
            conn.close()

    def upload(self, path: Path) -> dict[str, Any] | None:
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{path.name}"\r\n'
                "Content-Type: application/json\r\n\r\n"
            ).encode()
            + path.read_bytes()
            + f"\r\n--{boundary}--\r\n".encode()
        )
        status, reply = self.request("POST", "/gradio_api/upload", body,
                                     {"Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip
        if status != 200:
            return None
        return {"path": json.loads(reply)[0], "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}
