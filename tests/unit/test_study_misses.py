"""`python -m mcts study misses`: each lost answer named by the step that went wrong, read off
the final query against the gold record, and counted per kind of question."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.studies.misses import kind_of_miss, query_names
from tests.unit.test_study_scorers import _row, _write

NS = "http://rdf.freebase.com/ns/"
RECORD = {
    "topic_entities": [{"mid": "m.01p1v", "name": "Chile"}],
    "path": ["location.country.languages_spoken"],
}


def _query(entity: str, relation: str) -> str:
    return f"SELECT ?x WHERE {{ <{NS}{entity}> <{NS}{relation}> ?x . }}"


def test_each_miss_is_named_by_the_step_that_went_wrong() -> None:
    right = _query("m.01p1v", "location.country.languages_spoken")
    exact = replace(_row("q", "single", 1.0, "es"), answer_sparql=right)
    assert kind_of_miss(exact, RECORD) == "exact"
    missed = _row("q", "single", 0.0, "x")
    assert kind_of_miss(replace(missed, answer=[]), RECORD) == "no answer"
    # a conjunction's constraining entity taken for the anchor
    constraint = _query("m.033dbw", "location.country.languages_spoken")
    assert kind_of_miss(replace(missed, answer_sparql=constraint), RECORD) == "other entity"
    other = _query("m.01p1v", "location.country.official_language")
    assert kind_of_miss(replace(missed, answer_sparql=other), RECORD) == "other relation"
    assert kind_of_miss(replace(missed, answer_sparql=right), RECORD) == "gold path, other answers"


def test_the_table_leaves_out_a_group_that_holds_every_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": q, **RECORD}) + "\n" for q in ("q:1", "q:2")))
    rows = [
        replace(_row("q:1", "single", 0.0, "x"), answer_sparql=_query("m.033dbw", "a.b"), faithful=True),
        replace(_row("q:2", "single", 0.0, "y"), answer_sparql=_query("m.01p1v", "a.b"), faithful=False),
    ]
    _write(tmp_path / "run", rows)
    assert main(["study", "misses", str(tmp_path / "run"), "--questions", str(questions)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| all | 2 | 0 | 0 | 1 | 1 | 0 |"
    assert lines[3] == "| faithful | 1 | 0 | 0 | 1 | 0 | 0 |"
    assert not any(line.startswith("| one-hop ") for line in lines), "every question is one-hop: no row"


def test_a_query_names_its_entities_and_relations_in_either_iri_form() -> None:
    entities, relations = query_names(f"SELECT ?x WHERE {{ ns:m.01p1v <{NS}a.b> ?y . ?y ns:c.d ?x }}")
    assert (entities, relations) == ({"m.01p1v"}, {"a.b", "c.d"})


def test_a_run_without_the_method_or_with_unknown_questions_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q:1", **RECORD}) + "\n")
    _write(tmp_path / "run", [_row("q:2", "single", 0.0, "x")])
    args = ["study", "misses", str(tmp_path / "run"), "--questions", str(questions)]
    assert main([*args, "--method", "fast"]) == 2
    assert "no fast rows" in capsys.readouterr().err
    assert main(args) == 2
    assert "1 questions are not in" in capsys.readouterr().err
