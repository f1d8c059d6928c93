"""Presets (paper / small), `--preset` on the CLI, and the stored-tree studies."""

from __future__ import annotations

import pytest

from mcts.cli.flags import settings_from_args
from mcts.cli.main import build_parser
from mcts.evaluation.metrics import GoldAnswer
from mcts.evaluation.study import StoredRun, answer_rules_markdown, bootstrap_ci, rule_f1
from mcts.search.loop import run_search
from mcts.search.presets import PRESETS, preset_settings
from mcts.search.settings import Method, SearchSettings, Selection, VoteMode
from tests.toy_world import QUESTION, toy_world


def test_paper_preset_is_the_paper_configuration() -> None:
    paper = preset_settings("paper")
    assert paper == SearchSettings()
    assert (paper.selection, paper.vote_mode, paper.ig_variant.value) == (
        Selection.UCT,
        VoteMode.PLURALITY,
        "paper",
    )
    assert (paper.alpha, paper.beta, paper.k, paper.rounds) == (2.0, 10.0, 5, 12)
    assert all(p.label and p.description for p in PRESETS.values())
    with pytest.raises(ValueError, match="unknown preset"):
        preset_settings("huge")


def test_cli_preset_is_the_base_and_explicit_flags_override_it() -> None:
    args = build_parser().parse_args(
        ["run", "-q", "x", "--preset", "small", "--c-puct", "2.5", "--method", "constant"]
    )
    got = settings_from_args(args)
    small = PRESETS["small"].settings
    assert got == small.with_(c_puct=2.5, method=Method.CONSTANT)
    plain = settings_from_args(build_parser().parse_args(["run", "-q", "x", "--k", "2"]))
    assert plain == SearchSettings(k=2)
    # A flag written out wins even where its value is the paper's (UCT on top of the small preset).
    uct = build_parser().parse_args(["eval", "--preset", "small", "--selection", "uct", "--no-greedy-first"])
    assert settings_from_args(uct, "fast") == small.with_(selection=Selection.UCT, method=Method.FAST)


def test_bootstrap_interval_contains_the_mean_and_resamples_questions() -> None:
    mean, lo, hi = bootstrap_ci({"a": [1.0], "b": [0.0], "c": [1.0, 1.0]}, samples=500)
    assert mean == pytest.approx(0.75) and 0.0 <= lo <= mean <= hi <= 1.0
    assert bootstrap_ci({"a": [0.5]}) == (0.5, 0.5, 0.5)
    assert bootstrap_ci({}) is None


def test_every_answer_rule_is_scored_on_the_same_stored_tree() -> None:
    policy, scorer, tools = toy_world()
    search, result = run_search(
        QUESTION, SearchSettings(rounds=6, k=3), policy=policy, scorer=scorer, tools=tools
    )
    gold = tuple(GoldAnswer(name=n) for n in result.answer_names)
    run = StoredRun("toy/fast", "q1", gold, search.tree, search.settings, 1.0)
    assert result.answer and rule_f1(run, VoteMode.PLURALITY) == 1.0
    table = answer_rules_markdown([run])
    assert all(m.value in table for m in VoteMode) and "| toy/fast | 1 |" in table


def test_answer_rules_intersect_questions_within_a_folder_not_across_folders() -> None:
    policy, scorer, tools = toy_world()
    search, result = run_search(
        QUESTION, SearchSettings(rounds=6, k=3), policy=policy, scorer=scorer, tools=tools
    )
    gold = tuple(GoldAnswer(name=n) for n in result.answer_names)

    def run(label: str, question: str) -> StoredRun:
        return StoredRun(label, question, gold, search.tree, search.settings, 1.0)

    # Folder "dev": fast finished q1 and q2, constant only q1; folder "demo" holds other questions.
    runs = [run("dev/fast", "q1"), run("dev/fast", "q2"), run("dev/constant", "q1"), run("demo/fast", "d1")]
    table = answer_rules_markdown(runs)
    assert "| dev/fast | 1 |" in table and "| dev/constant | 1 |" in table
    assert "| demo/fast | 1 |" in table  # not emptied by the other folder's questions
