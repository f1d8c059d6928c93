"""The five agent tools: exact observation formats (docs/method.md) and bad input as `Error:` lines.

Format tests use the tiny hand-written KB (every shape visible at a glance) with the
lexical ranker; the real Freebase subset and the real embedding model prove CVT pairs
and semantic ranking on data we did not write.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.actions import TOOL_NAMES, Action
from kb.observation import Observation, Value
from kb.relation_ranker import EmbeddingRanker, LexicalRanker, readable
from kb.tools import Toolbox

ADA = 'SELECT ?e WHERE { ?e ns:type.object.name "Ada Lovelace"@en }'
SWIFT = 'SELECT ?e WHERE { ?e ns:type.object.name "Taylor Swift"@en }'
OBAMA = 'SELECT ?e WHERE { ?e ns:type.object.name "Barack Obama"@en }'


@pytest.fixture(scope="module")
def tiny_tools(tiny_kb) -> Toolbox:
    return Toolbox(tiny_kb, ranker=LexicalRanker())


@pytest.fixture(scope="module")
def real_tools(fbqa_kb) -> Toolbox:
    return Toolbox(fbqa_kb, ranker=EmbeddingRanker())


# ----- SearchNodes ---------------------------------------------------------------------
def test_search_nodes_shows_name_and_first_100_characters_of_the_description(tiny_tools):
    obs = tiny_tools.run(Action("SearchNodes", "Ada Lovelace"))
    assert obs.status == "ok"
    assert obs.text.splitlines()[0] == (
        '"Ada Lovelace" | Description: English mathematician and writer, chiefly known for her work on '
        "Charles Babbage's proposed mechanica..."
    )
    assert obs.entities[0].id == "m.t_ada"


def test_search_nodes_shows_homonyms_side_by_side_with_their_ids(tiny_tools):
    obs = tiny_tools.run(Action("SearchNodes", "London"))
    assert obs.text.splitlines()[:2] == [
        '"London" | ns:m.t_london | Description: capital city of England and the United Kingdom',
        '"London" | ns:m.t_london_on | Description: city in Ontario, Canada',
    ]


def test_search_nodes_says_so_when_there_is_no_description(tiny_tools):
    assert (
        tiny_tools.run(Action("SearchNodes", "Analytical Engine")).text
        == '"Analytical Engine" | No description.'
    )


def test_search_nodes_on_the_real_subset_puts_the_exact_entity_first(real_tools):
    obs = real_tools.run(Action("SearchNodes", "Barack Obama"))
    assert (
        obs.text.splitlines()[0]
        == '"Barack Obama" | Description: 44th President of the United States of America'
    )
    assert len(obs.text.splitlines()) <= 10


def test_search_nodes_with_an_empty_name_or_no_match(tiny_tools):
    empty = tiny_tools.run(Action("SearchNodes", "  "))
    assert empty.is_error and empty.text.startswith("Error: SearchNodes needs an entity name")
    none = tiny_tools.run(Action("SearchNodes", "qqzzxx vvkk"))
    assert none.status == "empty" and "No entity found" in none.text


# ----- SearchGraphPatterns -------------------------------------------------------------
def test_patterns_show_cvt_pairs_typed_literals_incoming_edges_and_hide_bookkeeping(tiny_tools):
    obs = tiny_tools.run(Action("SearchGraphPatterns", ADA))
    assert obs.text.splitlines() == [
        '(?e, people.person.date_of_birth, "1815-12-10"^^xsd:date)',
        '(?e, people.person.place_of_birth, "London")',
        '(?e, people.person.spouse_s -> people.marriage.from, "1835-07-08"^^xsd:date)',
        '(?e, people.person.spouse_s -> people.marriage.spouse, "William King-Noel")',
        '("Charles Babbage", base.science.colleague, ?e)',
    ]
    cvt = obs.patterns[3]
    assert cvt.predicates == ("people.person.spouse_s", "people.marriage.spouse")
    assert cvt.sample == Value("William King-Noel", "m.t_william")
    assert obs.patterns[0].sample == Value("1815-12-10", None, "date")


def test_patterns_rank_by_semantic_when_given(tiny_tools):
    obs = tiny_tools.run(Action("SearchGraphPatterns", ADA, semantic="birth date"))
    assert obs.patterns[0].relation_text() == "people.person.date_of_birth"
    assert obs.patterns[0].score >= obs.patterns[-1].score


def test_patterns_by_id_for_homonyms(tiny_tools):
    obs = tiny_tools.run(Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { ns:m.t_london } }"))
    # One line per relation; the sample is the smallest node (MIN), the same on any engine.
    assert obs.text == '("Ada Lovelace", people.person.place_of_birth, ?e)'
    assert [p.relation_text() for p in obs.patterns] == ["people.person.place_of_birth"]
    assert obs.patterns[0].direction == "in"


@pytest.mark.slow  # loads the sentence-embedding model (seconds on a busy CPU)
def test_real_cvt_pair_and_semantic_ranking_put_the_relevant_relation_first(real_tools):
    obs = real_tools.run(Action("SearchGraphPatterns", SWIFT, semantic="films she acted in"))
    assert obs.status == "ok"
    assert obs.text.splitlines()[0].startswith("(?e, film.actor.film -> film.performance.film, ")
    assert len(obs.patterns) == 10
    born = real_tools.run(Action("SearchGraphPatterns", OBAMA, semantic="where was he born"))
    assert born.patterns[0].relation_text() == "people.person.place_of_birth"
    assert born.text.splitlines()[0] == '(?e, people.person.place_of_birth, "Honolulu")'


def test_patterns_without_semantic_are_in_a_stable_order_and_say_how_many_more(real_tools):
    first = real_tools.run(Action("SearchGraphPatterns", OBAMA))
    again = real_tools.run(Action("SearchGraphPatterns", OBAMA))
    assert first.text == again.text
    assert "more relations; add semantic=" in first.text.splitlines()[-1]
    assert not any(
        "type.object" in p.relation_text() or "common." in p.relation_text() for p in first.patterns
    )


@pytest.mark.parametrize(
    "sparql",
    ['SELECT ?x WHERE { ?x ns:type.object.name "Ada Lovelace"@en }', "ASK { ?e ?p ?o }", "Ada Lovelace", ""],
)
def test_patterns_need_a_query_that_selects_e(tiny_tools, sparql: str):
    obs = tiny_tools.run(Action("SearchGraphPatterns", sparql))
    assert obs.is_error and 'starts with "SELECT ?e WHERE"' in obs.text


def test_patterns_for_an_entity_that_does_not_exist_are_empty_not_an_error(tiny_tools):
    obs = tiny_tools.run(
        Action("SearchGraphPatterns", 'SELECT ?e WHERE { ?e ns:type.object.name "Nobody"@en }')
    )
    assert obs.status == "empty" and "No entity matches ?e" in obs.text


# ----- ExecuteSPARQL -------------------------------------------------------------------
def test_execute_replaces_ids_by_names_and_deduplicates(real_tools):
    obs = real_tools.run(
        Action(
            "ExecuteSPARQL",
            "SELECT ?x WHERE { ns:m.0dl567 ns:film.actor.film ?c . ?c ns:film.performance.film ?x }",
        )
    )
    assert obs.status == "ok"
    assert sorted(v.name for v in obs.values) == ["The Lorax", "Valentine's Day"]
    assert obs.text in ('["The Lorax", "Valentine\'s Day"]', '["Valentine\'s Day", "The Lorax"]')
    assert "<http://rdf.freebase.com/ns/film.actor.film>" in obs.sparql  # normalised before running


def test_execute_renders_rows_of_several_variables_and_literals(tiny_tools):
    obs = tiny_tools.run(
        Action(
            "ExecuteSPARQL",
            'SELECT ?s ?d WHERE { ?e ns:type.object.name "Ada Lovelace"@en ; ns:people.person.spouse_s ?c . '
            "?c ns:people.marriage.spouse ?s ; ns:people.marriage.from ?d }",
        )
    )
    assert obs.text == '[("William King-Noel", "1835-07-08"^^xsd:date)]'
    assert obs.values == (Value("William King-Noel", "m.t_william"),)


def test_execute_ask_and_empty_results(tiny_tools):
    yes = tiny_tools.run(
        Action("ExecuteSPARQL", "ASK { ns:m.t_ada ns:people.person.place_of_birth ns:m.t_london }")
    )
    assert (yes.text, yes.values) == ("True", (Value("True"),))
    assert (
        tiny_tools.run(
            Action("ExecuteSPARQL", "ASK { ns:m.t_ada ns:people.person.place_of_birth ns:m.t_ada }")
        ).text
        == "False"
    )
    empty = tiny_tools.run(
        Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ns:people.person.place_of_birth ns:m.t_ada }")
    )
    assert empty.status == "empty" and empty.text.startswith("No results")


def test_a_huge_result_is_truncated_to_about_2000_characters(real_tools):
    obs = real_tools.run(Action("ExecuteSPARQL", "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"))  # 33 MB as N-Triples
    assert obs.status == "ok"
    assert len(obs.text) < 2100
    assert ", ...]" in obs.text and "distinct results; first" in obs.text


@pytest.mark.parametrize(
    ("sparql", "message"),
    [
        ("SELECT ?x WHERE { ?x ns:type.object.name ", "Error: "),
        ("INSERT DATA { ns:m.a ns:b.c.d ns:m.e }", "Error: update operations are not allowed"),
        ("DELETE WHERE { ?s ?p ?o }", "Error: update operations are not allowed"),
        ("SELECT ?x WHERE { SERVICE <http://example.org/sparql> { ?x ?p ?o } }", "Error: "),
        ("", "Error: ExecuteSPARQL needs"),
        ("what is the capital of France?", "Error: "),
    ],
)
def test_bad_queries_give_one_error_line(tiny_tools, sparql: str, message: str):
    obs = tiny_tools.run(Action("ExecuteSPARQL", sparql))
    assert obs.is_error and obs.text.startswith(message) and "\n" not in obs.text


def test_a_query_that_times_out_is_an_error_and_the_next_call_works(fbqa_kb):
    tools = Toolbox(fbqa_kb, ranker=LexicalRanker(), timeout_s=0.3)
    # ~2.5 s of work (a self-join over the store); the abandoned query finishes soon after.
    obs = tools.run(Action("ExecuteSPARQL", "SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?b ?q ?c2 }"))
    assert obs.is_error and "time limit" in obs.text and "\n" not in obs.text
    assert obs.elapsed_s < 2.0
    assert tools.run(Action("SearchNodes", "Taylor Swift")).entities[0].id == "m.0dl567"


# ----- SearchTypes and Done ------------------------------------------------------------
def test_search_types_ranks_types_sharing_the_query_words_first(real_tools):
    obs = real_tools.run(Action("SearchTypes", "film actor"))
    assert obs.types[0] == "film.actor"
    assert obs.text.splitlines()[0] == "film.actor"
    assert all("film" in t or "actor" in t for t in obs.types)
    assert len(obs.types) <= 10


def test_search_types_empty_and_no_match(tiny_tools):
    assert tiny_tools.run(Action("SearchTypes", "")).is_error
    assert tiny_tools.run(Action("SearchTypes", "spaceship")).status == "empty"
    assert tiny_tools.run(Action("SearchTypes", "people")).types == ("people.marriage", "people.person")


def test_done_and_every_observation_carries_its_elapsed_time(tiny_tools):
    done = tiny_tools.run(Action("Done"))
    assert (done.text, done.status) == ("Done", "ok")
    for tool in ("SearchNodes", "SearchTypes"):
        assert tiny_tools.run(Action(tool, "London")).elapsed_s > 0


# ----- never raises --------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(TOOL_NAMES), argument=st.text(max_size=80), semantic=st.text(max_size=20))
def test_any_text_gives_an_observation_never_an_exception(tiny_tools, tool, argument, semantic):
    obs = tiny_tools.run(Action(tool, argument, semantic if tool == "SearchGraphPatterns" else ""))
    assert isinstance(obs, Observation)
    assert obs.status in ("ok", "empty", "error")
    if obs.is_error:
        assert obs.text.startswith("Error: ") and "\n" not in obs.text


def test_relation_text_is_made_readable_for_the_embedding_model():
    assert readable("film.actor.film -> film.performance.film") == "film actor film, film performance film"
    assert readable("people.person.place_of_birth") == "people person place of birth"


# ----- flavour -------------------------------------------------------------------------
def test_entity_queries_go_by_name_when_unique_and_by_id_for_homonyms(tiny_tools, tiny_kb):
    from kb.flavour import FREEBASE

    hits = tiny_kb.search_names("London") + tiny_kb.search_names("Ada Lovelace")[:1]
    queries = FREEBASE.entity_queries(hits)
    assert queries["m.t_london"] == "SELECT ?e WHERE { VALUES ?e { ns:m.t_london } }"
    assert queries["m.t_ada"] == ADA
    assert tiny_tools.run(Action("SearchGraphPatterns", queries["m.t_london"])).patterns
    for query in queries.values():  # each one is a valid SearchGraphPatterns argument
        assert not tiny_tools.run(Action("SearchGraphPatterns", query)).is_error


def test_the_freebase_flavour_hides_bookkeeping_predicates_only():
    from kb.flavour import FREEBASE

    ns = FREEBASE.base
    hidden = [
        "type.object.name",
        "type.object.type",
        "common.topic.description",
        "common.topic.alias",
        "freebase.valuenotation.is_reviewed",
    ]
    assert all(FREEBASE.is_hidden_predicate(ns + p) for p in hidden)
    assert FREEBASE.is_hidden_predicate("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    assert not FREEBASE.is_hidden_predicate(ns + "film.actor.film")
    assert not FREEBASE.is_hidden_predicate(
        ns + "user.ktrueman.default_domain.international_organization.member_states"
    )
    assert (FREEBASE.entity_id(ns + "m.0abc"), FREEBASE.entity_iri("m.0abc")) == ("m.0abc", ns + "m.0abc")


@pytest.mark.slow  # loads the sentence-embedding model
def test_relation_vectors_persist_in_the_disk_cache(tmp_path):
    first = EmbeddingRanker(cache_dir=tmp_path)
    scores = first.rank(
        "place of birth", ["people.person.place_of_birth", "film.actor.film -> film.performance.film"]
    )
    assert scores[0] > scores[1]
    second = EmbeddingRanker(cache_dir=tmp_path)
    assert len(second) == 2  # both relation texts; the query phrase is not persisted


class _BrokenRanker:
    def rank(self, semantic, relation_texts):
        raise OSError("model files missing")


def test_a_ranker_that_cannot_load_falls_back_to_lexical_ranking(tiny_kb, caplog):
    tools = Toolbox(tiny_kb, ranker=_BrokenRanker())
    obs = tools.run(Action("SearchGraphPatterns", ADA, semantic="birth date"))
    assert obs.status == "ok" and obs.patterns[0].relation_text() == "people.person.date_of_birth"
    assert "ranking relations lexically" in caplog.text
    tools.warm_up()  # works with the fallback ranker too
