"""The queue in front of model runs, as visitors see it: places, limits, "N ahead of you".

Gradio's own queue decides the order and runs one model event at a time; `RunGate`
decides who may join it. A place is taken when a run is admitted (the cheap event that
precedes it on the page) and marked started and freed by the run itself. Limits: at most
`max_waiting` places waiting, `per_visitor` places (waiting or running) per visitor and
`per_range` per address range (`ui.visitor`).

A waiting place belongs to a run. It is taken as the run joins Gradio's queue (`hold`,
the run event's validator, which Gradio calls before queuing it), or just before by the
page's admit step, which shows the visitor how many are ahead. It lives while its session
has a model event in Gradio's queue (`queued`, see `gradio_queued`) and, for `admit_s`
seconds after admission, while that run is on its way there. So an admit that never queues a run (an
API caller, a closed tab) frees its place within seconds, and a run that starts frees its
visitor's other waiting places that have no queued run (an abandoned admit never blocks
the same visitor's next run). Knows nothing of Gradio components; `gradio_queued` reads
Gradio's queue object, which has no public API for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ui.visitor import Visitor, address_range

log = logging.getLogger(__name__)
ADMIT_S = 5.0  # the page queues its run ~0.1 s after the admit; a slow client gets 50x that
# A queued place whose queue cannot be read (no `queued` reader) lives at most this long:
# 8 waiting runs of 180 s each, and some.
QUEUED_S = 1800.0


class Busy(Exception):
    """A run refused at the door; the message is one line for the status bar."""


@dataclass
class _Place:
    visitor: Visitor
    since: float  # time.monotonic() at admission
    started: bool = False
    queued: bool = False  # its run has joined Gradio's queue (`hold`)


def _as_visitor(visitor: Visitor | str) -> Visitor:
    if isinstance(visitor, Visitor):
        return visitor
    return Visitor(key=visitor, range=address_range(visitor), session=visitor)


class RunGate:
    def __init__(
        self,
        *,
        max_waiting: int = 16,
        per_visitor: int | None = None,
        per_range: int | None = None,
        admit_s: float = ADMIT_S,
        queued: Callable[[], frozenset[str]] | None = None,
    ) -> None:
        self.max_waiting = max_waiting
        self.per_visitor = per_visitor
        self.per_range = per_range
        self.admit_s = admit_s
        self.queued = queued  # sessions with a model event queued or running; None = unknown
        self._lock = threading.Lock()
        self._places: dict[int, _Place] = {}  # ticket -> place, in admission order
        self._next = 0

    def _sessions(self) -> frozenset[str] | None:
        if self.queued is None:
            return None
        try:
            return self.queued()
        except Exception:  # Gradio's internals moved: waiting places expire after admit_s alone
            log.warning("cannot read Gradio's queue; waiting places expire after %.0f s", self.admit_s)
            self.queued = None
            return None

    def _prune(self, now: float, visitor: Visitor | None = None, takeover: bool = False) -> None:
        """Drop waiting places that no run will claim: expired ones, this browser session's older
        one (a second click), and when a run of `visitor` starts, the visitor's others
        that have no queued run (an admit left behind by a closed tab or an API caller)."""
        queued = self._sessions()
        for ticket, place in list(self._places.items()):
            if place.started:
                continue
            is_queued = queued is not None and place.visitor.session in queued
            age = now - place.since
            expired = age > (QUEUED_S if place.queued and queued is None else self.admit_s) and not is_queued
            same_session = visitor is not None and place.visitor.session == visitor.session
            left_behind = (
                takeover
                and visitor is not None
                and place.visitor.key == visitor.key
                and not place.queued
                and not is_queued
            )
            if expired or same_session or left_behind:
                del self._places[ticket]

    def enter(self, visitor: Visitor | str, *, starting: bool = False, takeover: bool = False) -> int:
        """A ticket for a new run of `visitor`; raises Busy with the line to show.
        `starting`: the run is starting now (its turn came), so the waiting cap does not
        apply and the visitor's unqueued waiting places are freed first; `takeover`: those are
        freed (a run is joining the queue), the waiting cap applies."""
        visitor = _as_visitor(visitor)
        now = time.monotonic()
        with self._lock:
            self._prune(now, visitor, takeover=starting or takeover)
            places = list(self._places.values())
            mine = sum(p.visitor.key == visitor.key for p in places)
            if self.per_visitor is not None and mine >= self.per_visitor:
                raise Busy("You already have a run in progress; wait for it to finish (or press Stop).")
            in_range = sum(p.visitor.range == visitor.range for p in places)
            if self.per_range is not None and in_range >= self.per_range:
                raise Busy(
                    f"Your network already has {in_range} runs in progress; please try again in a minute."
                )
            waiting = sum(not p.started for p in places)
            if not starting and waiting >= self.max_waiting:
                raise Busy(f"The demo is busy ({waiting} runs waiting); please try again in a minute.")
            self._next += 1
            self._places[self._next] = _Place(visitor, now, started=starting)
            return self._next

    def hold(self, visitor: Visitor | str) -> int:
        """A run of `visitor` joins Gradio's queue: its session's admitted place, or a new one
        under every limit (an API caller that skipped the admit). Raises Busy, and the run
        never enters the queue: one client cannot fill it with runs."""
        visitor = _as_visitor(visitor)
        with self._lock:
            ticket = self._waiting(visitor.session)
            if ticket is not None:
                self._places[ticket].queued = True
                return ticket
        ticket = self.enter(visitor, takeover=True)
        with self._lock:
            if ticket in self._places:
                self._places[ticket].queued = True
        return ticket

    def claim(self, visitor: Visitor | str) -> int:
        """A run of `visitor` starts: its session's waiting place (or a new one, for API
        callers that skipped the admit or whose place expired), marked running."""
        visitor = _as_visitor(visitor)
        with self._lock:
            ticket = self._waiting(visitor.session)
            if ticket is not None:
                self._places[ticket].started = True
                return ticket
        return self.enter(visitor, starting=True)

    def _waiting(self, session: str) -> int | None:
        """The first place of `session` whose run has not started (call with the lock held)."""
        return next(
            (t for t, p in self._places.items() if not p.started and p.visitor.session == session), None
        )

    def ahead(self, ticket: int) -> int:
        """Runs before this one: those running plus those admitted earlier."""
        with self._lock:
            self._prune(time.monotonic())
            return sum(p.started or t < ticket for t, p in self._places.items() if t != ticket)

    def start(self, ticket: int) -> bool:
        """Mark `ticket` running; False if its place is gone."""
        with self._lock:
            place = self._places.get(ticket)
            if place is not None:
                place.started = True
            return place is not None

    def leave(self, ticket: int) -> None:
        with self._lock:
            self._places.pop(ticket, None)

    def withdraw(self, session: str) -> bool:
        """Free `session`'s waiting place (Stop before its run started); whether it had one."""
        with self._lock:
            mine = [t for t, p in self._places.items() if not p.started and p.visitor.session == session]
            for ticket in mine:
                del self._places[ticket]
            return bool(mine)

    def counts(self) -> tuple[int, int]:
        """(waiting, running) places now."""
        with self._lock:
            self._prune(time.monotonic())
            running = sum(p.started for p in self._places.values())
            return len(self._places) - running, running


def busy_line(ahead: int) -> str:
    return (
        f"**Busy:** {ahead} run{'s' if ahead != 1 else ''} ahead of you; yours starts when the model is free."
    )


def gradio_queued(blocks: Any, concurrency_id: str = "models") -> Callable[[], frozenset[str]]:
    """The sessions with an event of `concurrency_id` waiting in `blocks`' queue or running
    (`gradio.queueing.Queue`; Gradio drops a closed tab's events from it)."""

    def sessions() -> frozenset[str]:
        queue = blocks._queue
        found: set[str] = set()
        event_queue = queue.event_queue_per_concurrency_id.get(concurrency_id)
        if event_queue is not None:
            found.update(e.session_hash for e in list(event_queue.queue))
        for job in list(queue.active_jobs):
            found.update(e.session_hash for e in job or () if e.concurrency_id == concurrency_id)
        return frozenset(found)

    return sessions
