"""The guided policy: candidates enumerated from real tool observations, chosen by the LM.

Fast tests run the real tools on the tiny KB of conftest with a small scorer double
(the LM's likelihoods replaced by a deterministic function of the text); slow tests
run the real bundled model: the batched, prefix-cached scoring equals the naive
reference, and the model tells real candidates apart. Accuracy over the demo questions
is an evaluation (`python -m mcts eval --kb demo --methods single`, README "Policies");
tests/kb_servers/test_guided_remote.py runs greedy paths (`tests.doubles.greedy_path`) on a few of them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from kb.actions import Action
from kb.observation import GraphPattern, Observation, Value
from kb.relation_ranker import LexicalRanker
from mcts.agents.policy_guided import GuidedPolicy, Priors, softmax_sample
from mcts.agents.query_builder import (
    Triple,
    answer_pattern_query,
    constrain,
    counted,
    edge_path,
    extend,
    one_hop,
    parse_query,
    superlative,
)
from mcts.search.steps import Step
from tests.doubles import FakeModel, KeywordScorer


@pytest.fixture(scope="module")
def tools(tiny_kb):
    from kb.relation_ranker import LexicalRanker
    from kb.tools import Toolbox

    return Toolbox(tiny_kb, ranker=LexicalRanker())


def policy(kb, keywords=(), **kw) -> GuidedPolicy:
    kw.setdefault("ranker", LexicalRanker())
    return GuidedPolicy(FakeModel(), kb, scorer=KeywordScorer(keywords), **kw)


def walk(tools, actions: Sequence[Action]) -> list[Step]:
    return [Step("t", a, tools.run(a)) for a in actions]


def actions_of(opts) -> list[str]:
    return [o.action.render() for o in opts]


ADA_Q = "Where was Ada Lovelace born?"


def ada_patterns(tools) -> list[Step]:
    hist = walk(tools, [Action("SearchNodes", "Ada Lovelace")])
    query = 'SELECT ?e WHERE { ?e ns:type.object.name "Ada Lovelace"@en }'
    return hist + walk(tools, [Action("SearchGraphPatterns", query, semantic=ADA_Q)])


def babbage_colleagues(tools) -> list[Step]:
    """SearchNodes, SearchGraphPatterns and a one-hop query: Babbage's colleagues."""
    pattern_query = 'SELECT ?e WHERE { ?e ns:type.object.name "Charles Babbage"@en }'
    colleagues = "SELECT DISTINCT ?x WHERE { ns:m.t_babbage ns:base.science.colleague ?x . }"
    return walk(
        tools,
        [
            Action("SearchNodes", "Charles Babbage"),
            Action("SearchGraphPatterns", pattern_query),
            Action("ExecuteSPARQL", colleagues),
        ],
    )


# ----- the SPARQL the policy writes ---------------------------------------------------------
def test_query_builder_round_trips_every_form_it_writes():
    out = GraphPattern("out", ("people.person.place_of_birth",), Value("London", "m.t_london"))
    cvt = GraphPattern("out", ("people.person.spouse_s", "people.marriage.spouse"), Value("W", "m.w"))
    inc = GraphPattern("in", ("base.science.colleague",), Value("Charles Babbage", "m.t_babbage"))
    date = GraphPattern("out", ("people.person.date_of_birth",), Value("1815-12-10", None, "date"))
    q1 = one_hop("m.t_ada", cvt)
    q2 = extend(one_hop("m.t_ada", out), inc)
    for q in (one_hop("m.t_ada", out), q1, q2, superlative(q2, date, "DESC"), counted(q1)):
        assert parse_query(q.render()) == q
    assert q1.render() == (
        "SELECT DISTINCT ?x WHERE { ns:m.t_ada ns:people.person.spouse_s ?c1 . "
        "?c1 ns:people.marriage.spouse ?x . FILTER(?x != ns:m.t_ada) }"
    )
    assert Triple("ns:m.t_babbage", "ns:base.science.colleague", "?y1") not in q2.triples
    assert Triple("?x", "ns:base.science.colleague", "?y1") in q2.triples


def test_a_chain_query_reads_back_as_its_anchor_and_edges():
    """Chains are compared with training paths edge by edge; a CVT pattern is two edges,
    walked backwards when it points in, whatever order the pattern lists them in."""
    cvt_in = GraphPattern("in", ("film.performance.actor", "film.film.starring"), Value("F", "m.f"))
    born = GraphPattern("out", ("people.person.place_of_birth",), Value("London", "m.t_london"))
    chain = extend(one_hop("m.t_ada", cvt_in), born)
    assert parse_query(chain.render()) == chain
    assert edge_path(parse_query(chain.render())) == (
        "m.t_ada",
        (
            ("in", "film.film.starring"),
            ("in", "film.performance.actor"),
            ("out", "people.person.place_of_birth"),
        ),
    )
    # Not a chain: a second entity, a count, a superlative.
    assert edge_path(constrain(chain, "m.t_babbage", born)) is None
    assert edge_path(counted(chain)) is None
    date = GraphPattern("out", ("people.person.date_of_birth",), Value("1815-12-10", None, "date"))
    assert edge_path(superlative(chain, date, "DESC")) is None


def test_parse_query_refuses_sparql_in_other_forms():
    assert parse_query("SELECT ?name WHERE { ?x ns:type.object.name ?name }") is None
    assert parse_query("ASK { ns:m.a ns:b.c.d ns:m.e }") is None
    assert parse_query("not sparql") is None
    assert parse_query('SELECT ?x WHERE { ?x ns:type.object.name "A b"@en . }') is None


def test_built_queries_run_on_the_real_store(tools):
    hop = one_hop(
        "m.t_ada", GraphPattern("out", ("people.person.spouse_s", "people.marriage.spouse"), Value("x"))
    )
    obs = tools.run(Action("ExecuteSPARQL", hop.render()))
    assert [v.name for v in obs.values] == ["William King-Noel"]
    colleague = one_hop("m.t_ada", GraphPattern("in", ("base.science.colleague",), Value("x")))
    born = GraphPattern("out", ("people.person.place_of_birth",), Value("x"))
    obs = tools.run(Action("ExecuteSPARQL", extend(colleague, born).render()))
    assert [v.name for v in obs.values] == ["London"]
    obs = tools.run(Action("SearchGraphPatterns", answer_pattern_query(colleague)))
    assert any(p.predicates == ("people.person.place_of_birth",) for p in obs.patterns)


# ----- candidates enumerated from the state --------------------------------------------------
def test_first_step_searches_the_entities_named_in_the_question(tiny_kb):
    opts = policy(tiny_kb).options(ADA_Q, [])
    assert actions_of(opts) == ['SearchNodes("Ada Lovelace")']
    assert opts[0].thought == 'Find the entity "Ada Lovelace" in the knowledge base.'


def test_relation_phrase_drops_entity_names_and_filler_but_keeps_question_words():
    from mcts.agents.guided_options import relation_phrase

    assert relation_phrase("Where was Barack Obama born?", ["Barack Obama"]) == "Where born"
    assert relation_phrase("When was Barack Obama born?", ["barack obama"]) == "When born"
    assert relation_phrase("Who directed Inception?", ["Inception"]) == "Who directed"
    assert relation_phrase("Inception?", ["Inception"]) == "Inception?"  # nothing left: fall back
    # Common nouns the name index also holds are relation words here, not entity names.
    assert relation_phrase("What is the capital of Canada?", ["capital", "Canada"]) == "capital"
    assert relation_phrase(
        "Which political party is Joe Biden a member of?", ["political party", "Joe Biden"]
    ) == ("political party member")


def test_entity_spans_carry_where_and_how_the_question_writes_them(fbqa_kb):
    from mcts.agents.guided_options import span_cues

    cues = span_cues("France", 'Which country borders France and sang "Hey Jude"?')
    assert cues == {"span_position": pytest.approx(3 / 7), "span_proper": 1.0, "span_quoted": 0.0}
    assert span_cues("Hey Jude", 'Which country borders France and sang "Hey Jude"?')["span_quoted"] == 1.0
    assert span_cues("country", "country music")["span_proper"] == 0.0  # the first word says nothing
    assert span_cues("Kingdom of France", "Who ruled France?") == {"span_alias": 1.0}
    # The options of the first step: the better-connected country outweighs the music genre.
    q = "What country borders France and contains East Flanders?"
    opts = policy(fbqa_kb, learned_features=True).options(q, [])
    feats = {o.action.argument: dict(o.features) for o in opts}
    assert feats["France"]["popularity"] > feats["country"]["popularity"] > 0
    assert feats["Kingdom of France"]["span_alias"] == 1.0
    # The hand-set policy weighs no popularity, so it does not look it up.
    assert all("popularity" not in dict(o.features) for o in policy(fbqa_kb).options(q, []))


def test_the_first_search_reads_what_each_span_could_answer(fbqa_kb):
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox
    from mcts.agents.option_ranker import OptionRanker

    fb_tools = Toolbox(fbqa_kb, ranker=default_ranker())
    q = "What religion practiced in Afghanistan has a sacred site in Jesusalem?"
    collecting = policy(fb_tools, ranker=default_ranker(), learned_features=True, relation_fit=True)
    fit = {o.action.argument: dict(o.features).get("relation_fit", 0.0) for o in collecting.options(q, [])}
    # A country's relations read as "religion practiced"; Jerusalem's and the class's less.
    assert len(fit) >= 2 and fit["Afghanistan"] == max(fit.values()) > 0
    # Once an entity is found the feature is gone: it weighs the first choice only.
    after = collecting.options(q, walk(fb_tools, [Action("SearchNodes", "Afghanistan")]))
    assert after and all("relation_fit" not in dict(o.features) for o in after)
    # Not read unless asked for, or weighed by a trained ranker: it costs lookups.
    assert all(
        "relation_fit" not in dict(o.features) for o in policy(fb_tools, learned_features=True).options(q, [])
    )
    no_weight = OptionRanker.from_priors(Priors())
    plain = policy(fb_tools, ranker=default_ranker(), option_ranker=no_weight).options(q, [])
    assert plain and all("relation_fit" not in dict(o.features) for o in plain)
    weighed = OptionRanker({**no_weight.weights, "relation_fit": 1.0})
    looked = policy(fb_tools, ranker=default_ranker(), option_ranker=weighed).options(q, [])
    assert {o.action.argument: dict(o.features).get("relation_fit", 0.0) for o in looked} == fit


def test_a_failed_lookup_counts_as_no_relations_and_the_other_spans_are_still_read():
    from kb.base import QueryTimeout
    from kb.observation import EntityHit
    from mcts.agents.policy_guided import span_relation_fit

    q = "What religion is practiced in Afghanistan?"
    mentions = [EntityHit("m.afg", "Afghanistan", "country"), EntityHit("m.rel", "religion", "")]

    def around(entity_id: str) -> list[GraphPattern]:
        if entity_id == "m.rel":
            raise QueryTimeout("too slow")
        return [GraphPattern("out", ("location.statistical_region.religions",), Value("Islam", "m.isl"))]

    fits = span_relation_fit(q, ["Afghanistan", "religion"], mentions, around, lambda t, o: [0.5] * len(o))
    assert fits == {"Afghanistan": 0.5, "religion": 0.0}


def test_pattern_options_say_whether_they_point_in_and_go_through_a_cvt(tiny_kb, tools):
    opts = policy(tiny_kb).options(ADA_Q, ada_patterns(tools))
    shapes = {o.action.argument: dict(o.features) for o in opts if o.kind == "hop"}
    birth = "SELECT DISTINCT ?x WHERE { ns:m.t_ada ns:people.person.place_of_birth ?x . }"
    colleague = "SELECT DISTINCT ?x WHERE { ?x ns:base.science.colleague ns:m.t_ada . }"
    assert "inverse" not in shapes[birth] and "cvt" not in shapes[birth]
    assert shapes[colleague]["inverse"] == 1.0
    assert any(f.get("cvt") == 1.0 for f in shapes.values())


def test_a_pattern_whose_sample_reads_as_what_is_asked_fits_better(fbqa_kb):
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox

    fb_tools = Toolbox(fbqa_kb, ranker=default_ranker())
    q = "What language spoken in Canada is the language of Daedalus?"
    guided = policy(fbqa_kb, ranker=default_ranker(), learned_features=True)
    hist = walk(fb_tools, [Action("SearchNodes", "Canada")])
    explore = next(o.action for o in guided.options(q, hist) if o.kind == "entity_patterns")
    hops = [o for o in guided.options(q, hist + walk(fb_tools, [explore])) if o.kind == "hop"]
    fit = {o.thought: dict(o.features)["sample_fit"] for o in hops}
    languages = fit["Follow country languages spoken from Canada."]
    assert languages > fit["Follow person nationality from Canada."] + 0.2
    assert languages == max(fit.values())


def test_homonyms_each_get_their_own_pattern_search_by_id(tiny_kb, tools):
    q = "Who was born in London?"
    hist = walk(tools, [Action("SearchNodes", "London")])
    opts = policy(tiny_kb).options(q, hist)
    sgp = [o for o in opts if o.action.tool == "SearchGraphPatterns"]
    assert {o.action.argument for o in sgp} == {
        "SELECT ?e WHERE { VALUES ?e { ns:m.t_london } }",
        "SELECT ?e WHERE { VALUES ?e { ns:m.t_london_on } }",
    }
    # A relation phrase, not the question itself (which would leak into every cleaned history).
    assert all(o.action.semantic == "Who born" for o in sgp)
    assert any("city in Ontario" in o.thought for o in sgp)


def test_patterns_give_one_hop_queries_in_both_directions_and_through_cvts(tiny_kb, tools):
    opts = policy(tiny_kb).options(ADA_Q, ada_patterns(tools))
    queries = {o.action.argument for o in opts if o.action.tool == "ExecuteSPARQL"}
    assert "SELECT DISTINCT ?x WHERE { ns:m.t_ada ns:people.person.place_of_birth ?x . }" in queries
    assert "SELECT DISTINCT ?x WHERE { ?x ns:base.science.colleague ns:m.t_ada . }" in queries
    assert (
        "SELECT DISTINCT ?x WHERE { ns:m.t_ada ns:people.person.spouse_s ?c1 . "
        "?c1 ns:people.marriage.spouse ?x . FILTER(?x != ns:m.t_ada) }" in queries
    )
    assert not any(o.action.tool == "Done" for o in opts)  # nothing answered yet


def test_a_result_brings_done_extension_and_count(tiny_kb, tools):
    hist = ada_patterns(tools)
    colleague = "SELECT DISTINCT ?x WHERE { ?x ns:base.science.colleague ns:m.t_ada . }"
    hist += walk(tools, [Action("ExecuteSPARQL", colleague)])
    q = "Where was Ada Lovelace's colleague born?"
    opts = policy(tiny_kb).options(q, hist)
    kinds = {o.kind for o in opts}
    assert {"done", "answer_patterns", "count"} <= kinds
    done = next(o for o in opts if o.kind == "done")
    assert done.thought == "The answer is Charles Babbage."
    follow = next(o for o in opts if o.kind == "answer_patterns").action
    hist += walk(tools, [follow])
    opts = policy(tiny_kb).options(q, hist)
    extended = [o.action.argument for o in opts if o.kind == "extend"]
    born = next(a for a in extended if "place_of_birth" in a)
    assert [v.name for v in tools.run(Action("ExecuteSPARQL", born)).values] == ["London"]
    done = next(o for o in opts if o.kind == "done")  # the answers so far may still be final...
    assert done.prior == 0.0  # ...but Done earns its bonus only right after a result


def test_date_patterns_of_the_answers_give_superlatives(tiny_kb, tools):
    hist = babbage_colleagues(tools)
    hist += walk(
        tools, [Action("SearchGraphPatterns", answer_pattern_query(parse_query(hist[-1].action.argument)))]
    )
    opts = policy(tiny_kb).options("Which colleague of Babbage was born last?", hist)
    sup = [o for o in opts if o.kind == "superlative"]
    assert {o.action.argument.split("ORDER BY ")[1] for o in sup} == {"DESC(?v1) LIMIT 1", "ASC(?v1) LIMIT 1"}
    obs = tools.run(sup[0].action)
    assert [v.name for v in obs.values] == ["Ada Lovelace"]


def test_a_second_entity_constrains_the_current_query(tiny_kb, tools):
    q = "Which colleague of Charles Babbage was born in London?"
    hist = babbage_colleagues(tools)
    pol = policy(tiny_kb)
    assert 'SearchNodes("London")' in actions_of(pol.options(q, hist))
    hist += walk(
        tools,
        [
            Action("SearchNodes", "London"),
            Action("SearchGraphPatterns", "SELECT ?e WHERE { VALUES ?e { ns:m.t_london } }"),
        ],
    )
    opts = [o for o in pol.options(q, hist) if o.kind == "constrain"]
    query = next(o.action.argument for o in opts if "place_of_birth" in o.action.argument)
    assert query == (
        "SELECT DISTINCT ?x WHERE { ns:m.t_babbage ns:base.science.colleague ?x . "
        "?x ns:people.person.place_of_birth ns:m.t_london . }"
    )
    assert [v.name for v in tools.run(Action("ExecuteSPARQL", query)).values] == ["Ada Lovelace"]


def test_homonyms_are_told_apart_by_their_descriptions(tiny_kb, tools):
    q = "Which people were born in London, Ontario?"
    opts = policy(tiny_kb).options(q, walk(tools, [Action("SearchNodes", "London")]))
    prior = {o.action.argument: o.prior for o in opts if o.kind == "entity_patterns"}
    assert (
        prior["SELECT ?e WHERE { VALUES ?e { ns:m.t_london_on } }"]
        > prior["SELECT ?e WHERE { VALUES ?e { ns:m.t_london } }"]
    )


def test_the_question_word_favours_values_of_the_right_type(tiny_kb, tools):
    hist = ada_patterns(tools)
    for q, good, bad in (
        ("When was Ada Lovelace born?", "date_of_birth", "place_of_birth"),
        ("Where was Ada Lovelace born?", "place_of_birth", "date_of_birth"),
    ):
        prior = {o.action.argument: o.prior for o in policy(tiny_kb).options(q, hist) if o.kind == "hop"}
        assert max(v for k, v in prior.items() if good in k) > max(v for k, v in prior.items() if bad in k)


def test_numbers_in_the_question_give_comparisons(tiny_kb, tools):
    q = "Which colleague of Charles Babbage was born before 1820?"
    hist = babbage_colleagues(tools)
    hop = hist[-1].action.argument
    opts = policy(tiny_kb).options(q, hist)
    assert next(o for o in opts if o.kind == "answer_patterns").prior > 0  # refine before stopping
    assert next(o for o in opts if o.kind == "done").prior == 0.0
    hist += walk(tools, [Action("SearchGraphPatterns", answer_pattern_query(parse_query(hop)), semantic=q)])
    compare = {o.thought: o for o in policy(tiny_kb).options(q, hist) if o.kind == "compare"}
    before = compare["Keep the answers whose person date of birth is before 1820."]
    assert before.prior > compare["Keep the answers whose person date of birth is after 1820."].prior
    assert "FILTER(YEAR(?v1) < 1820)" in before.action.argument
    assert [v.name for v in tools.run(before.action).values] == ["Ada Lovelace"]


def test_a_stored_number_answers_how_many_without_a_count(tiny_kb):
    q = "How many episodes of Show were made?"
    query = "SELECT DISTINCT ?x WHERE { ns:m.show ns:tv.tv_program.number_of_episodes ?x . }"
    hist = [
        Step("t", Action("SearchNodes", "Show"), Observation("x")),
        Step("t", Action("SearchTypes", "show"), Observation("x")),
        Step(
            "t", Action("ExecuteSPARQL", query), Observation("[62]", values=(Value("62", None, "integer"),))
        ),
    ]
    opts = policy(tiny_kb).options(q, hist)
    assert next(o for o in opts if o.kind == "done").prior > 0
    assert next(o for o in opts if o.kind == "count").prior < 0


def test_steps_already_taken_are_never_proposed_again(tiny_kb, tools):
    hist = ada_patterns(tools)
    hop = "SELECT DISTINCT ?x WHERE { ns:m.t_ada ns:people.person.place_of_birth ?x . }"
    hist += walk(tools, [Action("ExecuteSPARQL", hop)])
    taken = {s.action.render() for s in hist}
    assert not taken & set(actions_of(policy(tiny_kb).options(ADA_Q, hist)))


def test_candidate_count_is_capped(tiny_kb, tools):
    assert len(policy(tiny_kb, max_candidates=3).options(ADA_Q, ada_patterns(tools))) == 3


# ----- choosing among candidates -------------------------------------------------------------
def test_greedy_takes_the_top_scores_and_the_lm_score_decides(tiny_kb, tools):
    hist = ada_patterns(tools)
    no_prior = Priors(similarity=0.0, answer_type=0.0)
    for word, relation in (("place of birth", "place_of_birth"), ("marriage spouse", "spouse_s")):
        cands = policy(tiny_kb, [word], priors=no_prior).propose(
            ADA_Q, hist, 2, rng=random.Random(0), greedy=True
        )
        assert relation in cands[0].action.argument
        assert cands[0].policy_score >= cands[1].policy_score
        assert cands[0].raw_text.startswith("Thought: Follow")


def test_sampling_is_reproducible_distinct_and_seed_dependent(tiny_kb, tools):
    hist = ada_patterns(tools)
    pol = policy(tiny_kb, temperature=5.0)
    first = [c.key() for c in pol.propose(ADA_Q, hist, 4, rng=random.Random(7))]
    again = [c.key() for c in pol.propose(ADA_Q, hist, 4, rng=random.Random(7))]
    assert first == again and len(set(first)) == 4
    others = {tuple(c.key() for c in pol.propose(ADA_Q, hist, 4, rng=random.Random(s))) for s in range(8)}
    assert len(others) > 1


def test_softmax_sampling_follows_the_scores():
    rng = random.Random(0)
    counts = [0, 0, 0]
    for _ in range(3000):
        counts[softmax_sample([0.0, -1.0, -2.0], 1, 1.0, rng)[0]] += 1
    # softmax([0, -1, -2]) = 0.665, 0.245, 0.090
    assert abs(counts[0] / 3000 - 0.665) < 0.03 and abs(counts[2] / 3000 - 0.090) < 0.02


def test_usage_counts_propose_calls_and_passes(tiny_kb, tools):
    pol = policy(tiny_kb)
    pol.propose(ADA_Q, [], 1, rng=random.Random(0))
    assert pol.usage.calls == 1 and pol.usage.candidate_passes == 1


def test_a_node_asked_twice_is_scored_once_and_a_changed_ranker_scores_again(tiny_kb, tools):
    pol = policy(tiny_kb, temperature=5.0)
    hist = ada_patterns(tools)
    sampled = pol.propose(ADA_Q, hist, 3, rng=random.Random(1))
    top = pol.propose(ADA_Q, hist, 1, rng=random.Random(1), greedy=True)
    assert pol.usage.candidate_passes == 1 and pol.usage.calls == 1
    assert top[0].policy_score == max(
        c.policy_score for c in policy(tiny_kb).propose(ADA_Q, hist, 99, rng=random.Random(0), greedy=True)
    )
    assert {c.key() for c in sampled} == {c.key() for c in pol.propose(ADA_Q, hist, 3, rng=random.Random(1))}
    pol.propose(ADA_Q, hist[:1], 1, rng=random.Random(1))  # another node
    pol.priors = Priors(similarity=0.0)  # another configuration at the same node
    pol.propose(ADA_Q, hist[:1], 1, rng=random.Random(1))
    assert pol.usage.candidate_passes == 3


def test_an_error_observation_is_a_state_like_any_other(tiny_kb, tools):
    hist = ada_patterns(tools) + [
        Step("t", Action("ExecuteSPARQL", "SELECT nonsense"), Observation.error("bad"))
    ]
    opts = policy(tiny_kb).options(ADA_Q, hist)
    assert opts and not any(o.kind == "done" for o in opts)


def test_token_trie_runs_shared_prefixes_once_and_never_a_last_token():
    from mcts.agents.lm_scoring import TokenTrie

    trie = TokenTrie([[1, 2, 3], [1, 2, 4, 5], [1, 6], [7]])
    assert [[trie.token[n] for n in path] for path in trie.paths] == [[1, 2, 3], [1, 2, 4, 5], [1, 6], [7]]
    assert [trie.token[n] for n in trie.run] == [1, 2, 4]  # 3, 5, 6, 7 end a candidate
    assert [trie.depth[n] for n in trie.run] == [0, 1, 2]
    assert trie.ancestry() == [[True, False, False], [True, True, False], [True, True, True]]


# ----- the real model ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    from mcts.agents.models import load_model

    return load_model(None)


@pytest.fixture(scope="module")
def naive_reference(model):
    """The naive log-probs of a continuation, remembered: both scoring paths and the
    repeated prompts compare with the same references, each computed once."""
    from mcts.agents.lm_scoring import naive_continuation_logprobs

    memo = {}

    def reference(segments, continuation):
        key = (tuple(segments), continuation)
        if key not in memo:
            memo[key] = naive_continuation_logprobs(model, segments, continuation)
        return memo[key]

    return reference


@pytest.mark.slow
# Both scoring paths: packed (the default, every candidate in one row on the prompt's cache)
# and padded (a batch of rows); bench/demo_speed.py compares their speed.
@pytest.mark.parametrize("packed", [True, False], ids=["packed", "padded"])
def test_cached_batched_scores_equal_the_naive_reference(model, naive_reference, packed, monkeypatch):
    from mcts.agents import lm_scoring
    from mcts.agents.lm_scoring import LMContinuationScorer

    monkeypatch.setattr(lm_scoring, "PACKED_TOKENS", 24)  # several packed passes, as with many candidates
    scorer = LMContinuationScorer(model, batch_size=2, packed=packed)
    segments = ["You answer questions.\n", "Q: Who wrote Nineteen Eighty-Four?\n"]
    conts = [
        "Thought: Find the entity.\nAction: SearchNodes(",
        "Thought: Find the entity.\nAction: SearchTypes(",  # shares all but its last tokens
        "Thought: Done.",
        "!",  # one token: scored by the prompt's next-token distribution alone
        "Thought: Look at the relations of George Orwell (English novelist).\nAction: SearchGraphPatterns(",
    ]
    fast = scorer.score(segments, conts)
    longer = scorer.score([*segments, "Thought: x\nObservation: y\n"], conts)  # reuses the cached prefix
    again = scorer.score(segments, conts)  # exact cache hit
    for seg, got in (
        (segments, fast),
        (segments, again),
        ([*segments, "Thought: x\nObservation: y\n"], longer),
    ):
        for cont, g in zip(conts, got, strict=True):
            ref = naive_reference(seg, cont)
            assert g.tokens == ref.tokens
            assert abs(g.mean_logprob - ref.mean_logprob) < 1e-4


@pytest.mark.slow
def test_real_model_chooses_among_real_candidates(model, demo_kb):
    from kb.tools import Toolbox

    tools = Toolbox(demo_kb)
    pol = GuidedPolicy(model, demo_kb)
    q = "Who directed Inception?"
    hist = walk(tools, [Action("SearchNodes", "Inception")])
    opts = pol.options(q, hist)
    lm = pol.lm_scores(q, hist, opts)
    assert len(set(lm)) == len(lm)  # the model tells the candidates apart
    cands = pol.propose(q, hist, 3, rng=random.Random(0))
    assert len({c.key() for c in cands}) == len(cands) >= 1
    assert all(c.action is not None and c.policy_score is not None for c in cands)
    assert cands == pol.propose(q, hist, 3, rng=random.Random(0))
    # The second call reused the node's scores; a fresh policy scoring it anew agrees.
    assert cands == GuidedPolicy(model, demo_kb).propose(q, hist, 3, rng=random.Random(0))
