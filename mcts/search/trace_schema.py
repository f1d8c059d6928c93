"""The trace schema: every field's type and range, read off the typed records the writer serialises.

A trace (`mcts.search.trace`) is the JSON form of frozen dataclasses: `Trace` itself,
`SearchSettings`, `RunMeta`, `Node` with its `Step`, `Action`, `Observation`, `Value`,
`EntityHit` and `GraphPattern`, the events of `mcts.search.events`, `SearchResult` with its
`VoteRow`s and `CostSummary`. Their type hints ARE the schema: `check_record` walks a parsed
trace against them (int, float, str, bool, `Literal`, `StrEnum`, `X | None`, tuples,
lists, dicts, nested records, events by their `kind`), so what the writer writes and what
the reader accepts cannot drift apart. `RANGES` adds what a type cannot say (visits >= 0,
decay and prior in [0, 1], where NaN is allowed, the seed a model can take).

Every failure raises `SchemaError` naming the field by its path (`nodes[3].step.action.
argument`) and what was wrong, one line. Also refused: unknown fields, required fields
missing (a field without a default in its record), lone surrogates in text (JSON allows
`"\\ud800"`; no page or file can carry it), and numbers past `MAX_INT` (JSON allows
10**400). Shapes across records (one parent each, ids in range) are checked by
`mcts.search.trace_validation`. Knows nothing of files or the UI.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from kb.actions import Action, ToolName
from kb.observation import EntityHit, GraphPattern, Observation, Value
from mcts.search.cleaning import CleaningRule
from mcts.search.cost import CostSummary
from mcts.search.events import EVENT_TYPES, Event
from mcts.search.run_meta import RunMeta
from mcts.search.settings import MAX_SEED, SearchSettings, VoteMode
from mcts.search.steps import IGDetail, Step
from mcts.search.tree import Node
from mcts.search.voting import SearchResult, VoteRow

MAX_INT = 2**53  # the largest whole number JSON readers (and the browser) keep exactly
MAX_TEXT = 1_000_000  # characters in one string (the whole file is at most 20 MB)
MAX_ITEMS = 200_000  # items in one list (MAX_EVENTS; nodes are bounded by the tree check)
RECORDS: tuple[type, ...] = (
    SearchSettings,
    RunMeta,
    Node,
    IGDetail,
    Step,
    Action,
    Observation,
    Value,
    EntityHit,
    GraphPattern,
    SearchResult,
    VoteRow,
    CostSummary,
    *EVENT_TYPES.values(),
)


class SchemaError(ValueError):
    """A field of the wrong type or out of range; `str()` is `<path>: <why>`."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}" if path else why)
        self.path, self.why = path, why


@dataclasses.dataclass(frozen=True)
class Range:
    """What a number may be beyond its type. `nan`: NaN and ±inf allowed (a perplexity the
    scorer could not compute is written as NaN)."""

    lo: float = -MAX_INT
    hi: float = MAX_INT
    nan: bool = False


COUNT = Range(0)  # visits, rounds, calls, tokens, seconds: never negative
UNIT = Range(0, 1)
FREE = Range(nan=True)
# "Record.field" -> range; a field not named here has the default Range() (finite, |x| <= 2**53).
RANGES: dict[str, Range] = {
    "Node.id": COUNT,
    "Node.depth": COUNT,
    "Node.round": COUNT,
    "Node.visits": COUNT,
    "Node.decay": UNIT,
    "Node.prior": UNIT,
    "Node.reward": FREE,
    "Node.policy_score": FREE,
    "Node.ppl_history": Range(0, math.inf, nan=True),
    "Node.ppl_with_question": Range(0, math.inf, nan=True),
    "IGDetail.history_tokens": COUNT,
    "IGDetail.question_nlls": FREE,  # fp32 NLLs: a hair below 0, or inf from a half-precision model
    "IGDetail.base_question_nlls": FREE,
    "SearchSettings.seed": Range(0, MAX_SEED),  # what every seeding API (torch, numpy, random) takes
    "NodeScored.ppl_history": FREE,
    "NodeScored.ppl_with_question": FREE,
    "NodeScored.reward": FREE,
    "ValuesBackedUp.reward": FREE,
    "ValuesBackedUp.decayed_reward": FREE,
    "RoundFinished.best_reward": FREE,
    "VoteRow.count": COUNT,
    "SearchResult.rounds": COUNT,
    "SearchResult.nodes": COUNT,
    "SearchResult.terminals": COUNT,
    "CostSummary.tool_calls": COUNT,
    **{f"CostSummary.{f.name}": COUNT for f in dataclasses.fields(CostSummary) if f.name != "tool_calls"},
}
# Fields the reader fills in when absent although their record has no default.
OPTIONAL = {"Node.step"}
# Fields whose hint is looser than what the writer puts there.
HINTS: dict[str, Any] = {
    "Trace.nodes": tuple[Node, ...],
    "Trace.events": tuple[Event, ...],
    "Trace.cleaning_rules": tuple[CleaningRule, ...],
    "SearchResult.vote_mode": VoteMode,
    "CostSummary.tool_calls": dict[ToolName, int],
}


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"a number of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4000'} digits"
    if isinstance(value, str):
        return repr(value[:40].encode("utf-8", "backslashreplace").decode()) + (
            "…" if len(value) > 40 else ""
        )
    if isinstance(value, dict | list):
        return f"{'an object' if isinstance(value, dict) else 'a list'} of {len(value)}"
    return repr(value)[:40]


def _number(value: Any, path: str, rng: Range, whole: bool) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (whole and not isinstance(value, int))
    ):
        raise SchemaError(path, f"must be {'a whole number' if whole else 'a number'}, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        if rng.nan:
            return
        raise SchemaError(path, f"must be a finite number, got {value!r}")
    if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:  # no float could hold it
        raise SchemaError(path, f"must be in [{-MAX_INT}, {MAX_INT}], got {_show(value)}")
    if not rng.lo <= value <= rng.hi:  # exact for ints of any size: no float conversion
        lo, hi = (f"{b:g}" if isinstance(b, float) else str(b) for b in (rng.lo, rng.hi))
        raise SchemaError(path, f"must be in [{lo}, {hi}], got {_show(value)}")


def _text(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise SchemaError(path, f"must be text, got {_show(value)}")
    if len(value) > MAX_TEXT:
        raise SchemaError(path, f"text too long ({len(value):,} characters; at most {MAX_TEXT:,})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaError(path, "text holds a lone surrogate (not valid Unicode)") from None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _record(value: Any, path: str, cls: type) -> None:
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be an object, got {_show(value)}")
    if cls is Event:  # an event: its record is named by its kind
        kind = value.get("kind")
        if not isinstance(kind, str) or kind not in EVENT_TYPES:
            raise SchemaError(f"{path}.kind", f"unknown event kind {_show(kind)}")
        cls = EVENT_TYPES[kind]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in value:
        if key not in fields:
            raise SchemaError(f"{path}.{key}" if path else str(key)[:40], "unknown field")
    hints = _hints(cls)
    for name, f in fields.items():
        where = f"{path}.{name}" if path else name
        if name not in value:
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required and f.init and f"{cls.__name__}.{name}" not in OPTIONAL:
                raise SchemaError(path, f"missing the field {name!r}")
            continue
        if name == "kind" and issubclass(cls, Event):
            continue  # checked above
        key = f"{cls.__name__}.{name}"
        check(value[name], where, HINTS.get(key, hints[name]), RANGES.get(key, Range()))


def check(value: Any, path: str, hint: Any, rng: Range = Range()) -> None:
    """Raise SchemaError unless `value` (parsed JSON) is what a field typed `hint` serialises to."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return
        options = [a for a in args if a is not type(None)]
        if value is None:
            raise SchemaError(path, "must not be null")
        if len(options) == 1:
            return check(value, path, options[0], rng)
        raise TypeError(f"no schema rule for the union {hint}")  # a programming error: say so
    if origin is Literal:
        if not isinstance(value, str) or value not in args:
            raise SchemaError(path, f"must be one of {', '.join(map(str, args))}; got {_show(value)}")
        return None
    if origin in (tuple, list):
        item = args[0] if args else Any
        if not isinstance(value, list):
            raise SchemaError(path, f"must be a list, got {_show(value)}")
        if len(value) > MAX_ITEMS:
            raise SchemaError(path, f"too many items ({len(value):,}; at most {MAX_ITEMS:,})")
        for i, v in enumerate(value):
            check(v, f"{path}[{i}]", item, rng)
        return None
    if origin is dict:
        key_hint, value_hint = args
        if not isinstance(value, dict):
            raise SchemaError(path, f"must be an object, got {_show(value)}")
        for k, v in value.items():
            check(k, f"{path} key {_show(k)}", key_hint)
            check(v, f"{path}[{_show(k)}]", value_hint, rng)
        return None
    if hint is bool:
        if not isinstance(value, bool):
            raise SchemaError(path, f"must be true or false, got {_show(value)}")
        return None
    if hint is int or hint is float:
        return _number(value, path, rng, whole=hint is int)
    if hint is str:
        return _text(value, path)
    if isinstance(hint, type) and issubclass(hint, Enum):
        allowed = [m.value for m in hint]
        if not isinstance(value, str) or value not in allowed:
            raise SchemaError(path, f"must be one of {', '.join(allowed)}; got {_show(value)}")
        return None
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or hint is Event):
        return _record(value, path, hint)
    raise TypeError(f"no schema rule for {hint!r} at {path}")


def check_record(data: Any, cls: type) -> None:
    """Raise SchemaError at the first field of `data` (parsed JSON) that breaks the schema
    of the record `cls` (`mcts.search.trace.Trace` for a whole trace)."""
    _record(data, "", cls)
