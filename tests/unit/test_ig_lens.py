"""The IG lens (viz.ig_lens, viz.ig_words): reward anatomy, the question's words, restatements
and the selection table, on hand-built trees with made-up NLLs whose values are worked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kb.actions import Action
from kb.observation import Observation
from mcts.search.settings import IGVariant, SearchSettings, Selection
from mcts.search.steps import IGDetail, Step
from mcts.search.trace import load_trace
from mcts.search.tree import Tree
from viz.ig_lens import NO_DETAIL, anatomy, lens_markdown, next_choice, selection_rows, separation
from viz.ig_words import content_stems, heat_markdown, question_words, restatement_lines, restatements

QUESTION = "Who directed Inception?"
PIECES = ("Who", " direct", "ed", " In", "ception", "?")
HISTORY = (
    "Action: SearchNodes(film)\n"
    "Observation: ns:m.demo_inception | Inception (2010 film), directed by Christopher Nolan"
)


def _step() -> Step:
    return Step("th", Action("SearchNodes", "film"), Observation("obs"))


def _scored(tree: Tree, a: float, nlls: tuple[float, ...], *, n: int = 8, history: str = "") -> int:
    """A child of the root scored as the one-pass scorer would: log PPL(H') = a,
    log PPL(H', Q) = (n·a + sum of the question's NLLs) / (n + m)."""
    base = tuple(2.0 for _ in nlls)
    pieces = PIECES[: len(nlls)] if len(nlls) < len(PIECES) else PIECES
    node = tree.add_child(0, _step(), cleaned_history=history)
    node.ppl_history = math.exp(a)
    node.ppl_with_question = math.exp((n * a + sum(nlls)) / (n + len(nlls)))
    node.reward = 1.0
    node.ig_detail = IGDetail(n, nlls, pieces, base)
    return node.id


def test_anatomy_gives_the_terms_worked_by_hand() -> None:
    tree = Tree(QUESTION)
    i = _scored(tree, 2.0, (1.0, 0.5))
    an = anatomy(tree[i], alpha=2.0, beta=10.0)
    assert an is not None
    # n = 8, m = 2, a = 2, q = 0.75, weight = 0.2, x = 0.2 * (2 - 0.75) = 0.25.
    assert (an.n, an.m) == (8, 2)
    assert an.a == pytest.approx(2.0) and an.q == pytest.approx(0.75) and an.q0 == pytest.approx(2.0)
    assert an.weight == pytest.approx(0.2)
    assert an.x() == pytest.approx(0.25)
    assert an.r() == pytest.approx(2 / (1 + math.exp(-2.5)))  # 1.8483
    # Question variants: per-token gains (2 - 1, 2 - 0.5) = (1, 1.5); clipped (1, 1).
    assert an.x(IGVariant.QUESTION) == pytest.approx(1.25)
    assert an.x(IGVariant.QUESTION_CLIPPED) == pytest.approx(1.0)
    assert an.r(IGVariant.QUESTION_CLIPPED) == pytest.approx(2 / (1 + math.exp(-10)))


def test_separation_names_the_history_term_when_the_question_is_no_easier() -> None:
    tree = Tree(QUESTION)
    own = anatomy(tree[_scored(tree, 2.0, (1.0, 0.5))], 2, 10)
    sib = anatomy(tree[_scored(tree, 1.5, (1.0, 0.5))], 2, 10)  # same q, easier history
    line = separation(own, [sib])
    # x 0.25 against 0.2 * (1.5 - 0.75) = 0.15: all of it from a (0.2 * 0.5 = 0.1).
    assert "higher than its siblings'" in line and "+0.1500" in line
    assert "mainly because its history text is harder to predict (a)" in line
    assert "not because the question became easier after its history (q)" in line
    assert "a +0.1000, q +0.0000, w +0.0000" in line


def test_separation_names_the_question_term_when_the_question_became_easier() -> None:
    tree = Tree(QUESTION)
    own = anatomy(tree[_scored(tree, 2.0, (1.0, 0.5))], 2, 10)
    sib = anatomy(tree[_scored(tree, 2.0, (1.5, 1.0))], 2, 10)  # same a, harder question
    line = separation(own, [sib])
    assert "mainly because the question became easier after its history (q)" in line
    assert "not because its history text is harder to predict (a)" in line
    lower = separation(sib, [own])
    assert "lower than its siblings'" in lower and "the question became harder" in lower
    assert separation(own, []) == "No scored sibling to compare with."


def test_sub_word_tokens_merge_into_words_with_summed_gains() -> None:
    words = question_words(PIECES, (1.0, 2.0, 0.5, 3.0, 0.25, 0.0), (1.5, 2.0, 2.0, 4.0, 3.0, 0.5))
    assert [(w.text, w.tokens) for w in words] == [("Who", 1), ("directed", 2), ("Inception?", 3)]
    # gains: 0.5; 0 + 1.5; 1 + 2.75 + 0.5
    assert [w.gain for w in words] == pytest.approx([0.5, 1.5, 4.25])
    # An empty piece (half a character) joins the token that completes it.
    split = question_words(("Wo", " Z", "", "ürich"), (1, 1, 1, 1), (1, 2, 2, 2))
    assert [(w.text, w.tokens) for w in split] == [("Wo", 1), ("Zürich", 3)]
    assert split[1].gain == pytest.approx(3.0)
    with pytest.raises(ValueError):
        question_words(("a",), (1.0,), ())


def test_heat_shades_each_word_and_escapes_markup() -> None:
    pieces = ("Who", " directed", " <b>In", "ception</b>", "?")
    words = question_words(pieces, (1, 1, 1, 1, 1), (2, 1, 0, 1, 1))
    html = heat_markdown(words)
    assert "<b>" not in html and "&lt;b&gt;In" in html
    assert html.count("<span ") == 3
    assert "rgba(22,163,74,0.58)" in html  # "Who": the largest gain, full green
    assert "rgba(220,38,38,0.58)" in html  # "<b>Inception</b>?": the largest loss, full red
    assert "title='+0.00 nats'" in html


def test_restatements_find_words_and_id_fragments() -> None:
    assert content_stems(QUESTION) == {"direct", "incept"}  # "who" is a stop word
    found = restatements(QUESTION, HISTORY)
    assert [r.text for r in found] == ["inception", "Inception", "directed"]
    assert HISTORY[found[0].start : found[0].end] == "inception"  # inside ns:m.demo_inception
    # Case and accents fold; stems meet (director ~ directed); stop words never count.
    assert [r.text for r in restatements("Who DIRECTED Ínception?", "The director of INCEPTIÖN")] == [
        "director",
        "INCEPTIÖN",
    ]
    assert restatements("Who was it?", "who was it") == []
    lines = restatement_lines(HISTORY, found)
    assert lines == [
        "Observation: ns:m.demo\\_<mark>inception</mark> \\| <mark>Inception</mark> (2010 film), "
        "<mark>directed</mark> by Christopher Nolan"
    ]
    assert "&lt;i&gt;" in restatement_lines("<i>inception</i>", restatements(QUESTION, "<i>inception</i>"))[0]


def test_selection_rows_read_the_tree_rules() -> None:
    tree = Tree(QUESTION)
    a, b = _scored(tree, 2.0, (1.0, 0.5)), _scored(tree, 1.5, (1.0, 0.5))
    tree[0].visits = 4
    tree[a].visits, tree[a].value_sum, tree[a].prior = 2, 1.0, 0.6
    tree[b].visits, tree[b].value_sum, tree[b].prior = 1, 0.25, 0.4
    uct = selection_rows(tree, a, SearchSettings(c=1.0))
    # W/N + c * sqrt(ln 4 / N): a 0.5 + 0.8326, b 0.25 + 1.1774
    assert uct[0].explore == pytest.approx(math.sqrt(math.log(4) / 2))
    assert uct[1].score == pytest.approx(0.25 + math.sqrt(math.log(4)))
    assert next_choice(uct) == b
    puct = selection_rows(tree, a, SearchSettings(selection=Selection.PUCT, c_puct=1.5))
    # c_puct * P * sqrt(N_parent) / (1 + N): a 1.5 * 0.6 * 2 / 3 = 0.6, b 1.5 * 0.4 * 2 / 2 = 0.6
    assert [r.explore for r in puct] == pytest.approx([0.6, 0.6])
    assert next_choice(puct) == a  # W/N 0.5 + 0.6 beats 0.25 + 0.6
    tree[b].terminal = True
    assert next_choice(selection_rows(tree, a, SearchSettings())) == a  # a closed sibling is skipped
    assert selection_rows(tree, 0, SearchSettings()) == []


def test_lens_markdown_shows_every_section_or_says_what_is_missing() -> None:
    tree = Tree(QUESTION)
    a = _scored(tree, 2.0, (1.0, 0.5), history=HISTORY)
    _scored(tree, 1.5, (1.0, 0.5))
    old = tree.add_child(0, _step())
    old.reward, old.ppl_history, old.ppl_with_question = 1.2, 5.0, 4.0  # scored, no detail
    unscored = tree.add_child(0, _step())
    text = lens_markdown(tree, a, SearchSettings())
    for part in (
        "Reward anatomy",
        "| x paper | 0.2500",
        "mainly because",
        "The question lit",
        "Selection among",
    ):
        assert part in text
    assert "**Restatements found:** 3 words" in text
    assert NO_DETAIL in lens_markdown(tree, old.id, SearchSettings())
    assert "has not been scored" in lens_markdown(tree, unscored.id, SearchSettings())
    assert lens_markdown(tree, 0, SearchSettings()) == ""


def test_a_version_2_trace_gets_the_one_line_instead_of_the_lens() -> None:
    trace = load_trace(Path(__file__).resolve().parents[1] / "data" / "trace_v2_fast_inception.json")
    tree = trace.to_tree()
    scored = next(n.id for n in tree.nodes if n.reward is not None)
    text = lens_markdown(tree, scored, trace.settings)
    assert NO_DETAIL in text and "Reward anatomy" not in text


def test_markup_anywhere_in_the_lens_is_escaped() -> None:
    bad = "<form data-inj><b data-inj>Inception</b></form>"
    tree = Tree(f"Who directed {bad}?")
    a = _scored(tree, 2.0, (1.0, 0.5), history=f"Observation: {bad} directed")
    _scored(tree, 1.5, (1.0, 0.5))
    tree[a].ig_detail = IGDetail(8, (1.0, 0.5), ("Who", f" {bad}"), (2.0, 2.0))
    text = lens_markdown(tree, a, SearchSettings())
    assert "Restatements found:** 8" in text  # form, data, inj twice each, Inception, directed
    for tag in ("<form", "<b "):
        assert tag not in text
    assert "&lt;form data-inj&gt;" in text
