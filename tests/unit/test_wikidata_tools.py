"""The five tools in Wikidata's terms, on the bundled Wikidata demo KB (examples/demo_wikidata.ttl).

Observation formats are checked line by line with the lexical ranker (every shape at
a glance: labels and descriptions, homonyms with Q-ids, direct claims, statement paths
with qualifiers, incoming edges, typed literals, classes); the real embedding model
proves that ranking by property labels puts "position held" first. Every example
question's SPARQL runs through ExecuteSPARQL and gives the gold answer names. Also:
the flavour's vocabulary, flavour detection by `open_kb`, and the CLI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from kb.actions import Action
from kb.flavour import FREEBASE, WIKIDATA
from kb.observation import EntityHit
from kb.relation_ranker import EmbeddingRanker, LexicalRanker
from kb.tools import Toolbox

ROOT = Path(__file__).resolve().parents[2]
KB_PATH = ROOT / "examples" / "demo_wikidata.ttl"
QUESTIONS = [
    json.loads(line) for line in (ROOT / "examples" / "questions_wikidata.jsonl").read_text().splitlines()
]
OBAMA = 'SELECT ?e WHERE { ?e rdfs:label "Barack Obama"@en }'
WD = "http://www.wikidata.org/entity/"
PROP = "http://www.wikidata.org/prop/"


@pytest.fixture(scope="module")
def wd_kb():
    from kb.spec import open_kb

    return open_kb("demo-wikidata")


@pytest.fixture(scope="module")
def tools(wd_kb) -> Toolbox:
    return Toolbox(wd_kb, ranker=LexicalRanker())


class _Recording:
    """A lexical ranker that remembers the relation texts it was asked to rank."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        self.seen += relation_texts
        return LexicalRanker().rank(semantic, relation_texts)


# ----- vocabulary ----------------------------------------------------------------------
def test_iris_split_on_the_longest_matching_namespace():
    assert WIKIDATA.short(PROP + "direct/P19") == "wdt:P19"
    assert WIKIDATA.short(PROP + "P39") == "p:P39"
    assert WIKIDATA.short(PROP + "statement/P39") == "ps:P39"
    assert WIKIDATA.short(PROP + "qualifier/P580") == "pq:P580"
    assert WIKIDATA.short(WD + "statement/Q76-demo-P39-1") == "wds:Q76-demo-P39-1"
    assert WIKIDATA.short(WD + "Q76") == "wd:Q76"
    assert WIKIDATA.short("http://example.org/a.b") == "<http://example.org/a.b>"
    assert WIKIDATA.relation_id(PROP + "qualifier/P580") == "pq:P580"
    assert WIKIDATA.relation_iri("pq:P580") == PROP + "qualifier/P580"
    assert (WIKIDATA.entity_id(WD + "Q76"), WIKIDATA.entity_iri("Q76")) == ("Q76", WD + "Q76")
    assert WIKIDATA.is_entity_iri(WD + "Qdemo_paris_texas")
    assert not WIKIDATA.is_entity_iri(WD + "P39")  # a property entity is not an item


def test_the_wikidata_flavour_hides_labels_descriptions_aliases_and_wikibase_only():
    hidden = [
        "http://www.w3.org/2000/01/rdf-schema#label",
        "http://schema.org/description",
        "http://www.w3.org/2004/02/skos/core#altLabel",
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
        "http://wikiba.se/ontology#rank",
        "http://wikiba.se/ontology#directClaim",
    ]
    assert all(WIKIDATA.is_hidden_predicate(p) for p in hidden)
    shown = [
        PROP + "direct/P19",
        PROP + "direct/P31",
        PROP + "P39",
        PROP + "statement/P39",
        PROP + "qualifier/P580",
    ]
    assert not any(WIKIDATA.is_hidden_predicate(p) for p in shown)


def test_entity_queries_go_by_label_when_unique_and_by_q_id_for_homonyms():
    hits = [
        EntityHit("Q90", "Paris"),
        EntityHit("Qdemo_paris_texas", "Paris"),
        EntityHit("Q76", "Barack Obama"),
    ]
    queries = WIKIDATA.entity_queries(hits)
    assert queries["Q90"] == "SELECT ?e WHERE { VALUES ?e { wd:Q90 } }"
    assert queries["Qdemo_paris_texas"] == "SELECT ?e WHERE { VALUES ?e { wd:Qdemo_paris_texas } }"
    assert queries["Q76"] == OBAMA


# ----- SearchNodes ---------------------------------------------------------------------
def test_search_nodes_shows_label_and_description(tools):
    obs = tools.run(Action("SearchNodes", "Barack Obama"))
    assert (
        obs.text.splitlines()[0]
        == '"Barack Obama" | Description: 44th president of the United States (2009-2017)'
    )
    assert obs.entities[0].id == "Q76"


def test_search_nodes_shows_homonyms_side_by_side_with_their_q_ids(tools):
    lines = tools.run(Action("SearchNodes", "Paris")).text.splitlines()
    assert sorted(lines[:2]) == [
        '"Paris" | wd:Q90 | Description: capital and largest city of France',
        '"Paris" | wd:Qdemo_paris_texas | Description: city in and county seat of Lamar County, Texas, United States',
    ]
    evans = tools.run(Action("SearchNodes", "Chris Evans")).text
    assert '"Chris Evans" | wd:Q178348 | Description: American actor (born 1981)' in evans.splitlines()


def test_search_nodes_finds_aliases_says_when_there_is_no_description_and_skips_properties(tools):
    assert tools.run(Action("SearchNodes", "Obama")).entities[0].id == "Q76"  # skos:altLabel
    assert tools.run(Action("SearchNodes", "Rosalynn Carter")).text == '"Rosalynn Carter" | No description.'
    # "position held" is the label of the property wd:P39: not an item to search.
    assert all(not h.id.startswith("P") for h in tools.run(Action("SearchNodes", "position held")).entities)


# ----- SearchGraphPatterns -------------------------------------------------------------
def test_patterns_show_direct_claims_and_statement_paths_with_qualifiers(tools):
    obs = tools.run(Action("SearchGraphPatterns", OBAMA, semantic="position held start time"))
    every = tools.run(Action("SearchGraphPatterns", OBAMA, semantic="place of birth"))
    lines = set(obs.text.splitlines()) | set(every.text.splitlines())
    assert '(?e, wdt:P19, "Honolulu")' in lines
    assert '(?e, p:P39 -> ps:P39, "President of the United States")' in lines
    assert '(?e, p:P39 -> pq:P580, "2005-01-03T00:00:00Z"^^xsd:dateTime)' in lines
    pattern = next(p for p in obs.patterns if p.predicates == ("p:P39", "pq:P580"))
    assert (pattern.direction, pattern.sample.datatype) == ("out", "dateTime")


def test_patterns_show_incoming_claims_and_statements(tools):
    obs = tools.run(
        Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Q11696 } }", semantic="held")
    )
    lines = obs.text.splitlines()
    assert '("Bill Clinton", wdt:P39, ?e)' in lines
    assert '("Bill Clinton", p:P39 -> ps:P39, ?e)' in lines


def test_patterns_never_show_labels_descriptions_aliases_ranks_or_property_links(tools, wd_kb):
    for query in (
        OBAMA,
        "SELECT ?e WHERE { VALUES ?e { wd:Q90 } }",
        "SELECT ?e WHERE { VALUES ?e { wd:P39 } }",
    ):
        full = Toolbox(wd_kb, ranker=LexicalRanker()).run(Action("SearchGraphPatterns", query, semantic="x"))
        for pattern in full.patterns:
            assert all(re.fullmatch(r"(wdt|p|ps|pq):P\d+", p) for p in pattern.predicates), pattern


def test_patterns_of_a_homonym_by_q_id(tools):
    texas = tools.run(Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Qdemo_paris_texas } }"))
    assert '(?e, wdt:P131, "Lamar County")' in texas.text.splitlines()
    france = tools.run(Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Q90 } }"))
    assert '(?e, wdt:P17, "France")' in france.text.splitlines()


def test_relations_are_ranked_by_the_labels_of_their_properties(wd_kb):
    ranker = _Recording()
    obs = Toolbox(wd_kb, ranker=ranker).run(Action("SearchGraphPatterns", OBAMA, semantic="start"))
    labels = {p.predicates: p.label for p in obs.patterns}
    assert labels[("p:P39", "pq:P580")] == "position held: start time"  # patterns carry the text too
    assert {"position held", "position held: start time", "place of birth", "spouse: start time"} <= set(
        ranker.seen
    )
    assert not any(":P" in text for text in ranker.seen)  # every property of the demo has a label


def test_semantic_ranking_with_the_embedding_model_puts_position_held_first(wd_kb):
    obs = Toolbox(wd_kb, ranker=EmbeddingRanker()).run(
        Action("SearchGraphPatterns", OBAMA, semantic="positions held")
    )
    assert obs.patterns[0].predicates in {("wdt:P39",), ("p:P39", "ps:P39")}
    assert {p.predicates for p in obs.patterns[:2]} == {("wdt:P39",), ("p:P39", "ps:P39")}


# ----- ExecuteSPARQL -------------------------------------------------------------------
def test_execute_shows_labels_statement_ids_and_typed_literals(tools):
    assert (
        tools.run(Action("ExecuteSPARQL", "SELECT ?x WHERE { wd:Q76 wdt:P26 ?x }")).text
        == '["Michelle Obama"]'
    )
    obs = tools.run(
        Action("ExecuteSPARQL", "SELECT ?s ?d WHERE { wd:Q76 p:P39 ?s . ?s pq:P580 ?d } ORDER BY ?d")
    )
    assert obs.text == (
        '[(wds:Q76-demo-P39-2, "2005-01-03T00:00:00Z"^^xsd:dateTime), '
        '(wds:Q76-demo-P39-1, "2009-01-20T00:00:00Z"^^xsd:dateTime)]'
    )
    assert obs.values[0].id == "wds:Q76-demo-P39-2"


def test_wikidata_prefixes_are_added_when_used_undeclared(tools):
    sparql = (
        'SELECT ?d WHERE { ?x rdfs:label "Barack Obama"@en ; schema:description ?d ; p:P39 ?s . '
        '?s ps:P39 wd:Q11696 ; pq:P580 ?t . FILTER(?t > "2000-01-01T00:00:00Z"^^xsd:dateTime) . ?x wdt:P31 wd:Q5 }'
    )
    obs = tools.run(Action("ExecuteSPARQL", sparql))
    assert obs.text == '["44th president of the United States (2009-2017)"]'
    for prefix in ("wd", "wdt", "p", "ps", "pq", "rdfs", "schema", "xsd"):
        assert f"PREFIX {prefix}: <" in obs.sparql


@pytest.mark.parametrize("question", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_every_example_question_gives_its_gold_answers_through_execute_sparql(tools, question):
    gold = {a["name"] for a in question["gold_answers"]}
    bare = re.sub(r"(?m)^PREFIX .*\n", "", question["gold_sparql"])  # prefixes come from the tool
    for sparql in (question["kb_sparql"], bare):
        obs = tools.run(Action("ExecuteSPARQL", sparql))
        assert obs.status == "ok", obs.text
        assert {v.name for v in obs.values} == gold


# ----- SearchTypes ---------------------------------------------------------------------
def test_search_types_matches_class_labels_and_shows_their_ids(tools):
    obs = tools.run(Action("SearchTypes", "human"))
    assert obs.text.splitlines()[0] == '"human" | wd:Q5'
    assert obs.types[0] == "wd:Q5"
    # "human settlement" is only ever a P279 target: classes include subclass targets.
    assert "wd:Q486972" in tools.run(Action("SearchTypes", "settlement")).types
    assert tools.run(Action("SearchTypes", "zzzz")).status == "empty"


# ----- choosing the flavour --------------------------------------------------------------
def test_open_kb_reads_the_flavour_from_the_data_or_the_spec(wd_kb, monkeypatch):
    from kb.spec import KBSpecError, open_kb

    assert wd_kb.flavour is WIKIDATA
    assert open_kb(str(KB_PATH)).flavour is WIKIDATA  # detected from the file
    assert open_kb("demo").flavour is FREEBASE
    remote = open_kb("wikidata+http://127.0.0.1:9/sparql")
    assert (remote.url, remote.flavour) == ("http://127.0.0.1:9/sparql", WIKIDATA)
    assert open_kb("http://127.0.0.1:9/sparql").flavour is FREEBASE
    monkeypatch.setenv("KB_FLAVOUR", "wikidata")
    assert open_kb("http://127.0.0.1:9/other").flavour is WIKIDATA
    assert open_kb("demo").flavour is FREEBASE  # a bundled demo keeps its own flavour
    with pytest.raises(KBSpecError, match="unknown KB flavour"):
        open_kb("klingon+http://127.0.0.1:9/sparql")


def test_the_cli_runs_a_tool_on_the_wikidata_demo(capsys):
    from kb.__main__ import main

    assert main(["tool", "--kb", "demo-wikidata", 'SearchNodes("Paris")']) == 0
    assert "wd:Q90 | Description: capital and largest city of France" in capsys.readouterr().out
    assert main(["tool", "--kb", str(KB_PATH), "--flavour", "wikidata", 'SearchTypes("city")']) == 0
    assert capsys.readouterr().out.startswith('"city" | wd:Q515')
