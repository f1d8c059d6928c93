"""Replaying a run round by round, and the UI's event pump, on the toy world.

The replayed frame at the end of each round must equal a snapshot of the live tree
taken at that moment. The real run's replay is exercised in tests/app/test_app.py.
"""

from __future__ import annotations

import copy

from mcts.search.events import RoundFinished
from mcts.search.loop import Search
from mcts.search.settings import SearchSettings
from tests.toy_world import QUESTION, toy_world
from ui.stream import pump
from viz.replay import replay_rounds, tree_at_round


def _stats(tree) -> list[tuple]:
    return [
        (n.id, n.parent, n.visits, round(n.value_sum, 9), n.reward, tuple(n.children)) for n in tree.nodes
    ]


def _search(**changes) -> Search:
    policy, scorer, tools = toy_world()
    settings = SearchSettings(**{"rounds": 6, "k": 3, "early_stop_terminals": 99, **changes})
    return Search(QUESTION, settings, policy=policy, scorer=scorer, tools=tools)


def test_each_replayed_round_equals_the_live_tree_at_that_moment() -> None:
    search = _search()
    snapshots = {}
    for event in search.run():
        if isinstance(event, RoundFinished):
            snapshots[event.round] = copy.deepcopy(search.tree)
    events = search.events_log
    assert replay_rounds(events) == len(snapshots) >= 3
    for round_no, live in snapshots.items():
        frame = tree_at_round(search.tree, events, round_no)
        assert _stats(frame.tree) == _stats(live), f"round {round_no}"
        assert frame.round == round_no and frame.selected_path[0] == 0
    zero = tree_at_round(search.tree, events, 0)
    assert len(zero.tree) == 1 and zero.tree.root.visits == 0
    assert _stats(tree_at_round(search.tree, events, 99).tree) == _stats(search.tree)


def test_replay_does_not_touch_the_recorded_tree() -> None:
    search = _search()
    list(search.run())
    before = _stats(search.tree)
    tree_at_round(search.tree, search.events_log, 1)
    assert _stats(search.tree) == before


def test_pump_delivers_every_event_in_order_in_batches() -> None:
    search = _search()
    got = []
    for batch in pump(search, tick_s=0.05):
        got.extend(batch)
    assert got == search.events_log and got[-1].kind == "stopped"


def test_closing_the_pump_cancels_the_search() -> None:
    search = _search(rounds=30)
    stream = pump(search, tick_s=0.05)
    for batch in stream:
        if batch:
            break
    stream.close()
    assert search.cancelled


def test_two_loads_of_a_trace_racing_on_one_session_leave_one_copy_of_its_events() -> None:
    import threading

    from mcts.search.trace import load_trace
    from ui.config import TRACES_DIR
    from ui.session import Session
    from ui.traces import open_trace

    trace = load_trace(TRACES_DIR / "fast-obama.json")
    session = Session()
    # The interleaving that doubled the replay's rounds: both loads reset, then both fill.
    session.reset()
    session.reset()
    session.load_events(trace.events)
    session.load_events(trace.events)
    assert replay_rounds(session.events) == trace.result.rounds
    # And as the app runs them: concurrent handlers on the same session object.
    threads = [threading.Thread(target=open_trace, args=(session, trace, None)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(session.events) == len(trace.events)
