"""Cutting a cleaned history into pieces of evidence, and removing one: spans, order,
the bound and its group labels, tidy removal, empty, Unicode, huge and unparsable input."""

from __future__ import annotations

import pytest

from kb.actions import Action
from kb.observation import Observation
from mcts.search.cleaning import CleaningRule, clean_history
from mcts.search.history_segments import HistorySegment, history_segments, without_segment
from mcts.search.steps import Step

SGP = 'SELECT ?e WHERE { ?e ns:type.object.name "Inception"@en }'
SPARQL = "SELECT DISTINCT ?x WHERE { ?x ns:film.director.film ns:m.demo_inception . }"
STEPS = [
    Step(
        "Find Inception.",
        Action("SearchNodes", "Inception"),
        Observation('"Inception" | Description: 2010 film'),
    ),
    Step(
        "Relations.",
        Action("SearchGraphPatterns", SGP, semantic="Who directed"),
        Observation('(?e, film.film.directed_by, "Christopher Nolan")\n("Tom Hardy", film.actor.film, ?e)'),
    ),
    Step(
        "Run it.",
        Action("ExecuteSPARQL", SPARQL),
        Observation('["Christopher Nolan", "Washington, D.C.", "1970-07-30"^^xsd:date, ns:m.0abc]'),
    ),
]
HISTORY = clean_history(STEPS).text  # the paper's four rules: arguments kept, last observation only


def _texts(history: str, segments: list[HistorySegment]) -> list[str]:
    return [history[s.start : s.end] for s in segments]


def _assert_well_placed(history: str, segments: list[HistorySegment]) -> None:
    """In text order, never overlapping, never empty, no label or surrounding space inside."""
    for a, b in zip(segments, segments[1:], strict=False):
        assert a.end <= b.start
    for seg in segments:
        text = history[seg.start : seg.end]
        assert 0 <= seg.start < seg.end <= len(history) and text == text.strip()
        assert not text.startswith(("Action: ", "Observation: ", "Thought: ", "semantic="))
        assert seg.kind in ("argument", "semantic", "observation", "value", "group") and seg.label


def test_each_argument_phrase_and_value_is_its_own_segment() -> None:
    segments = history_segments(HISTORY)
    _assert_well_placed(HISTORY, segments)
    assert _texts(HISTORY, segments) == [
        '"SELECT ?e WHERE { ?e ns:type.object.name \\"Inception\\"@en }"',
        '"Who directed"',
        f'"{SPARQL}"',
        '"Christopher Nolan"',
        '"Washington, D.C."',  # the comma inside the name splits nothing
        '"1970-07-30"^^xsd:date',
        "ns:m.0abc",
    ]
    assert [s.kind for s in segments] == [
        "argument",
        "semantic",
        "argument",
        "value",
        "value",
        "value",
        "value",
    ]
    assert segments[0].label == "SPARQL argument of step 2"
    assert segments[1].label == 'semantic phrase "Who directed" (step 2)'
    assert segments[3].label == 'value "Christopher Nolan"'
    assert segments[5].label == 'value "1970-07-30"'


def test_observation_lines_are_segments_and_every_observation_counts_when_kept() -> None:
    rules = {CleaningRule.DROP_THOUGHTS, CleaningRule.KEEP_STRUCTURED_ARGUMENTS}
    history = clean_history(STEPS, rules).text
    segments = history_segments(history)
    _assert_well_placed(history, segments)
    texts = _texts(history, segments)
    assert texts[0] == '"Inception"' and segments[0].label == 'SearchNodes argument "Inception" (step 1)'
    assert texts[1] == '"Inception" | Description: 2010 film'
    assert segments[1].label.startswith("line 1 of the observation of step 1")
    assert '("Tom Hardy", film.actor.film, ?e)' in texts
    assert sum(s.kind == "value" for s in segments) == 4


def test_removing_a_segment_keeps_the_text_well_formed() -> None:
    by_text = {HISTORY[s.start : s.end]: s for s in history_segments(HISTORY)}
    semantic = without_segment(HISTORY, by_text['"Who directed"'])
    assert f'SearchGraphPatterns("{SGP.replace(chr(34), chr(92) + chr(34))}")' in semantic
    query = without_segment(HISTORY, by_text[f'"{SPARQL}"'])
    assert "Action: ExecuteSPARQL()\n" in query
    sgp_query = [s for s in by_text.values() if s.label == "SPARQL argument of step 2"][0]
    assert 'SearchGraphPatterns(semantic="Who directed")' in without_segment(HISTORY, sgp_query)
    first = without_segment(HISTORY, by_text['"Christopher Nolan"'])
    assert first.endswith('Observation: ["Washington, D.C.", "1970-07-30"^^xsd:date, ns:m.0abc]')
    last = without_segment(HISTORY, by_text["ns:m.0abc"])
    assert last.endswith('Observation: ["Christopher Nolan", "Washington, D.C.", "1970-07-30"^^xsd:date]')
    # Everything else is untouched.
    assert last.replace('"1970-07-30"^^xsd:date]', '"1970-07-30"^^xsd:date, ns:m.0abc]') == HISTORY


def test_removing_an_observations_lines_and_its_last_value() -> None:
    history = 'Action: SearchNodes()\nObservation: line one\nline two\nAction: Done()\nObservation: ["only"]'
    segments = history_segments(history)
    assert _texts(history, segments) == ["line one", "line two", '"only"']
    assert without_segment(history, segments[0]) == (
        'Action: SearchNodes()\nObservation: line two\nAction: Done()\nObservation: ["only"]'
    )
    assert without_segment(history, segments[1]) == (
        'Action: SearchNodes()\nObservation: line one\nAction: Done()\nObservation: ["only"]'
    )
    # The only value: the emptied list and its Observation line go.
    assert (
        without_segment(history, segments[2])
        == "Action: SearchNodes()\nObservation: line one\nline two\nAction: Done()"
    )
    grouped = history_segments(history, max_segments=2)
    assert grouped[0].label == "lines 1-2 of the observation of step 1"
    assert (
        without_segment(history, grouped[0]) == 'Action: SearchNodes()\nAction: Done()\nObservation: ["only"]'
    )


def test_the_bound_merges_neighbours_inside_one_observation_first() -> None:
    names = [f'"Person {i}"' for i in range(1, 61)]
    history = f'Action: ExecuteSPARQL("{SPARQL}")\nObservation: [{", ".join(names)}] (80 distinct results; first 60 shown)'
    atoms = history_segments(history, max_segments=1000)
    assert len(atoms) == 62 and atoms[-1].label == "result count of the observation"
    segments = history_segments(history, max_segments=12)
    _assert_well_placed(history, segments)
    assert len(segments) == 12
    assert segments[0].kind == "argument"  # alone in its action: never merged with a value
    groups = [s for s in segments if s.kind == "group"]
    assert groups[0].label == "values 1-6 of the observation"
    assert groups[-1].label == "values 57-60 and the result count of the observation"
    # The groups cover every piece: each atom lies inside exactly one segment.
    for atom in atoms:
        assert sum(s.start <= atom.start and atom.end <= s.end for s in segments) == 1
    # Removing a group removes its values and their commas, nothing else.
    middle = without_segment(history, groups[1])
    assert '"Person 6", "Person 13"' in middle and '"Person 12"' not in middle
    assert history_segments(history, max_segments=1)[0].label == "arguments and observations of step 1"
    assert without_segment(history, history_segments(history, max_segments=1)[0]) == "Action: ExecuteSPARQL()"


def test_more_containers_than_segments_merge_whole_steps() -> None:
    history = "\n".join(f'Action: SearchTypes("type {i}")\nObservation: film.type_{i}' for i in range(1, 31))
    segments = history_segments(history, max_segments=7)
    _assert_well_placed(history, segments)
    assert len(segments) == 7 and all(s.kind == "group" for s in segments)
    assert segments[0].label.startswith("arguments and observations of steps 1-")
    removed = without_segment(history, segments[0])
    assert removed.startswith("Action: SearchTypes()\nAction: SearchTypes()")


def test_thoughts_and_unparsable_lines_are_pieces_of_their_own() -> None:
    history = "Thought: look for the film\nAction: SearchNodes(Inception\nsome stray text\nAction: Done()"
    segments = history_segments(history)
    _assert_well_placed(history, segments)
    assert _texts(history, segments) == ["look for the film", "SearchNodes(Inception", "some stray text"]
    assert [s.label for s in segments[:2]] == ["thought of step 1", "action text of step 1"]
    assert (
        without_segment(history, segments[1]) == "Thought: look for the film\nsome stray text\nAction: Done()"
    )


def test_empty_and_blank_histories_have_no_segments() -> None:
    assert history_segments("") == []
    assert history_segments("\n  \n") == []
    assert history_segments("Action: SearchNodes()\nAction: Done()") == []


def test_unicode_spans_are_character_offsets() -> None:
    history = 'Action: SearchNodes()\nObservation: ["Zürich", "東京 🚀", "Москва"]'
    segments = history_segments(history)
    assert _texts(history, segments) == ['"Zürich"', '"東京 🚀"', '"Москва"']
    assert segments[1].label == 'value "東京 🚀"'
    assert without_segment(history, segments[1]).endswith('["Zürich", "Москва"]')


def test_a_huge_observation_stays_bounded() -> None:
    names = ", ".join(f'"Name {i} {"x" * 20}"' for i in range(5000))  # ~150,000 characters
    history = f'Action: ExecuteSPARQL("{SPARQL}")\nObservation: [{names}]\n' + "free line\n" * 2000
    segments = history_segments(history)
    _assert_well_placed(history, segments)
    assert len(segments) == 40
    removed = without_segment(history, segments[-1])
    assert len(removed) < len(history) and removed.startswith("Action: ExecuteSPARQL(")


def test_an_unclosed_list_or_quote_is_one_line() -> None:
    history = 'Action: ExecuteSPARQL("q")\nObservation: ["a very long name that was cut...]'
    segments = history_segments(history)
    assert _texts(history, segments)[1] == '["a very long name that was cut...]'
    assert segments[1].kind == "observation"


def test_bad_arguments_get_a_clear_message() -> None:
    with pytest.raises(ValueError, match="max_segments"):
        history_segments(HISTORY, max_segments=0)
    with pytest.raises(ValueError, match="not inside"):
        without_segment("short", HistorySegment(2, 50, "value", "x"))
    with pytest.raises(ValueError, match="no piece"):
        without_segment(HISTORY, HistorySegment(0, 7, "value", "x"))  # "Action:" holds no piece
