"""A trace file from a visitor is checked before anything trusts it.

Each hostile trace is a real shipped trace with one thing broken; each must fail with one
clear TraceError (not a generic exception, not gigabytes of memory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcts.search.trace import TraceError, load_trace
from mcts.search.trace_validation import MAX_TRACE_BYTES, json_depth_exceeds

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
SHIPPED = sorted(p for p in TRACES.glob("*.json") if p.name != "manifest.json")


def _write(tmp_path: Path, data: Any, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.fixture()
def real() -> dict[str, Any]:
    return json.loads((TRACES / "fast-obama.json").read_text())


def test_every_shipped_trace_passes_the_checks():
    assert SHIPPED
    for path in SHIPPED:
        assert load_trace(path).nodes


def test_nodes_that_are_each_others_parents_are_refused(tmp_path: Path, real):
    nodes = real["nodes"][:3]
    for n in nodes:
        n["children"] = []
    # 1 and 2 name each other as parent and child: a cycle cut off from the root.
    nodes[1].update(parent=2, children=[2])
    nodes[2].update(parent=1, children=[1])
    with pytest.raises(TraceError, match="not a valid trace: nodes"):
        load_trace(_write(tmp_path, {**real, "nodes": nodes}))


def test_a_node_listed_under_two_parents_is_refused(tmp_path: Path, real):
    nodes = real["nodes"]
    last = len(nodes) - 1
    other = next(i for i in range(len(nodes)) if i not in (last, nodes[last]["parent"]))
    nodes[other]["children"].append(last)
    with pytest.raises(TraceError, match="not a valid trace: nodes"):
        load_trace(_write(tmp_path, real))


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("reward", "abc", "reward"),
        ("visits", -5, "visits"),
        ("decay", 7.0, "decay"),
        ("depth", 10**6, "depth"),
    ],
)
def test_bad_types_and_ranges_name_the_field(tmp_path: Path, real, field: str, value: Any, words: str):
    real["nodes"][1][field] = value
    with pytest.raises(TraceError, match=words):
        load_trace(_write(tmp_path, real))


def test_deep_json_is_refused_before_parsing(tmp_path: Path):
    deep = "[" * 200_000 + "]" * 200_000
    assert json_depth_exceeds(deep)
    assert not json_depth_exceeds(
        '{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}'
    )
    with pytest.raises(TraceError, match="nested"):
        load_trace(_write(tmp_path, '{"nodes": ' + deep + "}"))


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path):
    path = tmp_path / "big.json"
    with path.open("wb") as fh:
        fh.truncate(MAX_TRACE_BYTES + 1)  # sparse: nothing is written or read
    with pytest.raises(TraceError, match="too large"):
        load_trace(path)
