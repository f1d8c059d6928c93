"""Tests for kb.action_parser: model text -> Action, or one clear ActionParseError line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.action_parser import parse_action, parse_thought_action
from kb.actions import TOOL_NAMES, Action, ActionParseError

SPARQL = 'SELECT ?e WHERE { ?e ns:type.object.name "X"@en }'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"""Action: SearchGraphPatterns('{SPARQL}', semantic="born in")""",
            Action("SearchGraphPatterns", SPARQL, "born in"),
        ),
        (
            f"SearchGraphPatterns(sparql=\"{SPARQL.replace(chr(34), chr(92) + chr(34))}\", semantic='born in')",
            Action("SearchGraphPatterns", SPARQL, "born in"),
        ),
        (f"SearchGraphPatterns('''{SPARQL}''')", Action("SearchGraphPatterns", SPARQL)),
        (
            'ExecuteSPARQL("""SELECT ?x WHERE {\n  ?x ns:p "a" .\n}""")',
            Action("ExecuteSPARQL", 'SELECT ?x WHERE {\n  ?x ns:p "a" .\n}'),
        ),
        ("ExecuteSPARQL(query='ASK { ?x ?p ?y }')", Action("ExecuteSPARQL", "ASK { ?x ?p ?y }")),
        ('SearchNodes("Barack Obama")', Action("SearchNodes", "Barack Obama")),
        ("SearchNodes(name='Barack Obama',)", Action("SearchNodes", "Barack Obama")),
        ("  Action :  SearchNodes ( 'Lou Seal' )  ", Action("SearchNodes", "Lou Seal")),
        ("SearchNodes('it\\'s')", Action("SearchNodes", "it's")),
        ('SearchNodes("say \\"hi\\"")', Action("SearchNodes", 'say "hi"')),
        ("SearchNodes('Lou's Seal')", Action("SearchNodes", "Lou's Seal")),
        ('SearchNodes("a\\\\b\\nc")', Action("SearchNodes", "a\\b\nc")),
        (
            r'ExecuteSPARQL("SELECT ?x WHERE { ?x ?p ?y FILTER regex(?y, \"\d+\") }")',
            Action("ExecuteSPARQL", r'SELECT ?x WHERE { ?x ?p ?y FILTER regex(?y, "\d+") }'),
        ),
        ("SearchTypes(query='film director')", Action("SearchTypes", "film director")),
        ("Done()", Action("Done")),
        ("Thought: the team. Action: SearchNodes('Lou Seal')", Action("SearchNodes", "Lou Seal")),
        ("Action 2: SearchTypes('sports team')", Action("SearchTypes", "sports team")),
        ("**Action:** `SearchNodes('X')`", Action("SearchNodes", "X")),
        ("Action: Done", Action("Done")),
        ('`SearchNodes("X")`', Action("SearchNodes", "X")),
        ("searchnodes('X')", Action("SearchNodes", "X")),
        ('SearchNodes("")', Action("SearchNodes", "")),
        (
            "SearchNodes('X') because it is the topic entity.\nObservation: \"X\" | Description: ...",
            Action("SearchNodes", "X"),
        ),
        (
            "Thought: find the team first.\nAction: SearchNodes('Lou Seal')\nObservation: none\n"
            "Thought: again\nAction: SearchNodes('other')",
            Action("SearchNodes", "Lou Seal"),
        ),
    ],
)
def test_parses_model_action_text(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("Action: FindStuff('x')", "unknown tool 'FindStuff'"),
        ("Action: SearchNodes()", "missing its argument"),
        ("SearchGraphPatterns(semantic='born')", "missing its argument"),
        ("SearchNodes('abc", "unterminated string"),
        ('ExecuteSPARQL("""SELECT ?x', "unterminated string"),
        ("SearchNodes(abc)", "must be a quoted string"),
        ("SearchNodes(42)", "expected a quoted string"),
        ("SearchNodes('a', 'b')", "too many arguments"),
        ("SearchNodes(colour='a')", "unknown argument 'colour'"),
        ("SearchNodes('a', name='b')", "given twice"),
        ("SearchNodes('a'", "never closed"),
        ("SearchNodes", "expected '('"),
        ("Thought: I am not sure what to do.", "no tool call found"),
    ],
)
def test_bad_action_text_gives_one_clear_line(text: str, fragment: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_parse_thought_action_splits_thought_and_action() -> None:
    thought, action = parse_thought_action(
        "Thought: The mascot's team is needed.\nIt plays baseball.\nAction: SearchNodes('Lou Seal')\n"
    )
    assert thought == "The mascot's team is needed.\nIt plays baseball."
    assert action == Action("SearchNodes", "Lou Seal")


def test_parse_thought_action_without_thought_or_label() -> None:
    assert parse_thought_action("Action: Done()") == ("", Action("Done"))
    assert parse_thought_action("SearchNodes('X')") == ("", Action("SearchNodes", "X"))
    assert parse_thought_action("Thought: look it up\nSearchNodes('X')") == (
        "look it up",
        Action("SearchNodes", "X"),
    )


def test_parse_thought_action_raises_on_bad_action() -> None:
    with pytest.raises(ActionParseError):
        parse_thought_action("Thought: hmm\nAction: SearchNodes(")


_actions = st.one_of(
    st.just(Action("Done")),
    st.builds(Action, st.sampled_from([t for t in TOOL_NAMES if t != "Done"]), st.text()),
    st.builds(Action, st.just("SearchGraphPatterns"), st.text(), st.text()),
)


@settings(max_examples=400, deadline=None)
@given(_actions)
def test_render_round_trips_for_any_action(action: Action) -> None:
    assert parse_action(action.render()) == action


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80), _actions)
def test_round_trip_after_a_thought(thought: str, action: Action) -> None:
    clean = thought.replace("Action", "").replace("action", "")
    text = f"Thought: {clean}\nAction: {action.render()}\nObservation: whatever"
    assert parse_action(text) == action
