"""Checks of a trace before anything trusts it: bounds, schema, tree shape.

Traces come from visitors (the app's upload box), so before the reader in
`mcts.search.trace` builds anything from one:

- size (`MAX_TRACE_BYTES`) before reading, JSON nesting (`MAX_JSON_DEPTH`) before
  parsing (Python's parser recursed into 200k-deep JSON until RecursionError);
- every field's type and range against the schema the writer's records define
  (`mcts.search.trace_schema`: `visits: 10**400`, an action argument that is a list, a
  lone surrogate in the question each used to surface as a generic exception);
- the tree: ids 0..n-1 in order, exactly one parent each (the root none), parent and
  child links that agree, every node reachable from the root (so no cycles: a 55 KB
  trace whose nodes were each other's parents grew the app to 6.4 GB), depth = parent's
  depth + 1, at most `MAX_NODES` nodes and `MAX_TREE_DEPTH` levels;
- node ids named elsewhere (events, the result's best branches and votes) within the tree.

`check_shape` (on a trace the schema passed) raises `SchemaError` (`<field>: <why>`, one
line); the reader turns it into its `TraceError` ("not a valid trace: ..."). Knows
nothing of the UI.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.search.trace_schema import SchemaError

MAX_TRACE_BYTES = 20_000_000  # the largest evaluation traces are well under 1 MB
MAX_JSON_DEPTH = 64  # a real trace nests about 10 deep
MAX_NODES = 20_000
MAX_TREE_DEPTH = 64  # max_depth settings are at most a few tens
MAX_EVENTS = 200_000

# A whole string, a bracket, or a quote that opens no whole string (invalid JSON).
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*+"|[\[\]{}]|"', re.DOTALL)
# Event fields that name one node, or several.
_EVENT_NODE = ("node_id", "parent_id", "best_node_id")
_EVENT_NODES = ("path", "node_ids")


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


def _check_links(i: int, node: dict[str, Any], n: int) -> str | None:
    """What is wrong with node `i`'s own links (its types are the schema's)."""
    if node["id"] != i:
        return f"node at position {i} has id {node['id']!r} (ids must be 0..{n - 1} in order)"
    parent = node["parent"]
    if (i == 0 and parent != -1) or (i > 0 and not 0 <= parent < n) or parent == i:
        return f"node {i} has a bad parent {parent!r}"
    children = node.get("children", [])
    if not all(0 < c < n for c in children):
        return f"node {i} has bad children"
    if len(set(children)) != len(children):
        return f"node {i} lists a child twice"
    if node["depth"] > MAX_TREE_DEPTH:
        return f"node {i} has a bad depth (at most {MAX_TREE_DEPTH})"
    return None


def tree_problem(nodes: list[dict[str, Any]]) -> str | None:
    """What is wrong with a schema-checked node list as a tree (None: it is one)."""
    if not nodes:
        return "a tree needs at least the root node"
    n = len(nodes)
    if n > MAX_NODES:
        return f"too many nodes ({n:,}; at most {MAX_NODES:,})"
    for i, node in enumerate(nodes):
        problem = _check_links(i, node, n)
        if problem:
            return problem
    listed = [0] * n
    for i, node in enumerate(nodes):
        for c in node.get("children", []):
            listed[c] += 1
            if nodes[c]["parent"] != i:
                return f"node {c} is listed as a child of {i} but names {nodes[c]['parent']} as its parent"
    for i in range(1, n):
        if listed[i] != 1:
            parent = nodes[i]["parent"]
            return (
                f"node {i} is not listed among the children of its parent {parent}"
                if not listed[i]
                else f"node {i} is listed as a child of more than one node"
            )
    rounds = [node.get("round", 0) for node in nodes]
    for i in range(
        1, n
    ):  # ids are given in creation order and rounds only go forward (the replay needs both)
        if rounds[i] < rounds[i - 1]:
            return f"node {i} was made in round {rounds[i]}, before node {i - 1} (round {rounds[i - 1]})"
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


def _ids_in_tree(data: dict[str, Any], n: int) -> None:
    """Node ids named by events and the result must be nodes of the tree."""

    def need(value: Any, path: str) -> None:
        if value is not None and not 0 <= value < n:
            raise SchemaError(path, f"names node {value}, but the tree has nodes 0..{n - 1}")

    for i, event in enumerate(data.get("events", [])):
        for key in _EVENT_NODE:
            need(event.get(key), f"events[{i}].{key}")
        for key in _EVENT_NODES:
            for j, value in enumerate(event.get(key, ())):
                need(value, f"events[{i}].{key}[{j}]")
    result = data.get("result")
    if result:
        need(result.get("best_by_value"), "result.best_by_value")
        need(result.get("best_by_ig"), "result.best_by_ig")
        for j, value in enumerate(result.get("answer_node_ids", ())):
            need(value, f"result.answer_node_ids[{j}]")
        for r, row in enumerate(result.get("votes", ())):
            for j, value in enumerate(row["node_ids"]):
                need(value, f"result.votes[{r}].node_ids[{j}]")


def check_shape(data: dict[str, Any]) -> None:
    """The checks across records, on a trace the schema has passed: sizes, tree, node ids."""
    if len(data.get("events", [])) > MAX_EVENTS:
        raise SchemaError("events", f"at most {MAX_EVENTS:,} events")
    problem = tree_problem(data.get("nodes", []))
    if problem is not None:
        raise SchemaError("nodes", problem)
    _ids_in_tree(data, len(data["nodes"]))


@dataclass(frozen=True)
class TraceBudget:
    """What one trace may cost a reader that draws it (the app): nodes, and the characters of
    text all nodes together and any one node carry (histories, thoughts, observations). Every
    view of a tree (figure, table, replay frame, truth overlay) costs about nodes + text, so
    these bound a load, a replay step, an inspection and a truth toggle alike."""

    max_nodes: int
    max_text_chars: int
    max_node_chars: int

    def describe(self) -> str:
        return (
            f"at most {self.max_nodes:,} nodes, {self.max_text_chars:,} characters of text in all "
            f"and {self.max_node_chars:,} in one node"
        )


# The public demo's budget for uploads: the slowest view of a tree this size stays well
# under half a second on 2 shared CPUs (bench/trace_cost.py: a 500-node load 0.4 s, 0.55 MB sent);
# the shipped traces are ~15 nodes. Text is bounded loosely (a deep node repeats its branch in its
# histories, and the app must read its own runs back); the 5 MB upload limit bounds it too.
PUBLIC_TRACE_BUDGET = TraceBudget(max_nodes=500, max_text_chars=4_000_000, max_node_chars=100_000)


def _text_chars(value: Any, depth: int = 0) -> int:
    """Characters of every string inside `value` (keys included); nesting is bounded by the
    JSON depth check that ran before parsing, `depth` guards a caller that skipped it."""
    if isinstance(value, str):
        return len(value)
    if depth > MAX_JSON_DEPTH:
        return 0
    if isinstance(value, dict):
        return sum(len(str(k)) + _text_chars(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_text_chars(v, depth + 1) for v in value)
    return 0


def budget_problem(data: Any, budget: TraceBudget) -> str | None:
    """Why parsed trace `data` is over `budget` (one line naming the limit), or None. Reads
    anything JSON can hold: it runs before the schema check, so a tree over the budget costs
    no more than this one pass."""
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, list):
        return None  # the schema check says what is wrong
    if len(nodes) > budget.max_nodes:
        return f"{len(nodes):,} nodes; this app loads trees of at most {budget.max_nodes:,}"
    total = 0
    for i, node in enumerate(nodes):
        chars = _text_chars(node)
        if chars > budget.max_node_chars:
            return f"node {i} holds {chars:,} characters of text; at most {budget.max_node_chars:,} per node"
        total += chars
        if total > budget.max_text_chars:
            return (
                f"the nodes hold over {budget.max_text_chars:,} characters of text (the most this app loads)"
            )
    return None


def read_trace_text(path: str | Path, error: type[Exception]) -> str:
    """The file's text, after its size: raise `error` (one line) if it is too large,
    missing, unreadable or not UTF-8."""
    source = Path(path)
    try:
        size = source.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise error(f"trace file too large ({size / 1e6:.1f} MB; at most {MAX_TRACE_BYTES / 1e6:.0f} MB)")
        return source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"trace file not found: {source}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read trace {source}: {' '.join(str(exc).split())}") from None
