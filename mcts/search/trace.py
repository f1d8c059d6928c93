"""Traces: a whole search run as one versioned JSON file that loads back into an identical tree.

Schema (version 2), one JSON object:

    {
      "schema_version": 2,
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
            "simulation": [step], "simulated_answer": [value], "step": step | null}
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
Saving is atomic (temporary file in the same folder + os.replace). Loading errors
raise `TraceError` with one clear line. Knows nothing of models, tools or the UI.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcts.search.events import EVENT_TYPES, Event, event_from_dict
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.rules import priors
from mcts.search.run_meta import RunMeta
from mcts.search.serialize import tree_from_list, tree_to_list
from mcts.search.settings import SearchSettings
from mcts.search.trace_validation import check_trace_file
from mcts.search.tree import Tree
from mcts.search.voting import SearchResult

if TYPE_CHECKING:
    from mcts.search.loop import Search

TRACE_SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)


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


def _event(data: Any) -> Event:
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in EVENT_TYPES:
        raise TraceError(f"unknown event kind {kind!r} in trace")
    return event_from_dict(data)


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 trace as version 2: node priors from the siblings' policy scores."""
    nodes = [dict(n) for n in data["nodes"]]
    temperature = float(dict(data.get("settings", {})).get("temperature", SearchSettings().temperature))
    for parent in nodes:
        kids = [int(c) for c in parent.get("children", [])]
        if not all(0 <= c < len(nodes) for c in kids):
            continue  # tree_from_list reports the broken link
        ps = priors([nodes[c].get("policy_score") for c in kids], temperature)
        for c, p in zip(kids, ps, strict=True):
            nodes[c].setdefault("prior", p)
    return {**data, "nodes": nodes, "schema_version": TRACE_SCHEMA_VERSION}


def trace_from_dict(data: Any) -> Trace:
    if not isinstance(data, dict):
        raise TraceError("not a trace: the JSON is not an object")
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise TraceError(
            f"unsupported trace schema_version {version!r} (this reader knows "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    try:
        if version == 1:
            data = _upgrade_v1(data)
        trace = Trace(
            question=str(data["question"]),
            settings=SearchSettings.from_dict(data["settings"]),
            meta=RunMeta.from_dict(data.get("meta", {})),
            cleaning_rules=tuple(str(r) for r in data.get("cleaning_rules", [])),
            ig_prompt=str(data.get("ig_prompt", DEFAULT_IG_PROMPT)),
            nodes=tuple(dict(n) for n in data["nodes"]),
            events=tuple(_event(e) for e in data.get("events", [])),
            result=SearchResult.from_dict(data["result"]) if data.get("result") else None,
            created_at=str(data.get("created_at", "")),
        )
        trace.to_tree()  # validate the nodes now, not when a consumer first draws them
    except TraceError:
        raise
    except KeyError as exc:
        raise TraceError(f"trace is missing the field {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise TraceError(f"malformed trace: {' '.join(str(exc).split())}") from exc
    return trace


def trace_from_json(text: str) -> Trace:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    return trace_from_dict(data)


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


def load_trace(path: str | os.PathLike[str]) -> Trace:
    source = Path(path)
    check_trace_file(source, TraceError)  # size, JSON depth and tree shape before trusting it
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise TraceError(f"trace file not found: {source}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read trace {source}: {' '.join(str(exc).split())}") from exc
    return trace_from_json(text)
