"""Bounds and tree checks for a trace file before anything trusts it (issue 15).

Traces come from visitors (the app's upload box), so a file is checked before the
reader in `mcts.search.trace` builds a tree from it:

- size (`MAX_TRACE_BYTES`) before reading, JSON nesting (`MAX_JSON_DEPTH`) before
  parsing (Python's parser recursed into 200k-deep JSON until RecursionError);
- the tree: ids 0..n-1 in order, exactly one parent each (the root none), parent and
  child links that agree, every node reachable from the root (so no cycles: a 55 KB
  trace whose nodes were each other's parents grew the app to 6.4 GB), depth = parent's
  depth + 1, at most `MAX_NODES` nodes and `MAX_TREE_DEPTH` levels;
- types and ranges of the numbers a view computes with (visits >= 0, finite values,
  perplexities > 0 or NaN, decay and prior in [0, 1]; a `reward: "abc"` used to surface as a
  generic exception).

Every failure is one clear line raised as the caller's error class (the reader passes
its `TraceError`; this module imports nothing of the reader). A file that cannot be read
or is not JSON is left to the reader, which says so itself. Knows nothing of the UI.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from pathlib import Path
from typing import Any

MAX_TRACE_BYTES = 20_000_000  # the largest evaluation traces are well under 1 MB
MAX_JSON_DEPTH = 64  # a real trace nests about 10 deep
MAX_NODES = 20_000
MAX_TREE_DEPTH = 64  # max_depth settings are at most a few tens
MAX_EVENTS = 200_000

# A whole string, a bracket, or a quote that opens no whole string (invalid JSON).
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*+"|[\[\]{}]|"', re.DOTALL)


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets outside strings nest deeper than `limit`. One left-to-right pass
    (no recursion; it stops at an unterminated string, which the parser reports)."""
    depth = 0
    for m in _SCAN.finditer(text):
        token = m.group()
        if token == '"':
            return False
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif token in ("]", "}"):
            depth -= 1
    return False


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    """A JSON number, NaN allowed (an unscored or failed perplexity is written as NaN)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_node(i: int, node: Any, n: int) -> str | None:
    """What is wrong with node `i` on its own (None: nothing)."""
    if not isinstance(node, dict):
        return f"node {i} is not an object"
    if node.get("id") != i or not _int(node.get("id")):
        return f"node at position {i} has id {node.get('id')!r} (ids must be 0..{n - 1} in order)"
    parent = node.get("parent")
    if not _int(parent) or (i == 0 and parent != -1) or (i > 0 and not 0 <= parent < n) or parent == i:
        return f"node {i} has a bad parent {parent!r}"
    children = node.get("children", [])
    if not isinstance(children, list) or not all(_int(c) and 0 < c < n for c in children):
        return f"node {i} has bad children"
    if len(set(children)) != len(children):
        return f"node {i} lists a child twice"
    if not _int(node.get("depth")) or not 0 <= node["depth"] <= MAX_TREE_DEPTH:
        return f"node {i} has a bad depth (at most {MAX_TREE_DEPTH})"
    checks: dict[str, tuple[bool, str]] = {
        "visits": (_int(node.get("visits", 0)) and node.get("visits", 0) >= 0, "a whole number >= 0"),
        "round": (_int(node.get("round", 0)) and node.get("round", 0) >= 0, "a whole number >= 0"),
        "value_sum": (_number(node.get("value_sum", 0.0)), "a finite number"),
        "decay": (_number(node.get("decay", 1.0)) and 0 <= node.get("decay", 1.0) <= 1, "in [0, 1]"),
    }
    for key in ("reward", "policy_score"):
        checks[key] = (node.get(key) is None or _real(node.get(key)), "a number or null")
    for key in ("ppl_history", "ppl_with_question"):
        value = node.get(key)
        checks[key] = (value is None or (_real(value) and not value <= 0), "a number > 0, NaN or null")
    prior = node.get("prior")
    checks["prior"] = (prior is None or (_number(prior) and 0 <= prior <= 1), "in [0, 1] or null")
    for key in ("terminal", "truncated", "exhausted"):
        checks[key] = (isinstance(node.get(key, False), bool), "true or false")
    for key in ("raw_history", "cleaned_history", "answer_sparql", "validity"):
        checks[key] = (isinstance(node.get(key, ""), str), "text")
    for key in ("answer", "simulation", "simulated_answer"):
        checks[key] = (isinstance(node.get(key, []), list), "a list")
    checks["step"] = (node.get("step") is None or isinstance(node.get("step"), dict), "an object or null")
    for key, (ok, what) in checks.items():
        if not ok:
            return f"node {i}: {key} must be {what}, got {str(node.get(key))[:40]!r}"
    return None


def tree_problem(nodes: Any) -> str | None:
    """What is wrong with a trace's node list as a tree (None: it is one)."""
    if not isinstance(nodes, list) or not nodes:
        return "a trace needs a list of nodes, the root first"
    n = len(nodes)
    if n > MAX_NODES:
        return f"too many nodes ({n:,}; at most {MAX_NODES:,})"
    for i, node in enumerate(nodes):
        problem = _check_node(i, node, n)
        if problem:
            return problem
    listed = [0] * n
    for i, node in enumerate(nodes):
        for c in node.get("children", []):
            listed[c] += 1
            if nodes[c]["parent"] != i:
                return f"node {c} is listed as a child of {i} but names {nodes[c]['parent']} as its parent"
    if any(count != 1 for count in listed[1:]) or listed[0]:
        return "every node but the root must be the child of exactly one node"
    seen = 1
    queue = deque([0])
    while queue:  # breadth-first from the root: reaches every node iff there is no cycle
        i = queue.popleft()
        for c in nodes[i].get("children", []):
            if nodes[c]["depth"] != nodes[i]["depth"] + 1:
                return f"node {c} has depth {nodes[c]['depth']}, its parent {nodes[i]['depth']}"
            seen += 1
            queue.append(c)
    if seen != n:
        return f"{n - seen} nodes are not reachable from the root (a cycle of parents?)"
    return None


def check_trace_file(path: str | Path, error: type[Exception]) -> None:
    """Raise `error` (one line) if the trace file at `path` is too big, nested too deep,
    or not a well-formed tree. Unreadable or non-JSON files are left to the reader."""
    source = Path(path)
    try:
        size = source.stat().st_size
    except OSError:
        return
    if size > MAX_TRACE_BYTES:
        raise error(f"trace file too large ({size / 1e6:.1f} MB; at most {MAX_TRACE_BYTES / 1e6:.0f} MB)")
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if json_depth_exceeds(text):
        raise error(f"trace JSON nested more than {MAX_JSON_DEPTH} deep")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return
    if not isinstance(data, dict) or not data.get("nodes") or "question" not in data:
        return  # the reader says what is missing
    problem = tree_problem(data["nodes"])
    if problem is None and not (
        isinstance(data.get("events", []), list) and len(data.get("events", [])) <= MAX_EVENTS
    ):
        problem = f"events must be a list of at most {MAX_EVENTS:,}"
    if problem is not None:
        raise error(f"malformed trace: {problem}")
