"""Restatement detection (mcts.search.restatement): which words and id fragments of a text
copy a content word of the question."""

from __future__ import annotations

from mcts.search import restatement as rs
from viz import ig_words

QUESTION = "Who directed Inception?"


def test_stems_fold_case_and_accents_and_drop_simple_suffixes() -> None:
    assert rs.fold("Ünïcödé") == "unicode"
    assert {rs.stem(w) for w in ("directed", "director", "direction", "directors")} == {"direct"}
    assert rs.stem("places") == rs.stem("place") == "plac"
    assert rs.stem("sing") == "sing"  # a stem keeps at least three letters
    assert rs.content_stems("Who was the director of Inception?") == {"direct", "incept"}


def test_ids_are_split_on_underscores_dots_and_colons() -> None:
    text = "ns:m.demo_inception ns:film.film.directed_by ?x"
    found = rs.restatements(QUESTION, text)
    assert [(f.text, f.stem) for f in found] == [("inception", "incept"), ("directed", "direct")]
    assert [text[f.start : f.end] for f in found] == ["inception", "directed"]


def test_stop_words_short_fragments_and_other_words_are_not_restatements() -> None:
    assert rs.restatements("Who was it in?", "who was it in") == []
    assert rs.restatements(QUESTION, "ns:m.0abc Christopher Nolan film.film.starring") == []
    assert rs.restatements("", "Inception") == []


def test_find_restatements_takes_precomputed_stems() -> None:
    stems = rs.content_stems(QUESTION)
    assert rs.find_restatements(stems, "The DIRECTOR") == rs.restatements(QUESTION, "The DIRECTOR")


def test_viz_ig_words_re_exports_the_same_functions() -> None:
    assert ig_words.restatements is rs.restatements
    assert ig_words.Restatement is rs.Restatement
    assert ig_words.content_stems is rs.content_stems
