"""History cleaning: each rule removes exactly its part; segments rebuild the raw text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb.actions import Action
from kb.observation import Observation
from mcts.search.cleaning import (
    DEFAULT_RULES,
    RULE_INFO,
    CleaningRule,
    clean_history,
    raw_history,
)
from mcts.search.steps import Step

QUESTION = "Where was the director of Inception born?"
SPARQL_1 = 'SELECT ?e WHERE { ?e ns:type.object.name "Christopher Nolan"@en }'
SPARQL_2 = "SELECT ?x WHERE { ns:m.04f9z ns:people.person.place_of_birth ?x }"


def _history() -> list[Step]:
    """A history that restates the question in its thoughts and SearchNodes argument."""
    return [
        Step(
            thought=f"The question is: {QUESTION} I should look up Inception.",
            action=Action("SearchNodes", "Inception"),
            observation=Observation('"Inception" | Description: 2010 science fiction film...'),
        ),
        Step(
            thought="Find who directed Inception.",
            action=Action("SearchGraphPatterns", SPARQL_1, semantic="director of Inception"),
            observation=Observation("(?e, film.director.film, Inception)"),
        ),
        Step(
            thought="Now where was the director born.",
            action=Action("ExecuteSPARQL", SPARQL_2),
            observation=Observation("London"),
        ),
    ]


def _rules_without(rule: CleaningRule) -> frozenset[CleaningRule]:
    return DEFAULT_RULES - {rule}


def test_segments_rebuild_the_raw_history_exactly() -> None:
    steps = _history()
    for rules in [DEFAULT_RULES, frozenset(), *(_rules_without(r) for r in CleaningRule)]:
        cleaned = clean_history(steps, rules)
        assert cleaned.raw == raw_history(steps)
        assert cleaned.text == "".join(s.text for s in cleaned.segments if s.removed_by is None)


def test_default_rules_give_the_documented_layout() -> None:
    cleaned = clean_history(_history())
    assert cleaned.text == (
        "Action: SearchNodes()\n"
        f'Action: SearchGraphPatterns("{SPARQL_1.replace(chr(34), chr(92) + chr(34))}", semantic="director of Inception")\n'
        f'Action: ExecuteSPARQL("{SPARQL_2}")\n'
        "Observation: London"
    )


def test_drop_thoughts_removes_every_thought_restating_the_question() -> None:
    steps = _history()
    assert QUESTION in clean_history(steps, _rules_without(CleaningRule.DROP_THOUGHTS)).text
    cleaned = clean_history(steps)
    assert "Thought:" not in cleaned.text
    assert QUESTION not in cleaned.text
    assert len(cleaned.removed_by(CleaningRule.DROP_THOUGHTS)) == 3


def test_mask_search_nodes_keeps_only_the_tool_name() -> None:
    steps = _history()[:1]
    on = clean_history(steps)
    assert on.text.startswith("Action: SearchNodes()\n")
    assert "Inception" not in on.text.split("Observation:")[0]
    assert on.removed_by(CleaningRule.MASK_SEARCH_NODES) == ['"Inception"']
    off = clean_history(steps, _rules_without(CleaningRule.MASK_SEARCH_NODES))
    assert 'Action: SearchNodes("Inception")' in off.text


def test_structured_arguments_are_kept_in_full_and_dropped_when_switched_off() -> None:
    steps = _history()
    on = clean_history(steps)
    assert "ns:people.person.place_of_birth" in on.text
    assert 'semantic="director of Inception"' in on.text
    assert on.removed_by(CleaningRule.KEEP_STRUCTURED_ARGUMENTS) == []
    off = clean_history(steps, _rules_without(CleaningRule.KEEP_STRUCTURED_ARGUMENTS))
    assert "Action: SearchGraphPatterns()\nAction: ExecuteSPARQL()\n" in off.text
    assert "SELECT" not in off.text
    assert len(off.removed_by(CleaningRule.KEEP_STRUCTURED_ARGUMENTS)) == 2


def test_last_observation_only_drops_earlier_observations() -> None:
    steps = _history()
    on = clean_history(steps)
    assert on.text.count("Observation:") == 1
    assert on.text.endswith("Observation: London")
    assert "science fiction" not in on.text
    off = clean_history(steps, _rules_without(CleaningRule.LAST_OBSERVATION_ONLY))
    assert off.text.count("Observation:") == 3
    assert "Observation: (?e, film.director.film, Inception)\n" in off.text


def test_keeping_structured_arguments_alone_keeps_the_raw_history() -> None:
    steps = _history()
    cleaned = clean_history(steps, rules={CleaningRule.KEEP_STRUCTURED_ARGUMENTS})
    assert cleaned.text == raw_history(steps)
    assert all(s.removed_by is None for s in cleaned.segments)


def test_parse_error_step_is_cleaned_without_crashing() -> None:
    bad = Step(
        thought="",
        action=None,
        observation=Observation.error("could not parse an action"),
        raw_text=f"I think {QUESTION} Action: Search(",
    )
    steps = [*_history()[:1], bad]
    cleaned = clean_history(steps)
    assert cleaned.raw == raw_history(steps)
    assert QUESTION not in cleaned.text  # the free text goes with the thoughts
    assert cleaned.text.endswith("Action: \nObservation: Error: could not parse an action")
    kept = clean_history(steps, rules=())
    assert QUESTION in kept.text


def test_empty_history_is_empty() -> None:
    cleaned = clean_history([])
    assert cleaned.text == "" and cleaned.segments == ()
    assert raw_history([]) == ""


def test_done_and_search_types_keep_their_text() -> None:
    steps = [
        Step("", Action("SearchTypes", "film director"), Observation("film.director")),
        Step("Done.", Action("Done"), Observation("finished")),
    ]
    assert (
        clean_history(steps).text
        == 'Action: SearchTypes("film director")\nAction: Done()\nObservation: finished'
    )


def test_rules_accept_their_string_values_and_have_ui_text() -> None:
    steps = _history()
    by_value = clean_history(steps, [r.value for r in DEFAULT_RULES])  # type: ignore[misc]
    assert by_value == clean_history(steps)
    assert set(RULE_INFO) == set(CleaningRule)
    assert all(info.label and info.explanation for info in RULE_INFO.values())
    with pytest.raises(ValueError):
        clean_history(steps, ["no_such_rule"])  # type: ignore[list-item]


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
_action = st.one_of(
    st.none(),
    st.builds(
        Action,
        st.sampled_from(["SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes", "Done"]),
        _text,
        _text,
    ),
)


@given(
    st.lists(st.builds(Step, _text, _action, st.builds(Observation, _text), _text), max_size=4),
    st.frozensets(st.sampled_from(list(CleaningRule))),
)
def test_any_history_and_rule_set_round_trips(steps: list[Step], rules: frozenset[CleaningRule]) -> None:
    cleaned = clean_history(steps, rules, question=QUESTION)  # the mask rule needs it
    assert cleaned.raw == raw_history(steps)
    assert len(cleaned.text) <= len(cleaned.raw)
