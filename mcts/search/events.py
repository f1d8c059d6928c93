"""Typed events the search emits. The CLI and the app consume only these.

Events carry ids and the figures a consumer prints; the live tree is available
from the running search for consumers that draw it. Every event is a frozen
dataclass with a `kind` for serialisation into traces.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

StopReason = Literal[
    "enough_terminals",  # early stop: enough non-empty terminal branches
    "budget",  # all rounds used
    "exhausted",  # nothing left to expand
    "cancelled",  # the consumer stopped the run
    "invalid_question",  # empty or unusable question
    "error",  # an unexpected failure, with its message in `detail`
]


@dataclass(frozen=True)
class Event:
    kind: str = field(init=False, default="event")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kind(name: str):  # small helper so each subclass declares its kind once
    def wrap(cls):
        cls.kind = name  # class attribute; dataclass field default is overridden below
        cls.__dataclass_fields__["kind"].default = name
        return cls

    return wrap


@_kind("round_started")
@dataclass(frozen=True)
class RoundStarted(Event):
    round: int
    max_rounds: int


@_kind("node_selected")
@dataclass(frozen=True)
class NodeSelected(Event):
    round: int
    node_id: int
    path: tuple[int, ...]  # root ... node


@_kind("candidates_proposed")
@dataclass(frozen=True)
class CandidatesProposed(Event):
    node_id: int
    count: int  # distinct candidates after merging identical actions
    seconds: float


@_kind("node_added")
@dataclass(frozen=True)
class NodeAdded(Event):
    node_id: int
    parent_id: int
    action: str  # rendered action (or the raw text when unparsable)
    observation: str
    validity: str


@_kind("node_scored")
@dataclass(frozen=True)
class NodeScored(Event):
    node_id: int
    ppl_history: float
    ppl_with_question: float
    reward: float


@_kind("values_backed_up")
@dataclass(frozen=True)
class ValuesBackedUp(Event):
    node_id: int  # the scored node
    path: tuple[int, ...]
    reward: float
    decayed_reward: float


@_kind("simulation_step")
@dataclass(frozen=True)
class SimulationStep(Event):
    node_id: int  # the tree node being simulated from
    index: int
    action: str
    observation: str


@_kind("terminal_found")
@dataclass(frozen=True)
class TerminalFound(Event):
    node_id: int
    answer: tuple[str, ...]
    non_empty: bool


@_kind("round_finished")
@dataclass(frozen=True)
class RoundFinished(Event):
    """End of one round: the figures a one-line progress report prints."""

    round: int
    nodes: int
    terminals: int  # terminal branches so far
    answered: int  # terminal branches with a non-empty executed result
    best_node_id: int  # the best branch so far (mcts.search.rules.best_branch)
    best_reward: float | None  # that node's reward r


@_kind("answer")
@dataclass(frozen=True)
class AnswerReady(Event):
    answer: tuple[str, ...]
    sparql: str
    node_ids: tuple[int, ...]  # the branches that voted for it


@_kind("stopped")
@dataclass(frozen=True)
class SearchStopped(Event):
    reason: StopReason
    detail: str = ""
    rounds: int = 0
    nodes: int = 0


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        RoundStarted,
        NodeSelected,
        CandidatesProposed,
        NodeAdded,
        NodeScored,
        ValuesBackedUp,
        SimulationStep,
        TerminalFound,
        RoundFinished,
        AnswerReady,
        SearchStopped,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event:
    data = dict(data)
    cls = EVENT_TYPES[data.pop("kind")]
    for key, value in data.items():
        if isinstance(value, list):
            data[key] = tuple(value)
    return cls(**data)
