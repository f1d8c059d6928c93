"""The Wikidata demo KB embedded and the same file behind `oxigraph serve` give the same
observations (elapsed time aside).

The server is a real endpoint process on 127.0.0.1, started and stopped by the fixture.
A remote endpoint does not reveal its vocabulary, so the Wikidata flavour is given
explicitly (`wikidata+http://...`). SearchNodes is compared on its first hit, and on
the set of homonyms: the remote KB searches labels with plain SPARQL (no FTS5 index),
so the order of equally good hits may differ by design (kb.remote).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kb.actions import Action
from kb.flavour import WIKIDATA
from kb.observation import Observation
from kb.relation_ranker import LexicalRanker
from kb.tools import Toolbox
from tests.oxigraph_server import OxigraphServer, oxigraph_binary, oxigraph_server

KB_PATH = Path(__file__).resolve().parents[2] / "examples" / "demo_wikidata.ttl"
OBAMA = 'SELECT ?e WHERE { ?e rdfs:label "Barack Obama"@en }'
ACTIONS = [
    Action("SearchGraphPatterns", OBAMA),
    Action("SearchGraphPatterns", OBAMA, semantic="positions held"),
    Action("SearchGraphPatterns", OBAMA, semantic="when did he start"),
    Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Q11696 } }", semantic="who held it"),
    Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Qdemo_paris_texas } }"),
    Action("SearchGraphPatterns", "SELECT ?e WHERE { ?e wdt:P19 wd:Q84 }", semantic="born"),
    Action("SearchGraphPatterns", 'SELECT ?e WHERE { ?e rdfs:label "No Such Item"@en }'),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { wd:Q76 p:P39 ?s . ?s ps:P39 ?x } ORDER BY ?x"),
    Action("ExecuteSPARQL", "SELECT ?s ?d WHERE { wd:Q76 p:P39 ?s . ?s pq:P580 ?d } ORDER BY ?d"),
    Action(
        "ExecuteSPARQL",
        "SELECT ?x WHERE { ?s ps:P39 wd:Q14211 ; pq:P580 ?t . ?x p:P39 ?s . "
        'FILTER(?t >= "2000-01-01T00:00:00Z"^^xsd:dateTime) } ORDER BY ?t',
    ),
    Action("ExecuteSPARQL", "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?x wdt:P31 wd:Q5 }"),
    Action("ExecuteSPARQL", "SELECT ?pop WHERE { wd:Q30 wdt:P1082 ?pop }"),
    Action("ExecuteSPARQL", "ASK { wd:Q76 wdt:P19 wd:Q18094 }"),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { wd:Q76 wdt:P19 wd:Q90 }"),
    Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x rdfs:label "),
    Action("SearchTypes", "human"),
    Action("SearchTypes", "political office"),
    Action("SearchNodes", ""),
    Action("Done"),
]


@pytest.fixture(scope="module")
def wikidata_server() -> Iterator[OxigraphServer]:
    """`oxigraph serve` with examples/demo_wikidata.ttl."""
    if oxigraph_binary() is None:
        pytest.skip("the `oxigraph` CLI is not installed")
    with oxigraph_server(KB_PATH) as server:
        yield server


@pytest.fixture(scope="module")
def both(wikidata_server) -> tuple[Toolbox, Toolbox]:
    from kb.spec import open_kb

    ranker = LexicalRanker()  # the same ranker on both sides: this test is about the KBs
    remote = open_kb(f"wikidata+{wikidata_server.url}")
    assert remote.flavour is WIKIDATA
    return Toolbox(open_kb("demo-wikidata"), ranker=ranker), Toolbox(remote, ranker=ranker)


def _same(obs: Observation) -> Observation:
    return replace(obs, elapsed_s=0.0)


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.render()[:70])
def test_embedded_and_served_wikidata_kb_give_the_same_observation(both, action: Action):
    embedded, remote = both
    mine, theirs = embedded.run(action), remote.run(action)
    assert _same(theirs) == _same(mine)


@pytest.mark.parametrize("name", ["Barack Obama", "Honolulu", "Obama", "Inception"])
def test_search_nodes_first_hit_is_the_same_on_both(both, name: str):
    embedded, remote = both
    mine, theirs = embedded.run(Action("SearchNodes", name)), remote.run(Action("SearchNodes", name))
    assert theirs.entities[0] == replace(mine.entities[0], score=theirs.entities[0].score)
    assert theirs.text.splitlines()[0] == mine.text.splitlines()[0]


@pytest.mark.parametrize("name", ["Paris", "Chris Evans", "Cambridge"])
def test_homonyms_are_shown_side_by_side_with_q_ids_on_both(both, name: str):
    embedded, remote = both
    mine, theirs = embedded.run(Action("SearchNodes", name)), remote.run(Action("SearchNodes", name))
    exact = [line for line in mine.text.splitlines() if line.startswith(f'"{name}" | wd:')]
    assert len(exact) == 2
    assert sorted(line for line in theirs.text.splitlines() if line.startswith(f'"{name}" | wd:')) == sorted(
        exact
    )


def test_remote_name_search_skips_property_entities(both):
    _embedded, remote = both
    labelled = remote.kb.query('SELECT ?p WHERE { ?p rdfs:label "place of birth"@en }')
    assert [row[0].value for row in labelled.rows] == ["http://www.wikidata.org/entity/P19"]
    hits = remote.kb.search_names("place of birth", 10)
    assert not [h for h in hits if h.id.startswith("P")]  # a property, not an item
    # An endpoint this small has its names read into the embedded index: the same hits.
    assert [h.id for h in hits] == [h.id for h in _embedded.kb.search_names("place of birth", 10)]
