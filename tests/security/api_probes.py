"""An adversarial round against the live Gradio API in public mode.

Starts the real app (`app.build_app`) with `PUBLIC_DEMO=1` on 127.0.0.1 on a free port,
in this process, and talks to it over HTTP as an attacker would: the queue protocol
(`/gradio_api/queue/join` + the event stream, private events by `fn_index`), the direct
REST routes, uploads and file routes; never through the page. A run gets the toy world
of tests/doubles.py (a slow policy, so runs overlap) instead of a language model, and a
re-score the toy scorer. A second visitor, where a probe needs one, connects from another
loopback address (127.0.0.2). Every request loop is bounded; the server is closed at the end.

A probe is handled when the app answers it cleanly (a refusal or a clear message, no
generic "upstream app has raised an exception", no markup, no file content) and stays
up. A failed probe is a vulnerability when it gains the attacker something (others
locked out, the queue bypassed, markup on the page, a file read), else a weakness.
Prints a table and, last, the RESULT line of tests/security/probe_report.py;
tests/security/test_probes.py runs it under pytest.

Usage: python -m tests.security.api_probes [NAME-FILTER] [--json OUT]
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.security.gradio_api import Api
from tests.security.probe_report import VULNERABILITY, WEAKNESS, Outcome, arguments, finish

REPO = Path(__file__).resolve().parents[2]
INJECTED = re.compile(r"<\s*[a-z][^>]*data-inj", re.I)
FENCED = re.compile(r"^(`{3,})[^\n]*\n.*?\n\1$", re.M | re.S)
GENERIC = "upstream"  # Gradio's line for an exception that is not a gr.Error


def _texts(output: Any) -> list[str]:
    """Every string in an event's output (Markdown and HTML panels, status lines)."""
    if isinstance(output, str):
        return [output]
    if isinstance(output, list):
        return [t for item in output for t in _texts(item)]
    if isinstance(output, dict):
        return [t for v in output.values() for t in _texts(v)]
    return []


def _clean(reply: dict[str, Any]) -> bool:
    """Answered without a generic exception and without markup."""
    error = str(reply.get("error") or "")
    if reply.get("success") is False and (not error or GENERIC in error.lower()):
        return False
    return not any(INJECTED.search(FENCED.sub("", t)) for t in _texts(reply.get("rendered")))


def _status_of(reply: dict[str, Any]) -> str:
    return " ".join(t for t in _texts(reply.get("output")) if "**" in t)[:2000] + str(
        reply.get("error") or ""
    )


def build_probes(
    api: Api, folder: Path, running: list[int]
) -> list[tuple[str, str, str, Callable[[], bool]]]:
    from tests import toy_world
    from tests.markup_trace import write_markup_trace
    from tests.security.probes_public import MALFORMED_TRACES, mutated_trace
    from ui import public
    from ui.run_gate import ADMIT_S

    probes: list[tuple[str, str, str, Callable[[], bool]]] = []

    def add(cause: str, name: str, fn: Callable[[], bool], severity: str = WEAKNESS) -> None:
        probes.append((cause, name, severity, fn))

    admit, run, stop, inspect = api.admit_fn("run"), api.fn("run"), api.fn("stop"), api.fn("inspect")
    run_data = api.defaults(
        run, **{"question": toy_world.QUESTION, "rounds": 2, "k candidates": 2, "seed": 0}
    )

    def admitted(reply: dict[str, Any]) -> bool:
        return bool(reply.get("success"))

    # ---- the run queue
    def admits_of_one_visitor(count: int, spoof: str) -> tuple[int, int]:
        """(admitted, the most one visitor may hold over the calls): each made-up forwarded
        address is ignored, so one place at a time; a place no run claims expires after
        ADMIT_S, and a loaded machine's later admits may take the freed place."""
        started = time.monotonic()
        replies = [
            api.call(admit, [None], headers={"X-Forwarded-For": spoof.format(i)}) for i in range(count)
        ]
        return sum(map(admitted, replies)), 1 + int((time.monotonic() - started) // ADMIT_S)

    def spoofed_admits() -> bool:
        got, most = admits_of_one_visitor(8, "10.9.8.{}")
        return got <= most and public.GATE.counts()[0] <= 1

    def next_run_after_abandoned_admits() -> bool:
        reply = api.call(run, run_data, timeout=60)
        return "Finished" in _status_of(reply)

    def admit_flood() -> bool:
        got, most = admits_of_one_visitor(16, "1.2.{}.3")
        time.sleep(ADMIT_S + 1.0)
        return got <= most and public.GATE.counts() == (0, 0)

    def stop_and_reconnect() -> bool:
        first = api.call(admit, [None], session="tab-one")
        api.call(stop, [None], session="tab-one")
        second = api.call(admit, [None], session="tab-two")
        time.sleep(ADMIT_S + 1.0)  # leave the gate empty for the next probe
        return admitted(first) and admitted(second)

    def direct_route_skips_the_queue() -> bool:
        body = json.dumps({"data": run_data}).encode()
        status, _ = api.request("POST", "/gradio_api/run/run", body, {"Content-Type": "application/json"})
        return status in (403, 404, 405)

    def overlapping_runs() -> bool:  # two clients' runs at once: the model runs one at a time
        running[1] = 0
        threads = [threading.Thread(target=api.call, args=(run, run_data), kwargs={"timeout": 90})
                   for _ in range(2)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(100)
        return running[1] <= 1

    def runs_joined_without_admit() -> bool:
        """Run events joined straight into the queue (no admit): one client must not fill
        Gradio's queue (16 events) and lock every other event out."""
        replies: list[dict[str, Any]] = []
        threads = [threading.Thread(target=lambda: replies.append(api.call(run, run_data, timeout=120)))
                   for _ in range(16)]  # fmt: skip
        for t in threads:
            t.start()
        time.sleep(2.0)
        other = api.call(api.fn("load_example_trace"), [None, "fast-obama.json"], session="bystander")
        for t in threads:
            t.join(130)
        ran = sum("Finished" in _status_of(r) for r in replies)
        return bool(other.get("success")) and ran <= 2

    add("queue", "8 admits with made-up X-Forwarded-For", spoofed_admits, VULNERABILITY)
    add("queue", "16 runs joined without an admit", runs_joined_without_admit, VULNERABILITY)

    def other_model_events() -> bool:  # every event that runs a model meets the same door
        names = [d.get("api_name") for d in api.deps if d.get("api_name") in ("fresh_run", "compare", "twin")]
        refused = 0
        for name in names:
            fn = api.fn(name)
            data = api.defaults(fn, question=toy_world.QUESTION, rounds=2, **{"k candidates": 2})
            replies: list[dict[str, Any]] = []
            threads = [threading.Thread(target=lambda f=fn, d=data, r=replies: r.append(api.call(f, d, timeout=120)))
                       for _ in range(3)]  # fmt: skip
            for t in threads:
                t.start()
            for t in threads:
                t.join(130)
            refused += sum(r.get("join") == 400 for r in replies) >= 2
        return bool(names) and refused == len(names)

    add("queue", "3 fresh runs / compares / twins joined at once", other_model_events, VULNERABILITY)
    add("queue", "a run right after 8 abandoned admits", next_run_after_abandoned_admits, VULNERABILITY)
    add("queue", "16 admits, none run: places freed", admit_flood, VULNERABILITY)
    add("queue", "Stop, then reconnect", stop_and_reconnect, VULNERABILITY)
    add("queue", "POST /run/run outside the queue", direct_route_skips_the_queue, VULNERABILITY)
    add("queue", "two runs never share the model", overlapping_runs, VULNERABILITY)

    # ---- run fields as a client sends them
    for name, values in {
        "question of 501 characters": {"question": "x" * 501},
        "lone surrogate in the question": {"question": "why \ud800?"},
        "markup question": {"question": '<form data-inj="1"><input type=password data-inj="1"></form>'},
        "KB /etc/passwd": {"Knowledge base": "/etc/passwd"},
        "seed 10**100": {"seed": 10**100},
        "rounds 10**9": {"rounds": 10**9},
        "method warp": {"method": "warp"},
        "IG prompt of 1 MB": {"IG prompt (between the history and the question)": "x" * 1_000_000},
    }.items():
        data = api.defaults(
            run, **{"question": toy_world.QUESTION, "rounds": 2, "k candidates": 2, "seed": 0, **values}
        )
        add("run fields", name, lambda d=data: _clean(api.call(run, d, timeout=60)))

    # ---- uploaded traces
    load = api.fn("load_trace")
    real = json.loads((REPO / "examples" / "traces" / "fast-obama.json").read_text())

    def upload_case(path: str, value: Any) -> Path:
        out = folder / f"api-{len(probes)}.json"
        out.write_text(json.dumps(mutated_trace(real, path, value)))
        return out

    def loads_clearly(path: Path) -> bool:
        file = api.upload(path)
        reply = api.call(load, [None, file]) if file else {}
        return _clean(reply) and "not a valid trace" in _status_of(reply)

    for name, path, value in MALFORMED_TRACES:
        case = upload_case(path, value)
        add("uploaded traces", name, lambda p=case: loads_clearly(p))

    def markup_trace() -> bool:
        file = api.upload(write_markup_trace(folder))
        reply = api.call(load, [None, file]) if file else {}
        return "Loaded a trace" in _status_of(reply) and _clean(reply)

    add("markup", "markup in every free-text field", markup_trace, VULNERABILITY)

    def oversized() -> bool:
        big = folder / "big.json"
        big.write_bytes(b" " * (public.MODE.limits.max_upload_bytes + 1))
        return api.upload(big) is None

    add("uploaded traces", "upload over the size limit", oversized)

    # ---- the other public endpoints
    replay, example = api.fn("replay"), api.fn("load_example_trace")
    session = "inspector-session"
    api.call(example, [None, "fast-obama.json"], session=session)
    for value in ('<img data-inj="1" src=x>', "1e309", "-1", "nan", "9" * 5000, [], {"a": 1}):
        add(
            "inspect",
            f"node {str(value)[:20]}",
            lambda v=value: _clean(api.call(inspect, [None, v], session=session)),
        )
    for value in (-5, 1e308, "abc", None, 10**400, float("nan"), True):
        add(
            "replay",
            f"round {str(value)[:20]}",
            lambda v=value: _clean(api.call(replay, [None, v], session=session)),
        )

    # The settings fields as the page's other events read them (the form notice, the
    # Compare tab's summary: private, by index): a bad value is a clear line, not a crash.
    def form_events(values: dict[str, Any]) -> bool:
        form_fns = [i for i, d in enumerate(api.deps) if d.get("api_name") not in ("run", "fresh_run", "compare", "twin")
                    and any(api.components[c]["props"].get("label") == "rounds" for c in d["inputs"])]  # fmt: skip
        replies = [api.call(i, api.defaults(i, **values), session=session, timeout=30) for i in form_fns]
        return bool(form_fns) and all(_clean(r) for r in replies)

    for name, values in {
        "UCT c 10**400": {"UCT c": 10**400},
        "rounds 'abc'": {"rounds": "abc"},
        "seed null": {"seed": None},
    }.items():
        add("form events", name, lambda v=values: form_events(v))
    for name in ("../../../etc/passwd", "/etc/passwd", "manifest.json", "%2e%2e%2fREADME.md"):
        add("example traces", name, lambda n=name: _clean(r := api.call(example, [None, n])) and "root:" not in str(r),
            VULNERABILITY)  # fmt: skip
    trace_dir = Path(tempfile.gettempdir()) / "mcts-kbqa-traces"
    for target in ("/etc/passwd", quote("../../../../etc/passwd", safe=""), "/proc/self/environ",
                   quote(quote("/etc/passwd", safe=""), safe=""), str(next(trace_dir.rglob("*.json"), trace_dir))):  # fmt: skip

        def no_file(t: str = target) -> bool:
            status, body = api.request("GET", f"/gradio_api/file={t}")
            return status != 200 or (b"root:" not in body and b"PATH=" not in body and b'"nodes"' not in body)

        add("file routes", target[:40], no_file, VULNERABILITY)

    # ---- floods (bounded)
    def inspect_flood() -> bool:
        started = time.monotonic()
        replies = [api.call(inspect, [None, i % 12], session=session) for i in range(30)]
        return all(r.get("success") for r in replies) and (time.monotonic() - started) / 30 < 1.0

    def big_body() -> bool:
        body = json.dumps({"data": ["x" * 5_000_000], "fn_index": inspect, "session_hash": "big"}).encode()
        with contextlib.suppress(OSError):
            api.request("POST", "/gradio_api/queue/join", body, {"Content-Type": "application/json"})
        return api.alive()

    add("floods", "30 inspect calls in a row", inspect_flood)
    add("floods", "5 MB request body", big_body)
    _public_limit_probes(api, folder, add)
    return probes


SECOND_VISITOR = "127.0.0.2"  # another loopback address: another visitor, in the same /24
LIMITS = "public limits"


def _join_from(
    api: Api, source: str, fn_index: int, data: list[Any], session: str, timeout: float = 60.0
) -> int:
    """Join the queue from the address `source` and read the session's event stream to the end
    (the job runs as a connected client's would): the join's HTTP status."""
    body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                       "trigger_id": None}).encode()  # fmt: skip

    def connection() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(api.host, api.port, timeout=timeout, source_address=(source, 0))

    conn = connection()
    try:
        conn.request(
            "POST", "/gradio_api/queue/join", body=body, headers={"Content-Type": "application/json"}
        )
        reply = conn.getresponse()
        reply.read()
        if reply.status != 200:
            return reply.status
    finally:
        conn.close()
    conn = connection()
    try:
        conn.request("GET", f"/gradio_api/queue/data?session_hash={session}")
        stream, deadline = conn.getresponse(), time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line or b"process_completed" in line:
                break
    finally:
        conn.close()
    return 200


def _public_limit_probes(api: Api, folder: Path, add: Callable[..., None]) -> None:
    """The paths public mode bounds, as a client meets them: the re-score under the run gate,
    a trace's KB, the upload budget, the inspector's click bridge, the seed's range, the
    operator's policy kind, and requests that name no event."""
    from mcts.search.settings import MAX_SEED, SearchSettings
    from mcts.search.trace import save_trace, trace_from_tree
    from tests import toy_world
    from tests.synthetic_tree import synthetic_tree
    from ui import public

    run, fresh, rescore, load = api.fn("run"), api.fn("fresh_run"), api.fn("rescore"), api.fn("load_trace")
    limits = public.MODE.limits
    cap = limits.runs_per_visitor or 1

    def gate_empty(within_s: float = 30.0) -> bool:
        deadline = time.monotonic() + within_s
        while public.GATE.counts() != (0, 0) and time.monotonic() < deadline:
            time.sleep(0.2)
        return public.GATE.counts() == (0, 0)

    def run_data(fn_index: int, **values: Any) -> list[Any]:
        base = {"question": toy_world.QUESTION, "rounds": 2, "k candidates": 2, "seed": 0}
        return api.defaults(fn_index, **{**base, **values})

    def rescore_data() -> list[Any]:
        return api.defaults(rescore)

    def refused_as_busy(reply: dict[str, Any]) -> bool:
        """Refused at the door (before Gradio's queue) with the gate's one line."""
        return reply.get("join") != 200 and "already have a run" in str(reply.get("error"))

    def stop_run(session: str) -> None:
        """Stop pressed in the run's own tab: the answer arrives on the stream the run's
        caller reads (a second reader of one session's stream would take the run's end)."""
        body = json.dumps({"data": [None], "fn_index": api.fn("stop"), "session_hash": session}).encode()
        api.request("POST", "/gradio_api/queue/join", body, {"Content-Type": "application/json"})

    def running_now(within_s: float = 20.0) -> bool:
        deadline = time.monotonic() + within_s
        while public.GATE.counts()[1] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        return public.GATE.counts()[1] >= 1

    # ---- the re-score is a model job: one place per visitor, whatever the session hash
    def rescore_while_own_run_holds_the_model() -> bool:
        if not gate_empty():
            return False
        long_run = run_data(fresh, rounds=12, seed=11)
        holder = threading.Thread(target=api.call, args=(fresh, long_run),
                                  kwargs={"session": "own-run", "timeout": 90})  # fmt: skip
        holder.start()
        try:
            if not running_now():
                return False
            same_tab = api.call(rescore, rescore_data(), session="own-run", timeout=20)
            other_tab = api.call(rescore, rescore_data(), session="own-other-tab", timeout=20)
            return refused_as_busy(same_tab) and refused_as_busy(other_tab)
        finally:
            stop_run("own-run")
            holder.join(100)

    def rescore_joins_with_fresh_hashes() -> bool:
        """Another visitor's run holds the model, so a re-score let in waits in the queue
        (holding its place) while the 16 joins arrive: at most the per-visitor cap get in."""
        if not gate_empty():
            return False
        other = threading.Thread(target=_join_from, args=(api, SECOND_VISITOR, fresh, run_data(fresh, rounds=12, seed=12),
                                                           "second-visitor", 90))  # fmt: skip
        other.start()
        try:
            if not running_now():
                return False
            replies: list[dict[str, Any]] = []
            threads = [threading.Thread(target=lambda: replies.append(api.call(rescore, rescore_data(), timeout=90)))
                       for _ in range(16)]  # fmt: skip
            for t in threads:
                t.start()
                t.join(0.05)  # one after another, as a script sends them
            for t in threads:
                t.join(100)
            accepted = sum(r.get("join") == 200 for r in replies)
            refusals = [r for r in replies if r.get("join") != 200]
            return len(replies) == 16 and accepted <= cap and all(refused_as_busy(r) for r in refusals)
        finally:
            stop_run("second-visitor")
            other.join(100)

    add(LIMITS, "re-score while the visitor's run holds the model", rescore_while_own_run_holds_the_model,
        VULNERABILITY)  # fmt: skip
    add(LIMITS, "16 re-score joins, fresh session hashes, one address", rescore_joins_with_fresh_hashes,
        VULNERABILITY)  # fmt: skip

    # ---- a trace's KB is data, never a dropdown value
    real = json.loads((REPO / "examples" / "traces" / "fast-obama.json").read_text())
    kb_index = api.deps[load]["outputs"].index(
        next(
            c
            for c in api.deps[load]["outputs"]
            if api.components[c]["props"].get("label") == "Knowledge base"
        )
    )
    kb_before = api.components[api.deps[load]["outputs"][kb_index]]["props"].get("value")

    def markup_kb(kb: str) -> bool:
        data = json.loads(json.dumps(real))
        data["meta"]["kb_spec"] = kb
        path = folder / f"kb-{len(kb)}-{abs(hash(kb)) % 10**6}.json"
        path.write_text(json.dumps(data))
        file = api.upload(path)
        reply = api.call(load, [None, file], session="kb-markup") if file else {}
        output = reply.get("output") or []
        kb_out = output[kb_index] if len(output) > kb_index else None
        kb_kept = kb_out in (kb_before, None) or (
            isinstance(kb_out, dict) and kb_out.get("value", kb_before) == kb_before
        )  # a no-change update, or the value the dropdown had
        raw = kb.lower()
        return (
            bool(reply.get("success"))
            and _clean(reply)
            and kb_kept
            and not any(raw in t.lower() for t in _texts(reply.get("rendered")))
            and "does not offer" in _status_of(reply)
        )

    for name, kb in (
        ("<b>", '<b data-inj="1">kb</b>'),
        ("<img onerror>", '<img data-inj="1" src=x onerror="alert(1)">'),
        ("<form> with a password input", '<form data-inj="1"><input type="password" data-inj="1"></form>'),
    ):
        add(LIMITS, f"trace KB {name}", lambda k=kb: markup_kb(k), VULNERABILITY)

    # ---- the upload budget
    budget = limits.trace_budget

    def over_budget(path: Path, words: str) -> bool:
        file = api.upload(path)
        started = time.monotonic()
        reply = api.call(load, [None, file], session="budget", timeout=30) if file else {}
        status = _status_of(reply)
        return (
            _clean(reply)
            and "trace too large" in status
            and words in status
            and time.monotonic() - started < 10
        )

    assert budget is not None  # public mode has one
    nodes = budget.max_nodes + 100

    def many_nodes() -> bool:
        n = nodes
        tree = synthetic_tree(n, seed=1)
        trace = trace_from_tree(tree, SearchSettings(rounds=max(node.round for node in tree.nodes)))
        path = save_trace(trace, folder / f"synthetic-{n}.json")
        return over_budget(path, f"at most {budget.max_nodes:,}")

    def long_node() -> bool:
        data = json.loads(json.dumps(real))
        data["nodes"][1]["step"]["observation"]["text"] = "x" * (budget.max_node_chars + 1)
        path = folder / "long-node.json"
        path.write_text(json.dumps(data))
        return over_budget(path, f"at most {budget.max_node_chars:,} per node")

    add(LIMITS, f"trace of {nodes} nodes (budget {budget.max_nodes})", many_nodes)
    add(LIMITS, "a node over the text budget", long_node)

    # ---- the inspector's click bridge (a private event, by index)
    click = next(i for i, d in enumerate(api.deps)
                 if [api.components[c]["props"].get("elem_id") for c in d["inputs"]][1:] == ["click-node"])  # fmt: skip
    api.call(api.fn("load_example_trace"), [None, "fast-obama.json"], session="click-bridge")
    for value in ("inf", "1e400", "9" * 400):

        def bad_node(v: str = value) -> bool:
            reply = api.call(click, [None, v], session="click-bridge")
            detail = next(iter(reply.get("output") or []), "")
            return bool(reply.get("success")) and _clean(reply) and str(detail).startswith("*No node ")

        add(LIMITS, f"click bridge node {value[:12]}", bad_node)

    # ---- the seed's range
    def big_seed() -> bool:
        """The join is refused with Gradio's validation error, the seed's message naming its range."""
        if not gate_empty():
            return False
        body = json.dumps(
            {"data": run_data(run, seed=2**40), "fn_index": run, "session_hash": "big-seed"}
        ).encode()
        status, reply = api.request(
            "POST", "/gradio_api/queue/join", body, {"Content-Type": "application/json"}
        )
        try:
            detail = json.loads(reply).get("detail")
        except (ValueError, AttributeError):
            detail = None
        answers = detail if isinstance(detail, list) else []
        problems = [
            str(d.get("message")) for d in answers if isinstance(d, dict) and d.get("is_valid") is False
        ]
        limit = (f"{MAX_SEED}", f"{MAX_SEED:,}")
        refused = 400 <= status < 500 and len(problems) == 1 and problems[0].startswith("seed ")
        if refused and not any(m in problems[0] for m in limit):
            raise AssertionError(f"the range read: {problems[0]}")  # the outcome's detail quotes it
        return refused and gate_empty(2)

    add(LIMITS, "run with seed 2**40", big_seed)

    # ---- the operator's policy kind: a run of the operator's kind is recorded; the same run
    # asked for "react" must replay it (same kind) rather than search anew.
    def policy_kind_from_the_api() -> bool:
        if not gate_empty():
            return False
        settings = {"seed": 21, "policy": public.MODE.policy_kind}
        first = _status_of(api.call(run, run_data(run, **settings), session="kind-1", timeout=90))
        if not gate_empty():
            return False
        again = _status_of(api.call(run, run_data(run, **{**settings, "policy": "react"}), session="kind-2",
                                    timeout=90))  # fmt: skip
        return "Finished" in first and "cached run" not in first and "cached run, replayed" in again

    add(LIMITS, "policy_kind react over the API", policy_kind_from_the_api, VULNERABILITY)

    # ---- requests that name no event
    def join_status(index: int) -> bool:
        body = json.dumps({"data": [], "fn_index": index, "session_hash": "no-event"}).encode()
        status, _ = api.request("POST", "/gradio_api/queue/join", body, {"Content-Type": "application/json"})
        return 400 <= status < 500

    for index in (999, -1, 2**64):
        add(LIMITS, f"queue/join fn_index {index}", lambda i=index: join_status(i))

    def run_predict() -> bool:
        body = json.dumps({"data": []}).encode()
        status, _ = api.request("POST", "/gradio_api/run/predict", body, {"Content-Type": "application/json"})
        return 400 <= status < 500

    add(LIMITS, "POST /gradio_api/run/predict", run_predict)


def _environment() -> None:
    """Public mode, read by ui.public at its import (so before `import app`), and a run
    cache of its own: toy runs must not be replayed later as the model's."""
    os.environ["PUBLIC_DEMO"] = "1"
    os.environ["MCTS_KBQA_RUN_CACHE"] = tempfile.mkdtemp(prefix="api-probes-cache-")
    for name in ("SPACE_ID", "SPACE_HOST", "SPACE_REPO_NAME", "TRUSTED_PROXY_HOPS", "TRUSTED_PROXIES"):
        os.environ.pop(name, None)


def run_probes(only: str = "") -> list[Outcome]:
    """Start the app in public mode on a free port, run every probe whose "group: name"
    holds `only`, close the app."""
    _environment()
    import app
    from tests.doubles import slow_toy_world
    from tests.toy_world import ToyScorer
    from ui import handlers, rescoring

    world, running = slow_toy_world()
    handlers.get_world = world  # the run's model is the toy world: no language model loads
    rescoring.get_scorer = lambda name: (ToyScorer(), "toy")  # ... and the re-score's scorer the toy one
    demo = app.build_app()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True,
                **app.launch_kwargs(demo))  # fmt: skip
    outcomes: list[Outcome] = []
    try:
        api = Api(demo.local_url)
        folder = Path(tempfile.mkdtemp(prefix="api-probes-"))
        for cause, name, severity, probe in build_probes(api, folder, running):
            if only not in f"{cause}: {name}":
                continue
            started, detail = time.monotonic(), ""
            try:
                ok = bool(probe())
            except Exception as exc:  # noqa: BLE001 - a probe that breaks is not handled
                ok, detail = False, f"{type(exc).__name__}: {str(exc)[:120]}"
            if ok and not api.alive():
                ok, detail = False, "the app stopped answering"
            outcomes.append(Outcome(cause, name, severity, ok, detail, round(time.monotonic() - started, 2)))
    finally:
        demo.close()
    return outcomes


def main() -> int:
    args = arguments("An adversarial round against the live Gradio API in public mode.")
    return finish(run_probes(args.only), args, "probe group")


if __name__ == "__main__":
    sys.exit(main())
