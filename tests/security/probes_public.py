"""Probes of tests/security/probes.py: the run queue, malformed traces, markup on the page.

Against the real parts (no server: tests/security/api_probes.py drives the live app):

- one client must not lock everyone out: eight admits carrying made-up X-Forwarded-For
  values, eight admits from eight addresses that never run, one /24 filling the queue,
  an abandoned admit before the same visitor's run, Stop and reconnect;
- every malformed trace below gets "not a valid trace: <field>: <why>";
- markup in the fields that reached the page (stop reason, cost figures, tool names,
  validity) and in every free-text field of a trace is rendered as text.

Each failed probe of the queue or the page is a vulnerability (what an attacker gains);
a trace that crashes the loader is a weakness (the app stayed up).
"""

from __future__ import annotations

import json
import re
import time
import types
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.security.probe_report import VULNERABILITY

Add = Callable[..., None]
INJECTED = re.compile(r"<\s*[a-z][^>]*data-inj", re.I)  # an element the probe's markup opened
FENCED = re.compile(r"^(`{3,})[^\n]*\n.*?\n\1$", re.M | re.S)


def _request(peer: str, session: str, forwarded: str = "") -> Any:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return types.SimpleNamespace(
        headers=headers, client=types.SimpleNamespace(host=peer), session_hash=session
    )


def _queue_probes(add: Add) -> None:
    from ui.run_gate import Busy, RunGate
    from ui.visitor import ProxyTrust, visitor_of

    def visitor(peer: str, session: str, forwarded: str = "", trust: ProxyTrust | None = None) -> Any:
        return visitor_of(_request(peer, session, forwarded), trust or ProxyTrust(), session)

    def refused(gate: RunGate, who: Any, words: str) -> bool:
        try:
            gate.enter(who)
        except Busy as exc:
            return words in str(exc)
        return False

    def spoofed_headers() -> bool:
        gate = RunGate(max_waiting=8, per_visitor=1, per_range=4)
        gate.enter(visitor("203.0.113.7", "s0", "10.0.0.0"))
        spoofs = all(
            refused(gate, visitor("203.0.113.7", f"s{i}", f"10.0.0.{i}"), "already") for i in range(1, 8)
        )
        gate.enter(visitor("198.51.100.1", "someone-else"))
        return spoofs

    def spoofed_on_spaces() -> bool:  # the platform appends the hop it saw: the client's first is ignored
        trust = ProxyTrust.from_env({"SPACE_ID": "x/y"})
        keys = {visitor("10.0.0.2", f"s{i}", f"6.6.6.{i}, 198.51.100.4", trust).key for i in range(8)}
        return keys == {"198.51.100.4"}

    def admits_without_runs() -> bool:
        gate = RunGate(max_waiting=8, per_visitor=1, per_range=4, admit_s=0.2, queued=lambda: frozenset())
        for i in range(8):
            gate.enter(visitor(f"198.51.{i}.1", f"s{i}"))
        full = refused(gate, visitor("192.0.2.1", "late"), "busy")
        time.sleep(0.3)
        gate.enter(visitor("192.0.2.1", "late"))
        return full

    def one_range() -> bool:
        gate = RunGate(max_waiting=8, per_visitor=1, per_range=4)
        for i in range(4):
            gate.enter(visitor(f"198.51.100.{i + 1}", f"s{i}"))
        blocked = refused(gate, visitor("198.51.100.99", "s9"), "network")
        gate.enter(visitor("192.0.2.1", "other"))
        return blocked

    def abandoned_admit() -> bool:
        gate = RunGate(max_waiting=8, per_visitor=1, admit_s=60.0, queued=lambda: frozenset())
        gate.enter(visitor("198.51.100.1", "closed-tab"))
        gate.leave(gate.claim(visitor("198.51.100.1", "new-tab")))
        return gate.counts() == (0, 0)

    def stop_and_reconnect() -> bool:
        gate = RunGate(max_waiting=8, per_visitor=1, admit_s=60.0)
        gate.enter(visitor("198.51.100.1", "tab-1"))
        gate.withdraw("tab-1")  # Stop before the run started
        gate.enter(visitor("198.51.100.1", "tab-2"))
        return True

    for name, probe in (
        ("8 admits, 8 made-up X-Forwarded-For", spoofed_headers),
        ("spoofed first hop on Spaces", spoofed_on_spaces),
        ("8 admits that never run", admits_without_runs),
        ("one /24 fills the queue", one_range),
        ("abandoned admit, same visitor runs", abandoned_admit),
        ("Stop and reconnect", stop_and_reconnect),
    ):
        add("8 one client locks out all", name, probe, VULNERABILITY)


MALFORMED_TRACES: list[tuple[str, str, Any]] = [
    ("visits = 10**400", "nodes.1.visits", 10**400),
    ("action argument a number", "STEP.action.argument", 7),
    ("action argument a list", "STEP.action.argument", ["x"]),
    ("best_by_value = 'x'", "result.best_by_value", "x"),
    ("best_by_value = 1.5", "result.best_by_value", 1.5),
    ("vote answer an object", "result.votes.0.answer.0", {"a": 1}),
    ("cost.model_s = 'x'", "result.cost.model_s", "x"),
    ("cost.tokens a string", "result.cost.tokens", "12"),
    ("event path = 'abc'", "PATH_EVENT.path", "abc"),
    ("lone surrogate in the question", "question", "why \ud800?"),
    ("settings.seed = 10**100", "settings.seed", 10**100),
    ("event node id out of the tree", "PATH_EVENT.node_id", 10**6),
]


def mutated_trace(real: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of the trace `real` with the field at `path` (dotted, as in `MALFORMED_TRACES`:
    STEP is the first node's step with an action, PATH_EVENT the first values_backed_up
    event) set to `value`."""
    step = next(i for i, n in enumerate(real["nodes"]) if n["step"] and n["step"]["action"])
    event = next(i for i, e in enumerate(real["events"]) if e["kind"] == "values_backed_up")
    data = json.loads(json.dumps(real))
    path = path.replace("STEP", f"nodes.{step}.step").replace("PATH_EVENT", f"events.{event}")
    *head, last = path.split(".")
    target: Any = data
    for part in head:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value
    return data


def _trace_probes(add: Add, folder: Path, real: dict[str, Any]) -> None:
    from mcts.search.trace import TraceError, load_trace

    def mutated(index: int, path: str, value: Any) -> Path:
        # One file per case: two cases on the same field must not share (and overwrite) a file.
        out = folder / f"malformed-trace-{index:02d}.json"
        out.write_text(json.dumps(mutated_trace(real, path, value)))
        return out

    def clear(path: Path) -> bool:
        try:
            load_trace(path)
        except TraceError as exc:
            return str(exc).startswith("not a valid trace: ") and "\n" not in str(exc)
        return False

    for index, (name, path, value) in enumerate(MALFORMED_TRACES):
        file = mutated(index, path, value)
        add("9 malformed traces", name, lambda p=file: clear(p))


def _markup_probes(add: Add, folder: Path, real: dict[str, Any]) -> None:
    from mcts.search.cost import CostSummary
    from mcts.search.trace import trace_from_dict
    from tests.markup_trace import write_markup_trace
    from ui import traces
    from ui.session import Session
    from viz import answer_markdown, cost_markdown, hover_text, node_detail_markdown

    trace = trace_from_dict(json.loads(json.dumps(real)))
    tree = trace.to_tree()
    hostile = '<form data-inj="1"><input type="password" data-inj="1"></form>'

    def clean(text: str) -> bool:
        return not INJECTED.search(FENCED.sub("", text))

    result = trace.result
    add("10 markup on the page", "stop_reason <form>",
        lambda: clean(answer_markdown(replace(result, stop_reason=hostile), tree)), VULNERABILITY)  # fmt: skip
    add("10 markup on the page", "cost.policy_calls <form>",
        lambda: clean(cost_markdown(CostSummary(policy_calls=hostile))), VULNERABILITY)  # fmt: skip
    add("10 markup on the page", "cost.tool_calls key <input>",
        lambda: clean(cost_markdown(CostSummary(tool_calls={hostile: 1}))), VULNERABILITY)  # fmt: skip

    def validity() -> bool:
        own = trace.to_tree()
        own.nodes[1].validity = hostile  # type: ignore[assignment]
        return clean(node_detail_markdown(own, 1, c=1.0)) and clean(hover_text(own, own.nodes[1], 1.0))

    add("10 markup on the page", "node validity <form>", validity, VULNERABILITY)

    def every_free_text_field() -> bool:
        out = traces.load(Session(), str(write_markup_trace(folder)))
        # The Markdown and HTML panels (form fields such as the question box show text as text).
        rendered = ("status", "answer", "cost", "detail", "history", "replay_status")
        panels = [out.get(k) for k in rendered]
        # Every panel must be there to be checked: a handler that returned none would pass.
        return (
            "Loaded a trace" in out["status"]
            and all(isinstance(p, str) for p in panels)
            and all(clean(p) for p in panels)
        )

    add("10 markup on the page", "markup in every free-text field", every_free_text_field, VULNERABILITY)


def add_public_probes(add: Add, folder: Path, real: dict[str, Any]) -> None:
    _queue_probes(add)
    _trace_probes(add, folder, real)
    _markup_probes(add, folder, real)
