"""Tests for kb.remote.RemoteKB against a real `oxigraph serve` process on 127.0.0.1.

The module-scoped `fbqa_server` serves the real Freebase subset; a second, small server
with a 2 s server-side limit serves the time-out tests (so a runaway query never keeps
a core busy for long).
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb.base import EndpointUnavailable, KBError, QueryRejected, QueryTimeout, Term
from kb.remote import RemoteKB, parse_json_result
from tests import oxigraph_server as servers
from tests.oxigraph_server import DATA, FBQA_KB, OxigraphServer, closed_port_url, oxigraph_server

fbqa_server = servers.fbqa_server  # the module-scoped pytest fixture (real subset served)

FB = "http://rdf.freebase.com/ns/"
OBAMA = f"{FB}m.02mjmr"


@pytest.fixture(scope="module")
def kb(fbqa_server: OxigraphServer) -> Iterator[RemoteKB]:
    remote = RemoteKB(fbqa_server.url, timeout_s=20, backoff_s=0.01)
    yield remote
    remote.close()


@pytest.fixture(scope="module")
def local_store():  # the same data in pyoxigraph directly: the reference
    import pyoxigraph as ox

    store = ox.Store()
    with gzip.open(FBQA_KB, "rb") as fh:
        store.bulk_load(fh, format=ox.RdfFormat.N_TRIPLES)
    return store


def _local_rows(store, sparql: str) -> list[tuple[Term | None, ...]]:
    import pyoxigraph as ox

    def term(node) -> Term | None:
        if node is None:
            return None
        if isinstance(node, ox.NamedNode):
            return Term("iri", node.value)
        dt = node.datatype.value
        plain = dt.endswith(("#string", "#langString"))
        return Term("literal", node.value, None if plain else dt, node.language)

    solutions = store.query(sparql)
    return [tuple(term(s[i]) for i in range(len(solutions.variables))) for s in solutions]


def _key(row: tuple[Term | None, ...]) -> tuple[str, ...]:
    return tuple(repr(t) for t in row)


# --- results equal the store's ----------------------------------------------------------


def test_dev_gold_queries_return_the_same_rows_as_pyoxigraph(kb: RemoteKB, local_store) -> None:
    queries = [json.loads(line)["kb_sparql"] for line in (DATA / "dev.jsonl").read_text().splitlines()]
    assert len(queries) == 408
    for sparql in queries:
        remote = kb.query(sparql)
        assert not remote.truncated
        assert sorted(remote.rows, key=_key) == sorted(_local_rows(local_store, sparql), key=_key), sparql


@pytest.mark.parametrize(
    "sparql",
    [
        # language-tagged names and descriptions
        f"SELECT ?n ?d WHERE {{ <{OBAMA}> ns:type.object.name ?n . <{OBAMA}> ns:common.topic.description ?d }}",
        # typed literal (COUNT) and an unbound OPTIONAL
        f"SELECT (COUNT(*) AS ?c) WHERE {{ <{OBAMA}> ?p ?o }}",
        f"SELECT ?n ?x WHERE {{ <{OBAMA}> ns:type.object.name ?n OPTIONAL {{ <{OBAMA}> ns:no.such.relation ?x }} }}",
        # Virtuoso dialect from CWQ, normalised on the way
        "PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?x WHERE {\n"
        "FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))\n"
        "ns:m.02mjmr ns:people.person.place_of_birth ?x .\n}",
    ],
)
def test_literals_counts_and_unbound_values_match_pyoxigraph(kb: RemoteKB, local_store, sparql: str) -> None:
    from kb.sparql import guard_and_normalise

    expected = _local_rows(local_store, guard_and_normalise(sparql).sparql)
    assert expected  # the reference finds something, so equality means something
    assert sorted(kb.query(sparql).rows, key=_key) == sorted(expected, key=_key)


def test_ask_answers_true_and_false(kb: RemoteKB) -> None:
    assert kb.query(f"ASK {{ <{OBAMA}> ns:type.object.name ?n }}").boolean is True
    assert kb.query("ASK { ns:m.no_such_entity ?p ?o }").boolean is False


def test_long_query_goes_by_post_and_works(kb: RemoteKB) -> None:
    values = " ".join(f"<{FB}m.fake{i:05d}>" for i in range(200)) + f" <{OBAMA}>"
    sparql = f"SELECT ?e ?n WHERE {{ VALUES ?e {{ {values} }} ?e ns:type.object.name ?n }}"
    assert len(sparql) > kb.post_over
    assert [row[1].value for row in kb.query(sparql).rows] == ["Barack Obama"]


# --- size guards --------------------------------------------------------------------------


def test_rows_beyond_max_rows_are_dropped_and_flagged(kb: RemoteKB) -> None:
    result = kb.query("SELECT ?s WHERE { ?s ns:type.object.name ?n }", max_rows=50)
    assert len(result.rows) == 50 and result.truncated
    small = kb.query("SELECT ?s WHERE { ?s ns:type.object.name ?n } LIMIT 7", max_rows=50)
    assert len(small.rows) == 7 and not small.truncated


def test_ten_megabyte_result_is_cut_at_the_byte_cap_and_flagged(kb: RemoteKB) -> None:
    # The whole KB as JSON is ~53 MB; the default cap reads 10 MB and keeps whole rows.
    result = kb.query("SELECT * WHERE { ?s ?p ?o }", max_rows=10**7)
    assert result.truncated
    assert 10_000 < len(result.rows) < 237_581
    assert all(len(row) == 3 and all(t is not None for t in row) for row in result.rows)


def test_small_byte_cap_truncates_quickly(fbqa_server: OxigraphServer) -> None:
    tight = RemoteKB(fbqa_server.url, max_bytes=20_000)
    result = tight.query("SELECT * WHERE { ?s ?p ?o }", max_rows=10**6)
    assert result.truncated and 10 < len(result.rows) < 500


# --- errors -------------------------------------------------------------------------------


def test_endpoint_syntax_error_is_one_line_from_the_endpoint(kb: RemoteKB) -> None:
    with pytest.raises(QueryRejected) as info:
        kb.run_as_is("SELECT * WHERE { ?s ?p }")
    message = str(info.value)
    assert message.startswith("endpoint rejected the query: error at 1:")
    assert "\n" not in message and len(message) <= 340


def test_updates_are_refused_before_anything_is_sent(kb: RemoteKB) -> None:
    with pytest.raises(QueryRejected, match="update"):
        kb.query("DELETE WHERE { ?s ?p ?o }")
    assert kb.query(f"ASK {{ <{OBAMA}> ?p ?o }}").boolean is True


def test_unreachable_endpoint_gives_up_after_logged_retries(caplog: pytest.LogCaptureFixture) -> None:
    remote = RemoteKB(closed_port_url(), retries=3, backoff_s=0.001)
    with caplog.at_level(logging.WARNING, logger="kb.remote"), pytest.raises(EndpointUnavailable) as info:
        remote.query("ASK {}")
    assert "after 4 attempts" in str(info.value)
    assert len([r for r in caplog.records if "retry" in r.getMessage()]) == 3


def test_unreachable_endpoint_fails_name_search_too() -> None:
    with pytest.raises(EndpointUnavailable):
        RemoteKB(closed_port_url(), retries=0).search_names("Barack Obama")


def test_wrong_path_on_a_live_server_is_unavailable_not_a_crash(fbqa_server: OxigraphServer) -> None:
    remote = RemoteKB(fbqa_server.url.replace("/query", "/no-such-endpoint"), retries=0)
    with pytest.raises(KBError):
        remote.query("ASK {}")


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphServer]:
    """A small store where a cross product runs for minutes; server limit 2 s."""
    data = tmp_path_factory.mktemp("slow") / "small.nt"
    data.write_text("".join(f"<http://e/{i}> <http://p/{i % 7}> <http://e/{i + 1}> .\n" for i in range(600)))
    try:
        with oxigraph_server(data, query_timeout_s=2) as server:
            yield server
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


# Three-way: oxigraph 0.5.13 cancels it at its limit (a four-way COUNT ignored the limit).
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"


def test_client_deadline_gives_query_timeout(slow_server: OxigraphServer) -> None:
    with pytest.raises(QueryTimeout):
        RemoteKB(slow_server.url, timeout_s=0.5).query(CROSS)


def test_server_side_cancellation_gives_query_timeout(slow_server: OxigraphServer) -> None:
    # Oxigraph answers 200, then stops the body with "...has been cancelled".
    with pytest.raises(QueryTimeout, match="cancelled"):
        RemoteKB(slow_server.url, timeout_s=30).query(CROSS)


# --- name search --------------------------------------------------------------------------


def test_search_names_ranks_the_exact_name_first_with_description(kb: RemoteKB) -> None:
    hits = kb.search_names("barack obama", 5)
    assert hits[0].id == "m.02mjmr" and hits[0].name == "Barack Obama"
    assert "President" in hits[0].description


def test_search_names_finds_substrings_and_aliases(kb: RemoteKB) -> None:
    assert "m.02mjmr" in [h.id for h in kb.search_names("Obama", 10)]
    assert "m.010016" in [h.id for h in kb.search_names("Denton, Texas", 10)]  # an alias
    hits = kb.search_names("texas", 10)
    assert len(hits) == 10 and all("texas" in (h.name + h.description).lower() or h.name for h in hits)
    assert hits[0].name.casefold() == "texas"


def test_search_names_is_not_injectable(fbqa_server: OxigraphServer) -> None:
    # The search on the endpoint itself (no name index): its text goes into SPARQL. Typo
    # tolerance may find Barack Obama in it; what must not happen is a query of its own.
    sparql_only = RemoteKB(fbqa_server.url, name_index=False)
    injected = 'Obama" } } ; DROP ALL ; SELECT * { ?s ?p "'
    assert all(h.id.startswith("m.") for h in sparql_only.search_names(injected, 5))
    assert all(h.id.startswith("m.") for h in sparql_only.search_names("back\\slash \"quote' \n newline", 5))
    assert sparql_only.query(f"ASK {{ <{OBAMA}> ?p ?o }}").boolean is True


def test_search_names_rejects_empty_text(kb: RemoteKB) -> None:
    with pytest.raises(KBError, match="empty name"):
        kb.search_names("   ")


def test_oxigraph_is_not_virtuoso_so_the_standard_filter_is_used(kb: RemoteKB) -> None:
    assert kb.is_virtuoso() is False
    assert "CONTAINS(LCASE(STR(?label))" in kb.contains_query("Obama")


def test_virtuoso_endpoint_gets_bif_contains_with_quoted_words() -> None:
    # No Virtuoso here: mark the (never contacted) endpoint as detected to check the text.
    remote = RemoteKB("http://127.0.0.1:9/sparql")
    remote._virtuoso = True
    query = remote.contains_query('Barack "Obama"')
    assert 'bif:contains "\\"barack\\" AND \\"obama*\\""' in query  # the last word may be unfinished


# --- JSON result parsing (pure) --------------------------------------------------------------


def test_cut_json_result_keeps_whole_rows() -> None:
    tricky = 'v}},{"'  # looks like a row boundary, but sits inside a JSON string
    rows = [{"x": {"type": "literal", "value": tricky + str(i), "xml:lang": "en"}} for i in range(50)]
    body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": rows}}, indent=1).encode()
    result = parse_json_result(body[: len(body) // 2], max_rows=1000, cut=True)
    assert result.truncated and 10 < len(result.rows) < 50
    assert [r[0].value for r in result.rows] == [tricky + str(i) for i in range(len(result.rows))]
    assert result.rows[0][0] == Term("literal", tricky + "0", None, "en")


def test_plain_string_datatype_is_dropped_like_embedded_results() -> None:
    body = json.dumps(
        {
            "head": {"vars": ["a", "b"]},
            "results": {
                "bindings": [
                    {
                        "a": {
                            "type": "literal",
                            "value": "x",
                            "datatype": "http://www.w3.org/2001/XMLSchema#string",
                        }
                    }
                ]
            },
        }
    ).encode()
    assert parse_json_result(body, max_rows=10).rows == ((Term("literal", "x"), None),)


def test_garbage_body_is_one_clear_error() -> None:
    with pytest.raises(KBError, match="malformed JSON"):
        parse_json_result(b"<html>oops</html>", max_rows=10)


def test_data_folder_present_or_skipped() -> None:
    if not Path(FBQA_KB).exists():
        pytest.skip(f"real data absent: {FBQA_KB}")
    assert FBQA_KB.stat().st_size > 1_000_000


# --- the endpoint's name index (kb.endpoint_names) -------------------------------------------


def test_a_small_endpoint_holds_the_embedded_index_read_in_pages(fbqa_server, fbqa_kb, monkeypatch) -> None:
    from kb import endpoint_names

    # Several pages per query (13.8k names, 18.7k aliases), each from the last entity on.
    monkeypatch.setattr(endpoint_names, "PAGE_ROWS", 5_000)
    kb = RemoteKB(fbqa_server.url)
    assert kb.names is not None and len(kb.names) == len(fbqa_kb.names)
    for typed in ("tom hank", "Tom Haks", "quebec", "Obama"):
        assert kb.search_names(typed, 10) == fbqa_kb.search_names(typed, 10), typed


def test_a_big_endpoint_is_searched_where_it_lies_typos_included(fbqa_server, monkeypatch) -> None:
    from kb import endpoint_names

    monkeypatch.setattr(endpoint_names, "MAX_INDEXED_NAMES", 1_000)  # the subset counts as big
    kb = RemoteKB(fbqa_server.url)
    assert kb.names is None
    for typed in ("tom hank", "Tom Hankss", "TOM HANKS", "quebec"):
        assert kb.search_names(typed, 10)[0].name in ("Tom Hanks", "Québec"), typed
    with pytest.raises(KBError, match="no name index"):
        kb.find_mentions("Where was Tom Hanks born?")
