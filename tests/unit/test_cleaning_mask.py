"""The MASK_RESTATEMENTS cleaning rule: off by default; when on, every restated word inside
the arguments it reads becomes the mask, tagged so the raw/cleaned view shows it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb.actions import Action
from kb.observation import Observation
from mcts.search.cleaning import (
    DEFAULT_RULES,
    MASK,
    RULE_INFO,
    CleaningRule,
    clean_history,
    raw_history,
)
from mcts.search.restatement import content_stems, fold, stem
from mcts.search.steps import Step

QUESTION = "Who directed Inception?"
MASKING = DEFAULT_RULES | {CleaningRule.MASK_RESTATEMENTS}


def _history() -> list[Step]:
    return [
        Step("Look up Inception.", Action("SearchNodes", "Inception"), Observation('"Inception" | film')),
        Step(
            "Who directed it?",
            Action(
                "SearchGraphPatterns",
                'SELECT ?e WHERE { ?e ns:name "Inception"@en }',
                semantic="Who directed",
            ),
            Observation("(?e, film.film.directed_by, Nolan)"),
        ),
        Step("Types.", Action("SearchTypes", "inception film"), Observation("film.film")),
        Step(
            "Run it.",
            Action(
                "ExecuteSPARQL",
                "SELECT ?director WHERE { ns:m.demo_inception ns:film.film.directed_by ?director }",
            ),
            Observation('["Christopher Nolan"] directed Inception'),
        ),
    ]


def test_the_default_rules_are_the_papers_four_without_the_mask() -> None:
    assert CleaningRule.MASK_RESTATEMENTS not in DEFAULT_RULES
    assert len(DEFAULT_RULES) == 4
    info = RULE_INFO[CleaningRule.MASK_RESTATEMENTS]
    assert info.label and info.explanation  # the lab lists it with the others
    assert clean_history(_history()).removed_by(CleaningRule.MASK_RESTATEMENTS) == []


def test_masking_replaces_restated_words_in_arguments_only() -> None:
    cleaned = clean_history(_history(), MASKING, question=QUESTION)
    text = cleaned.text
    assert 'SearchGraphPatterns("SELECT ?e WHERE { ?e ns:name \\"_\\"@en }", semantic="Who _")' in text
    assert 'SearchTypes("_ film")' in text
    assert 'ExecuteSPARQL("SELECT ?_ WHERE { ns:m.demo__ ns:film.film.__by ?_ }")' in text
    # Observations and the SearchNodes call (its own rule) are not the mask's business.
    assert text.endswith('Observation: ["Christopher Nolan"] directed Inception')
    assert "Action: SearchNodes()" in text
    masked = cleaned.removed_by(CleaningRule.MASK_RESTATEMENTS)
    assert masked == ["Inception", "directed", "inception", "director", "inception", "directed", "director"]


def test_masked_segments_carry_the_mask_and_rebuild_the_raw_history() -> None:
    steps = _history()
    cleaned = clean_history(steps, MASKING, question=QUESTION)
    assert cleaned.raw == raw_history(steps)
    for seg in cleaned.segments:
        if seg.removed_by is CleaningRule.MASK_RESTATEMENTS:
            assert seg.replacement == MASK
        else:
            assert seg.replacement == ""
    rebuilt = "".join(s.text if s.removed_by is None else s.replacement for s in cleaned.segments)
    assert rebuilt == cleaned.text


def test_without_the_question_the_mask_refuses_and_the_other_rules_do_not_need_it() -> None:
    with pytest.raises(ValueError, match="needs the question"):
        clean_history(_history(), MASKING)
    assert clean_history(_history(), DEFAULT_RULES).text == clean_history(_history(), question=QUESTION).text


def test_semantic_keyword_is_not_masked_even_if_the_question_says_semantic() -> None:
    step = Step("t", Action("SearchGraphPatterns", "SELECT ?e", semantic="semantic web"), Observation("o"))
    text = clean_history([step], MASKING, question="What is the semantic web?").text
    assert 'SearchGraphPatterns("SELECT ?e", semantic="_ _")' in text


def test_dropped_structured_arguments_stay_dropped_with_the_mask_on() -> None:
    rules = MASKING - {CleaningRule.KEEP_STRUCTURED_ARGUMENTS}
    cleaned = clean_history(_history(), rules, question=QUESTION)
    assert "ExecuteSPARQL()" in cleaned.text and "SearchGraphPatterns()" in cleaned.text
    assert cleaned.removed_by(CleaningRule.MASK_RESTATEMENTS) == ["inception"]  # SearchTypes only


def test_the_shipped_demo_trace_is_masked_with_its_own_question() -> None:
    """Real data: the shipped Fast MCTS trace's SPARQL spells the entity's name in its ids."""
    from pathlib import Path

    from mcts.search.trace import load_trace

    tree = load_trace(Path("examples/traces/fast-inception.json")).to_tree()
    deepest = max(tree.nodes[1:], key=lambda n: n.depth)
    plain = clean_history(tree.steps(deepest.id), question=tree.question).text
    masked = clean_history(tree.steps(deepest.id), MASKING, question=tree.question).text
    assert "demo_inception" in plain or "Inception" in plain
    assert "demo_inception" not in masked and 'semantic="Who _"' in masked


_text = st.text(alphabet=st.sampled_from('abcdeINCEPTION _.:"\\ ?ü'), max_size=30)
_action = st.builds(
    Action,
    st.sampled_from(["SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes", "Done"]),
    _text,
    _text,
)


@given(st.lists(st.builds(Step, _text, _action, st.builds(Observation, _text)), max_size=3), _text)
def test_any_masked_history_round_trips_and_masks_only_restatements(steps: list[Step], question: str) -> None:
    cleaned = clean_history(steps, MASKING, question=question)
    assert cleaned.raw == raw_history(steps)
    assert len(cleaned.text) <= len(clean_history(steps, question=question).text)
    stems = content_stems(question)
    for seg in cleaned.segments:
        if seg.removed_by is CleaningRule.MASK_RESTATEMENTS:
            assert seg.replacement == MASK and stem(fold(seg.text)) in stems


def _shipped_tree():  # noqa: ANN202 - a Tree
    from pathlib import Path

    from mcts.search.trace import load_trace

    return load_trace(Path("examples/traces/fast-inception.json"))


def test_rescoring_with_the_mask_passes_each_tree_its_question() -> None:
    """The re-score path (the lab's) masks with the tree's own question; the search's own
    loop does the same (covered by `mcts run --rules ...,mask_restatements`)."""
    from mcts.search.rescore import rescore_tree
    from tests.toy_world import ToyScorer

    trace = _shipped_tree()
    tree = trace.to_tree()
    new, _ = rescore_tree(tree, ToyScorer(), trace.settings, cleaning_rules=MASKING)
    changed = [n for n in new.nodes[1:] if "demo__" in n.cleaned_history]
    assert changed and all("demo_inception" not in n.cleaned_history for n in new.nodes[1:])


def test_the_raw_cleaned_view_marks_masked_words_and_names_the_rule() -> None:
    from viz.panels import history_html

    tree = _shipped_tree().to_tree()
    deepest = max(tree.nodes[1:], key=lambda n: n.depth)
    html = history_html(tree, deepest.id, MASKING)
    assert "masked as &#x27;_&#x27; by: Mask restated words" in html
    assert "masked as" not in history_html(tree, deepest.id, DEFAULT_RULES)


def test_the_cli_and_the_lab_accept_the_rule_by_name() -> None:
    from mcts.cli.main import _rules
    from ui.forms import parse_rules

    assert _rules("drop_thoughts,mask_restatements") == {
        CleaningRule.DROP_THOUGHTS,
        CleaningRule.MASK_RESTATEMENTS,
    }
    assert CleaningRule.MASK_RESTATEMENTS in parse_rules([r.value for r in MASKING])


def test_a_search_with_the_mask_scores_masked_histories() -> None:
    """The search loop passes its question: every node it stores is cleaned with the mask."""
    from mcts.search.loop import Search
    from mcts.search.settings import Method, SearchSettings
    from tests.toy_world import QUESTION as TOY_QUESTION
    from tests.toy_world import toy_world

    policy, scorer, tools = toy_world()
    search = Search(
        TOY_QUESTION, SearchSettings(method=Method.FAST, rounds=2), policy=policy, scorer=scorer, tools=tools,
        cleaning_rules=MASKING,
    )  # fmt: skip
    for _ in search.run():
        pass
    nodes = search.tree.nodes[1:]
    assert nodes
    for node in nodes:
        expected = clean_history(search.tree.steps(node.id), MASKING, question=TOY_QUESTION).text
        assert node.cleaned_history == expected
    assert any("ns:m._ ns:film.film." in n.cleaned_history for n in nodes)
    assert not any("inception" in n.cleaned_history for n in nodes)
