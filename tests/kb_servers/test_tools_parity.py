"""The same actions on the embedded real subset and on the same data behind `oxigraph serve`
give the same observations (elapsed time aside).

The server is a real endpoint process on 127.0.0.1, started and stopped by the fixture.
SearchNodes is compared on its first hit only: the remote KB searches names with plain
SPARQL (no FTS5 index), so its lower-ranked hits may differ by design (kb.remote).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kb.actions import Action
from kb.observation import Observation
from kb.relation_ranker import LexicalRanker
from kb.remote import RemoteKB
from kb.tools import Toolbox
from tests.oxigraph_server import closed_port_url, fbqa_server  # noqa: F401  (pytest fixture)

SWIFT = 'SELECT ?e WHERE { ?e ns:type.object.name "Taylor Swift"@en }'
ACTIONS = [
    Action("SearchGraphPatterns", SWIFT),
    Action("SearchGraphPatterns", SWIFT, semantic="films she acted in"),
    Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { ns:m.09c7w0 } }", semantic="capital"),
    Action("SearchGraphPatterns", "SELECT ?e WHERE { ?e ns:people.person.place_of_birth ns:m.02_286 }"),
    Action("SearchGraphPatterns", 'SELECT ?e WHERE { ?e ns:type.object.name "No Such Entity"@en }'),
    Action(
        "ExecuteSPARQL",
        "SELECT DISTINCT ?x WHERE { ns:m.0dl567 ns:film.actor.film ?c . ?c ns:film.performance.film ?x }",
    ),
    Action(
        "ExecuteSPARQL",
        "SELECT ?x ?n WHERE { ?x ns:people.person.place_of_birth ns:m.02hrh0_ . ?x ns:type.object.name ?n }",
    ),
    Action(
        "ExecuteSPARQL",
        "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?x ns:people.person.nationality ns:m.09c7w0 }",
    ),
    Action("ExecuteSPARQL", "ASK { ns:m.02mjmr ns:people.person.place_of_birth ns:m.02hrh0_ }"),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ns:film.actor.film ns:m.nothing }"),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ns:type.object.type ns:film.film } ORDER BY ?x LIMIT 3000"),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ns:type.object.name "),
    Action("ExecuteSPARQL", "DELETE WHERE { ?s ?p ?o }"),
    Action("SearchTypes", "film actor"),
    Action("SearchTypes", "sports team"),
    Action("SearchNodes", ""),
    Action("Done"),
]


def _same(obs: Observation) -> Observation:
    return replace(obs, elapsed_s=0.0)


@pytest.fixture(scope="module")
def both(fbqa_kb, fbqa_server) -> tuple[Toolbox, Toolbox]:  # noqa: F811  (fixture from oxigraph_server)
    ranker = LexicalRanker()  # the same ranker on both sides: this test is about the KBs
    return Toolbox(fbqa_kb, ranker=ranker), Toolbox(RemoteKB(fbqa_server.url), ranker=ranker)


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.render()[:60])
def test_embedded_and_served_kb_give_the_same_observation(both, action: Action):
    embedded, remote = both
    mine, theirs = embedded.run(action), remote.run(action)
    assert _same(theirs) == _same(mine)


@pytest.mark.parametrize("name", ["Taylor Swift", "Barack Obama", "Honolulu"])
def test_search_nodes_first_hit_is_the_same_on_both(both, name: str):
    embedded, remote = both
    mine, theirs = embedded.run(Action("SearchNodes", name)), remote.run(Action("SearchNodes", name))
    assert theirs.entities[0] == replace(mine.entities[0], score=theirs.entities[0].score)
    assert theirs.text.splitlines()[0] == mine.text.splitlines()[0]


def test_an_unreachable_endpoint_is_one_error_line_and_the_toolbox_carries_on(fbqa_kb):
    dead = Toolbox(
        RemoteKB(closed_port_url(), retries=1, backoff_s=0.01, timeout_s=2), ranker=LexicalRanker()
    )
    for action in (
        Action("SearchNodes", "Taylor Swift"),
        Action("ExecuteSPARQL", "ASK { ?s ?p ?o }"),
        Action("SearchGraphPatterns", SWIFT),
        Action("SearchTypes", "film"),
    ):
        obs = dead.run(action)
        assert obs.is_error and "\n" not in obs.text, obs.text
    assert (
        Toolbox(fbqa_kb, ranker=LexicalRanker()).run(Action("ExecuteSPARQL", "ASK { ?s ?p ?o }")).text
        == "True"
    )
