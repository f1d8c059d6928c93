"""Why this child was selected, through the app's own handlers (no server, no model): the
shipped traces replayed, the inspector's selection score under the run's rule, the round
chooser and its bars, and the events wired to them in the built app."""

from __future__ import annotations

import pytest

from mcts.search.loop import Search
from mcts.search.settings import Method, SearchSettings
from tests.toy_world import QUESTION, toy_world
from ui import traces
from ui.glossary import GLOSSARY
from ui.inspector import inspect_node
from ui.selection_view import SELECTION_OUTPUTS, selection_for_node, selection_for_round
from ui.session import Session

gr = pytest.importorskip("gradio")


def _loaded(name: str) -> Session:
    session = Session()
    traces.load_bundled(session, name)
    return session


def test_obama_node_3_shows_the_puct_score_it_was_followed_by() -> None:
    session = _loaded("fast-obama.json")  # small preset: PUCT
    detail = inspect_node(session, "3")["detail"]
    assert "PUCT rank | **1 of 3 open**" in detail  # most visited (N = 7) and followed
    assert "UCT rank | **3 of 3" not in detail
    assert "1.284 + 1·0.914·√10 / (1 + 7) = 1.284 + 0.361 = **1.645**" in detail
    assert "ln N_parent" not in detail  # nothing of UCT's term in a PUCT run's inspector
    assert "highest score among the open siblings is followed next" in detail
    assert f"**prior term (PUCT)**: {GLOSSARY['prior term (PUCT)']}" in detail  # the page glossary's words
    assert "**UCT**:" not in detail

    out = selection_for_node(session, "3")
    assert set(out) == set(SELECTION_OUTPUTS)
    assert out["sel_round"]["value"] == 5  # the last round that went through node 2
    assert [r for _, r in out["sel_round"]["choices"]] == [5, 4]
    assert "greedy descent" in out["sel_round"]["choices"][1][0]
    assert "Round 5" in out["sel_note"] and "entered node 3" in out["sel_note"]
    assert "rank 1 of 3 open" in out["sel_note"]
    fig = out["sel_plot"]["value"]
    assert out["sel_plot"]["visible"] is True
    wn, explore = fig.data
    assert list(wn.x) == pytest.approx([1.3994, 1.54, 1.54], abs=1e-3)  # W/N when round 5 selected
    assert [round(a + b, 3) for a, b in zip(wn.x, explore.x, strict=True)] == [1.883, 1.585, 1.609]
    assert fig.data[0].y[0] == "<b>▶ 3</b>"  # entered (▶), inspected (bold)
    assert list(fig.data[0].text) == ["SPARQL place_of_birth", "SPARQL children", "SPARQL nationality"]


def test_inception_node_3_ranks_last_now_but_first_when_it_was_entered() -> None:
    session = _loaded("fast-inception.json")
    detail = inspect_node(session, "3")["detail"]
    assert "PUCT rank | **3 of 3 open**" in detail  # after round 6's backups
    out = selection_for_node(session, "3")
    assert out["sel_round"]["value"] == 6
    assert "entered node 3" in out["sel_note"] and "rank 1 of 3 open" in out["sel_note"]
    other = selection_for_round(session, "3", 5)  # round 5 entered node 5 instead
    assert "entered node 5" in other["sel_note"] and "Node 3: rank 2 of 3 open" in other["sel_note"]
    assert set(other) == {"sel_plot", "sel_note"}  # the chooser keeps its value


@pytest.mark.parametrize("bad", ["abc", "", None, 2, 99, -1, 4.5, "5; drop", "1" * 400, True])
def test_a_bad_round_gets_one_line_and_changes_nothing_else(bad) -> None:
    session = _loaded("fast-obama.json")
    out = selection_for_round(session, "3", bad)
    assert set(out) == {"sel_note"}
    assert "choose one of 4, 5" in out["sel_note"] and "\n" not in out["sel_note"]
    assert len(out["sel_note"]) < 200


def test_runs_without_a_selection_to_show_say_so_in_one_line() -> None:
    session = _loaded("fast-obama.json")
    assert "root" in selection_for_node(session, "0")["sel_note"]
    assert selection_for_node(session, "nope")["sel_plot"]["visible"] is False
    leaf = selection_for_node(session, "9")  # node 8 was expanded in the last round: never passed
    assert (
        "No round's selection went through node 8" in leaf["sel_note"] and leaf["sel_round"]["choices"] == []
    )
    session.events = []  # an older trace's missing events
    out = selection_for_node(session, "3")
    assert "no selection path" in out["sel_note"] and out["sel_plot"]["visible"] is False
    session = _loaded("fast-obama.json")
    session.settings = session.settings.with_(method=Method.BEAM)
    assert "does not choose children by a selection score" in selection_for_node(session, "3")["sel_note"]
    assert "Pick a node" in selection_for_node(Session(), "3")["sel_note"]  # no tree yet


def test_a_live_uct_run_shows_uct_terms() -> None:
    settings = SearchSettings(rounds=6, k=2, max_depth=3, early_stop_terminals=99)
    policy, scorer, tools = toy_world()
    search = Search(QUESTION, settings, policy=policy, scorer=scorer, tools=tools)
    session = Session(tree=search.tree, settings=settings)
    for event in search.run():
        session.absorb([event])
    session.inspected = 1
    detail = inspect_node(session, "1")["detail"]
    assert "UCT rank" in detail and "PUCT" not in detail and "c·√(ln N_parent / N)" in detail
    assert "prior term (c_puct" not in detail  # a UCT run stores P but never adds it
    assert f"**UCT**: {GLOSSARY['UCT']}" in detail and "**c_puct**" not in detail
    out = selection_for_node(session, "1")
    assert "UCT, c = 1" in out["sel_note"] and r"exploration c·√(ln N\_parent/N)" in out["sel_note"]


def test_the_built_app_wires_the_chooser_to_the_inspected_node() -> None:
    import app

    demo = app.build_app()
    docs = {selection_for_node.__doc__: "change", selection_for_round.__doc__: "input"}
    wired = {fn.fn.__doc__: fn for fn in demo.fns.values() if fn.fn is not None and fn.fn.__doc__ in docs}
    assert set(wired) == set(docs)
    for doc, trigger in docs.items():
        fn = wired[doc]
        assert [c.elem_id for c in fn.outputs] == ["sel-round", "sel-plot", "sel-note"]
        assert "node-dd" in [getattr(c, "elem_id", None) for c in fn.inputs]
        assert [t[1] for t in fn.targets] == [trigger]
        assert fn.concurrency_limit is None  # cheap: never queued behind a model run
    session = _loaded("fast-obama.json")
    by_id = wired[selection_for_round.__doc__].fn(session, None, node="3", round_no=4)
    notes = {c.elem_id: v for c, v in by_id.items()}
    assert "greedy descent entered node 3" in notes["sel-note"]
