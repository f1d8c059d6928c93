"""The embedded KB: loading, queries with caps and time limits, the name index, KB specs."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from kb.base import QueryRejected, QueryTimeout, Term
from kb.embedded import EmbeddedKB
from kb.name_index import NameIndex, normalise
from kb.spec import KBSpecError, forget, open_kb
from tests.conftest import TINY_TTL

NS = "http://rdf.freebase.com/ns/"
NAME = f"<{NS}type.object.name>"
# A self-join over the whole store: ~2.5 s on the real subset (2.7M rows counted).
HEAVY = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?b ?q ?c2 }"


# ----- loading -------------------------------------------------------------------------
def test_real_subset_loads_every_triple_and_indexes_every_named_entity(fbqa_kb):
    assert len(fbqa_kb) == 237_581
    assert len(fbqa_kb.names) == 13_803


def test_turtle_ntriples_gzip_and_folder_load_the_same_triples(tmp_path: Path, tiny_kb):
    ttl = tmp_path / "a.ttl"
    ttl.write_text(TINY_TTL)
    import pyoxigraph as ox

    store = ox.Store()
    store.load(TINY_TTL.encode(), format=ox.RdfFormat.TURTLE)
    nt_lines = store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph()).decode()
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "b.nt").write_text(nt_lines)
    with gzip.open(tmp_path / "folder" / "c.nt.gz", "wt") as fh:
        fh.write(nt_lines)
    (tmp_path / "folder" / "README.md").write_text("ignored: not RDF")
    assert len(EmbeddedKB(ttl)) == len(tiny_kb)
    assert len(EmbeddedKB(tmp_path / "folder")) == len(tiny_kb)  # b and c hold the same triples


def test_missing_file_unknown_format_and_broken_data_fail_with_the_file_name(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        EmbeddedKB(tmp_path / "nope.ttl")
    (tmp_path / "x.csv").write_text("a,b")
    with pytest.raises(ValueError, match="not an RDF file"):
        EmbeddedKB(tmp_path / "x.csv")
    (tmp_path / "bad.ttl").write_text("this is not turtle .")
    with pytest.raises(ValueError, match="bad.ttl"):
        EmbeddedKB(tmp_path / "bad.ttl")


# ----- queries -------------------------------------------------------------------------
def test_select_returns_terms_with_language_and_datatype(tiny_kb):
    res = tiny_kb.query(
        f"SELECT ?n ?d WHERE {{ <{NS}m.t_ada> {NAME} ?n ; <{NS}people.person.date_of_birth> ?d }}"
    )
    assert res.variables == ("n", "d")
    assert res.rows == (
        (
            Term("literal", "Ada Lovelace", None, "en"),
            Term("literal", "1815-12-10", "http://www.w3.org/2001/XMLSchema#date"),
        ),
    )
    assert tiny_kb.query(f"ASK {{ <{NS}m.t_ada> {NAME} ?n }}").boolean is True
    assert tiny_kb.query(f"ASK {{ <{NS}m.t_nobody> {NAME} ?n }}").boolean is False


def test_rows_beyond_the_cap_are_dropped_and_flagged(fbqa_kb):
    res = fbqa_kb.query("SELECT ?s WHERE { ?s ?p ?o }", max_rows=25)
    assert len(res.rows) == 25 and res.truncated
    assert not fbqa_kb.query(f'SELECT ?s WHERE {{ ?s {NAME} "Taylor Swift"@en }}').truncated


def test_a_query_past_its_time_limit_raises_timeout_and_the_store_keeps_answering(fbqa_kb):
    started = time.perf_counter()
    with pytest.raises(QueryTimeout, match="time limit"):
        fbqa_kb.query(HEAVY, timeout_s=0.3)
    assert time.perf_counter() - started < 2.0
    assert fbqa_kb.query(f'ASK {{ ?s {NAME} "Taylor Swift"@en }}', timeout_s=5).boolean is True


def test_syntax_errors_and_updates_are_rejected_not_run(tiny_kb):
    before = len(tiny_kb)
    with pytest.raises(QueryRejected, match="does not parse"):
        tiny_kb.query("SELECT ?x WHERE { ?x ")
    with pytest.raises(QueryRejected):
        tiny_kb.query(f"INSERT DATA {{ <{NS}a> <{NS}b> <{NS}c> }}")
    assert len(tiny_kb) == before


# ----- name index ----------------------------------------------------------------------
def test_exact_name_ranks_first_and_homonyms_come_together(tiny_kb, fbqa_kb):
    hits = tiny_kb.search_names("london")
    assert {h.id for h in hits[:2]} == {"m.t_london", "m.t_london_on"}
    assert all(h.description for h in hits[:2])
    top = fbqa_kb.search_names("Barack Obama")[0]
    assert (top.id, top.description) == ("m.02mjmr", "44th President of the United States of America")


def test_aliases_partial_names_and_typos_find_the_entity(tiny_kb, fbqa_kb):
    assert tiny_kb.search_names("Father of the computer")[0].id == "m.t_babbage"
    assert tiny_kb.search_names("Babbage")[0].id == "m.t_babbage"
    assert fbqa_kb.search_names("Barak Obma")[0].id == "m.02mjmr"
    # A name still being typed: the last word matches as a prefix.
    assert any(w.startswith("tayl") for w in normalise(fbqa_kb.search_names("Tayl")[0].name).split())


def test_queries_with_nothing_to_match_return_no_hits(tiny_kb):
    assert tiny_kb.search_names("") == []
    assert tiny_kb.search_names("   ?!  ") == []
    assert tiny_kb.search_names("zzqxv wwkj") == []


def test_find_mentions_prefers_the_longest_span_and_skips_function_words(fbqa_kb):
    hits = fbqa_kb.find_mentions("What movie was Taylor Swift in that had a character named Once-ler?")
    assert hits[0].id == "m.0dl567"
    assert all(h.name.casefold() not in {"what", "was", "in", "that", "had", "a"} for h in hits)
    assert fbqa_kb.find_mentions("where did barack obama go to college")[0].id == "m.02mjmr"


def test_a_shortened_or_singular_name_is_a_mention_when_it_reads_as_a_name(fbqa_kb):
    def names(question):
        return [h.name for h in fbqa_kb.find_mentions(question)]

    # A surname finds the longer names that end with it, the most connected first.
    assert "Walt Whitman" in names("What President influenced Whitman's poetry?")
    assert "Jonas Brothers" in names("Which Jonas brother ended a celebrity relationship in 2007?")
    # In a question written all in lower case, only a span of two or more words.
    assert "F. Scott Fitzgerald" in names("where did scott fitzgerald go to college?")


def test_a_common_word_is_not_read_as_a_shortened_name():
    index = NameIndex(
        names=[("m.1", "Walt Whitman"), ("m.2", "Bon Jovi Live"), ("m.3", "Mae Whitman")],
        degrees={"m.1": 9, "m.3": 3},
    )
    assert [h.id for h in index.find_mentions("Who influenced Whitman?")] == ["m.1", "m.3"]
    assert index.find_mentions("where did whitman live?") == []  # lower case, one word
    assert index.find_mentions("Live shows of which band?") == []  # a capital that only starts the question


def test_a_place_adjective_or_a_misspelt_name_standing_alone_is_a_mention(fbqa_kb):
    def names(question):
        return [h.name for h in fbqa_kb.find_mentions(question)]

    assert "Chile" in names("What language do Chilean people speak that is used on Sesame Street?")
    assert "Slovakia" in names("Which country that borders Skovakia is Kiev the capital of?")
    assert "Jerusalem" in names("What religion has a sacred site in Jesusalem?")


def test_near_spellings_are_not_read_into_common_words_or_other_names():
    index = NameIndex(
        names=[("m.1", "Chile"), ("m.2", "Reggae"), ("m.3", "Bordeaux"), ("m.4", "Slovakia")],
    )
    assert [h.id for h in index.find_mentions("Which Chilean poet won a prize?")] == ["m.1"]
    # One letter off another name, beside a capitalised word: a name the KB lacks.
    assert index.find_mentions("Which team did Reggie Bush play for?") == []
    # In lower case a word one letter off a name is another word.
    assert index.find_mentions("what countries border slovakai and chilean waters?") == []
    assert [h.id for h in index.find_mentions("Which country borders Slovakai?")] == ["m.4"]


def test_a_two_letter_mention_counts_only_as_an_acronym_and_the_index_knows_edge_counts(fbqa_kb):
    usa = "m.09c7w0"
    assert usa in [h.id for h in fbqa_kb.find_mentions("What major US religion has a text named The Bible?")]
    assert usa not in [h.id for h in fbqa_kb.find_mentions("What does the song tell us about religion?")]
    # The degree is the name index's rough popularity: the country has far more edges.
    assert fbqa_kb.degree_of(usa) > 100 > fbqa_kb.degree_of("m.09nqf") > 0  # US dollar
    assert fbqa_kb.degree_of("m.no_such_entity") == 0


def test_name_index_unit_ranking_and_normalisation():
    index = NameIndex(
        names=[("m.1", "Café Müller"), ("m.2", "Cafe Society"), ("m.3", "Muller")],
        aliases=[("m.3", "The Muller"), ("m.9", "alias of an unnamed node")],
        descriptions={"m.1": "a ballet"},
        degrees={"m.2": 5},
    )
    assert normalise("  Café   MÜLLER! ") == "cafe muller"
    assert [h.id for h in index.search("cafe muller")][:1] == ["m.1"]
    assert index.search("cafe muller")[0].description == "a ballet"
    assert index.search("alias of an unnamed node") == []
    assert len(index) == 3


# ----- specs ---------------------------------------------------------------------------
def test_open_kb_caches_per_spec_and_reads_env(monkeypatch, tiny_ttl: Path):
    forget(str(tiny_ttl))
    first = open_kb(str(tiny_ttl))
    assert open_kb(str(tiny_ttl)) is first
    monkeypatch.setenv("KB", str(tiny_ttl))
    assert open_kb() is first
    assert first.spec == str(tiny_ttl)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("/no/such/kb.ttl", "no such file"),
        ("ftp://example.org/sparql", "unsupported"),
        ("  ", "empty KB spec"),
    ],
)
def test_bad_specs_raise_a_clear_spec_error(spec: str, message: str):
    with pytest.raises(KBSpecError, match=message):
        open_kb(spec)


def test_the_demo_spec_opens_the_bundled_kb(demo_kb):
    assert len(demo_kb) > 100
    assert len(demo_kb.names) > 10
