"""The guided policy's option ranker: features, the hand-set form, states, fitting, loading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kb.actions import Action
from mcts.agents.guided_options import PRIOR_NAMES, Priors
from mcts.agents.models import BUNDLED_POLICY_ADAPTER
from mcts.agents.option_ranker import LM, RANKER_FILE, OptionRanker, expanded
from mcts.training.option_ranker import evaluate, fit, picks_by_step, train_option_ranker
from mcts.training.option_states import StateRow, fold_of, same_step, states_of
from mcts.training.split import read_jsonl


def _row(gold: int, n: int = 4, marker: str = "marker") -> StateRow:
    feats = tuple({marker: 1.0} if i == gold else {"similarity": 0.5} for i in range(n))
    return StateRow("q", 0, tuple(0.0 for _ in range(n)), ("hop",) * n, feats, gold)


def test_fit_learns_a_feature_that_marks_the_gold_step_and_stays_near_the_hand_set_weights():
    rows = [_row(g % 4) for g in range(12)]
    base = OptionRanker({LM: 1.0, "similarity": 4.0})
    assert evaluate(rows, base)["top1"] == 0.0  # similarity points at the wrong options
    strong, _ = fit(rows, base, l2=0.001)
    assert evaluate(rows, strong)["top1"] == 1.0 and strong.weights["marker"] > 0
    held, curve = fit(rows, base, l2=100.0)  # a strong pull keeps the hand-set weights
    assert held.weights["similarity"] == pytest.approx(4.0, abs=0.1) and len(curve) == 300


def test_the_lm_score_gets_a_weight_per_kind_of_option_and_the_fit_learns_it():
    from mcts.agents.guided_options import Option

    hop = Option("hop", "Follow x.", Action("ExecuteSPARQL", "SELECT ?x WHERE { ?x ns:r ns:m.1 }"))
    assert OptionRanker({LM: 1.0, "lm:hop": 2.0}).score(0.5, hop) == pytest.approx(1.5)
    assert OptionRanker({LM: 1.0, "lm:done": 2.0}).score(0.5, hop) == pytest.approx(0.5)
    # The LM points at the gold option of "done" states and away from it in "hop" states.
    rows = [
        StateRow("q", 0, (1.0, 0.0), (k, k), ({}, {}), 0 if k == "done" else 1) for k in ("done", "hop") * 6
    ]
    trained, _ = fit(rows, OptionRanker({LM: 1.0}), l2=0.001)
    assert trained.weights["lm:done"] > 0 > trained.weights["lm:hop"]
    assert evaluate(rows, trained)["top1"] == 1.0


def test_picks_are_counted_per_kind_of_gold_step():
    stop = StateRow("q", 3, (0.0, 1.0), ("hop", "done"), ({}, {}), 1)  # the LM prefers Done: right
    go_on = StateRow("q", 3, (0.0, 1.0), ("answer_patterns", "done"), ({}, {}), 0)  # wrong
    tie = StateRow("q", 2, (0.5, 0.5), ("hop", "hop"), ({}, {}), 0)  # a tie is not a pick
    counts = picks_by_step([stop, go_on, tie, stop], OptionRanker({LM: 1.0}))
    assert counts == {"answer_patterns": [0, 1], "done": [2, 2], "hop": [0, 1]}


def test_training_keeps_the_l2_best_on_held_out_states_and_saves_ranker_and_curve(tmp_path: Path):
    from dataclasses import replace

    train = [replace(_row(g % 4), id=f"q{g}") for g in range(12)]  # questions in both CV folds
    choose = [_row(g % 3, n=3) for g in range(6)]
    summary = train_option_ranker(train, choose, OptionRanker({LM: 1.0}), tmp_path, grid=(0.001, 10.0))
    assert summary["l2"] == 0.001 and summary["trained"]["choose"]["top1"] == 1.0
    assert summary["grid"]["0.001"]["held_out_top1"] >= summary["grid"]["10"]["held_out_top1"]
    by_step = summary["trained"]["choose"]["held_out_by_step"]  # every held-out state, by gold step
    assert by_step["hop"][1] == len(choose) + len(train)
    assert by_step["hop"][0] / by_step["hop"][1] == pytest.approx(
        summary["trained"]["choose"]["held_out_top1"], abs=1e-4
    )
    assert summary["hand_set"]["choose"]["top1"] < 1.0
    loaded = OptionRanker.load(tmp_path)
    assert loaded.weights["marker"] > 0 and loaded.info["trained"]["l2"] == 0.001
    assert (tmp_path / "option_ranker_loss.png").stat().st_size > 0
    with pytest.raises(ValueError, match="need states"):
        train_option_ranker([], choose, OptionRanker({LM: 1.0}), tmp_path)


def test_ranker_file_is_checked_when_loaded(tmp_path: Path):
    (tmp_path / RANKER_FILE).write_text(json.dumps({"weights": {"lm": "__import__('os')"}}))
    with pytest.raises(ValueError, match="map feature names to numbers"):
        OptionRanker.load(tmp_path)


def test_gold_step_matching_and_folds_are_stable():
    assert same_step(Action("SearchNodes", "taylor swift"), Action("SearchNodes", "Taylor Swift "))
    query = "SELECT ?x WHERE { ns:m.1 ns:r ?x }"
    assert same_step(Action("ExecuteSPARQL", query), Action("ExecuteSPARQL", query.replace(" ", "  ")))
    assert not same_step(Action("ExecuteSPARQL", query), Action("SearchGraphPatterns", query))
    assert same_step(Action("SearchGraphPatterns", query, semantic="a"), Action("SearchGraphPatterns", query))
    assert {fold_of("cwq:1", 2), fold_of("cwq:2", 2)} <= {0, 1} and fold_of("cwq:1", 2) == fold_of("cwq:1", 2)


@pytest.fixture(scope="module")
def guided(fbqa_kb):
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox
    from mcts.agents.models import load_model
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.training.trajectories import RecordingRanker

    recorder = RecordingRanker(default_ranker())
    tools = Toolbox(fbqa_kb, ranker=recorder)
    return tools, recorder, GuidedPolicy(load_model(None), tools, learned_features=True)


def test_states_along_real_trajectories_hold_the_gold_step_and_the_hand_set_scores(guided, fbqa_dir: Path):
    tools, recorder, policy = guided
    records = [r for r in read_jsonl(fbqa_dir / "dev.jsonl")[:4] if r.get("path")]
    rows = [row for rec in records for row in states_of(rec, tools, recorder, policy)[0]]
    assert len(rows) >= 4
    kinds = {r.kinds[r.gold] for r in rows}
    assert {"entity_patterns", "hop", "done"} <= kinds  # every kind of gold step is seen
    # The hand-set ranker is the policy as it is: LM score plus the priors' weighted features.
    from mcts.training.trajectories import build_trajectory

    traj = next(t for t in (build_trajectory(r, tools, recorder) for r in records) if t.valid)
    options = policy.options(traj.question, traj.steps[:2])  # after SearchNodes, SearchGraphPatterns
    assert any(o.kind == "hop" and dict(o.features)["similarity"] > 0 for o in options)
    hand = OptionRanker.from_priors(Priors())
    for option in options:
        assert Priors().weigh(option.features) == pytest.approx(option.prior)
        assert hand.score(0.3, option) == pytest.approx(0.3 + option.prior)
        assert expanded(option)[f"kind:{option.kind}"] == 1.0
    assert all(name in PRIOR_NAMES for name in hand.weights if name != LM)
    trained, _ = fit(rows, hand, l2=0.01)  # a real fit on real states: no worse on what it saw
    assert evaluate(rows, trained)["top1"] >= evaluate(rows, hand)["top1"]


def test_world_uses_the_option_ranker_saved_beside_a_retriever(tmp_path: Path):
    from mcts.agents.world import _adapter_option_ranker

    folder = tmp_path / "adapter"
    shutil.copytree(BUNDLED_POLICY_ADAPTER, folder)
    (folder / RANKER_FILE).unlink(missing_ok=True)
    assert _adapter_option_ranker(str(folder)) is None and _adapter_option_ranker("") is None
    OptionRanker({LM: 0.5, "kind:done": 1.0}).save(folder)
    assert _adapter_option_ranker(str(folder)).weights["kind:done"] == 1.0


def test_cli_options_mode_needs_the_trajectories_kb_and_questions(tmp_path: Path, capsys) -> None:
    from mcts.cli.main import main

    trajectories = tmp_path / "traj.jsonl"
    trajectories.write_text("")
    args = ["train-policy", "--mode", "options", "--trajectories", str(trajectories), "--out", str(tmp_path)]
    assert main(args) == 2
    assert "needs --kb and --questions" in capsys.readouterr().err
    # Into a folder without a retriever: a clear error, nothing written.
    assert main([*args, "--kb", "demo", "--questions", str(trajectories)]) == 2
    assert "train the relation retriever there first" in capsys.readouterr().err
    assert not (tmp_path / RANKER_FILE).exists()


def test_cli_refuses_a_learned_term_scale_outside_0_to_1(tmp_path: Path, capsys) -> None:
    from mcts.cli.main import main

    trajectories = tmp_path / "traj.jsonl"
    trajectories.write_text("")
    args = ["train-policy", "--trajectories", str(trajectories), "--out", str(tmp_path / "r")]
    assert main([*args, "--learned-term-scale", "1.5"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
