"""Tests for kb.sparql: the guard rejects what must not run, the normaliser makes real
Virtuoso-dialect Freebase queries (CWQ) parse on pyoxigraph, and strings stay untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.base import QueryRejected
from kb.sparql import FREEBASE_NS, guard_and_normalise

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "fbqa"
CORPUS = DATA / "sparql_corpus.jsonl"


def _run_on_empty_store(sparql: str) -> None:
    import pyoxigraph

    result = pyoxigraph.Store().query(sparql)
    if not isinstance(result, pyoxigraph.QueryBoolean):
        list(result)


def test_every_cwq_corpus_query_is_accepted_parses_and_executes() -> None:
    if not CORPUS.exists():
        pytest.skip(f"real data folder absent: {CORPUS}")
    import pyoxigraph

    store = pyoxigraph.Store()
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3531
    failures = []
    for line in lines:
        item = json.loads(line)
        try:
            prepared = guard_and_normalise(item["sparql"], max_rows=100)
            result = store.query(prepared.sparql)
            list(result)
            # Idempotent: tools guard, then RemoteKB.query guards again.
            again = guard_and_normalise(prepared.sparql, max_rows=100)
            assert again.sparql == prepared.sparql, item["id"]
        except (QueryRejected, SyntaxError, ValueError, OSError) as exc:
            failures.append(f"{item['id']}: {exc}")
    assert failures == [], f"{len(failures)} failed, first: {failures[:3]}"


def test_raw_corpus_queries_do_not_parse_without_normalisation() -> None:
    # Guards the premise: if pyoxigraph ever parsed these raw, the rewrites would be moot.
    if not CORPUS.exists():
        pytest.skip(f"real data folder absent: {CORPUS}")
    raw = json.loads(CORPUS.read_text(encoding="utf-8").splitlines()[0])["sparql"]
    with pytest.raises(SyntaxError):
        _run_on_empty_store(raw)


# --- normalisation rules ---------------------------------------------------------------


def test_dotted_prefixed_names_become_full_iris() -> None:
    q = guard_and_normalise("SELECT ?n WHERE { ?x ns:type.object.name ?n }").sparql
    assert f"<{FREEBASE_NS}type.object.name>" in q
    assert "ns:type.object.name" not in q


def test_undeclared_ns_prefix_is_declared_once() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ns:knows ?y }").sparql
    assert q.startswith(f"PREFIX ns: <{FREEBASE_NS}>")
    assert q.count("PREFIX ns:") == 1
    declared = guard_and_normalise("PREFIX ns: <http://example.org/> SELECT ?x WHERE { ?x ns:knows ?y }")
    assert declared.sparql.count("PREFIX ns:") == 1
    assert "http://example.org/" in declared.sparql


def test_query_declared_prefix_wins_over_known_one_when_expanding() -> None:
    q = guard_and_normalise("PREFIX ns: <http://example.org/> SELECT ?x WHERE { ?x ns:a.b.c ?y }").sparql
    assert "<http://example.org/a.b.c>" in q


def test_caller_prefixes_are_added_when_used() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x wd:P31 ?y }", {"wd": "http://www.wikidata.org/entity/"})
    assert q.sparql.startswith("PREFIX wd: <http://www.wikidata.org/entity/>")


def test_undeclared_xsd_is_declared_and_datetime_cast_fixed() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ns:p ?d } ORDER BY DESC(xsd:datetime(?d))").sparql
    assert "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>" in q
    assert "xsd:dateTime(?d)" in q and "xsd:datetime" not in q


def test_or_and_keywords_become_operators() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ns:p ?y FILTER (?y = 1 OR ?y = 2 AND ?y != 3) }").sparql
    assert "?y = 1 || ?y = 2 && ?y != 3" in q


def test_strings_are_left_untouched() -> None:
    text = (
        'SELECT ?x WHERE { ?x ns:p "cats OR dogs AND ns:a.b.c xsd:datetime(" . '
        '?x ns:q \'it\\\'s ns:x.y OR\' . ?x ns:r """multi\nOR line""" }'
    )
    q = guard_and_normalise(text).sparql
    assert '"cats OR dogs AND ns:a.b.c xsd:datetime("' in q
    assert "'it\\'s ns:x.y OR'" in q
    assert '"""multi\nOR line"""' in q


def test_language_tag_or_is_not_an_operator() -> None:
    q = guard_and_normalise('SELECT ?x WHERE { ?x ns:p "x"@or }').sparql
    assert '"x"@or' in q


def test_comments_and_manual_marker_are_stripped() -> None:
    q = guard_and_normalise("#MANUAL SPARQL\n# another\nSELECT ?x WHERE { ?x ns:p ?y . # note OR\n }")
    assert "#" not in q.sparql
    assert q.form == "select"


def test_hash_inside_iri_is_not_a_comment() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x <http://www.w3.org/2000/01/rdf-schema#label> ?y }")
    assert "rdf-schema#label" in q.sparql


def test_escaped_dots_in_local_names_expand_to_plain_dots() -> None:
    q = guard_and_normalise(r"SELECT ?x WHERE { ?x ns:type\.object\.name ?y }").sparql
    assert f"<{FREEBASE_NS}type.object.name>" in q


def test_trailing_triple_dot_is_not_part_of_the_name() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ns:a.b ns:m.0abc.}").sparql
    assert f"<{FREEBASE_NS}m.0abc>." in q


def test_blank_node_labels_are_not_prefixed_names() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { _:b.1 ns:p ?x . _:insert ns:q ?x }").sparql
    assert "_:b.1" in q and "_:insert" in q


# --- row cap ----------------------------------------------------------------------------


def test_limit_added_as_max_rows_plus_one() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ?p ?y }", max_rows=50)
    assert q.limit_added and q.sparql.rstrip().endswith("LIMIT 51")


def test_small_limit_kept_and_large_limit_lowered() -> None:
    kept = guard_and_normalise("SELECT ?x WHERE { ?x ?p ?y } LIMIT 5", max_rows=50)
    assert not kept.limit_added and kept.sparql.endswith("LIMIT 5")
    lowered = guard_and_normalise("SELECT ?x WHERE { ?x ?p ?y } LIMIT 5000 OFFSET 2", max_rows=50)
    assert lowered.limit_added and "LIMIT 51 OFFSET 2" in lowered.sparql


def test_subquery_limit_is_not_the_outer_limit() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { { SELECT ?x WHERE { ?x ?p ?y } LIMIT 3 } }", max_rows=9)
    assert "LIMIT 3" in q.sparql and q.sparql.rstrip().endswith("LIMIT 10")


def test_limit_goes_before_trailing_values() -> None:
    q = guard_and_normalise("SELECT ?x WHERE { ?x ?p ?y } VALUES ?x { <http://a> }", max_rows=9)
    assert q.sparql.index("LIMIT 10") < q.sparql.index("VALUES")


def test_ask_gets_no_limit_and_no_cap_without_max_rows() -> None:
    ask = guard_and_normalise("ASK { ?x ?p ?y }", max_rows=9)
    assert ask.form == "ask" and "LIMIT" not in ask.sparql and not ask.limit_added
    assert "LIMIT" not in guard_and_normalise("SELECT ?x WHERE { ?x ?p ?y }").sparql


def test_limit_caps_rows_on_a_real_store() -> None:
    import pyoxigraph as ox

    store = ox.Store()
    for i in range(30):
        store.add(ox.Quad(ox.NamedNode(f"http://e/{i}"), ox.NamedNode("http://p"), ox.Literal(str(i))))
    q = guard_and_normalise("SELECT ?x WHERE { ?x <http://p> ?y }", max_rows=10)
    assert len(list(store.query(q.sparql))) == 11


# --- rejections -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("# just a comment", "empty"),
        ("INSERT DATA { <http://a> <http://b> <http://c> }", "update"),
        ("DELETE WHERE { ?s ?p ?o }", "update"),
        ("PREFIX ns: <http://x/> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "update"),
        ("WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", "update"),
        ("LOAD <http://example.org/data.nt>", "update"),
        ("CLEAR ALL", "update"),
        ("DROP GRAPH <http://g>", "update"),
        ("CREATE GRAPH <http://g>", "update"),
        ("ADD DEFAULT TO <http://g>", "update"),
        ("MOVE DEFAULT TO <http://g>", "update"),
        ("COPY DEFAULT TO <http://g>", "update"),
        ("SELECT * WHERE { ?s ?p ?o } ; INSERT DATA { <http://a> <http://b> <http://c> }", "update"),
        ("SELECT * WHERE { SERVICE <http://remote/sparql> { ?s ?p ?o } }", "SERVICE"),
        ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "CONSTRUCT"),
        ("DESCRIBE <http://a>", "DESCRIBE"),
        ("hello world", "must start with SELECT or ASK"),
        ("SELECT ?x WHERE { ?x ?p ?o", "never closed"),
        ("SELECT ?x WHERE { ?x ?p ?o }}", "unexpected"),
        ("SELECT ?x WHERE { FILTER(?x = 1 }", "unexpected"),
        ('SELECT ?x WHERE { ?x ?p "open }', "unterminated"),
        ("SELECT ?x WHERE { ?x ?p ?o . . ?? }", "does not parse"),
        ("SELECT ?x WHERE { ?x unknownprefix:a.b ?o }", "does not parse"),
    ],
)
def test_rejections_give_one_clear_line(text: str, fragment: str) -> None:
    with pytest.raises(QueryRejected) as info:
        guard_and_normalise(text)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_update_words_inside_strings_and_names_are_allowed() -> None:
    q = guard_and_normalise('SELECT ?x WHERE { ?x ns:film.film.insert "DELETE SERVICE LOAD" }')
    assert '"DELETE SERVICE LOAD"' in q.sparql


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_string_literal_passes_through_unchanged(text: str) -> None:
    literal = _literal(text)
    q = guard_and_normalise(f"SELECT ?x WHERE {{ ?x ns:a.b {literal} . FILTER(?x != {literal} OR true) }}")
    assert q.sparql.count(literal) == 2


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ns:a.b?x <>{}()'\"\\#\n OR AND 1 @en _"))))
def test_tokeniser_is_lossless(text: str) -> None:
    from kb.sparql import tokenise

    try:
        tokens = tokenise(text)
    except QueryRejected as exc:
        assert "unterminated string" in str(exc)
        return
    assert "".join(t.text for t in tokens) == text
