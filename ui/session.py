"""One browser session's state: the tree on screen and everything needed to redraw it.

Held in a `gr.State` (one per session, never shared). The live `Search` is not kept
here but in `ui.handlers`' registry keyed by session, so Stop reaches only the run of
the session that pressed it. Knows nothing of Gradio.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcts.search.cleaning import DEFAULT_RULES, CleaningRule
from mcts.search.events import Event, NodeSelected, RoundFinished
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.run_meta import RunMeta
from mcts.search.settings import SearchSettings
from mcts.search.tree import Tree
from mcts.search.voting import SearchResult


@dataclass(frozen=True)
class TwinRun:
    """A finished twin and the tree it is the twin of (the view drops it once that tree goes)."""

    source: Tree
    tree: Tree
    settings: SearchSettings
    result: SearchResult | None
    cached: bool


@dataclass
class Session:
    tree: Tree | None = None  # what the main figure shows (a live run, a trace, a re-score)
    settings: SearchSettings = field(default_factory=SearchSettings)
    rules: frozenset[CleaningRule] = DEFAULT_RULES  # the rules `tree`'s rewards were computed with
    ig_prompt: str = DEFAULT_IG_PROMPT
    meta: RunMeta = field(default_factory=RunMeta)
    events: list[Event] = field(default_factory=list)
    result: SearchResult | None = None
    selected_path: tuple[int, ...] = ()  # the last round's selection
    best_node: int | None = None  # the principal leaf the search last reported
    inspected: int | None = None
    trace_path: str | None = None  # the downloadable trace of the run on screen
    recorded_tree: Tree | None = None  # the tree as recorded (replay draws from it)
    started_at: float = 0.0
    flipped: frozenset[int] = frozenset()  # nodes whose rank among siblings a re-score changed
    twin: TwinRun | None = None  # the constant-reward twin of `tree` (ui.twin)
    show_truth: bool = False  # the truth overlay (gold) is drawn: a view choice, kept across runs
    owner: str = (
        ""  # the visitor whose trace folder this session writes to (`ui.trace_store`); kept across runs
    )
    # The IG lens's occlusions (`ui.lens_probe`), keyed by what they depend on; a new run empties it.
    lens_cache: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    lens_stop: bool = False  # Stop pressed while an occlusion runs (read between its passes)

    def reset(self) -> None:
        """Back to an empty view, in place (the gr.State keeps holding this object); the
        truth overlay's toggle stays as the page shows it, and the session's owner."""
        show_truth, owner = self.show_truth, self.owner
        self.__dict__.update(Session().__dict__)
        self.show_truth, self.owner = show_truth, owner

    def absorb(self, events: Iterable[Event]) -> None:
        """Fold events (a live batch or a loaded trace's whole list) into the highlights."""
        for event in events:
            self.events.append(event)
            if isinstance(event, NodeSelected):
                self.selected_path = tuple(event.path)
            elif isinstance(event, RoundFinished):
                self.best_node = event.best_node_id

    def load_events(self, events: Iterable[Event]) -> None:
        """A loaded trace's whole event list, replacing the one held: built apart and put in
        place by assignment, so two loads racing on one session (the example dropdown can
        fire twice; cheap handlers run concurrently) leave one copy of the events, not both."""
        fresh = Session()
        fresh.absorb(events)
        self.events, self.selected_path, self.best_node = fresh.events, fresh.selected_path, fresh.best_node

    def best_path(self) -> list[int] | None:
        """Root .. the best node: the result's best branch by value, else the live principal leaf."""
        if self.tree is None:
            return None
        for node_id in (self.result.best_by_value if self.result else None, self.best_node):
            if node_id is not None and 0 <= node_id < len(self.tree):
                return self.tree.path(node_id)
        return None
