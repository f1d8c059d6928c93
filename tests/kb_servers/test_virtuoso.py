"""The remote path on a real Virtuoso (Debian's virtuoso-opensource 7.2) holding the real
Freebase subset in graph http://freebase.com, against the embedded store.

- The five tools give the same observations (elapsed time aside, the row order of a
  query without ORDER BY, which SPARQL leaves to the store, and which neighbour a
  SearchGraphPatterns line shows as its sample) for the topic entities
  of the first `PARITY_QUESTIONS` questions of ../shared/data/fbqa/dev.jsonl: SearchNodes on
  the topic name, SearchGraphPatterns from the entity with and without the question as
  `semantic`, the question's own SPARQL, SearchTypes on the question, Done.
- Entity search finds what users type (prefixes, a missing or extra letter, case,
  accents) both through the endpoint's name index and through `bif:contains` alone.
- Virtuoso's time limits come back as `QueryTimeout` / an `Error:` observation, and the
  next call works.
- Slow (a real model): greedy single paths with the shipped default give the same answers
  on both stores for `GUIDED_QUESTIONS` questions; Fast MCTS runs end to end on one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kb.actions import Action
from kb.base import QueryTimeout
from kb.flavour import sparql_string
from kb.observation import Observation
from kb.relation_ranker import LexicalRanker
from kb.remote import RemoteKB
from kb.sparql import guard_and_normalise
from kb.tools import Toolbox
from tests import virtuoso_server as virtuoso
from tests.oxigraph_server import DATA

fbqa_virtuoso = virtuoso.fbqa_virtuoso

PARITY_QUESTIONS = 24
# Entities whose SearchGraphPatterns may differ on Virtuoso (lost groups, see below): China, USA.
GROUPS_LOST = frozenset({"m.0d05w3", "m.09c7w0"})
GUIDED_QUESTIONS = 4
# A COUNT over a three-way join: minutes on this data (it ran past a 60 s
# MaxQueryExecutionTime when Virtuoso was not given a per-request timeout).
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?b . ?c ?r ?x }"
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"  # 3000^3 rows


def dev_records(n: int) -> list[dict]:
    lines = (DATA / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:n]]


def _same(obs: Observation, action: Action) -> Observation:
    """The observation without its timing and, for a query without ORDER BY, without its
    row order: SPARQL leaves that order to the store (Virtuoso returns the Lorax query's
    two films the other way round from pyoxigraph), so only the rows are compared."""
    obs = replace(obs, elapsed_s=0.0)
    if action.tool == "SearchGraphPatterns" and obs.patterns:
        # The sample of a pattern is MIN(?o): Virtuoso orders IRIs by its internal ids, not
        # by their text, so it may show another neighbour of the same relation.
        patterns = tuple(replace(p, sample=replace(p.sample, id=None, name="")) for p in obs.patterns)
        kinds = tuple(p.sample.datatype for p in obs.patterns)
        return replace(obs, text="", patterns=patterns, meta={"sample datatypes": kinds})
    if action.tool != "ExecuteSPARQL" or "ORDER BY" in action.argument.upper():
        return obs
    try:
        rows = json.loads(obs.text)
    except ValueError:
        return obs  # not a plain list (a table, a count, an error): compared as it is
    text = json.dumps(sorted(rows, key=repr), ensure_ascii=False) if isinstance(rows, list) else obs.text
    return replace(obs, text=text, values=tuple(sorted(obs.values, key=repr)))


@pytest.fixture(scope="module")
def both(fbqa_kb, fbqa_virtuoso) -> tuple[Toolbox, Toolbox]:
    ranker = LexicalRanker()  # the same ranker on both sides: this test is about the stores
    # A generous tool limit: two cores shared by the whole suite must not turn a query into an error.
    return (
        Toolbox(fbqa_kb, ranker=ranker, timeout_s=60),
        Toolbox(RemoteKB(fbqa_virtuoso.url, timeout_s=60), ranker=ranker, timeout_s=60),
    )


def question_actions(record: dict) -> list[Action]:
    actions = []
    for topic in record["topic_entities"]:
        by_id = f"SELECT ?e WHERE {{ VALUES ?e {{ ns:{topic['mid']} }} }}"
        by_name = f"SELECT ?e WHERE {{ ?e ns:type.object.name {sparql_string(topic['name'])}@en }}"
        actions += [
            Action("SearchNodes", topic["name"]),
            Action("SearchGraphPatterns", by_id, semantic=record["question"]),
            Action("SearchGraphPatterns", by_name),
        ]
    return actions + [
        Action("ExecuteSPARQL", record["kb_sparql"]),
        Action("SearchTypes", record["question"]),
        Action("Done"),
    ]


def test_the_subset_is_in_its_graph_and_the_default_graph_uri_selects_it(fbqa_virtuoso) -> None:
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    in_graph = RemoteKB(f"{fbqa_virtuoso.url}?default-graph-uri={virtuoso.GRAPH}").query(count)
    assert in_graph.rows[0][0].value == "237581"  # the lines of kb.nt.gz
    everything = int(RemoteKB(fbqa_virtuoso.url).query(count).rows[0][0].value)
    assert everything > 237581  # without it, Virtuoso's own system graphs are in the default graph


def test_the_five_tools_give_the_same_observations_on_real_questions(both) -> None:
    embedded, remote = both
    records = dev_records(PARITY_QUESTIONS)
    compared = 0
    for record in records:
        mids = {t["mid"] for t in record["topic_entities"]}
        for action in question_actions(record):
            mine, theirs = _same(embedded.run(action), action), _same(remote.run(action), action)
            where = (record["id"], action.render()[:120])
            if action.tool == "SearchGraphPatterns" and mids & GROUPS_LOST:
                # Virtuoso may drop relations of these entities: see the next test.
                assert not theirs.is_error and theirs.patterns, where
                continue
            assert theirs == mine, where
            compared += 1
    assert len(records) >= 20 and compared >= 20 * 6
    tools_seen = {a.tool for r in records for a in question_actions(r)}
    assert tools_seen == {"SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes", "Done"}


def test_virtuoso_may_drop_groups_of_a_min_over_mixed_values(fbqa_virtuoso, local_rows) -> None:
    """Known difference: Virtuoso 7.2.5 may lose `GROUP BY ?p ?q` groups of SearchGraphPatterns'
    two-hop (CVT) query when their MIN(?t) runs over IRIs and literals together (USA: 18 of
    30 groups in most runs here, all 30 in some; COUNT gives all 30 every time), so fewer
    relations may reach the ranking for such entities (GROUPS_LOST). What it returns is right:
    the groups it keeps are the embedded store's, with the same MIN."""
    name = "<http://rdf.freebase.com/ns/type.object.name>"
    body = (
        "WHERE { VALUES ?e { ns:m.09c7w0 } ?e ?p ?c . "
        f"FILTER(!isLiteral(?c) && NOT EXISTS {{ ?c {name} ?n }}) ?c ?q ?t . FILTER(?t != ?e) }} GROUP BY ?p ?q"
    )
    kb = RemoteKB(fbqa_virtuoso.url, name_index=False)
    want = set(local_rows(f"SELECT ?p ?q (MIN(?t) AS ?s) {body}"))
    assert len(want) == 30
    assert len(kb.query(f"SELECT ?p ?q (COUNT(*) AS ?s) {body}").rows) == 30
    got = kb.query(f"SELECT ?p ?q (MIN(?t) AS ?s) {body}").rows
    groups = {row[:2]: row[2] for row in want}
    assert got and all(row[:2] in groups for row in got)
    # Literal minima are the same; an IRI minimum is by Virtuoso's ids (the sample difference).
    literal = [row for row in got if row[2] is not None and row[2].kind == groups[row[:2]].kind == "literal"]
    assert all(row[2] == groups[row[:2]] for row in literal)


@pytest.fixture(scope="module")
def local_rows(fbqa_kb):
    return lambda sparql: fbqa_kb.query(guard_and_normalise(sparql).sparql).rows


@pytest.fixture(scope="module")
def indexed(fbqa_virtuoso) -> RemoteKB:
    return RemoteKB(fbqa_virtuoso.url)  # its name index is read once for the module


@pytest.mark.parametrize(
    "typed",
    ["tom hank", "Tom Hanks", "TOM HANKS", "tom hanks.", "Tom Hankss", "Tom Haks", "tom  hanks"],
)
def test_searchnodes_finds_tom_hanks_as_typed_with_and_without_the_name_index(
    fbqa_virtuoso, indexed, typed
) -> None:
    for kb in (indexed, RemoteKB(fbqa_virtuoso.url, name_index=False)):
        obs = Toolbox(kb, ranker=LexicalRanker()).run(Action("SearchNodes", typed))
        assert obs.entities and obs.entities[0].name == "Tom Hanks", (typed, kb.names is not None, obs.text)


def test_accents_and_a_letter_too_few_are_found_through_bif_contains_alone(fbqa_virtuoso) -> None:
    kb = RemoteKB(fbqa_virtuoso.url, name_index=False)
    assert kb.is_virtuoso() and "bif:contains" in kb.contains_query("tom hank")
    assert kb.search_names("quebec", 3)[0].name == "Québec"
    assert kb.search_names("Taylor Swit", 3)[0].name == "Taylor Swift"
    assert kb.search_names("barak obama", 3)[0].name == "Barack Obama"
    assert kb.search_names("the lorax", 3)[0].name == "The Lorax"  # "the": a short word, no wildcard


def test_the_endpoint_index_is_the_embedded_index(fbqa_kb, indexed) -> None:
    kb = indexed
    assert kb.names is not None and len(kb.names) == len(fbqa_kb.names)
    question = dev_records(1)[0]["question"]
    assert kb.find_mentions(question) == fbqa_kb.find_mentions(question)
    assert kb.degree_of("m.0dl567") == fbqa_kb.degree_of("m.0dl567") > 0


def test_a_query_past_the_deadline_is_stopped_by_virtuoso_and_reported(fbqa_virtuoso) -> None:
    kb = RemoteKB(fbqa_virtuoso.url, timeout_s=6, name_index=False)
    assert kb.is_virtuoso()  # from now on each request carries its own server-side limit
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match="partial results not shown"):
        kb.query(RUNAWAY)
    assert time.monotonic() - started < 6
    assert kb.query("ASK { ns:m.0dl567 ?p ?o }").boolean is True  # the server is free again


@pytest.fixture(scope="module")
def strict_virtuoso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[virtuoso.VirtuosoServer]:
    """A small store with MaxQueryExecutionTime = 1 s (the server's own limit)."""
    data = tmp_path_factory.mktemp("strict") / "small.nt"
    data.write_text("".join(f"<http://e/{i}> <http://p/{i % 7}> <http://e/{i + 1}> .\n" for i in range(3000)))
    yield from virtuoso.serving(data, query_timeout_s=1)


def test_max_query_execution_time_is_an_error_observation_and_the_search_goes_on(strict_virtuoso) -> None:
    tools = Toolbox(RemoteKB(strict_virtuoso.url, timeout_s=30, name_index=False), ranker=LexicalRanker())
    obs = tools.run(Action("ExecuteSPARQL", CROSS))
    assert obs.is_error and obs.text.startswith("Error:") and "\n" not in obs.text, obs.text
    assert "timed out" in obs.text or "time limit" in obs.text, obs.text
    assert tools.run(Action("ExecuteSPARQL", "ASK { <http://e/1> ?p ?o }")).text == "True"


# --- the agent on Virtuoso (slow: the bundled model) ---------------------------------------


def _record_answers(world, records: list[dict]) -> list[list[str]]:
    from mcts.search.loop import run_search
    from mcts.search.settings import Method, SearchSettings

    settings = SearchSettings(method=Method.SINGLE, max_depth=3)  # 1-hop: nodes, patterns, query
    answers = []
    for record in records:
        _search, result = run_search(
            record["question"], settings, policy=world.policy, scorer=world.scorer, tools=world.tools
        )
        answers.append(sorted(result.answer_names))
    return answers


@pytest.mark.slow
def test_guided_single_paths_answer_the_same_on_virtuoso_and_embedded(fbqa_dir: Path, fbqa_kb, fbqa_virtuoso):
    from mcts.agents.world import build_world
    from tests.doubles import MemoScorer

    records = [r for r in dev_records(60) if r.get("hops") == 1][:GUIDED_QUESTIONS]
    embedded = build_world(str(fbqa_dir / "kb.nt.gz"))  # the shipped default; models shared
    remote = build_world(fbqa_virtuoso.url)
    assert remote.policy.model is embedded.policy.model  # one copy of the weights
    # One remembered LM scorer for both: where the Virtuoso path reaches the very state the
    # embedded path reached, its scores are not computed twice (a diverging path is scored
    # afresh). The worlds are shared with other tests: their scorers are put back after.
    scorers = embedded.policy.scorer, remote.policy.scorer
    embedded.policy.scorer = remote.policy.scorer = MemoScorer(scorers[0])
    try:
        started = time.monotonic()
        want = _record_answers(embedded, records)
        middle = time.monotonic()
        got = _record_answers(remote, records)
        print(f"single paths: embedded {middle - started:.0f} s, Virtuoso {time.monotonic() - middle:.0f} s")
    finally:
        embedded.policy.scorer, remote.policy.scorer = scorers
    print(json.dumps({"embedded": want, "virtuoso": got}, indent=1))
    assert len(records) == GUIDED_QUESTIONS and got == want
    assert sum(bool(a) for a in got) >= GUIDED_QUESTIONS // 2  # not equal because both are empty


@pytest.mark.slow
def test_fast_mcts_runs_end_to_end_on_virtuoso(fbqa_virtuoso):
    from mcts.agents.world import build_world
    from mcts.search.loop import run_search
    from mcts.search.settings import Method, SearchSettings

    world = build_world(fbqa_virtuoso.url)
    record = next(r for r in dev_records(40) if r.get("hops") == 1)
    settings = SearchSettings(method=Method.FAST, rounds=1, k=2, max_depth=3, early_stop_terminals=1)
    search, result = run_search(
        record["question"], settings, policy=world.policy, scorer=world.scorer, tools=world.tools
    )
    assert result.stop_reason in ("budget", "enough_terminals", "exhausted"), result.detail
    assert result.nodes == len(search.tree) > 1 and result.cost.ig_forward_passes >= 1
    assert all(not n.step.observation.is_error for n in search.tree.nodes[1:] if n.step is not None)
