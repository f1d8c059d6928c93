"""`python -m mcts study folds`: held-out fold runs broken down, a train question's family
counted as seen only when another fold (what its fold adapter trained on) holds a member of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.report import ReportInputError
from mcts.evaluation.studies.folds import with_fold_families
from mcts.training.option_states import family_seen_by_fold, fold_of
from tests.unit.test_study_scorers import _row, _write

# Train questions of the shipped split: one family with a member in each fold, and one
# family with a single member (fold 0).
PAIR = (
    "cwq:WebQTest-1508_38e2c66cd9baaea4d3958decc8cb6b6c",
    "cwq:WebQTest-1508_872253e47dd6ddaa213ff31eeda8783b",
)
ALONE = "cwq:WebQTest-1011_100d26462424e7b393fa19be729008e2"


def _fold_runs(root: Path, f1: dict[str, float]) -> Path:
    for fold in (0, 1):
        rows = [
            replace(_row(q, "single", score, "x"), faithful=True)
            for q, score in f1.items()
            if fold_of(q, 2) == fold
        ]
        _write(root / str(fold), rows)
    return root


def test_a_family_is_unseen_when_no_other_fold_holds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fold_of(PAIR[0], 2) != fold_of(PAIR[1], 2)
    runs = _fold_runs(tmp_path / "a", {PAIR[0]: 1.0, PAIR[1]: 0.5, ALONE: 0.0})
    assert main(["study", "folds", f"a={runs}"]) == 0
    table = capsys.readouterr().out.splitlines()
    header = table[0]
    assert "family seen (n=2)" in header and "family unseen (n=1)" in header
    cells = dict(zip(header.strip("|").split("|")[1:], table[2].strip("|").split("|")[1:], strict=True))
    assert cells[" family seen (n=2) "].strip() == "75.00"
    assert cells[" family unseen (n=1) "].strip() == "0.00"


def test_runs_side_by_side_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _fold_runs(tmp_path / "a", {PAIR[0]: 1.0, PAIR[1]: 1.0, ALONE: 0.0})
    b = _fold_runs(tmp_path / "b", {PAIR[0]: 0.0, PAIR[1]: 1.0, ALONE: 1.0})
    assert main(["study", "folds", f"a={a}", f"b={b}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("| a | 66.67 |") and lines[3].startswith("| b | 66.67 |")
    assert main(["study", "folds", str(a)]) == 2  # no NAME=
    _write(tmp_path / "test" / "0", [_row("cwq:not-a-train-question", "single", 1.0, "x")])
    assert main(["study", "folds", f"t={tmp_path / 'test'}"]) == 2
    assert "not a train question" in capsys.readouterr().err


def test_miss_analysis_reads_families_per_fold_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    runs = _fold_runs(tmp_path / "a", {PAIR[0]: 1.0, PAIR[1]: 0.5, ALONE: 0.0})
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": q, "path": ["a.b"]}) + "\n" for q in (*PAIR, ALONE)))
    args = ["study", "misses", str(runs / "0"), str(runs / "1"), "--questions", str(questions)]
    assert main(args) == 0
    assert "family unseen" not in capsys.readouterr().out  # the split counts every train family seen
    assert main([*args, "--folds", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("| family seen | 2 | 1 |") for line in lines)
    assert any(line.startswith("| family unseen | 1 | 0 |") for line in lines)


def test_families_are_read_against_the_other_folds_and_a_non_train_row_is_refused() -> None:
    rows = [_row(q, "single", 1.0, "x") for q in (*PAIR, ALONE)]
    train = [*PAIR, ALONE]
    seen = {
        r.question_id: r.family_in_train
        for r in with_fold_families(rows, train, family_seen_by_fold(train, 2))
    }
    assert seen == {PAIR[0]: True, PAIR[1]: True, ALONE: False}
    with pytest.raises(ReportInputError, match="not a train question"):
        with_fold_families(rows, list(PAIR), lambda q: True)
