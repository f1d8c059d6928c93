"""The report's breakdowns (faithful, family, hops) and its refusals (unfinished shards,
pooled parts of the split), on toy runs and on the real split file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mcts.cli.main import main
from mcts.evaluation.facets import DEMO_SPLIT_FILE, SPLIT_FILE, family_of, load_split_info, split_info_from
from mcts.evaluation.report import (
    ReportInputError,
    breakdown,
    check_finished,
    check_poolable,
    collect_rows,
    write_report,
)
from mcts.evaluation.runner import Shard, load_questions, results_path, run_eval
from mcts.search.settings import Method
from tests.unit.test_evaluate import SETTINGS, _questions, _worlds


def test_family_is_the_webquestionssp_seed_named_by_the_id():
    assert family_of("cwq:WebQTest-538_92e606ef9c0429ad6820797ad2950730") == "WebQTest-538"
    assert family_of("cwq:WebQTrn-12_abc") == "WebQTrn-12"
    assert family_of("webqsp:WebQTest-77.P0") == "WebQTest-77"
    assert family_of("webquestions:77") == "WebQTest-77"  # WebQuestions test question 77 is that seed
    assert family_of("simpleqa:3") == "" and family_of("demo-1") == ""


def test_the_shipped_split_names_its_train_families_and_agrees_with_the_rule():
    data = json.loads(SPLIT_FILE.read_text())
    derived = {family_of(q) for q in data["train"]} - {""}
    assert set(data["train_families"]) == derived and len(derived) > 100
    info = load_split_info()
    seen = next(q for q in data["test"] if family_of(q) in derived)
    unseen = next(q for q in data["test"] if family_of(q) and family_of(q) not in derived)
    assert info.facets(seen, {}).family_in_train is True and info.facets(seen, {}).part == "test"
    assert info.facets(unseen, {"path_matches_gold_relations": False}).family_in_train is False
    assert info.facets(unseen, {"path_matches_gold_relations": False}).faithful is False
    assert info.facets("demo-1", {}).family_in_train is None and info.facets("demo-1", {}).part == ""


def _toy_run(tmp_path: Path) -> list:
    path = _questions(tmp_path, 4)
    qs = load_questions(path, split=tmp_path / "split.json")
    out = tmp_path / "run"
    run_eval(qs, [Method.SINGLE, Method.FAST], _worlds()[0], SETTINGS, out, progress=False)
    return collect_rows([out])


@pytest.fixture
def toy_split(tmp_path: Path) -> Path:
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"train": ["cwq:WebQTrn-1_x"], "choose": [], "test": []}))
    return path


def test_breakdown_columns_hold_only_their_questions(tmp_path, toy_split):
    rows = _toy_run(tmp_path)
    # (faithful, family in train) per question, as the split and the records would give them
    marks = {"toy:0": (True, True), "toy:1": (True, False), "toy:2": (False, False), "toy:3": (False, None)}
    rows = [
        replace(r, faithful=marks[r.question_id][0], family_in_train=marks[r.question_id][1], f1=f1)
        for r, f1 in zip(rows, [1.0, 0.0, 0.5, 0.0, 0.0, 1.0, 1.0, 1.0], strict=True)
    ]
    columns, table = breakdown(rows)
    labels = dict(columns)
    assert labels["all"] == 4 and labels["faithful"] == 2 and labels["not faithful"] == 2
    assert labels["family seen"] == 1 and labels["family unseen"] == 2
    assert labels["one-hop"] == 2 and labels["two-hop"] == 2
    order = [label for label, _ in columns]
    by_method = {m: dict(zip(order, cells, strict=True)) for m, cells in table.items()}
    f1 = {(r.method, r.question_id): r.f1 for r in rows}
    for method, cells in by_method.items():
        faithful = [f1[(method, q)] for q, (fa, _) in marks.items() if fa]
        assert cells["faithful"] == pytest.approx(sum(faithful) / len(faithful))
        assert cells["family seen"] == pytest.approx(f1[(method, "toy:0")])


def test_a_half_written_shard_is_refused_and_nothing_is_overwritten(tmp_path, capsys):
    path = _questions(tmp_path, 4)
    out = tmp_path / "run"
    for i in range(2):
        qs = load_questions(path, shard=Shard(i, 2))
        run_eval(qs, [Method.SINGLE], _worlds()[0], SETTINGS, out, shard=Shard(i, 2), progress=False)
    assert main(["eval", "--merge", str(out)]) == 0
    report = (out / "results.md").read_text()
    shard = results_path(out, Shard(1, 2))
    shard.write_text(shard.read_text().splitlines()[0] + "\n")  # one of its two pairs lost
    with pytest.raises(ReportInputError, match="unfinished: 1 of 2"):
        check_finished([shard])
    assert main(["eval", "--merge", str(out)]) == 2
    assert "unfinished" in capsys.readouterr().err
    assert (out / "results.md").read_text() == report
    assert main(["eval", "--merge", str(out), "--partial"]) == 0
    assert "Questions finished by every method: 3" in (out / "results.md").read_text()


def test_results_from_two_parts_of_the_split_are_not_pooled(tmp_path, toy_split):
    rows = _toy_run(tmp_path)
    mixed = [replace(r, part="test" if r.question_id == "toy:0" else "choose") for r in rows]
    with pytest.raises(ReportInputError, match="mix parts of the split"):
        check_poolable(mixed)
    with pytest.raises(ReportInputError, match="more than one seed"):
        write_report([replace(r, seed=r.seed + (r.question_id == "toy:1")) for r in rows], tmp_path / "r")
    assert not (tmp_path / "r" / "results.md").exists()
    check_poolable([replace(r, part="test") for r in rows])


def test_real_test_questions_get_their_facets(fbqa_dir):
    split = split_info_from(json.loads(SPLIT_FILE.read_text()))
    test_ids = {q for q, part in split.part_of.items() if part == "test"}
    rows = [q for q in load_questions(fbqa_dir / "dev.jsonl") if q.id in test_ids]
    assert len(rows) == 68 and {q.facets.part for q in rows} == {"test"}
    faithful = [q for q in rows if q.facets.faithful]
    assert 0 < len(faithful) < len(rows)
    # a two-hop gold path is rarely faithful on this subset; most one-hop ones are
    two_hop = [q for q in rows if q.hops == 2]
    assert sum(1 for q in two_hop if q.facets.faithful) < len(two_hop) / 2
    seen = [q for q in rows if q.facets.family_in_train]
    unseen = [q for q in rows if q.facets.family_in_train is False]
    assert seen and unseen


def test_held_out_means_used_for_no_choice():
    info = load_split_info()
    data = json.loads(SPLIT_FILE.read_text())
    assert info.facets(data["test"][0], {}).held_out is True
    assert info.facets(data["train"][0], {}).held_out is False
    assert info.facets(data["choose"][0], {}).held_out is False
    # every demo question a choice was made on is not held out, and says what was chosen on it
    demo = json.loads(DEMO_SPLIT_FILE.read_text())
    for choice in demo["choices"].values():
        for qid in choice["questions"]:
            assert info.facets(qid, {}).held_out is False
            assert info.facets(qid, {}).chosen_here == choice["what"]
    for qid in demo["held_out"]:
        assert info.facets(qid, {}).held_out is True and info.facets(qid, {}).chosen_here == ""
    assert info.facets("someone:else", {}).held_out is None
    # each demo question is in exactly one place: one choice's slice, or held out
    placed = [q for c in demo["choices"].values() for q in c["questions"]] + demo["held_out"]
    shipped = [
        json.loads(line)["id"]
        for line in (DEMO_SPLIT_FILE.parents[2] / demo["source"]).read_text().splitlines()
        if line
    ]
    assert sorted(placed) == sorted(shipped)


def test_a_demo_report_shows_each_choice_slice_apart(tmp_path, toy_split):
    rows = _toy_run(tmp_path)
    whats = {"toy:0": "the preset", "toy:1": "the preset", "toy:2": "the scorer", "toy:3": ""}
    rows = [replace(r, chosen_here=whats[r.question_id], f1=float(r.question_id == "toy:2")) for r in rows]
    columns, table = breakdown(rows)
    labels = dict(columns)
    assert labels["used to choose the preset"] == 2 and labels["used to choose the scorer"] == 1
    i = [label for label, _ in columns].index("used to choose the scorer")
    assert all(cells[i] == 1.0 for cells in table.values())
