"""The tools answer the shipped traces' actions exactly as the traces recorded them.

Every action of examples/traces/*.json is run again through a fresh `Toolbox` on the
demo KB (the parse check's child started without waiting, the relation ranker on the
`kb.minilm` encoder, no vector read from a cache) and its observation compared, field by field, with the stored one:
text, status, values, entities, patterns with their scores, types and the executed
query. Then the limits that run beside those calls: the parse check's child, started
in the background, still refuses what does not parse and is still stopped at its
deadline, and a query past its time limit still comes back as an error observation.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kb.actions import Action
from kb.base import QueryRejected, QueryTimeout
from kb.observation import Observation
from kb.query_worker import WorkerPool
from kb.relation_ranker import EmbeddingRanker
from kb.tools import Toolbox
from mcts.search.serialize import observation_from_dict

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def shipped_steps() -> list[tuple[str, Action, Observation]]:
    """(trace file:node id, action, stored observation) of every step of the shipped traces."""
    steps = []
    for path in sorted(p for p in TRACES.glob("*.json") if p.name != "manifest.json"):
        data = json.loads(path.read_text())
        if data["meta"].get("kb_spec") != "demo":
            continue
        for node in data["nodes"]:
            step = node.get("step")
            if step and step.get("action"):
                stored = observation_from_dict(step["observation"])
                steps.append((f"{path.name}:{node['id']}", Action(**step["action"]), stored))
    return steps


STEPS = shipped_steps()


def test_the_shipped_traces_hold_every_tool() -> None:
    assert {a.tool for _, a, _ in STEPS} >= {"SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL"}


@pytest.fixture(scope="module")
def toolbox(demo_kb) -> Toolbox:
    # No disk cache: every relation vector is computed by this process's encoder.
    return Toolbox(demo_kb, ranker=EmbeddingRanker(None))


@pytest.mark.parametrize(("where", "action", "stored"), STEPS, ids=[s[0] for s in STEPS])
def test_a_shipped_action_gives_its_recorded_observation(
    toolbox: Toolbox, where: str, action: Action, stored: Observation
) -> None:
    got = toolbox.run(action)
    assert replace(got, elapsed_s=0.0) == replace(stored, elapsed_s=0.0), where


def test_a_parser_started_without_waiting_refuses_what_does_not_parse() -> None:
    pool = WorkerPool((), size=1, memory_mb=256, spare=False, wait=False)
    try:
        with pytest.raises(QueryRejected, match="does not parse"):
            pool.request("parse", "SELECT ?x WHERE { ?x ?y }", timeout_s=30.0)
        assert pool.request("parse", "SELECT ?x WHERE { ?x ?y ?z }", timeout_s=30.0) is None
    finally:
        pool.close()


def test_a_store_started_without_waiting_still_stops_a_query_at_its_deadline(tmp_path: Path) -> None:
    ttl = tmp_path / "many.nt"
    ttl.write_text("".join(f"<http://x/{i}> <http://x/p> <http://x/{i + 1}> .\n" for i in range(3000)))
    pool = WorkerPool((ttl,), size=1, memory_mb=512, spare=False, wait=False)
    try:
        cartesian = "SELECT ?a ?b ?c WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f } ORDER BY ?a ?b ?c"
        with pytest.raises(QueryTimeout, match="time limit"):
            pool.request("query", cartesian, timeout_s=0.5)
        result = pool.request("query", "SELECT ?a WHERE { ?a ?p ?b } LIMIT 2", timeout_s=60.0)
        assert result is not None and len(result.rows) == 2
        assert pool.restarts == 1
    finally:
        pool.close()


def test_a_tool_call_past_its_time_limit_is_an_error_observation(demo_kb) -> None:
    tools = Toolbox(demo_kb, timeout_s=0.5)
    cartesian = "SELECT ?a ?b ?c WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f } ORDER BY ?a ?b ?c"
    obs = tools.run(Action("ExecuteSPARQL", cartesian))
    assert obs.is_error and "time limit" in obs.text
    again = tools.run(Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"))
    assert not again.is_error
