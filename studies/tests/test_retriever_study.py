"""studies/retriever_study.py: held-out relation choices scored by faithfulness and family."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcts.training.split import read_jsonl
from mcts.training.trajectories import read_trajectories


@pytest.fixture(scope="module")
def dev_trajectories(fbqa_kb, fbqa_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    from mcts.training.trajectories import build_all

    records = read_jsonl(fbqa_dir / "dev.jsonl")[:8]
    out = tmp_path_factory.mktemp("traj") / "traj.jsonl"
    build_all(records, fbqa_kb, out)
    return read_trajectories(out, valid_only=False)


def test_retriever_study_scores_held_out_choices_by_faithfulness_and_family(
    dev_trajectories, fbqa_dir: Path, monkeypatch
):
    from kb.relation_ranker import default_ranker
    from mcts.training.retriever import RetrieverConfig, choices_of
    from studies import retriever_study
    from studies.retriever_study import RECIPES, SHIPPED, ZERO_SHOT, held_out_choices, study_markdown

    # A blend that scales the learned term to nothing is the zero-shot embedder again, and so
    # is a gate that never opens; one that always opens is the adapter itself.
    monkeypatch.setitem(retriever_study.BLENDS, "learned term dropped", (SHIPPED, 0.0))
    monkeypatch.setitem(retriever_study.GATES, "gate shut", (SHIPPED, lambda seen, near: False))
    monkeypatch.setitem(retriever_study.GATES, "gate open", (SHIPPED, lambda seen, near: near > -2))
    blends = [*retriever_study.BLENDS, *retriever_study.GATES]

    records = read_jsonl(fbqa_dir / "dev.jsonl")[:8]
    ids = [r["id"] for r in records]
    # The last two questions share a family (WebQTrn-60): the choose one's is seen in training.
    split = {"train": ids[:7], "choose": ids[7:], "test": []}
    config = RetrieverConfig(epochs=2, rank=4)
    got = held_out_choices(dev_trajectories, records, split, seeds=(0, 1), config=config)

    assert {c.recipe for c in got} == {ZERO_SHOT, *RECIPES, *blends}
    assert {c.question_id for c in got if c.where == "choose"} == set(ids[7:])
    assert {c.question_id for c in got if c.where == "train folds"} <= set(ids[:7])
    assert all(c.family_seen for c in got if c.where == "choose")
    assert not any(c.family_seen for c in got if c.question_id == ids[0])  # WebQTest-538: no other member
    faithful = {r["id"]: r.get("path_matches_gold_relations") for r in records}
    assert all(c.faithful == faithful[c.question_id] for c in got)

    # The zero-shot row is the embedder's own ranking: gold first, ties counting for it.
    base = default_ranker()
    by_id = {t["id"]: t for t in dev_trajectories}
    zero = [c for c in got if c.recipe == ZERO_SHOT and c.where == "choose"]
    expected = []
    for choice in choices_of([by_id[ids[7]]]):
        scores = base.rank(choice.semantic, list(choice.candidates))
        expected.append(sum(s > scores[choice.gold] + 1e-6 for s in scores) == 0)
    assert [c.right for c in zero] == expected
    dropped = [c for c in got if c.recipe == "learned term dropped" and c.where == "choose"]
    assert [c.right for c in dropped if c.seed == 0] == expected
    shut = [c for c in got if c.recipe == "gate shut" and c.where == "choose"]
    assert [c.right for c in shut if c.seed == 0] == expected

    def rights(recipe: str) -> list[bool]:
        return [c.right for c in got if c.recipe == recipe]

    assert rights("gate open") == rights(SHIPPED)
    # The true family gate is the adapter on seen families and the embedder on the others.
    true_gate = next(g for g in retriever_study.GATES if "true family" in g)
    for gated, adapter in zip(
        [c for c in got if c.recipe == true_gate], [c for c in got if c.recipe == SHIPPED], strict=True
    ):
        assert gated.question_id == adapter.question_id
        if gated.family_seen:
            assert gated.right == adapter.right

    table = study_markdown(got).splitlines()
    assert len(table) == 2 + 1 + len(RECIPES) + len(blends)
    assert table[2].startswith(f"| {ZERO_SHOT} |") and "2 seeds from 0" in table[3]
