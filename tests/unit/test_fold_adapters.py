"""Fold adapters: each fold's retriever and a ranker fitted without that fold's questions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mcts.agents.case_memory import load_cases, save_cases
from mcts.agents.models import BUNDLED_POLICY_ADAPTER
from mcts.agents.option_ranker import LM, OptionRanker
from mcts.agents.relation_adapter import is_relation_adapter
from mcts.training.cases import cases_from_records
from mcts.training.fold_adapters import WEIGHTS, write_fold_adapters
from mcts.training.option_states import StateRow, fold_of


def _row(question_id: str) -> StateRow:
    feats = ({"marker": 1.0}, {}, {})
    return StateRow(question_id, 0, (0.0, 0.0, 0.0), ("hop",) * 3, feats, 0)


def test_each_fold_gets_its_retriever_a_ranker_fitted_without_it_and_its_questions(tmp_path: Path):
    shipped = tmp_path / "shipped"
    shutil.copytree(BUNDLED_POLICY_ADAPTER, shipped)
    folds_dir = tmp_path / "states.jsonl.folds"
    for f in range(2):  # stand-ins for the stacking step's fold retrievers: told apart by their bytes
        (folds_dir / f"retriever-{f}").mkdir(parents=True)
        (folds_dir / f"retriever-{f}" / WEIGHTS).write_bytes(f"fold {f}".encode())
    records = [
        {"id": f"q{i}", "question": f"question {i}?", "topic_entities": [{"mid": f"m.{i}"}], "path": ["a.b"]}
        for i in range(12)
    ]
    save_cases(cases_from_records(records), shipped)  # the shipped memory holds every train question
    rows = [_row(r["id"]) for r in records]
    assert {fold_of(r["id"], 2) for r in records} == {0, 1}

    written = write_fold_adapters(records, rows, OptionRanker({LM: 1.0}), 0.001, shipped, folds_dir)

    assert [a.name for a, _ in written] == ["adapter-0", "adapter-1"]
    for f, (adapter, questions) in enumerate(written):
        assert is_relation_adapter(adapter)
        assert (adapter / WEIGHTS).read_bytes() == f"fold {f}".encode()
        ranker = OptionRanker.load(adapter)
        assert ranker.info["fold"] == f and ranker.info["l2"] == 0.001
        ids = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
        assert ids == [r["id"] for r in records if fold_of(r["id"], 2) == f]
        assert ranker.info["states"] == sum(1 for r in rows if fold_of(r.id, 2) != f)  # the other fold's
        assert ranker.weights["marker"] > 0
        # Its case memory holds the other fold's questions only.
        held = {c.question for c in load_cases(adapter)}
        assert held == {r["question"] for r in records if fold_of(r["id"], 2) != f}
    assert (shipped / WEIGHTS).read_bytes() != b"fold 0"  # the shipped adapter is untouched
