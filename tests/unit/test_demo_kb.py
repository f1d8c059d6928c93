"""The bundled demo KB (examples/demo_kb.ttl) and its questions (examples/questions.jsonl).

Loads the Turtle file into a real pyoxigraph store and checks its Freebase shape (names,
types, nameless CVT nodes, homonyms), then runs every question's SPARQL on it and
compares the result with the recorded answers. Knows nothing about the kb/ package:
it checks the data files themselves.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.question_schema import COMPOSITIONALITY_TYPES, QUESTION_FIELDS

ROOT = Path(__file__).resolve().parents[2]
KB_PATH = ROOT / "examples" / "demo_kb.ttl"
QUESTIONS_PATH = ROOT / "examples" / "questions.jsonl"
FBQA_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "fbqa" / "dev.jsonl"

NS = "http://rdf.freebase.com/ns/"
NAME = NS + "type.object.name"
TYPE = NS + "type.object.type"
DESCRIPTION = NS + "common.topic.description"
SCHEMA_PREDICATES = {NAME, TYPE, DESCRIPTION, NS + "common.topic.alias"}


@pytest.fixture(scope="module")
def store():
    import pyoxigraph as ox

    st = ox.Store()
    st.bulk_load(path=str(KB_PATH), format=ox.RdfFormat.TURTLE)
    return st


@pytest.fixture(scope="module")
def subjects(store):
    """subject IRI -> {predicate IRI: [object terms]}"""
    out: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for quad in store:
        out[quad.subject.value][quad.predicate.value].append(quad.object)
    return out


def _load_questions() -> list[dict]:
    return [
        json.loads(line) for line in QUESTIONS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


QUESTIONS = _load_questions()


@pytest.fixture(scope="module")
def questions():
    return QUESTIONS


def _answer_key(term) -> str:
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        assert term.value.startswith(NS), term
        return term.value[len(NS) :]
    return term.value


def _recorded_keys(answers: list[dict]) -> list[str]:
    return sorted(a["mid"] if "mid" in a else a["literal"] for a in answers)


_NS_NAME = re.compile(r"\bns:([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)")


def _expand_ns_names(query: str) -> str:
    # pyoxigraph's SPARQL parser rejects ns:a.b.c prefixed names; full IRIs always parse.
    return _NS_NAME.sub(lambda m: f"<{NS}{m.group(1)}>", query)


def test_demo_kb_loads_with_a_triple_count_in_budget(store):
    assert 500 <= len(store) <= 3000


def test_every_named_entity_has_a_type(subjects):
    untyped = [s for s, preds in subjects.items() if NAME in preds and TYPE not in preds]
    assert untyped == []


def test_every_cvt_node_is_nameless_typed_and_linked(subjects):
    cvts = [s for s in subjects if s.startswith(NS + "m.demo_cvt_")]
    assert len(cvts) >= 50
    for s in cvts:
        preds = subjects[s]
        assert NAME not in preds, s
        assert TYPE in preds, s
        assert len([p for p in preds if p not in SCHEMA_PREDICATES]) >= 2, s


def test_every_nameless_subject_is_a_cvt(subjects):
    nameless = [s for s, preds in subjects.items() if NAME not in preds]
    assert all(s.startswith(NS + "m.demo_cvt_") for s in nameless)


def test_every_linked_entity_exists(subjects):
    import pyoxigraph as ox

    missing = {
        o.value
        for preds in subjects.values()
        for p, objs in preds.items()
        if p != TYPE
        for o in objs
        if isinstance(o, ox.NamedNode) and o.value not in subjects
    }
    assert missing == set()


def test_most_named_entities_have_a_description_and_some_do_not(subjects):
    named = [s for s, preds in subjects.items() if NAME in preds]
    described = [s for s in named if DESCRIPTION in subjects[s]]
    assert 150 <= len(named) <= 400
    assert len(described) >= 0.7 * len(named)
    assert len(described) < len(named)


def test_kb_uses_many_relations_and_typed_literals(store):
    predicates = {q.predicate.value for q in store}
    datatypes = {
        q.object.datatype.value for q in store if hasattr(q.object, "datatype") and q.object.language is None
    }
    assert len(predicates - SCHEMA_PREDICATES) >= 40
    assert "http://www.w3.org/2001/XMLSchema#date" in datatypes
    assert "http://www.w3.org/2001/XMLSchema#integer" in datatypes


def test_homonyms_share_a_name_and_differ_by_description(subjects):
    by_name: dict[str, list[str]] = defaultdict(list)
    for s, preds in subjects.items():
        for n in preds.get(NAME, []):
            by_name[n.value].append(s)
    homonyms = {}
    for name, ents in by_name.items():
        descriptions = {subjects[e][DESCRIPTION][0].value for e in ents if DESCRIPTION in subjects[e]}
        if len(ents) >= 2 and len(descriptions) == len(ents):
            homonyms[name] = ents
    assert len(homonyms) >= 2
    # homonyms the questions rely on
    assert {"Chris Evans", "Paris", "Michael Jordan"} <= set(homonyms)


def test_question_fields_match_the_fbqa_field_set(questions):
    for q in questions:
        assert set(q) == QUESTION_FIELDS, q["id"]


def test_question_field_set_is_the_one_dev_jsonl_uses():
    if not FBQA_DEV.exists():
        pytest.skip(f"shared data not found at {FBQA_DEV}")
    with FBQA_DEV.open(encoding="utf-8") as fh:
        first = json.loads(fh.readline())
    assert set(first) == QUESTION_FIELDS


def test_questions_cover_every_compositionality_type_and_a_homonym(questions):
    assert len(questions) >= 15
    kinds = Counter(q["meta"]["compositionality_type"] for q in questions)
    assert set(kinds) == COMPOSITIONALITY_TYPES
    assert any(q["meta"].get("homonym") for q in questions)


def test_question_ids_are_unique_demo_ids(questions):
    ids = [q["id"] for q in questions]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"demo:\d{3}", i) for i in ids)
    assert all(q["source"] == "demo" for q in questions)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_kb_sparql_returns_exactly_the_recorded_answers(store, q):
    rows = list(store.query(q["kb_sparql"]))
    got = sorted(_answer_key(row[0]) for row in rows)
    assert got == _recorded_keys(q["kb_answers"]), q["id"]
    assert got == _recorded_keys(q["gold_answers"]), q["id"]


def test_gold_sparql_in_virtuoso_style_gives_the_gold_answers(store, questions):
    for q in questions:
        rows = list(store.query(_expand_ns_names(q["gold_sparql"])))
        assert sorted(_answer_key(r[0]) for r in rows) == _recorded_keys(q["gold_answers"]), q["id"]


def test_kb_sparql_uses_full_iris_only(questions):
    for q in questions:
        assert "ns:" not in q["kb_sparql"], q["id"]


def test_answer_and_topic_names_are_the_kb_names(subjects, questions):
    for q in questions:
        for ent in q["topic_entities"] + [a for a in q["kb_answers"] + q["gold_answers"] if "mid" in a]:
            names = [n.value for n in subjects[NS + ent["mid"]][NAME]]
            assert names == [ent["name"]], (q["id"], ent)
        if q["gold_answer_kind"] == "mid":
            assert all(a["in_kb"] is True for a in q["gold_answers"])
        else:
            assert q["gold_answer_kind"] == "literal"
            assert all("literal" in a for a in q["gold_answers"])


def test_paths_use_relations_present_in_the_kb(store, questions):
    predicates = {q.predicate.value[len(NS) :] for q in store}
    for q in questions:
        assert q["hops"] == len(q["path"]) >= 1
        for hop in q["path"]:
            for rel in hop.split(" -> "):
                assert rel.lstrip("^") in predicates, (q["id"], rel)


def test_most_questions_start_from_an_entity_named_in_the_question(questions):
    # A small guided model should be able to find the start by name and walk 1-2 hops.
    easy = [
        q
        for q in questions
        if q["hops"] <= 2 and q["topic_entities"][0]["name"].lower() in q["question"].lower()
    ]
    assert len(easy) >= len(questions) / 2
