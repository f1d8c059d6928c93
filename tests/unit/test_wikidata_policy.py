"""The guided policy enumerates Wikidata candidates on the Wikidata demo KB.

The language model is replaced by a deterministic scorer double (this file is about
the candidates, not the model's choice); the tools and the store are real. Every
candidate query is written in Wikidata's own terms (`wd:Q76 wdt:P19 ?x`, statement
paths `wd:Q76 p:P39 ?c1 . ?c1 pq:P580 ?x`), runs, and reads back for extension.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kb.actions import Action
from kb.flavour import WIKIDATA
from kb.relation_ranker import LexicalRanker
from mcts.agents.guided_state import read_state
from mcts.agents.lm_scoring import ContinuationScore
from mcts.agents.policy_guided import GuidedPolicy
from mcts.agents.query_builder import parse_query
from mcts.search.protocols import Usage
from mcts.search.steps import Step

Q = "When did Barack Obama start as President of the United States?"


class _LengthScorer:
    """Scorer double: shorter continuations score higher (no model)."""

    usage = Usage()

    def score(self, prompt, continuations: Sequence[str]) -> list[ContinuationScore]:
        return [ContinuationScore(-0.01 * len(c), len(c)) for c in continuations]


class _Model:
    class tokenizer:  # noqa: N801  (attribute read by the policy)
        chat_template = None


@pytest.fixture(scope="module")
def tools():
    from kb.spec import open_kb
    from kb.tools import Toolbox

    return Toolbox(open_kb("demo-wikidata"), ranker=LexicalRanker())


def walk(tools, actions: Sequence[Action]) -> list[Step]:
    return [Step("t", a, tools.run(a)) for a in actions]


def obama(tools) -> list[Step]:
    query = 'SELECT ?e WHERE { ?e rdfs:label "Barack Obama"@en }'
    return walk(
        tools, [Action("SearchNodes", "Barack Obama"), Action("SearchGraphPatterns", query, semantic=Q)]
    )


def test_the_policy_takes_the_flavour_of_its_tools(tools):
    assert GuidedPolicy(_Model(), tools, scorer=_LengthScorer(), ranker=LexicalRanker()).flavour is WIKIDATA


def test_hops_are_direct_claims_and_statement_paths_named_by_property_labels(tools):
    pol = GuidedPolicy(_Model(), tools, scorer=_LengthScorer(), ranker=LexicalRanker())
    opts = pol.options(Q, obama(tools))
    hops = {o.action.argument: o.thought for o in opts if o.kind == "hop"}
    start = "SELECT DISTINCT ?x WHERE { wd:Q76 p:P39 ?c1 . ?c1 pq:P580 ?x . FILTER(?x != wd:Q76) }"
    assert hops[start] == "Follow position held: start time from Barack Obama."
    assert any(q.startswith("SELECT DISTINCT ?x WHERE { wd:Q76 wdt:P") for q in hops)
    for query in hops:  # every candidate runs and reads back for extension
        assert tools.run(Action("ExecuteSPARQL", query)).status == "ok", query
        assert parse_query(query) is not None, query
    assert "2009-01-20T00:00:00Z" in tools.run(Action("ExecuteSPARQL", start)).text


def test_a_result_is_extended_and_its_patterns_explored_in_wikidata_terms(tools):
    pol = GuidedPolicy(_Model(), tools, scorer=_LengthScorer(), ranker=LexicalRanker())
    hist = obama(tools) + walk(
        tools, [Action("ExecuteSPARQL", "SELECT DISTINCT ?x WHERE { wd:Q76 wdt:P26 ?x . }")]
    )
    state = read_state(Q, hist, WIKIDATA)
    assert state.current is not None and state.current.entities() == {"Q76"}
    explore = next(o.action for o in pol.options(Q, hist) if o.kind == "answer_patterns")
    hist += walk(tools, [explore])
    assert hist[-1].observation.patterns
    extended = [o.action.argument for o in pol.options(Q, hist) if o.kind == "extend"]
    assert extended and all("wd:Q76 wdt:P26 ?y1" in q for q in extended)
    assert all(tools.run(Action("ExecuteSPARQL", q)).status != "error" for q in extended)


def test_homonyms_are_explored_by_q_id_and_read_back_to_their_entity(tools):
    hist = walk(tools, [Action("SearchNodes", "Paris")])
    pol = GuidedPolicy(_Model(), tools, scorer=_LengthScorer(), ranker=LexicalRanker())
    queries = [o.action.argument for o in pol.options("Which county is Paris, Texas in?", hist)]
    assert "SELECT ?e WHERE { VALUES ?e { wd:Qdemo_paris_texas } }" in queries or (
        "SELECT ?e WHERE { VALUES ?e { wd:Q90 } }" in queries
    )
    hist += walk(
        tools, [Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { wd:Qdemo_paris_texas } }")]
    )
    state = read_state("Which county is Paris, Texas in?", hist, WIKIDATA)
    assert "Qdemo_paris_texas" in state.entity_patterns


def test_a_where_answer_by_a_place_property_earns_the_done_bonus(tools):
    # Wikidata ids (wdt:P19) carry no place word; the property label ("place of birth") does.
    question = "Where was Barack Obama born?"
    pol = GuidedPolicy(_Model(), tools, scorer=_LengthScorer(), ranker=LexicalRanker())
    query = 'SELECT ?e WHERE { ?e rdfs:label "Barack Obama"@en }'
    seen = walk(
        tools, [Action("SearchNodes", "Barack Obama"), Action("SearchGraphPatterns", query, semantic="born")]
    )
    hist = seen + walk(tools, [Action("ExecuteSPARQL", "SELECT DISTINCT ?x WHERE { wd:Q76 wdt:P19 ?x . }")])
    state = read_state(question, hist, WIKIDATA)
    assert state.relation_words(state.current.relations()) == "place of birth"
    done = next(o for o in pol.options(question, hist) if o.kind == "done")
    assert done.prior == pol.priors.done_bonus > 0
    # An answer by a property that is not a place gets no bonus for a "where" question.
    hist = seen + walk(tools, [Action("ExecuteSPARQL", "SELECT DISTINCT ?x WHERE { wd:Q76 wdt:P102 ?x . }")])
    assert next(o for o in pol.options(question, hist) if o.kind == "done").prior == 0
