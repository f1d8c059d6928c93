"""`python -m mcts study kinds`: F1 per kind of question, per run and method, from the question file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.studies.kinds import demo_slices, kind_table, question_kinds
from tests.unit.test_study_scorers import _row, _write


def test_f1_is_split_by_the_records_kind(tmp_path: Path):
    questions = tmp_path / "q.jsonl"
    kinds = {"q:1": "count", "q:2": "count", "q:3": "simple"}
    questions.write_text(
        "".join(json.dumps({"id": q, "meta": {"compositionality_type": k}}) + "\n" for q, k in kinds.items())
    )
    _write(
        tmp_path / "a",
        [_row("q:1", "single", 1.0, "x"), _row("q:2", "single", 0.0, "y"), _row("q:3", "single", 0.5, "z")],
    )
    table = kind_table({"base": tmp_path / "a"}, question_kinds(questions))
    assert table.splitlines()[0] == "| run | method | simple (n=1) | count (n=2) | all (n=3) |"
    assert table.splitlines()[2] == "| base | single | 50.0 | 50.0 | 50.0 |"


def test_each_demo_slice_has_its_own_column_after_all(tmp_path: Path):
    slices = demo_slices()
    assert slices["demo:001"] == "preset" and slices["demo:017"] == "policy"
    questions = tmp_path / "q.jsonl"
    ids = ["demo:001", "demo:017", "demo:018"]
    questions.write_text(
        "".join(json.dumps({"id": q, "meta": {"compositionality_type": "simple"}}) + "\n" for q in ids)
    )
    _write(tmp_path / "a", [_row(q, "single", f, "x") for q, f in zip(ids, (1.0, 0.0, 0.5), strict=True)])
    lines = kind_table({"base": tmp_path / "a"}, question_kinds(questions), slices).splitlines()
    assert (
        lines[0]
        == "| run | method | simple (n=3) | all (n=3) | chose preset here (n=1) | chose policy here (n=2) |"
    )
    assert lines[2] == "| base | single | 50.0 | 50.0 | 100.0 | 25.0 |"


def test_the_command_prints_the_table_and_refuses_a_run_without_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q:1", "meta": {"compositionality_type": "count"}}) + "\n")
    _write(tmp_path / "a", [_row("q:1", "single", 1.0, "x")])
    assert main(["study", "kinds", f"base={tmp_path / 'a'}", "--questions", str(questions)]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "| base | single | 100.0 | 100.0 |"
    assert main(["study", "kinds", str(tmp_path / "a"), "--questions", str(questions)]) == 2
    assert "expected NAME=RUN_DIR" in capsys.readouterr().err
