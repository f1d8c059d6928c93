"""Attack probes against the parts a public visitor reaches: how many are handled cleanly.

Grouped by root cause, against the real parts (no browser or HTTP front: the handlers and
what they call): the SPARQL guard and parse check, the embedded demo KB in its query
worker, `RemoteKB` against a hostile server on 127.0.0.1, the ReAct policy's endpoint
client, the trace reader, the action parser and tools, public mode's server-side form
rules, the app's run queue and trace status line; and the attacks that never got through
(updates and SERVICE in many spellings, LIMIT, local paths as KB spec). The run queue
against spoofed forwarded headers, admits without runs, per-range caps, Stop and
reconnect; the malformed traces; markup in the trace fields that reach the page are in
tests/security/probes_public.py. Not here: the browser-only probes (hidden fields,
upload size: Gradio's max_file_size), covered by tests/security/test_security_app.py;
tests/security/api_probes.py runs a round against the live Gradio API.

A probe is *handled* when it ends within its time bound in the clean outcome: one clear
error of the expected family (QueryRejected, KBError, TraceError, ValueError...), an
error observation, or a refused field; the app process (this one) stays alive and its
memory under `RSS_BOUND_MB` above the start. Prints a table and, last, the RESULT line of
tests/security/probe_report.py; tests/security/test_probes.py runs it under pytest.

Usage: python -m tests.security.probes [NAME-FILTER] [--json OUT]
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.security.probe_report import WEAKNESS, Outcome, arguments, finish

REPO = Path(__file__).resolve().parents[2]
RSS_BOUND_MB = 500
PROBE_S = 15.0  # a probe's time bound: a query or a read that does not stop is not handled


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _raises(fn: Callable[[], object], *kinds: type[BaseException], words: str = "") -> Callable[[], bool]:
    def probe() -> bool:
        try:
            fn()
        except kinds as exc:
            return "\n" not in str(exc) and words.lower() in str(exc).lower()
        return False

    return probe


def _error_observation(tools: object, action: object, words: str = "") -> Callable[[], bool]:
    def probe() -> bool:
        obs = tools.run(action)  # type: ignore[attr-defined]
        return obs.is_error and words.lower() in obs.text.lower()

    return probe


def build_probes() -> list[tuple[str, str, Callable[[], bool], str]]:
    from kb.action_parser import parse_action
    from kb.actions import Action, ActionParseError
    from kb.base import KBError, QueryRejected
    from kb.embedded import EmbeddedKB
    from kb.http_fetch import resolve_endpoint
    from kb.remote import RemoteKB
    from kb.sparql import check_parses, guard_and_normalise
    from kb.spec import DEMO_KB, KBSpecError, open_kb
    from kb.tools import Toolbox
    from mcts.search.trace import TraceError, load_trace
    from tests.hostile_server import SECRET, hostile_server
    from tests.security.probes_public import add_public_probes
    from ui.public import PublicMode, enforce, escape

    probes: list[tuple[str, str, Callable[[], bool], str]] = []

    def add(cause: str, name: str, fn: Callable[[], bool], severity: str = WEAKNESS) -> None:
        probes.append((cause, name, fn, severity))

    # 4. queries that do not stop (real demo KB in its worker, small ceiling)
    kb = EmbeddedKB(DEMO_KB, memory_mb=1024)
    tools = Toolbox(kb, timeout_s=2.0)
    heavy = {
        "order-by cartesian": "SELECT * {?a ?b ?c. ?d ?e ?f. ?g ?h ?i} ORDER BY ?a ?e ?i",
        "count cartesian": "SELECT (COUNT(*) AS ?n) {?a ?b ?c. ?d ?e ?f. ?g ?h ?i}",
        "property path (p|!p)*": "SELECT (COUNT(*) AS ?n) { ?a (<http://x/p>|!<http://x/p>)* ?b . ?c ?d ?e }",
        "group_concat cartesian": "SELECT (GROUP_CONCAT(STR(?c)) AS ?x) {?a ?b ?c. ?d ?e ?f. ?g ?h ?i}",
        "distinct cartesian": "SELECT DISTINCT ?a ?e ?i {?a ?b ?c. ?d ?e ?f. ?g ?h ?i}",
    }
    for name, sparql in heavy.items():  # handled = an observation (error or rows) within the bounds
        add(
            "4 queries that do not stop",
            name,
            lambda q=sparql: tools.run(Action("ExecuteSPARQL", q)) is not None,
        )
    unconnected = "SELECT * WHERE { " + " . ".join(f"?a{i} ?b{i} ?c{i}" for i in range(1000)) + " }"
    add(
        "4 queries that do not stop",
        "1000 unconnected patterns",
        _raises(lambda: guard_and_normalise(unconnected), QueryRejected),
    )
    add(
        "4 queries that do not stop",
        "parse check past its deadline",
        _raises(lambda: check_parses(unconnected, timeout_s=1), KBError),
    )
    add(
        "4 queries that do not stop",
        "store answers after the stops",
        lambda: kb.query("ASK { ?s ?p ?o }", timeout_s=30).boolean is True,
    )

    # 5. deep nesting and quadratic scans
    for opening, closing, depth in (("{", "}", 3000), ("(", ")", 5000), ("[", "]", 3000), ("{", "}", 100)):
        text = "SELECT * WHERE { FILTER(" + opening * depth + "1" + closing * depth + ") }"
        add(
            "5 deep nesting",
            f"{opening} x{depth} through the guard",
            _raises(lambda t=text: guard_and_normalise(t), QueryRejected),
        )
    deep = "SELECT * WHERE " + "{" * 3000 + "}" * 3000
    add(
        "5 deep nesting",
        "{ x3000 straight into the parse check",
        _raises(lambda: check_parses(deep), KBError),
    )
    add("5 deep nesting", "parser alive afterwards", lambda: check_parses("ASK {}") is None)
    for name, text in {"a. x8000": "a." * 8000, "a- x8000": "a-" * 8000, "é. x8000": "é." * 8000}.items():
        add("5 quadratic scans", name, _raises(lambda t=text: guard_and_normalise(t), QueryRejected))
    add(
        "5 quadratic scans",
        "6k apostrophes in an action",
        lambda: parse_action("SearchNodes('" + "x' " * 6_000 + "')").tool == "SearchNodes",
    )
    add(
        "7 resources",
        "1 MB policy output",
        _raises(lambda: parse_action("x" * 1_000_000), ActionParseError, words="too long"),
    )
    add(
        "7 resources",
        "10 MB tool argument",
        _error_observation(tools, Action("SearchNodes", "x" * 10_000_000), "too long"),
    )
    add(
        "7 resources",
        "100 KB query",
        _raises(lambda: guard_and_normalise("SELECT * {?s ?p ?o} #" + "x" * 100_000), QueryRejected),
    )

    # what held before: updates, federation, other forms, LIMIT
    for text in (
        "INSERT DATA { <a:a> <a:b> <a:c> }", "insert data { <a:a> <a:b> <a:c> }", "DELETE WHERE { ?s ?p ?o }",
        "LOAD <http://x>", "CLEAR ALL", "DROP GRAPH <a:g>", "WITH <a:g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "SELECT * { SERVICE <http://x/sparql> { ?s ?p ?o } }", "SELECT * { service <http://x> { ?s ?p ?o } }",
        "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "DESCRIBE <a:a>", "SELECT * {?s ?p ?o} ; INSERT DATA {}",
        "SELECT * { ?s ?p ?o } INSERT.DATA",
    ):  # fmt: skip
        add("held: forms refused", text[:40], _raises(lambda t=text: guard_and_normalise(t), QueryRejected))
    add(
        "held: LIMIT enforced",
        "LIMIT 10^9 capped",
        lambda: "LIMIT 11" in guard_and_normalise("SELECT * {?s ?p ?o} LIMIT 1000000000", max_rows=10).sparql,
    )
    for spec in ("/etc/passwd", "/proc/self/environ", "file:///etc/passwd", "ftp://x/y"):
        add("held: local paths", spec, _raises(lambda s=spec: open_kb(s), KBSpecError, ValueError))

    # 2 and 5: remote HTTP against a hostile server
    server_cm = hostile_server()
    server = server_cm.__enter__()
    for path, words in (("/trickle", "time limit"), ("/trickle-headers", "time limit"), ("/redirect", "redirect"),
                        ("/deep-json", "nested"), ("/not-sparql", "not a SPARQL")):  # fmt: skip
        add(
            "2 endpoint",
            path,
            _raises(
                lambda p=path: RemoteKB(server.url(p), timeout_s=1.5, retries=0).query("ASK {}"),
                KBError,
                words=words,
            ),
        )
    for url in ("http://127.0.0.1:1/", "http://localhost/", "http://2130706433/", "http://[::1]/",
                "http://[::ffff:127.0.0.1]/", "http://169.254.169.254/latest/meta-data", "http://10.0.0.5/",
                "http://172.16.0.1/", "http://192.168.0.1/", "http://0.0.0.0/", "http://[fe80::1]/",
                "http://100.64.0.1/", "http://224.0.0.1/"):  # fmt: skip
        add(
            "2 SSRF (public mode)",
            url,
            _raises(lambda u=url: resolve_endpoint(u, public=True), KBError, words="public mode"),
        )

    def no_echo() -> bool:
        import kb.http_fetch as http_fetch

        saved = http_fetch.blocked
        http_fetch.blocked = lambda _a: False
        try:
            RemoteKB(server.url("/secret-500"), retries=0, public=True).query("ASK {}")
        except KBError as exc:
            return SECRET not in str(exc)
        finally:
            http_fetch.blocked = saved
        return False

    add("2 endpoint", "reply body never echoed (public)", no_echo)

    # 1. credentials
    def key_not_sent() -> bool:
        import random as rnd

        from mcts.agents.policy_react import ReActPolicy

        os.environ["OPENAI_API_KEY"] = "sk-probe-secret"
        os.environ.pop("POLICY_ENDPOINT", None)
        os.environ.pop("OPENAI_BASE_URL", None)
        try:
            ReActPolicy(endpoint=server.url("/v1"), endpoint_model="stub").propose(
                "q", [], 1, rng=rnd.Random(0)
            )
        finally:
            os.environ.pop("OPENAI_API_KEY", None)
        return bool(server.requests) and all("sk-probe-secret" not in auth for _, auth in server.requests)

    add("1 credentials", "visitor endpoint gets no server key", key_not_sent)

    # 3. public mode: visitor fields ignored server-side
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Form:
        question: str = "q"
        kb_spec: str = "demo"
        policy_model: str = ""
        scorer_model: str = ""
        policy_endpoint: str = ""
        ig_prompt: str = "p"

    mode = PublicMode.from_env({"PUBLIC_DEMO": "1"})
    for spec in ("/tmp/gradio/x/upload.ttl", "http://127.0.0.1:7878/query", "examples/demo_kb.ttl", "demo "):
        ok_spec = spec.strip() == "demo"
        add("3 public mode", f"KB {spec!r}", (lambda s=spec: enforce(Form(kb_spec=s), mode).kb_spec == "demo") if ok_spec
            else _raises(lambda s=spec: enforce(Form(kb_spec=s), mode), ValueError))  # fmt: skip
    for field, value in (
        ("policy_model", "/root"),
        ("scorer_model", "meta-llama/Llama-3.1-405B"),
        ("policy_endpoint", "http://evil/v1"),
    ):
        add(
            "3 public mode",
            f"{field} ignored",
            lambda f=field, v=value: getattr(enforce(Form(**{f: v}), mode), f) == "",
        )
    add(
        "7 resources",
        "1 MB IG prompt",
        _raises(lambda: enforce(Form(ig_prompt="x" * 1_000_000), mode), ValueError),
    )
    add("6 traces", "HTML in meta escaped", lambda: "<" not in escape('<img src="http://evil/x.png">'))

    # 6. traces
    folder = Path(tempfile.mkdtemp(prefix="probe-traces-"))
    real = json.loads((REPO / "examples" / "traces" / "fast-obama.json").read_text())

    def trace_probe(name: str, mutate: Callable[[dict], object]) -> None:
        data = json.loads(json.dumps(real))
        mutate(data)
        path = folder / f"{len(probes)}.json"
        path.write_text(json.dumps(data) if isinstance(data, dict) else str(data))
        add("6 traces", name, _raises(lambda p=path: load_trace(p), TraceError))

    def cycle(d: dict) -> None:
        for n in d["nodes"]:
            n["children"] = []
        d["nodes"][1].update(parent=2, children=[2])
        d["nodes"][2].update(parent=1, children=[1])

    trace_probe("nodes each other's parents", cycle)
    for field, value in (("reward", "abc"), ("visits", -5), ("visits", 1e300), ("decay", 5), ("depth", 10**9),
                         ("children", [10**9]), ("children", "x"), ("parent", 99), ("id", 7), ("prior", 3.0)):  # fmt: skip
        trace_probe(f"{field}={value!r}"[:40], lambda d, f=field, v=value: d["nodes"][1].__setitem__(f, v))
    trace_probe("node is a string", lambda d: d["nodes"].__setitem__(1, "x"))
    deep = folder / "deep.json"
    deep.write_text('{"question": "q", "nodes": ' + "[" * 200_000 + "]" * 200_000 + "}")
    add("6 traces", "200k-deep JSON", _raises(lambda: load_trace(deep), TraceError))
    big = folder / "big.json"
    with big.open("wb") as fh:
        fh.truncate(150_000_000)
    add("6 traces", "150 MB file", _raises(lambda: load_trace(big), TraceError))

    # 3, 6, 7 through the app's handlers (public mode, the app's queue and status lines)
    import types

    import ui.public as public_module
    from ui import traces as ui_traces
    from ui.session import Session

    public_module.MODE = mode

    def request(ip: str, session: str) -> object:
        return types.SimpleNamespace(headers={}, client=types.SimpleNamespace(host=ip), session_hash=session)

    def refused(fn: Callable[[], object]) -> bool:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - gr.Error is what the page shows
            return type(exc).__name__ == "Error"
        return False

    admit = public_module.admitter()

    def second_run() -> bool:  # admits inside the probe: an admit's place lives seconds
        public_module.GATE = public_module.RunGate(max_waiting=2, per_visitor=1)
        admit(Session(), request("9.9.9.1", "p1"))
        return refused(lambda: admit(Session(), request("9.9.9.1", "p2")))

    def queue_full() -> bool:
        public_module.GATE = public_module.RunGate(max_waiting=2, per_visitor=1)
        admit(Session(), request("9.9.9.1", "p1"))
        admit(Session(), request("9.9.9.2", "p3"))
        return refused(lambda: admit(Session(), request("9.9.9.3", "p4")))

    add("7 resources", "second run from one visitor", second_run)
    add("7 resources", "queue full: clear refusal", queue_full)
    evil = folder / "evil-meta.json"
    evil_data = json.loads(json.dumps(real))
    evil_data["meta"]["policy_model"] = '<img src="http://attacker.example/x.png">'
    evil.write_text(json.dumps(evil_data))
    add(
        "6 traces",
        "<img> in meta, status line",
        lambda: "<img" not in ui_traces.load(Session(), str(evil))["status"],
    )

    def close() -> None:
        server_cm.__exit__(None, None, None)
        kb.close()

    add_public_probes(add, folder, real)
    probes.append(("", "__close__", lambda: close() or True, ""))
    return probes


def run_probes(only: str = "") -> list[Outcome]:
    """Every probe whose "group: name" holds `only`, in order, each timed and its memory checked."""
    rss0 = _rss_mb()
    random.seed(0)
    outcomes: list[Outcome] = []
    for cause, name, probe, severity in build_probes():
        if name == "__close__":
            probe()
            continue
        if only not in f"{cause}: {name}":
            continue
        started, detail = time.monotonic(), ""
        try:
            ok = bool(probe())
        except Exception as exc:  # noqa: BLE001 - an unexpected exception is exactly a weakness
            ok, detail = False, f"{type(exc).__name__}: {str(exc)[:60]}"
        seconds, grown = time.monotonic() - started, _rss_mb() - rss0
        if ok and seconds >= PROBE_S:
            ok, detail = False, f"took {seconds:.1f} s"
        if ok and grown >= RSS_BOUND_MB:
            ok, detail = False, f"memory grew {grown:.0f} MB"
        outcomes.append(Outcome(cause, name, severity, ok, detail, round(seconds, 2)))
    print(f"app RSS grew {_rss_mb() - rss0:.0f} MB")
    return outcomes


def main() -> int:
    args = arguments("Attack probes against the parts a public visitor reaches.")
    return finish(run_probes(args.only), args, "root cause")


if __name__ == "__main__":
    sys.exit(main())
