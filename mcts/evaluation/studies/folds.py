"""F1 of the held-out train folds, each question's family counted against the questions its
fold adapter was trained on.

A fold run (`DIR/0`, `DIR/1`: step 4 of docs/evaluation.md's "Training the policy") answers
train questions with an adapter trained on the other folds. In an eval report every train
question's family counts as seen (the question itself is in the train part); here it is seen
only when another fold holds a question of its family. Which fold a question falls in, and so
whether its family was seen, is the training layer's rule: it comes in as `seen`, a function
of the question id, so this module knows rows and folders but not how folds are drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from mcts.evaluation.report import ReportInputError, check_finished, collect_rows, source_files
from mcts.evaluation.runner import EvalRow

Seen = Callable[[str], bool | None]  # question id -> its family held by another fold (None: no family)


def with_fold_families(rows: Sequence[EvalRow], train_ids: Sequence[str], seen: Seen) -> list[EvalRow]:
    """The rows with `family_in_train` read against the other folds' questions; a row that is
    not a train question is refused (these are then not fold runs)."""
    train = set(train_ids)
    out = []
    for row in rows:
        if row.question_id not in train:
            raise ReportInputError(f"{row.question_id} is not a train question; these are not fold runs")
        out.append(replace(row, family_in_train=seen(row.question_id)))
    return out


def fold_rows(name: str, folder: Path, train_ids: Sequence[str], seen: Seen, method: str) -> list[EvalRow]:
    """`method`'s rows of the fold runs under `folder` (one sub-folder per fold), renamed
    `name` so several fold sets stand side by side, families per fold."""
    runs = sorted(p for p in folder.iterdir() if p.is_dir())
    if not runs:
        raise ReportInputError(f"{folder}: no fold run folders in it")
    check_finished(source_files(runs))
    rows = [replace(r, method=name) for r in collect_rows(runs) if r.method == method]
    if not rows:
        raise ReportInputError(f"{folder}: no {method} rows")
    return with_fold_families(rows, train_ids, seen)
