"""Every malformed trace gets one clear "not a valid trace: <field>: <why>".

The schema is read off the records the writer serialises (`mcts.search.trace_schema`), so
the first tests pin that the two agree; then each case of the issue, which used to raise
inside the loader; then a property test that mutates the shipped traces field by field
and asserts the loader answers with a trace or that one error, and that what loads renders.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.actions import Action
from kb.observation import EntityHit, GraphPattern, Observation, Value
from mcts.search import serialize
from mcts.search.cost import CostSummary
from mcts.search.events import EVENT_TYPES
from mcts.search.run_meta import RunMeta
from mcts.search.settings import SearchSettings
from mcts.search.steps import IGDetail, Step
from mcts.search.trace import Trace, TraceError, trace_from_json
from mcts.search.tree import Node
from mcts.search.voting import SearchResult

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
SHIPPED = sorted(p for p in TRACES.glob("*.json") if p.name != "manifest.json")
REAL = json.loads((TRACES / "fast-obama.json").read_text())


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_the_schema_has_every_field_the_writer_writes_and_no_other() -> None:
    value = Value("x", "m.1")
    obs = Observation("t", values=(value,), entities=(EntityHit("m.1", "x"),),
                      patterns=(GraphPattern("out", ("p",), value),))  # fmt: skip
    step = Step("th", Action("SearchNodes", "x"), obs)
    detail = IGDetail(
        history_tokens=9, question_nlls=(1.0,), question_pieces=("Who",), base_question_nlls=(2.0,)
    )
    node = Node(id=1, parent=0, depth=1, step=step, ig_detail=detail)
    assert set(serialize.node_to_dict(node)) == _names(Node)
    assert set(serialize.node_to_dict(node)["ig_detail"]) == _names(IGDetail)
    assert set(serialize.step_to_dict(step)) == _names(Step)
    assert set(serialize.observation_to_dict(obs)) == _names(Observation)
    assert set(serialize.observation_to_dict(obs)["entities"][0]) == _names(EntityHit)
    assert set(serialize.observation_to_dict(obs)["patterns"][0]) == _names(GraphPattern)
    assert set(serialize.value_to_dict(value)) == _names(Value)
    assert set(serialize.action_to_dict(step.action) or {}) == _names(Action)
    data = json.loads(json.dumps(REAL))
    assert set(data) == _names(Trace)
    assert set(data["result"]) == _names(SearchResult)
    assert set(data["result"]["cost"]) == _names(CostSummary)
    assert set(data["settings"]) == _names(SearchSettings)
    assert set(data["meta"]) == _names(RunMeta)
    for event in data["events"]:
        assert set(event) == _names(EVENT_TYPES[event["kind"]])


def _load(data: Any) -> Trace:
    return trace_from_json(json.dumps(data) if not isinstance(data, str) else data)


def _set(path: str, value: Any) -> Any:
    """A copy of the real trace with the field at `path` (a.b[0].c) set to `value`."""
    data = json.loads(json.dumps(REAL))
    parts = path.replace("[", ".").replace("]", "").split(".")
    target = data
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value
    return data


def _first_event(kind: str) -> int:
    return next(i for i, e in enumerate(REAL["events"]) if e["kind"] == kind)


def _step_node() -> int:
    return next(i for i, n in enumerate(REAL["nodes"]) if n["step"] and n["step"]["action"])


_DETAIL = {
    "history_tokens": 9,
    "question_nlls": [1.0],
    "question_pieces": ["Who"],
    "base_question_nlls": [2.0],
}
ISSUE_CASES = [
    ("nodes[1].visits", 10**400, "nodes[1].visits: must be in"),
    (f"nodes[{_step_node()}].step.action.argument", 7, "argument: must be text"),
    (f"nodes[{_step_node()}].step.action.argument", ["a"], "argument: must be text"),
    ("result.best_by_value", "x", "result.best_by_value: must be a whole number"),
    ("result.best_by_value", 1.5, "result.best_by_value: must be a whole number"),
    ("result.best_by_value", 999, "result.best_by_value: names node 999"),
    ("result.votes[0].answer[0]", {"a": 1}, "result.votes[0].answer[0]: must be text"),
    ("result.cost.model_s", "x", "result.cost.model_s: must be a number"),
    ("result.cost.tokens", "12", "result.cost.tokens: must be a whole number"),
    (f"events[{_first_event('values_backed_up')}].path", "abc", "path: must be a list"),
    ("question", "why \ud800?", "question: text holds a lone surrogate"),
    ("settings.seed", 10**100, "settings.seed: must be in"),
    ("result.stop_reason", "<b>x</b>", "result.stop_reason: must be one of"),
    ("result.cost.policy_calls", "<form>", "result.cost.policy_calls: must be a whole number"),
    ("result.cost.tool_calls", {"<input>": 1}, "result.cost.tool_calls key"),
    ("nodes[1].validity", "<i>bad</i>", "nodes[1].validity: must be one of"),
    ("settings.method", "warp", "settings.method: must be one of"),
    ("nodes[1].surprise", 1, "nodes[1].surprise: unknown field"),
    ("meta.policy_model", None, "meta.policy_model: must be text, got None"),
    ("settings.rounds", 0, "settings: rounds must be >= 1"),
    ("nodes[1].round", 99, "nodes: node 2 was made in round"),  # found by the property test: replay failed
    ("nodes[0].ppl_history", 10**400, "nodes[0].ppl_history: must be in"),  # found by it: no float holds it
    (
        "nodes[1].ig_detail",
        {**_DETAIL, "history_tokens": -1},
        "nodes[1].ig_detail.history_tokens: must be in",
    ),
    ("nodes[1].ig_detail", {**_DETAIL, "question_pieces": [7]}, "question_pieces[0]: must be text"),
    ("nodes[1].ig_detail", {**_DETAIL, "question_pieces": []}, "nodes: an IG detail needs one piece"),
]


@pytest.mark.parametrize(
    ("path", "value", "words"), ISSUE_CASES, ids=[c[0] + "=" + repr(c[1])[:12] for c in ISSUE_CASES]
)
def test_each_malformed_field_is_named_in_one_clear_line(path: str, value: Any, words: str) -> None:
    with pytest.raises(TraceError) as info:
        _load(_set(path, value))
    message = str(info.value)
    assert message.startswith("not a valid trace: ") and words in message and "\n" not in message
    assert len(message) < 300


def test_a_missing_required_field_is_named() -> None:
    data = json.loads(json.dumps(REAL))
    del data["nodes"][2]["id"]
    with pytest.raises(TraceError, match=r"not a valid trace: nodes\[2\]: missing the field 'id'"):
        _load(data)


def test_a_trace_without_nodes_is_named() -> None:  # found by the property test
    data = json.loads(json.dumps(REAL))
    del data["nodes"]
    with pytest.raises(TraceError, match="not a valid trace: nodes: a tree needs at least the root node"):
        _load(data)


def test_a_number_json_itself_cannot_hold_is_a_clear_error() -> None:
    text = json.dumps(REAL).replace('"visits": 1,', '"visits": 1' + "0" * 5000 + ",", 1)
    with pytest.raises(TraceError, match="not valid JSON"):
        _load(text)


# ---- property: any one field of a shipped trace changed to anything -------------------------
def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):  # the first few items stand for the rest
            out += _paths(v, (*prefix, i))
    return out


SHIPPED_DATA = [json.loads(p.read_text()) for p in SHIPPED]
PATHS = [(i, p) for i, data in enumerate(SHIPPED_DATA) for p in _paths(data)]
HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([10**400, -(10**30), 2**53 + 1, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["\ud800", "<b>x</b>", "", "x" * 1000, "ok", "fast", "Done"]),
    st.lists(st.integers(-2, 30), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.just("DELETE"),
)  # fmt: skip
CLEAR = ("not a valid trace: ", "unsupported trace schema_version", "not a trace: ")


def _mutated(index: int, path: tuple[Any, ...], value: Any) -> Any:
    data = json.loads(json.dumps(SHIPPED_DATA[index]))
    target = data
    for part in path[:-1]:
        target = target[part]
    if value == "DELETE":
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


def _render(trace: Trace) -> None:
    """What the app draws from a loaded trace: a view must not fail on what loaded."""
    from viz import answer_markdown, build_figure, cost_markdown, node_detail_markdown, node_table, vote_rows
    from viz.replay import replay_rounds, tree_at_round

    tree = trace.to_tree()
    answer_markdown(trace.result, tree)
    cost_markdown(trace.result.cost if trace.result else None)
    vote_rows(trace.result)
    node_table(tree, trace.settings.c)
    for node in tree.nodes[:4]:
        node_detail_markdown(tree, node.id, c=trace.settings.c)
    build_figure(tree, c=trace.settings.c)
    for round_no in range(replay_rounds(trace.events) + 1):
        tree_at_round(tree, trace.events, round_no)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.sampled_from(PATHS), value=HOSTILE)
def test_any_one_field_changed_loads_or_gets_the_clear_error(
    where: tuple[int, tuple[Any, ...]], value: Any
) -> None:
    data = _mutated(*where, value)
    try:
        trace = _load(data)
    except TraceError as exc:
        message = str(exc)
        assert message.startswith(CLEAR) and "\n" not in message, message
        return
    _render(trace)
