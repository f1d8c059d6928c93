"""Pump a search's events from a worker thread and hand them to the UI in batches.

`Search.run()` yields after every model call. Running it in a worker thread and
draining its queue lets the UI redraw once per burst of events (the children of one
expansion arrive together) and always just before the next long wait, and still
tick the clock while a model call is in flight. Closing the pump (the page went
away, the handler was cancelled) cancels the search; it stops at its next event.

Knows nothing of Gradio or of what the events mean.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from mcts.search.events import Event

_END = object()


class Runnable(Protocol):
    def run(self) -> Iterator[Event]: ...

    def cancel(self) -> None: ...


def pump(search: Runnable, *, tick_s: float = 0.5) -> Iterator[list[Event]]:
    """Yield lists of events as they arrive; an empty list every `tick_s` of silence.

    Ends after the search's last event. An exception escaping `run()` (it should not:
    the search turns failures into a stop reason) is re-raised here.
    """
    inbox: queue.Queue[Any] = queue.Queue()

    def work() -> None:
        try:
            for event in search.run():
                inbox.put(event)
        except BaseException as exc:  # hand it to the consumer thread
            inbox.put(exc)
        finally:
            inbox.put(_END)

    worker = threading.Thread(target=work, name="search-pump", daemon=True)
    worker.start()
    try:
        while True:
            try:
                item = inbox.get(timeout=tick_s)
            except queue.Empty:
                yield []
                continue
            batch: list[Event] = []
            done = False
            while True:
                if item is _END:
                    done = True
                    break
                if isinstance(item, BaseException):
                    raise item
                batch.append(item)
                try:
                    item = inbox.get_nowait()
                except queue.Empty:
                    break
            yield batch
            if done:
                return
    finally:
        search.cancel()  # no-op when the run already ended
        worker.join(timeout=0.1)
