"""The Wikidata-shaped demo KB (examples/demo_wikidata.ttl) and its questions.

Loads the Turtle file into a real pyoxigraph store and checks that it has the shape of
Wikidata RDF as the Wikidata Query Service serves it: labelled items typed by wdt:P31,
statement nodes (p:/ps:/pq:) whose best-rank values are also direct claims (wdt:),
property entities with labels and wikibase: mappings, a homonym pair. Then runs every
question's SPARQL (full-IRI and prefixed forms) and compares the results with the
recorded answers. Knows nothing about the kb/ package: it checks the data files themselves.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.question_schema import COMPOSITIONALITY_TYPES, QUESTION_FIELDS

ROOT = Path(__file__).resolve().parents[2]
KB_PATH = ROOT / "examples" / "demo_wikidata.ttl"
QUESTIONS_PATH = ROOT / "examples" / "questions_wikidata.jsonl"
FBQA_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "fbqa" / "dev.jsonl"

WD = "http://www.wikidata.org/entity/"
WDS = "http://www.wikidata.org/entity/statement/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
PQ = "http://www.wikidata.org/prop/qualifier/"
WIKIBASE = "http://wikiba.se/ontology#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
DESCRIPTION = "http://schema.org/description"
ALT_LABEL = "http://www.w3.org/2004/02/skos/core#altLabel"
XSD = "http://www.w3.org/2001/XMLSchema#"
P31, P279 = WDT + "P31", WDT + "P279"

# Prefixes the questions' gold_sparql and paths use.
PREFIXES = {"wd": WD, "wdt": WDT, "p": P, "ps": PS, "pq": PQ, "xsd": XSD}

# Real Wikidata ids, or the project's own ids for items whose real id was not certain.
ITEM_ID = re.compile(r"Q[1-9][0-9]*|Qdemo_[a-z0-9_]+")
PROPERTY_ID = re.compile(r"P[1-9][0-9]*")


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


def _items(subjects) -> list[str]:
    return [
        s for s in subjects if s.startswith(WD) and not s.startswith(WDS) and ITEM_ID.fullmatch(s[len(WD) :])
    ]


def _properties(subjects) -> list[str]:
    return [s for s in subjects if s.startswith(WD) and PROPERTY_ID.fullmatch(s[len(WD) :])]


def _statements(subjects) -> list[str]:
    return [s for s in subjects if s.startswith(WDS)]


def _values(terms) -> set[str]:
    return {t.value for t in terms}


def _load_questions() -> list[dict]:
    return [
        json.loads(line) for line in QUESTIONS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


QUESTIONS = _load_questions()


def _answer_key(term) -> str:
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        assert term.value.startswith(WD), term
        return term.value[len(WD) :]
    return term.value


def _recorded_keys(answers: list[dict]) -> list[str]:
    return sorted(a["mid"] if "mid" in a else a["literal"] for a in answers)


def _expand(prefixed: str) -> str:
    prefix, local = prefixed.split(":", 1)
    return PREFIXES[prefix] + local


# ----- the KB ---------------------------------------------------------------------------


def test_demo_wikidata_loads_with_a_triple_count_in_budget(store):
    assert 500 <= len(store) <= 2000


def test_every_subject_is_an_item_a_property_or_a_statement(subjects):
    odd = [
        s
        for s in subjects
        if s not in set(_items(subjects)) | set(_properties(subjects)) | set(_statements(subjects))
    ]
    assert odd == []
    assert 100 <= len(_items(subjects)) <= 200


def test_every_item_has_one_english_label_and_most_have_a_description(subjects):
    items = _items(subjects)
    for s in items:
        labels = subjects[s][RDFS_LABEL]
        assert len(labels) == 1 and labels[0].language == "en", s
    described = [s for s in items if DESCRIPTION in subjects[s]]
    # As on Wikidata, a few items have no English description (SearchNodes must say so).
    assert 0.9 * len(items) <= len(described) < len(items)
    assert sum(1 for s in items if ALT_LABEL in subjects[s]) >= 30


def test_every_item_has_a_type_and_classes_have_labels(subjects):
    # A class is whatever some item is an instance or subclass of; every other item is an instance of something.
    classes = {o.value for preds in subjects.values() for p in (P31, P279) for o in preds.get(p, [])}
    untyped = [s for s in _items(subjects) if s not in classes and P31 not in subjects[s]]
    assert untyped == []
    assert all(RDFS_LABEL in subjects[c] for c in classes)
    assert {WD + "Q5", WD + "Q11424", WD + "Q6256"} <= classes
    assert any(P279 in subjects[c] for c in classes)


def test_every_linked_item_exists(subjects):
    import pyoxigraph as ox

    missing = {
        o.value
        for preds in subjects.values()
        for objs in preds.values()
        for o in objs
        if isinstance(o, ox.NamedNode) and o.value.startswith(WD) and o.value not in subjects
    }
    assert missing == set()


def test_every_statement_has_one_value_a_rank_and_one_owner(subjects):
    owners: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for s, preds in subjects.items():
        for pred, objs in preds.items():
            if pred.startswith(P) and PROPERTY_ID.fullmatch(pred[len(P) :]):
                for o in objs:
                    owners[o.value].append((s, pred[len(P) :]))
    statements = _statements(subjects)
    assert len(statements) >= 50
    for st in statements:
        preds = subjects[st]
        ps = [p for p in preds if p.startswith(PS)]
        assert len(ps) == 1 and len(preds[ps[0]]) == 1, st
        assert _values(preds[WIKIBASE + "rank"]) <= {WIKIBASE + "NormalRank", WIKIBASE + "PreferredRank"}, st
        assert len(owners[st]) == 1, st
        assert owners[st][0][1] == ps[0][len(PS) :], st  # p:P39 leads to ps:P39


def test_direct_claims_hold_the_best_rank_statement_values(subjects):
    # As WDQS does: wdt:Pn = the ps:Pn values of preferred statements if any, else of normal ones.
    by_owner: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s, preds in subjects.items():
        for pred, objs in preds.items():
            if pred.startswith(P) and PROPERTY_ID.fullmatch(pred[len(P) :]):
                by_owner[(s, pred[len(P) :])].extend(o.value for o in objs)
    assert by_owner
    for (s, pid), stmts in by_owner.items():
        ranks = {st: subjects[st][WIKIBASE + "rank"][0].value for st in stmts}
        best = WIKIBASE + ("PreferredRank" if WIKIBASE + "PreferredRank" in ranks.values() else "NormalRank")
        best_values = {subjects[st][PS + pid][0].value for st in stmts if ranks[st] == best}
        other_values = {subjects[st][PS + pid][0].value for st in stmts if ranks[st] != best}
        direct = _values(subjects[s].get(WDT + pid, []))
        assert best_values <= direct, (s, pid)
        assert not (other_values - best_values) & direct, (s, pid)


def test_statements_carry_time_qualifiers(store):
    predicates = Counter(q.predicate.value for q in store)
    for pid in ("P580", "P582", "P585", "P1365", "P1366", "P1545", "P1686"):
        assert predicates[PQ + pid] >= 1, pid
    assert predicates[PQ + "P580"] >= 30
    ranks = Counter(q.object.value for q in store if q.predicate.value == WIKIBASE + "rank")
    assert ranks[WIKIBASE + "PreferredRank"] >= 1


def test_every_property_used_is_declared_with_a_label_and_its_predicate_forms(store, subjects):
    used = set()
    for q in store:
        for ns in (WDT, P, PS, PQ):
            local = q.predicate.value[len(ns) :]
            if q.predicate.value.startswith(ns) and PROPERTY_ID.fullmatch(local):
                used.add(local)
    declared = {s[len(WD) :] for s in _properties(subjects)}
    assert used <= declared
    for pid in declared:
        preds = subjects[WD + pid]
        assert len(preds[RDFS_LABEL]) == 1 and preds[RDFS_LABEL][0].language == "en", pid
        assert _values(preds[RDF_TYPE]) == {WIKIBASE + "Property"}, pid
        assert _values(preds[WIKIBASE + "directClaim"]) == {WDT + pid}, pid
        assert _values(preds[WIKIBASE + "claim"]) == {P + pid}, pid
        assert _values(preds[WIKIBASE + "statementProperty"]) == {PS + pid}, pid
        assert _values(preds[WIKIBASE + "qualifier"]) == {PQ + pid}, pid
        assert len(preds[WIKIBASE + "propertyType"]) == 1, pid
    assert subjects[WD + "P39"][RDFS_LABEL][0].value == "position held"


def test_literals_use_wikidata_datatypes(store):
    datatypes = {
        q.object.datatype.value for q in store if hasattr(q.object, "datatype") and q.object.language is None
    }
    assert {XSD + "dateTime", XSD + "decimal"} <= datatypes
    times = [
        q.object.value
        for q in store
        if getattr(q.object, "datatype", None) and q.object.datatype.value == XSD + "dateTime"
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT00:00:00Z", t) for t in times)


def test_homonyms_share_a_label_and_differ_by_description(subjects):
    by_label: dict[str, list[str]] = defaultdict(list)
    for s in _items(subjects):
        by_label[subjects[s][RDFS_LABEL][0].value].append(s)
    homonyms = {}
    for label, items in by_label.items():
        descriptions = {subjects[i][DESCRIPTION][0].value for i in items if DESCRIPTION in subjects[i]}
        if len(items) >= 2 and len(descriptions) == len(items):
            homonyms[label] = items
    assert {"Chris Evans", "Paris"} <= set(homonyms)


# ----- the questions ----------------------------------------------------------------------


def test_question_fields_match_the_fbqa_field_set():
    for q in QUESTIONS:
        assert set(q) == QUESTION_FIELDS, q["id"]


def test_question_field_set_is_the_one_dev_jsonl_uses():
    if not FBQA_DEV.exists():
        pytest.skip(f"shared data not found at {FBQA_DEV}")
    with FBQA_DEV.open(encoding="utf-8") as fh:
        first = json.loads(fh.readline())
    assert set(first) == QUESTION_FIELDS


def test_question_ids_are_unique_demowd_ids():
    ids = [q["id"] for q in QUESTIONS]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"demowd:\d{3}", i) for i in ids)
    assert all(q["source"] == "demo-wikidata" for q in QUESTIONS)


def test_questions_cover_the_kinds_qualifiers_and_homonyms():
    assert len(QUESTIONS) >= 12
    kinds = Counter(q["meta"]["compositionality_type"] for q in QUESTIONS)
    assert set(kinds) <= COMPOSITIONALITY_TYPES
    assert {"simple", "composition", "count", "superlative"} <= set(kinds)
    assert sum(1 for q in QUESTIONS if q["meta"].get("homonym")) >= 2
    qualifier = [q for q in QUESTIONS if q["meta"].get("qualifier")]
    assert len(qualifier) >= 5
    assert all("pq:" in q["gold_sparql"] or "p:P" in q["gold_sparql"] for q in qualifier)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_kb_sparql_returns_exactly_the_recorded_answers(store, q):
    rows = list(store.query(q["kb_sparql"]))
    got = sorted(_answer_key(row[0]) for row in rows)
    assert got == _recorded_keys(q["kb_answers"]), q["id"]
    assert got == _recorded_keys(q["gold_answers"]), q["id"]


def test_gold_sparql_with_prefixes_gives_the_gold_answers(store):
    for q in QUESTIONS:
        assert q["gold_sparql"].startswith("PREFIX wd: <http://www.wikidata.org/entity/>"), q["id"]
        rows = list(store.query(q["gold_sparql"]))
        assert sorted(_answer_key(r[0]) for r in rows) == _recorded_keys(q["gold_answers"]), q["id"]


def test_kb_sparql_uses_full_iris_only():
    for q in QUESTIONS:
        assert "PREFIX" not in q["kb_sparql"], q["id"]
        assert not re.search(r"(?<![\w/#<^])(wd|wdt|p|ps|pq|xsd):\w", q["kb_sparql"]), q["id"]


def test_answer_and_topic_names_are_the_kb_labels(subjects):
    for q in QUESTIONS:
        for ent in q["topic_entities"] + [a for a in q["kb_answers"] + q["gold_answers"] if "mid" in a]:
            assert ITEM_ID.fullmatch(ent["mid"]), (q["id"], ent)
            assert [n.value for n in subjects[WD + ent["mid"]][RDFS_LABEL]] == [ent["name"]], (q["id"], ent)
        if q["gold_answer_kind"] == "mid":
            assert all(a["in_kb"] is True for a in q["gold_answers"])
        else:
            assert q["gold_answer_kind"] == "literal"
            assert all("literal" in a and a["name"] == a["literal"] for a in q["gold_answers"])


def test_paths_use_predicates_present_in_the_kb(store):
    predicates = {q.predicate.value for q in store}
    for q in QUESTIONS:
        assert q["hops"] == len(q["path"]) >= 1
        for hop in q["path"]:
            for rel in hop.split(" -> "):
                assert _expand(rel.lstrip("^")) in predicates, (q["id"], rel)


def test_most_questions_start_from_an_item_labelled_in_the_question():
    # A small guided model should be able to find the start by name and walk 1-2 hops.
    easy = [
        q
        for q in QUESTIONS
        if q["hops"] <= 2 and q["topic_entities"][0]["name"].lower() in q["question"].lower()
    ]
    assert len(easy) >= len(QUESTIONS) / 2
