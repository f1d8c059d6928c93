"""The guided policy on a SPARQL endpoint: a real `oxigraph serve` holding the demo KB.

A remote KB has no name index, so the policy finds the question's entities with
SearchNodes through the tools (`SearchMentions`). Fast tests check the mentions and
the first proposals against the embedded store with a scorer double; the slow test
runs the real model's greedy single paths on both stores and gets the same answers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kb.relation_ranker import LexicalRanker
from kb.remote import RemoteKB
from kb.tools import Toolbox
from mcts.agents.policy_guided import GuidedPolicy, SearchMentions, mention_finder
from tests import oxigraph_server as servers
from tests.doubles import FakeModel, KeywordScorer, MemoScorer, greedy_path

demo_server = servers.demo_server

REPO = Path(__file__).resolve().parents[2]
# One-hop questions whose entity has no homonym: the stores rank homonyms differently
# (the embedded index by degree, the endpoint by name and id), which may fork a path.
QUESTION_IDS = ("demo:001", "demo:002", "demo:003", "demo:005", "demo:006")


def demo_records() -> list[dict]:
    lines = (REPO / "examples" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, filter(None, lines)) if r["id"] in QUESTION_IDS]


@pytest.fixture(scope="module")
def remote_tools(demo_server):
    # Without the endpoint's name index: these tests are about SearchMentions.
    return Toolbox(RemoteKB(demo_server.url, name_index=False), ranker=LexicalRanker())


def test_a_remote_kb_gets_mentions_from_searchnodes_and_an_embedded_one_from_its_index(
    remote_tools, demo_kb, demo_server
):
    assert isinstance(mention_finder(remote_tools), SearchMentions)
    assert mention_finder(Toolbox(demo_kb)) is demo_kb
    indexed = RemoteKB(demo_server.url)  # a small endpoint: its names are indexed here
    assert mention_finder(Toolbox(indexed)) is indexed


def test_the_endpoint_finds_the_entities_the_name_index_finds(remote_tools, demo_kb):
    remote = mention_finder(remote_tools)
    for question in (
        *(r["question"] for r in demo_records()),
        "Which Beatles albums were released before 1964?",  # "Beatles" names "The Beatles"
        "Who is Paul McCartney's most recent wife?",  # a possessive
        "Which Harry Potter novels by J. K. Rowling were first published after 2000?",  # initials
    ):
        want = {h.id for h in demo_kb.find_mentions(question, 10)}
        assert want <= {h.id for h in remote.find_mentions(question, 10)}, question


def test_no_mention_in_lower_case_words_or_a_down_endpoint(remote_tools):
    assert mention_finder(remote_tools).find_mentions("Which national office did he hold first?") == []
    down = Toolbox(RemoteKB(servers.closed_port_url(), retries=0), ranker=LexicalRanker())
    assert mention_finder(down).find_mentions("Where was Barack Obama born?") == []


def test_the_policy_proposes_the_question_entity_at_the_root_of_a_remote_kb(remote_tools):
    policy = GuidedPolicy(FakeModel(), remote_tools, scorer=KeywordScorer(), ranker=LexicalRanker())
    cands = policy.propose("Where was Barack Obama born?", [], 3, rng=random.Random(0), greedy=True)
    assert [c.action.render() for c in cands] == ['SearchNodes("Barack Obama")']


@pytest.mark.slow
def test_greedy_paths_give_the_same_answers_on_the_endpoint_and_the_embedded_store(demo_server, demo_kb):
    from mcts.agents.lm_scoring import LMContinuationScorer
    from mcts.agents.models import load_model

    model = load_model(None)
    scorer = MemoScorer(LMContinuationScorer(model))
    # A generous tool time limit: a loaded CI machine must not turn a query into an error.
    stores = {
        "embedded": Toolbox(demo_kb, timeout_s=60),
        "remote": Toolbox(RemoteKB(demo_server.url), timeout_s=60),
    }
    answers: dict[str, list[list[str]]] = {name: [] for name in stores}
    for name, tools in stores.items():
        policy = GuidedPolicy(model, tools, scorer=scorer)
        for record in demo_records():
            answer, history = greedy_path(policy, tools, record["question"], max_depth=3)
            assert history and history[0].action.tool == "SearchNodes", (name, record["question"])
            answers[name].append(sorted(v.name for v in answer))
    print(json.dumps(answers, indent=1))
    assert len(answers["remote"]) >= 5
    assert answers["remote"] == answers["embedded"]
    assert sum(bool(a) for a in answers["remote"]) >= 3  # not the same because both are empty
