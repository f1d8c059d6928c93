"""Batch evaluation with the toy world: JSONL lines, resume, shards, merged table, plots."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from mcts.evaluation.report import collect_rows, markdown_table, method_stats, write_report
from mcts.evaluation.runner import (
    ALL_METHODS,
    EvalInputError,
    Shard,
    load_questions,
    parse_methods,
    read_rows,
    results_path,
    run_eval,
)
from mcts.search.protocols import Policy, Scorer, Tools
from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method, SearchSettings
from tests.toy_world import NOLAN, OTHER, QUESTION, ToyPolicy, ToyScorer, ToyTools

SETTINGS = SearchSettings(rounds=4, k=3, max_depth=4, early_stop_terminals=3, vote_samples=3, beam_width=2)


@dataclass
class _World:
    policy: Policy = field(default_factory=ToyPolicy)
    scorer: Scorer = field(default_factory=ToyScorer)
    tools: Tools = field(default_factory=ToyTools)
    meta: RunMeta = field(default_factory=lambda: RunMeta(kb_spec="toy", policy_kind="toy"))


def _worlds():
    made: dict[Method, _World] = {}

    def world_for(method: Method) -> _World:
        return made.setdefault(method, _World())

    return world_for, made


def _questions(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "q.jsonl"
    lines = []
    for i in range(n):
        gold = NOLAN if i % 2 == 0 else OTHER
        lines.append(
            {
                "id": f"toy:{i}",
                "question": QUESTION,
                "gold_answers": [{"mid": gold.id, "name": gold.name}],
                "hops": 1 + i % 2,
                "source": "toy",
            }
        )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_every_pair_gets_one_jsonl_line_with_scores_cost_and_trace(tmp_path):
    qs = load_questions(_questions(tmp_path, 2))
    world_for, _ = _worlds()
    out = tmp_path / "run"
    rows = run_eval(qs, ALL_METHODS, world_for, SETTINGS, out, progress=False)
    assert len(rows) == 2 * len(ALL_METHODS)
    lines = [json.loads(x) for x in results_path(out).read_text().splitlines()]
    assert [(x["question_id"], x["method"]) for x in lines] == [(r.question_id, r.method) for r in rows]
    for line in lines:
        assert line["error"] == "", line
        assert 0.0 <= line["f1"] <= line["best_branch_f1"] <= 1.0
        assert line["cost"]["policy_calls"] >= 1
        assert (out / line["trace"]).is_file()
        assert line["gold"][0]["ids"] in (["m.nolan"], ["m.other"])
    by = {(x["question_id"], x["method"]): x for x in lines}
    # The toy world's greedy single path answers "Someone Else"; IG-steered Fast MCTS finds Nolan.
    assert by[("toy:0", "single")]["answer"][0]["id"] == "m.other"
    assert by[("toy:0", "single")]["f1"] == 0.0
    assert by[("toy:0", "fast")]["f1"] == 1.0 and by[("toy:0", "fast")]["hits1"]
    # Question 1's gold is the wrong-looking answer: single path is right there.
    assert by[("toy:1", "single")]["f1"] == 1.0


def test_resume_skips_done_pairs_and_refuses_to_overwrite(tmp_path):
    qs = load_questions(_questions(tmp_path, 3))
    out = tmp_path / "run"
    world_for, made = _worlds()
    run_eval(qs[:2], [Method.SINGLE, Method.FAST], world_for, SETTINGS, out, progress=False)
    with pytest.raises(EvalInputError, match="--resume"):
        run_eval(qs, [Method.SINGLE], world_for, SETTINGS, out, progress=False)
    # A crash mid-write leaves a torn last line: it is skipped, and the next line starts clean.
    with results_path(out).open("a") as fh:
        fh.write('{"question_id": "toy:2", "meth')
    calls_before = made[Method.SINGLE].policy.usage.calls
    new = run_eval(qs, [Method.SINGLE, Method.FAST], world_for, SETTINGS, out, resume=True, progress=False)
    assert [(r.question_id, r.method) for r in new] == [("toy:2", "single"), ("toy:2", "fast")]
    assert made[Method.SINGLE].policy.usage.calls > calls_before
    rows = read_rows([results_path(out)])
    assert sorted((r.question_id, r.method) for r in rows) == sorted(
        (q.id, m) for q in qs for m in ("single", "fast")
    )
    again = run_eval(qs, [Method.SINGLE, Method.FAST], world_for, SETTINGS, out, resume=True, progress=False)
    assert again == []


def test_a_pair_that_raises_is_recorded_and_retried_on_resume(tmp_path):
    qs = load_questions(_questions(tmp_path, 1))
    out = tmp_path / "run"
    broken = {"on": True}

    def world_for(method: Method) -> _World:
        if broken["on"]:
            raise RuntimeError("model file missing")
        return _World()

    rows = run_eval(qs, [Method.FAST], world_for, SETTINGS, out, progress=False)
    assert rows[0].error.startswith("RuntimeError: model file missing") and rows[0].f1 == 0.0
    broken["on"] = False
    rows = run_eval(qs, [Method.FAST], world_for, SETTINGS, out, resume=True, progress=False)
    assert len(rows) == 1 and not rows[0].error
    merged = collect_rows([out])
    assert len(merged) == 1 and not merged[0].error  # the good line wins over the failed one


def test_shards_split_the_questions_and_merge_into_one_table(tmp_path):
    path = _questions(tmp_path, 5)
    shards = [load_questions(path, shard=Shard(i, 2)) for i in range(2)]
    assert [q.id for q in shards[0]] == ["toy:0", "toy:2", "toy:4"]
    assert [q.id for q in shards[1]] == ["toy:1", "toy:3"]
    assert [q.id for q in load_questions(path, limit=3, shard=Shard(1, 2))] == ["toy:1"]
    out = tmp_path / "run"
    for i, qs in enumerate(shards):
        world_for, _ = _worlds()
        run_eval(qs, [Method.VOTE, Method.FAST], world_for, SETTINGS, out, shard=Shard(i, 2), progress=False)
    assert (out / "results.shard-0-of-2.jsonl").is_file() and (out / "results.shard-1-of-2.jsonl").is_file()
    rows = collect_rows([out])
    assert len(rows) == 10
    stats = method_stats(rows)
    assert [s.method for s in stats] == ["vote", "fast"]
    assert all(s.n == 5 for s in stats)
    vote = stats[0]
    assert vote.time_vs_vote == pytest.approx(1.0)
    table = markdown_table(stats)
    assert table.splitlines()[0].startswith("| method | F1 | Hits@1 | acc | best-branch F1 | gen calls/q")
    assert len(table.splitlines()) == 4


def test_table_counts_questions_where_no_branch_finished(tmp_path):
    qs = load_questions(_questions(tmp_path, 3))
    out = tmp_path / "run"
    world_for, _ = _worlds()
    run_eval(qs, [Method.VOTE, Method.FAST], world_for, SETTINGS, out, progress=False)
    rows = collect_rows([out])
    assert all(r.terminals > 0 for r in rows)
    # the budget running out before any Done looks like this in a results line
    starved = [
        replace(r, terminals=0, answer=[]) if r.method == "fast" and r.question_id == "toy:1" else r
        for r in rows
    ]
    stats = {s.method: s for s in method_stats(starved)}
    assert (stats["vote"].no_terminal, stats["fast"].no_terminal) == (0, 1)
    assert stats["fast"].errors == 0
    table = markdown_table(list(stats.values()))
    assert table.splitlines()[0].endswith("| errors | no terminal |")
    assert table.splitlines()[3].endswith("| 0 | 1 |")


def test_report_writes_markdown_and_plots(tmp_path):
    qs = load_questions(_questions(tmp_path, 2))
    out = tmp_path / "run"
    world_for, _ = _worlds()
    run_eval(qs, [Method.SINGLE, Method.VOTE, Method.FAST], world_for, SETTINGS, out, progress=False)
    text = write_report(collect_rows([out]), out)
    assert "| fast |" in text and "one-hop (n=1)" in text and "two-hop (n=1)" in text
    assert (out / "results.md").read_text() == text
    for name in ("f1_vs_time.png", "f1_per_hop.png", "f1_vs_time.html", "f1_per_hop.html"):
        assert (out / name).stat().st_size > 1000, name


def test_bad_inputs_get_one_clear_line(tmp_path):
    with pytest.raises(EvalInputError, match="unknown method 'mcts'"):
        parse_methods("fast,mcts")
    assert parse_methods("all") == ALL_METHODS
    assert parse_methods("fast, vote,fast") == (Method.FAST, Method.VOTE)
    with pytest.raises(EvalInputError, match="i/n"):
        Shard.parse("2")
    with pytest.raises(EvalInputError, match="0 <= i < n"):
        Shard.parse("2/2")
    with pytest.raises(EvalInputError, match="not found"):
        load_questions(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q", "gold_answers": []}\nnot json\n')
    with pytest.raises(EvalInputError, match="bad.jsonl:2"):
        load_questions(bad)


def test_cli_eval_writes_table_survives_ctrl_c_resumes_and_merges(tmp_path, monkeypatch, capsys):
    import mcts.cli.eval_commands as cli_eval
    from mcts.cli.main import main

    path = _questions(tmp_path, 2)
    out = tmp_path / "run"
    world_for, made = _worlds()
    state = {"calls": 0, "interrupt_at": 4}

    def factory(args):
        def wrapped(method):
            state["calls"] += 1
            if state["calls"] == state["interrupt_at"]:
                raise KeyboardInterrupt
            return world_for(method)

        return wrapped

    monkeypatch.setattr(cli_eval, "_world_factory", factory)
    argv = ["eval", "--questions", str(path), "--methods", "single,fast", "--out", str(out), "--rounds", "3"]
    argv += ["--k", "3", "--no-progress"]
    # calls 1-2 are the up-front world checks, 3 the first pair's world; Ctrl-C in the second pair.
    assert main(argv) == 130
    assert "--resume" in capsys.readouterr().err
    assert len(read_rows([results_path(out)])) == 1  # the finished pair is saved
    assert main(argv) == 2  # results exist: refuses to overwrite without --resume
    state["interrupt_at"] = -1
    assert main([*argv, "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "| single |" in printed and "| fast |" in printed
    assert len(read_rows([results_path(out)])) == 4
    merged_out = tmp_path / "merged"
    assert main(["eval", "--merge", str(out), "--out", str(merged_out)]) == 0
    assert "| fast |" in (merged_out / "results.md").read_text()
    assert main(["eval", "--methods", "fast"]) == 2
    assert main(["eval", "--questions", str(path), "--methods", "nope"]) == 2


def test_ranking_analysis_on_toy_trees_writes_csv_and_resumes(tmp_path):
    from mcts.evaluation.ranking import read_ranking_csv, run_ranking_analysis

    qs = load_questions(_questions(tmp_path, 2))
    world = _World()
    settings = SETTINGS.with_(method=Method.CLASSIC, rounds=4)
    out = tmp_path / "rank"
    rows = run_ranking_analysis(qs, world, settings, out, cot_scorer=ToyScorer(), progress=False)
    assert {r.ranker for r in rows} <= {"ig", "cot", "random", "tree_reward"}
    assert rows, "the toy classic tree has sibling groups with terminals below"
    assert read_ranking_csv(out / "ranking.csv") == [
        r.__class__(
            **{
                **r.__dict__,
                "scores": tuple(round(s, 4) for s in r.scores),
                "true_values": tuple(round(v, 4) for v in r.true_values),
                "tau": None if r.tau is None else round(r.tau, 4),
            }
        )
        for r in rows
    ]
    assert (out / "ranking_done.txt").read_text().split() == ["toy:0", "toy:1"]
    with pytest.raises(ValueError, match="--resume"):
        run_ranking_analysis(qs, world, settings, out, progress=False)
    assert run_ranking_analysis(qs, world, settings, out, resume=True, progress=False) == []
    from mcts.cli.main import main

    assert main(["analyze-ranking", "--merge", str(out)]) == 0
    table = (out / "ranking.md").read_text()
    assert "| IG reward" in table and "75.73%" in table
    assert main(["analyze-ranking", "--merge", str(tmp_path / "nothing")]) == 2


@pytest.mark.slow
def test_real_single_path_on_a_demo_question_writes_a_scored_line(tmp_path, monkeypatch):
    """The real thing: demo KB, bundled model, one greedy path, scored against gold."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from mcts.agents.models import ModelLoadError
    from mcts.agents.world import build_world

    demo = Path(__file__).resolve().parents[2] / "examples" / "questions.jsonl"
    qs = load_questions(demo, limit=1)
    try:
        build_world("demo", method=Method.SINGLE)
    except ModelLoadError as exc:
        pytest.skip(f"bundled model not available: {exc}")
    rows = run_eval(
        qs,
        [Method.SINGLE],
        lambda m: build_world("demo", method=m),
        SearchSettings(max_depth=3, rounds=1),
        tmp_path,
        progress=False,
    )
    (row,) = rows
    assert row.error == "" and row.stop_reason != "error", row.detail
    assert row.cost["policy_calls"] >= 1 and row.cost["wall_s"] > 0
    assert row.gold == [{"name": "Honolulu", "ids": ["m.demo_honolulu"]}]
    assert 0.0 <= row.f1 <= row.best_branch_f1 <= 1.0
    assert (tmp_path / row.trace).is_file()
