"""`python -m mcts study acceptance`: the search's goals measured on hand-made rows, met or
not, with the cause a measurement records for a goal not met, and `--check` failing then."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.studies.acceptance import (
    ACCEPTANCE_FILE,
    GOALS,
    Goal,
    Measurement,
    judge,
    judge_all,
    read_measurements,
)
from tests.unit.test_study_scorers import _row, _write

FAITHFUL_BY_5 = Goal("faithful", (("faithful", True),), "fast", "single", 5.0, True)
ONE_HOP_AT_85 = Goal("faithful one-hop", (("faithful", True), ("hops", 1)), "single", None, 85.0, True)

# Three real questions: two faithful one-hop, one not faithful (left out of both goals).
MEASURED = Measurement(
    "dev",
    ("cwq:a", "cwq:b", "cwq:c"),
    {"single": [1.0, 0.5, 0.0], "fast": [1.0, 1.0, 0.0], "constant": [1.0, 1.0, 1.0]},
    {"hops": [1, 1, 2], "faithful": [True, True, False], "family_in_train": [True, False, True]},
    {"faithful one-hop: single>=85": "a constraint the path cannot hold"},
)


def test_one_goal_met_and_one_not_with_its_recorded_cause() -> None:
    met = judge(MEASURED, FAITHFUL_BY_5)  # fast 100 against single 75 + 5
    assert (met.n, met.measured, met.needed, met.met, met.cause) == (2, 100.0, 80.0, True, "")
    missed = judge(MEASURED, ONE_HOP_AT_85)  # single 75 against 85
    assert (missed.n, missed.measured, missed.needed, missed.met) == (2, 75.0, 85.0, False)
    assert missed.cause == "a constraint the path cannot hold"


def test_a_goal_with_no_question_of_its_kind_is_not_met() -> None:
    unmeasured = replace(MEASURED, facets={**MEASURED.facets, "faithful": [False, False, False]})
    verdict = judge(unmeasured, FAITHFUL_BY_5)
    assert not verdict.met and verdict.cause == "no question of this kind was measured"


def test_the_faithful_goals_apply_only_to_questions_with_families() -> None:
    demo = replace(MEASURED, facets={**MEASURED.facets, "family_in_train": [None, None, None]})
    assert [v.goal for v in judge_all([demo])] == [g for g in GOALS if not g.real_questions_only]
    assert len(judge_all([MEASURED])) == len(GOALS)


def test_the_committed_measurement_keeps_its_notes() -> None:
    sets = read_measurements(ACCEPTANCE_FILE)
    assert len(sets) == 2 and all(len(m.f1["single"]) == len(m.questions) for m in sets)
    causes = [v.cause for v in judge_all(sets) if not v.met]
    assert all(c and c != "no cause recorded" for c in causes)  # every goal not met says why


def test_the_command_measures_runs_writes_them_and_checks_the_goals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        replace(_row(q, method, f1, "x"), hops=1, faithful=True, family_in_train=True)
        for q, fs in (("cwq:a", (1.0, 1.0, 1.0)), ("cwq:b", (0.5, 1.0, 1.0)))
        for method, f1 in zip(("single", "fast", "constant"), fs, strict=True)
    ]
    _write(tmp_path / "run", rows)
    out = tmp_path / "acceptance.json"
    args = ["study", "acceptance", f"dev={tmp_path / 'run'}", "--out", str(out), "--markdown"]
    assert main(args) == 0  # without --check a goal not met is reported, not failed
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| questions | goal | n | measured | needed | met | cause |"
    assert "| dev | faithful: fast>=single+5 | 2 | fast 100.0 | 80.0 | yes |  |" in table
    assert "| dev | faithful: fast>=constant+3 | 2 | fast 100.0 | 103.0 | no | no cause recorded |" in table
    data = json.loads(out.read_text())
    assert data["dev"]["f1"]["single"] == [1.0, 0.5] and data["dev"]["facets"]["hops"] == [1, 1]
    assert data["_source"].startswith("python -m mcts study acceptance dev=")
    assert main([*args, "--check"]) == 1
    assert main(["study", "acceptance", "--out", str(out)]) == 2  # --out needs runs
