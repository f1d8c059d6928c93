"""The scorer study (`python -m mcts study scorers`, mcts.evaluation.studies) and the app's
words about it (ui.ig_evidence):
the choice by pooled F1, the answers that differ from the constant reward's, the refusal of
unfinished runs, and a verdict that says when IG did not beat the constant reward."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.runner import EvalRow, run_eval
from mcts.evaluation.studies import scorer_cells, scorers
from tests.unit.test_evaluate import SETTINGS, _questions, _worlds
from ui.ig_evidence import evidence_markdown


def _row(qid: str, method: str, f1: float, answer: str, wall: float = 2.0) -> EvalRow:
    return EvalRow(
        question_id=qid, method=method, question=f"question {qid}", source="demo", hops=1, seed=0,
        answer=[{"id": answer, "name": answer}], answer_sparql="", gold=[], precision=f1, recall=f1, f1=f1,
        hits1=f1 == 1.0, exact=f1 == 1.0, best_branch_f1=f1, terminals=1, stop_reason="budget", detail="",
        rounds=1, nodes=3, cost={"wall_s": wall},
    )  # fmt: skip


def _write(folder: Path, rows: list[EvalRow]) -> None:
    folder.mkdir(parents=True)
    text = "".join(json.dumps(asdict(r)) + "\n" for r in rows)
    (folder / "results.jsonl").write_text(text, encoding="utf-8")


def _study(tmp_path: Path) -> Path:
    """Two choice sets; `smollm-paper` and `gemma-question` tie pooled, `smollm-question` is best."""
    root = tmp_path / "scorers"
    runs = {
        "choose": {
            "constant": [1, 0],
            "smollm-paper": [1, 1],
            "smollm-question": [1, 1],
            "gemma-question": [0, 1],
        },
        "demo": {
            "constant": [1, 1],
            "smollm-paper": [0, 1],
            "smollm-question": [1, 1],
            "gemma-question": [1, 1],
        },
    }
    for name, by_scorer in runs.items():
        for scorer, f1s in by_scorer.items():
            method = "constant" if scorer == "constant" else "fast"
            rows = [
                _row(f"{name}:{i}", method, float(f), "right" if f else f"wrong-{scorer}")
                for i, f in enumerate(f1s)
            ]
            _write(root / f"{name}-{scorer}", rows)
    return root


def test_the_study_chooses_by_pooled_f1_and_counts_answers_unlike_the_constant_reward(tmp_path: Path):
    cells = scorer_cells.read_cells(_study(tmp_path))
    assert scorers.pooled(cells, "smollm-question", scorer_cells.CHOICE_SETS) == 1.0
    assert scorers.pooled(cells, "smollm-paper", scorer_cells.CHOICE_SETS) == 0.75
    assert scorers.chosen_scorer(cells) == "smollm-question"
    assert cells["choose"]["smollm-paper"].differ == 1  # question 1: right where constant was wrong
    assert cells["demo"]["smollm-question"].differ == 0
    assert cells["choose"]["constant"].seconds == 2.0


def test_a_tie_goes_to_the_shipped_scorer(tmp_path: Path):
    root = _study(tmp_path)
    for name in ("choose", "demo"):  # without the best one, paper and gemma-question tie at 0.75
        for path in (root / f"{name}-smollm-question").iterdir():
            path.unlink()
        (root / f"{name}-smollm-question").rmdir()
    assert scorers.chosen_scorer(scorer_cells.read_cells(root)) == scorer_cells.SHIPPED


def test_the_printed_tables_and_the_apps_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    root = _study(tmp_path)
    out = tmp_path / "evidence.json"
    assert main(["study", "scorers", str(root), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (
        "| **SmolLM2-135M (bundled), IG on the question** (chosen) `smollm-question` | 100.00 | 1 of 2 |"
        in printed
    )
    data = json.loads(out.read_text())
    assert data["chosen"] == "smollm-question" and set(data["sets"]) == {"choose", "demo"}
    assert data["sets"]["choose"]["scorers"]["constant"]["f1"] == 0.5
    words = evidence_markdown(data, fingerprint=data["agent_code_fingerprint"])
    assert "other agent code" not in words
    # the app runs the shipped scorer, so the verdict is its own; the chosen one is named beside it
    assert "(SmolLM2-135M (bundled), paper IG," in words
    assert "was SmolLM2-135M (bundled), IG on the question: dev choose 100.0" in words


def test_the_study_refuses_an_unfinished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    root = _study(tmp_path)
    manifest = {"questions": ["choose:0", "choose:1", "choose:2"], "methods": ["constant"]}
    (root / "choose-constant" / "results.manifest.json").write_text(json.dumps(manifest))
    assert main(["study", "scorers", str(root)]) == 2
    assert "unfinished" in capsys.readouterr().err


def test_a_real_run_of_several_methods_counts_as_one_set(tmp_path: Path):
    from mcts.evaluation.runner import load_questions
    from mcts.search.settings import Method

    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": [], "choose": [], "test": []}))
    qs = load_questions(_questions(tmp_path, 2), split=split)
    out = tmp_path / "scorers" / "test"
    run_eval(qs, [Method.SINGLE, Method.FAST, Method.CONSTANT], _worlds()[0], SETTINGS, out, progress=False)
    cells = scorer_cells.read_cells(tmp_path / "scorers")
    assert set(cells["test"]) == {"single", scorer_cells.SHIPPED, "constant"}
    assert all(c.n == 2 for c in cells["test"].values())


def test_the_app_says_when_ig_did_not_beat_the_constant_reward():
    data = {
        "chosen": "smollm-paper", "shipped": "smollm-paper", "labels": {"smollm-paper": "SmolLM2-135M, paper IG"},
        "agent_code_fingerprint": "old",
        "sets": {
            "choose": {"label": "dev choose", "role": "choice", "scorers": {
                "smollm-paper": {"f1": 0.3875, "n": 40, "differ_from_constant": 2},
                "constant": {"f1": 0.4125, "n": 40, "differ_from_constant": 0}}},
            "test": {"label": "dev test", "role": "report", "scorers": {
                "smollm-paper": {"f1": 0.4357, "n": 68, "differ_from_constant": 0},
                "constant": {"f1": 0.4357, "n": 68}, "single": {"f1": 0.4792, "n": 68}}},
        },
    }  # fmt: skip
    words = evidence_markdown(data, fingerprint="new")
    assert "did not beat the constant reward" in words
    assert (
        "IG 38.8 F1, constant reward 41.2" in words
        and "unlike the constant reward's: its answer on 2 of 40" in words
    )
    assert "greedy path 47.9" in words and "*Held out from that choice:*" in words
    # the verdict is over every question: (38.75 * 40 + 43.57 * 68) / 108 against (41.25 * 40 + 43.57 * 68) / 108
    assert "over all 108 questions of these sets IG scored 41.8 F1 and the constant reward 42.7" in words
    assert "its answer on only 2" in words
    assert "other agent code" in words  # measured with another fingerprint: said so
    assert evidence_markdown({"sets": {}}) == ""


def test_a_scorer_that_changes_no_answer_is_the_constant_reward_and_is_not_chosen(tmp_path: Path):
    root = _study(tmp_path)
    for name, f1s in (("choose", [1, 0]), ("demo", [1, 1])):  # the constant reward's answers exactly
        rows = [
            _row(f"{name}:{i}", "fast", float(f), "right" if f else "wrong-constant")
            for i, f in enumerate(f1s)
        ]
        _write(root / f"{name}-aaa-saturated", rows)
    cells = scorer_cells.read_cells(root)
    assert not scorers.steers(cells, "aaa-saturated") and scorers.steers(cells, "gemma-question")
    assert scorers.chosen_scorer(cells) == "smollm-question"


def test_the_app_names_a_better_measured_scorer_than_the_one_it_runs():
    data = {
        "chosen": "gemma-paper", "shipped": "smollm-paper",
        "labels": {"smollm-paper": "SmolLM2-135M, paper IG", "gemma-paper": "Gemma, paper IG"},
        "sets": {"demo": {"label": "demo 17-40", "role": "choice", "scorers": {
            "smollm-paper": {"f1": 0.4912, "n": 24}, "gemma-paper": {"f1": 0.5278, "n": 24},
            "constant": {"f1": 0.4819, "n": 24}}}},
    }  # fmt: skip
    words = evidence_markdown(data, fingerprint="x")
    assert "(SmolLM2-135M, paper IG, `small` preset" in words  # the figures are the app's own scorer's
    assert "IG 49.1 F1, constant reward 48.2" in words
    assert (
        "best F1 on the sets used to choose* was Gemma, paper IG: demo 17-40 52.8 (constant reward 48.2)"
        in words
    )


def test_the_docs_block_keeps_the_two_printed_tables_apart(tmp_path: Path):
    from scripts import update_results_doc

    root = _study(tmp_path)
    _write(root / "test-constant", [_row("test:0", "constant", 1.0, "right")])
    doc = f"<!-- output: python -m mcts study scorers {root} -->\nold\n<!-- /output -->\n"
    body = update_results_doc.replace_outputs(doc).split("\n")[1:-2]
    assert "" in body, "the choice table and the report table must stay two markdown tables"
    gap = body.index("")
    assert body[0].startswith("| scorer | dev choose") and body[gap + 1].startswith("| scorer | dev test")
    assert all(line.startswith("|") for i, line in enumerate(body) if i != gap)


def test_a_study_grows_with_kept_cells_and_its_file_prints_the_same_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from mcts.agents.fingerprint import agent_code_fingerprint

    root = _study(tmp_path)
    first = tmp_path / "first.json"
    assert main(["study", "scorers", str(root), "--json", str(first)]) == 0
    whole = capsys.readouterr().out
    # a later sitting holds only some scorers' runs; the rest are kept from the first study file
    for name in ("choose", "demo"):
        for path in (root / f"{name}-gemma-question").iterdir():
            path.unlink()
        (root / f"{name}-gemma-question").rmdir()
    grown = tmp_path / "grown.json"
    assert main(["study", "scorers", str(root), "--keep", str(first), "--json", str(grown)]) == 0
    assert capsys.readouterr().out == whole
    data = json.loads(grown.read_text())
    assert data["sets"]["demo"]["scorers"]["gemma-question"]["f1"] == 1.0  # every scorer is written
    assert "--keep" in data["written_by"]
    assert main(["study", "scorers", "--from-json", str(grown)]) == 0
    assert capsys.readouterr().out == whole
    # figures from other agent code are never mixed in
    stale = json.loads(first.read_text()) | {"agent_code_fingerprint": "other"}
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    assert agent_code_fingerprint() != "other"
    assert main(["study", "scorers", str(root), "--keep", str(tmp_path / "stale.json")]) == 2
    assert "measured with agent code" in capsys.readouterr().err


def test_the_shipped_study_file_prints_its_tables_and_names_its_choice(capsys: pytest.CaptureFixture[str]):
    from ui.ig_evidence import EVIDENCE_FILE

    assert main(["study", "scorers", "--from-json", str(EVIDENCE_FILE)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(EVIDENCE_FILE.read_text())
    assert f"(chosen) `{data['chosen']}`" in printed
    assert set(data["sets"]) == set(scorer_cells.SETS)
    assert main(["study", "scorers", "--from-json", str(EVIDENCE_FILE), "--json", "x.json"]) == 2
    assert "takes no runs" in capsys.readouterr().err


def test_the_verdict_is_over_every_question_and_names_a_mixed_record():
    sets = {
        "choose": {"label": "dev choose", "role": "choice", "scorers": {
            "smollm-paper": {"f1": 0.50, "n": 40, "differ_from_constant": 4, "trees_differ_from_constant": 30},
            "constant": {"f1": 0.45, "n": 40}}},
        "test": {"label": "dev test", "role": "report", "scorers": {
            "smollm-paper": {"f1": 0.40, "n": 10, "differ_from_constant": 1, "trees_differ_from_constant": 9},
            "constant": {"f1": 0.42, "n": 10}}},
    }  # fmt: skip
    words = evidence_markdown({"shipped": "smollm-paper", "sets": sets}, fingerprint="x")
    assert (
        "**Over many questions, this IG reward did better than the constant reward** (ahead on some sets"
        in words
    )
    assert "over all 50 questions of these sets IG scored 48.0 F1 and the constant reward 44.4" in words
    assert "its tree differed from the constant reward's on 39 of them, its answer on only 5" in words


def test_trees_differ_where_the_apps_twin_marks_a_path_visited_by_one_only():
    from kb.actions import Action
    from kb.observation import Observation
    from mcts.search.steps import Step
    from mcts.search.tree import ROOT_ID, Tree
    from viz.twin import diff_trees

    def tree(*names: str, unvisited: str = "") -> Tree:
        t = Tree("q")
        for name in (*names, unvisited):
            step = Step(thought="", action=Action("SearchNodes", name), observation=Observation(text=""))
            t.add_child(ROOT_ID, step, visits=int(name != unvisited))
        raw = Step(thought="", action=None, raw_text="  no   call ", observation=Observation(text=""))
        t.add_child(ROOT_ID, raw, visits=1)
        return t

    pairs = [(tree("a", "b"), tree("b", "a", unvisited="c")), (tree("a", "b"), tree("a", "c"))]
    for a, b in pairs:
        twin = diff_trees(a, b)
        differ = scorer_cells.visited_paths(a) != scorer_cells.visited_paths(b)
        assert differ == bool(twin.only_a or twin.only_b)
    assert [scorer_cells.visited_paths(a) != scorer_cells.visited_paths(b) for a, b in pairs] == [False, True]
