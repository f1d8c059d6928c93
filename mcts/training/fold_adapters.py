"""Policy adapters that never saw a train question: a held-out single-path check on 300 questions.

The 40 choose questions decide little: two near-ties flip the single path's F1 by 5 points.
The train questions can be held out too, fold by fold, as the stacking already does for the
relation retriever (`mcts.training.option_states`). For fold f this writes

    <folds>/adapter-<f>/      the shipped adapter folder with the fold's retriever weights
                              (trained on the other folds' questions) and an option ranker
                              fitted on the other folds' states only, with the shipped `l2`,
                              and a case memory of the other folds' questions
    <folds>/questions-<f>.jsonl   the fold's train questions

so that `python -m mcts eval --questions <folds>/questions-<f>.jsonl --policy-adapter
<folds>/adapter-<f>` answers each train question with a policy trained without it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcts.agents.case_memory import has_cases, save_cases
from mcts.agents.option_ranker import OptionRanker
from mcts.training.cases import cases_from_records
from mcts.training.option_ranker import fit
from mcts.training.option_states import StateRow, fold_of

WEIGHTS = "weights.npz"  # the retriever's low-rank adapter (`mcts.agents.relation_adapter`)


def write_fold_adapters(
    records: Sequence[dict[str, Any]],
    train_rows: Sequence[StateRow],
    base: OptionRanker,
    l2: float,
    shipped: str | Path,
    folds_dir: str | Path,
    folds: int = 2,
) -> list[tuple[Path, Path]]:
    """(adapter folder, questions file) per fold. `records`: the train questions;
    `train_rows`: their states; `base`: the hand-set ranker the fit is pulled to;
    `folds_dir` holds `retriever-<f>/` from the stacking step."""
    folds_dir = Path(folds_dir)
    out = []
    for f in range(folds):
        adapter = folds_dir / f"adapter-{f}"
        shutil.rmtree(adapter, ignore_errors=True)
        shutil.copytree(shipped, adapter)
        shutil.copy(folds_dir / f"retriever-{f}" / WEIGHTS, adapter / WEIGHTS)
        if has_cases(adapter):  # the shipped memory holds this fold's questions: the other folds' only
            save_cases(cases_from_records(r for r in records if fold_of(str(r["id"]), folds) != f), adapter)
        others = [r for r in train_rows if fold_of(r.id, folds) != f]
        ranker, _ = fit(others, base, l2)
        OptionRanker(ranker.weights, {"fold": f, "folds": folds, "l2": l2, "states": len(others)}).save(
            adapter
        )
        questions = folds_dir / f"questions-{f}.jsonl"
        with questions.open("w", encoding="utf-8") as fh:
            for record in records:
                if fold_of(str(record["id"]), folds) == f:
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        out.append((adapter, questions))
    return out
