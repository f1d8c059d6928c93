"""Queries that really stop, deep nesting that cannot crash the app, and limits checked
before any parser sees the text.

These run the real store (the bundled demo KB in its query worker) and the real parse
check; the app process is this test process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kb.action_parser import MAX_ACTION_CHARS, parse_action
from kb.actions import Action, ActionParseError
from kb.base import KBError, QueryRejected, QueryTimeout
from kb.embedded import EmbeddedKB
from kb.sparql import (
    MAX_NESTING,
    MAX_QUERY_CHARS,
    MAX_TRIPLE_PATTERNS,
    check_parses,
    guard_and_normalise,
    tokenise,
)
from kb.spec import DEMO_KB
from kb.tools import Toolbox

# Without a hard stop this one kept running after its 10 s deadline, in-process, and grew
# from 4.3 to 18.4 GB in 60 s.
CARTESIAN = "SELECT * {?a ?b ?c. ?d ?e ?f. ?g ?h ?i} ORDER BY ?a ?e ?i"
ASK_ANY = "ASK { ?s ?p ?o }"
# Pure CPU, constant memory: only the deadline stops it (the problem's COUNT(*) case).
COUNT_ALL = "SELECT (COUNT(*) AS ?n) {?a ?b ?c. ?d ?e ?f. ?g ?h ?i}"


def _rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _cpu_s(pid: int | str = "self") -> float:
    """User + system CPU seconds of a process (from /proc, no psutil needed)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture()
def demo_store() -> EmbeddedKB:
    kb = EmbeddedKB(DEMO_KB, memory_mb=1024)  # its own workers: this test kills them
    yield kb
    kb.close()


def test_cartesian_order_by_is_stopped_and_memory_and_cpu_come_back(demo_store: EmbeddedKB):
    rss_before = _rss_mb()
    old_child = demo_store._pool.workers[0]._proc.pid
    with pytest.raises(KBError, match="stopped"):  # time limit, or memory ceiling first
        demo_store.query(CARTESIAN, timeout_s=2.0)
    # The process that ran the query is gone (not abandoned), so its CPU is free.
    assert not Path(f"/proc/{old_child}").exists() or "Z" in Path(f"/proc/{old_child}/stat").read_text()
    assert _rss_mb() - rss_before < 200
    # The store answers again, from a fresh worker; then everything is idle.
    assert demo_store.query(ASK_ANY, timeout_s=30).boolean is True
    new_child = demo_store._pool.workers[0]._proc.pid
    cpu_before = _cpu_s() + _cpu_s(new_child)
    time.sleep(1.0)
    assert _cpu_s() + _cpu_s(new_child) - cpu_before < 0.5
    assert demo_store.restarts == 1


def test_a_stopped_query_is_a_time_out_observation_and_the_next_call_works(demo_store: EmbeddedKB):
    tools = Toolbox(demo_store, timeout_s=1.5)
    obs = tools.run(Action("ExecuteSPARQL", COUNT_ALL))
    assert obs.is_error and "time limit" in obs.text
    ok = tools.run(Action("ExecuteSPARQL", "SELECT ?s WHERE { ?s ?p ?o } LIMIT 3"))
    assert not ok.is_error


def test_a_query_over_the_memory_ceiling_stops_its_worker_not_the_app(tmp_path: Path):
    kb = EmbeddedKB(DEMO_KB, memory_mb=400)
    try:
        # Sorting materialises every row of the cartesian product: past 400 MB in ~1 s.
        with pytest.raises(KBError, match="memory ceiling"):
            kb.query(CARTESIAN, timeout_s=60)
        assert kb.query(ASK_ANY, timeout_s=30).boolean is True
    finally:
        kb.close()


def test_the_parse_check_is_stopped_at_its_deadline():
    unconnected = "SELECT * WHERE { " + " . ".join(f"?a{i} ?b{i} ?c{i}" for i in range(1000)) + " }"
    with pytest.raises(QueryTimeout, match="parse check"):
        check_parses(unconnected, timeout_s=1.0)
    check_parses("SELECT * WHERE { ?s ?p ?o }")  # a fresh parser answers


@pytest.mark.parametrize(("opening", "closing", "depth"), [("{", "}", 3000), ("(", ")", 5000)])
def test_deep_nesting_is_refused_by_the_guard_and_cannot_crash_the_parse_check(opening, closing, depth):
    body = f"SELECT * WHERE {'{' if opening == '(' else ''}FILTER {opening * depth}1{closing * depth}"
    text = body + ("}" if opening == "(" else "")
    with pytest.raises(QueryRejected, match="nested|too long"):
        guard_and_normalise(text)
    with pytest.raises(QueryRejected, match="nested"):
        guard_and_normalise(text[:9000] + text[-(MAX_NESTING + 10) :])
    # Even straight into the parse check (the guard bypassed), the app process survives.
    deep = "SELECT * WHERE " + "{" * 3000 + "}" * 3000
    with pytest.raises(KBError):
        check_parses(deep)
    check_parses("ASK {}")


def test_length_and_pattern_limits_refuse_before_parsing():
    with pytest.raises(QueryRejected, match="too long"):
        guard_and_normalise("SELECT ?s WHERE { ?s ?p ?o } #" + "x" * MAX_QUERY_CHARS)
    many = "SELECT * WHERE { " + " . ".join(f"?a{i} ?b ?c" for i in range(MAX_TRIPLE_PATTERNS + 1)) + " }"
    with pytest.raises(QueryRejected, match="triple patterns"):
        guard_and_normalise(many)
    nested_ok = "SELECT * WHERE " + "{" * (MAX_NESTING - 1) + "?s ?p ?o" + "}" * (MAX_NESTING - 1)
    assert guard_and_normalise(nested_ok).form == "select"


def test_a_dotted_run_is_one_token_so_the_tokeniser_stays_linear():
    # Each dot used to restart a scan to the end of the run (16 KB took 5 s).
    assert len(tokenise("a." * 4000)) == 2
    with pytest.raises(QueryRejected, match="update"):
        guard_and_normalise("SELECT * WHERE { ?s ?p ?o } INSERT.DATA")


def test_policy_output_and_tool_arguments_have_a_length_limit(tiny_kb):
    with pytest.raises(ActionParseError, match="too long"):
        parse_action("Thought: " + "x" * MAX_ACTION_CHARS + '\nAction: SearchNodes("a")')
    # Many apostrophes: each one looked at the rest of the text (quadratic) before.
    assert parse_action("SearchNodes('" + "x' " * 5000 + "')").tool == "SearchNodes"
    obs = Toolbox(tiny_kb).run(Action("SearchNodes", "x" * 10_000_000))
    assert obs.is_error and "too long" in obs.text
