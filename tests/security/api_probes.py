"""An adversarial round against the live Gradio API in public mode.

Starts the real app (`app.build_app`) with `PUBLIC_DEMO=1` on 127.0.0.1 on a free port,
in this process, and talks to it over HTTP as an attacker would: the queue protocol
(`/gradio_api/queue/join` + the event stream, private events by `fn_index`), the direct
REST routes, uploads and file routes; never through the page. A run gets the toy world
of tests/doubles.py (a slow policy, so runs overlap) instead of a language model; the
re-scoring endpoint is left out (it would load the scorer). Every request loop is
bounded; the server is closed at the end.

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
    return probes


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
    from ui import handlers

    world, running = slow_toy_world()
    handlers.get_world = world  # the run's model is the toy world: no language model loads
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
                ok, detail = False, f"{type(exc).__name__}: {str(exc)[:60]}"
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
