"""Traces: a whole search run as one versioned JSON file that loads back into an identical tree.

Schema (version 3), one JSON object:

    {
      "schema_version": 3,
      "created_at": "2026-11-29T14:00:00+00:00",    # UTC, ISO 8601
      "question": "...",
      "settings": {SearchSettings.to_dict()},       # method, rounds, k, c, alpha, beta, ...
      "meta": {"kb_spec", "policy_model", "scorer_model", "policy_kind"},
      "cleaning_rules": ["drop_thoughts", ...],     # CleaningRule values switched on, sorted
      "ig_prompt": "Based on this interaction history, the original question is:",
      "nodes": [node, ...],                         # index == node id; nodes[0] is the root
      "events": [{"kind": "round_started", ...}, ...],  # mcts.search.events, in emission order
      "result": {SearchResult.to_dict()} | null     # answer, votes, stop reason, cost, ...
    }

    node = {"id", "parent" (-1 for the root), "depth", "round", "children": [ids],
            "visits", "value_sum", "reward", "ppl_history", "ppl_with_question", "decay",
            "terminal", "answer": [value], "answer_sparql", "validity", "policy_score",
            "prior" (P: softmax of the siblings' policy scores; version 2),
            "raw_history", "cleaned_history", "truncated", "exhausted",
            "simulation": [step], "simulated_answer": [value], "step": step | null,
            "ig_detail": ig_detail | null (version 3)}
    ig_detail = {"history_tokens" (n), "question_nlls", "question_pieces",
                 "base_question_nlls"}               # steps.IGDetail: why the reward is what it is
    step  = {"thought", "action": {"tool", "argument", "semantic"} | null, "raw_text",
             "observation": {"text", "status", "values": [value], "entities", "patterns",
                             "types", "sparql", "elapsed_s", "meta"}}
    value = {"name", "id", "datatype"}

Numbers that may be missing (reward and PPLs of an unscored node) are null. A reader
must reject a `schema_version` it does not know; fields added later get defaults.
Version 1 (before PUCT) has no node priors: the reader upgrades it by computing P from
the stored policy scores at the trace's sampling temperature (`rules.priors`), so old
traces load, replay and re-score like new ones; settings added since (selection,
c_puct, ig_variant, ...) take their defaults, which are what version-1 runs used.
Versions 1 and 2 have no `ig_detail`: their nodes load with None (the inspector says the
trace does not carry what its IG lens needs).
Saving is atomic (temporary file in the same folder + os.replace). Loading checks every
field against the schema of the records above (`mcts.search.trace_schema`) before building
anything; errors raise `TraceError` with one clear line ("not a valid trace: <field>: <why>"). Knows nothing of models, tools or the UI.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcts.search.events import Event, event_from_dict
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.rules import priors
from mcts.search.run_meta import RunMeta
from mcts.search.serialize import tree_from_list, tree_to_list
from mcts.search.settings import SearchSettings
from mcts.search.trace_schema import SchemaError, check_record
from mcts.search.trace_validation import (
    MAX_JSON_DEPTH,
    TraceBudget,
    budget_problem,
    check_shape,
    json_depth_exceeds,
    read_trace_text,
)
from mcts.search.tree import Tree
from mcts.search.voting import SearchResult

if TYPE_CHECKING:
    from mcts.search.loop import Search

TRACE_SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


class TraceError(ValueError):
    """A trace file that cannot be read; the message is one clear line."""


@dataclass(frozen=True)
class Trace:
    question: str
    settings: SearchSettings
    meta: RunMeta = field(default_factory=RunMeta)
    cleaning_rules: tuple[str, ...] = ()
    ig_prompt: str = DEFAULT_IG_PROMPT
    nodes: tuple[dict[str, Any], ...] = ()  # serialised nodes (mcts.search.serialize.node_to_dict)
    events: tuple[Event, ...] = ()
    result: SearchResult | None = None
    created_at: str = ""
    schema_version: int = TRACE_SCHEMA_VERSION

    def to_tree(self) -> Tree:
        """A fresh, independent tree equal to the one the run left."""
        return tree_from_list(self.question, [dict(n) for n in self.nodes])

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "created_at": self.created_at,
            "question": self.question,
            "settings": self.settings.to_dict(),
            "meta": self.meta.to_dict(),
            "cleaning_rules": list(self.cleaning_rules),
            "ig_prompt": self.ig_prompt,
            "nodes": [dict(n) for n in self.nodes],
            "events": [e.to_dict() for e in self.events],
            "result": self.result.to_dict() if self.result is not None else None,
        }


def trace_from_tree(
    tree: Tree,
    settings: SearchSettings,
    *,
    meta: RunMeta | None = None,
    cleaning_rules: tuple[str, ...] = (),
    ig_prompt: str = DEFAULT_IG_PROMPT,
    events: tuple[Event, ...] = (),
    result: SearchResult | None = None,
) -> Trace:
    return Trace(
        question=tree.question,
        settings=settings,
        meta=meta or RunMeta(),
        cleaning_rules=tuple(sorted(str(getattr(r, "value", r)) for r in cleaning_rules)),
        ig_prompt=ig_prompt,
        nodes=tuple(tree_to_list(tree)),
        events=tuple(events),
        result=result,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def trace_from_search(search: Search) -> Trace:
    """Snapshot of a search (finished or not: `result` is None while it runs)."""
    return trace_from_tree(
        search.tree,
        search.settings,
        meta=search.meta,
        cleaning_rules=tuple(r.value for r in search.cleaning_rules),
        ig_prompt=search.ig_prompt,
        events=tuple(search.events_log),
        result=search.result,
    )


def trace_to_json(trace: Trace, *, indent: int | None = 1) -> str:
    return json.dumps(trace.to_dict(), indent=indent, ensure_ascii=False)


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 trace as the current version: node priors from the siblings' policy scores."""
    nodes = [dict(n) for n in data["nodes"]]
    temperature = float(dict(data.get("settings", {})).get("temperature", SearchSettings().temperature))
    for parent in nodes:
        kids = [int(c) for c in parent.get("children", [])]
        ps = priors([nodes[c].get("policy_score") for c in kids], temperature)
        for c, p in zip(kids, ps, strict=True):
            nodes[c].setdefault("prior", p)
    return {**data, "nodes": nodes, "schema_version": TRACE_SCHEMA_VERSION}


def _invalid(where: str, exc: Exception) -> TraceError:
    return TraceError(f"not a valid trace: {where}: {' '.join(str(exc).split())}")


def trace_from_dict(data: Any, budget: TraceBudget | None = None) -> Trace:
    """The trace `data` (parsed JSON) holds; TraceError ("not a valid trace: <field>: <why>")
    for anything that is not what the writer writes (`mcts.search.trace_schema`), and
    ("trace too large: <why>") for a tree over `budget`, checked first."""
    if not isinstance(data, dict):
        raise TraceError("not a trace: the JSON is not an object")
    over = budget_problem(data, budget) if budget is not None else None
    if over is not None:
        raise TraceError(f"trace too large: {over}")
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise TraceError(
            f"unsupported trace schema_version {str(version)[:20]} (this reader knows "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    try:
        check_record(data, Trace)  # every field's type and range
    except SchemaError as exc:
        raise TraceError(f"not a valid trace: {exc}") from None
    # The schema held, so what is left to fail is a record's own rule (settings.rounds >= 1 ...).
    try:
        settings = SearchSettings.from_dict(data["settings"])
    except (TypeError, ValueError) as exc:
        raise _invalid("settings", exc) from None
    try:
        check_shape(data)  # the tree, and node ids named elsewhere
    except SchemaError as exc:
        raise TraceError(f"not a valid trace: {exc}") from None
    if version == 1:
        data = _upgrade_v1(data)
    try:
        result = SearchResult.from_dict(data["result"]) if data.get("result") else None
    except (TypeError, ValueError) as exc:
        raise _invalid("result", exc) from None
    try:
        events = tuple(event_from_dict(e) for e in data.get("events", []))
    except (TypeError, ValueError) as exc:
        raise _invalid("events", exc) from None
    trace = Trace(
        question=data["question"],
        settings=settings,
        meta=RunMeta.from_dict(data.get("meta", {})),
        cleaning_rules=tuple(data.get("cleaning_rules", [])),
        ig_prompt=data.get("ig_prompt", DEFAULT_IG_PROMPT),
        nodes=tuple(dict(n) for n in data["nodes"]),
        events=events,
        result=result,
        created_at=data.get("created_at", ""),
    )
    try:
        trace.to_tree()  # build the nodes now, not when a consumer first draws them
    except (TypeError, ValueError) as exc:
        raise _invalid("nodes", exc) from None
    return trace


def trace_from_json(text: str, budget: TraceBudget | None = None) -> Trace:
    if json_depth_exceeds(text):  # before parsing: Python's parser recurses
        raise TraceError(f"trace JSON nested more than {MAX_JSON_DEPTH} deep")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except (ValueError, RecursionError) as exc:  # e.g. a number of more than 4,300 digits
        raise TraceError(f"not valid JSON: {' '.join(str(exc).split())[:120]}") from None
    return trace_from_dict(data, budget)


def save_trace(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write atomically: a reader never sees a half-written trace."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = trace_to_json(trace)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_trace(path: str | os.PathLike[str], budget: TraceBudget | None = None) -> Trace:
    """Read a trace file: size, JSON depth, the reader's `budget` (if any), schema and tree
    shape are checked before any record is built; every failure is a TraceError with one
    clear line."""
    return trace_from_json(read_trace_text(path, TraceError), budget)
