"""F1 of the held-out train folds, broken down, with each question's family counted against
the questions its fold adapter was trained on.

    python scripts/fold_report.py shipped=runs/folds

Each argument is `NAME=DIR`, where DIR holds one finished `eval --out` folder per fold (`DIR/0`,
`DIR/1`: step 4 of docs/evaluation.md's "Training the policy"); one row per NAME, its single
path's F1 in each column. In an eval report every train question's family counts as seen (the
question itself is in the train part); here it is seen only when another fold holds a question
of its family, the case memory and retriever of its fold adapter having seen only those.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcts.evaluation.report import (  # noqa: E402  (the repo root is put on the path first)
    ReportInputError,
    breakdown,
    breakdown_markdown,
    check_finished,
    collect_rows,
    source_files,
)
from mcts.evaluation.runner import EvalRow  # noqa: E402
from mcts.training.option_states import family_seen_by_fold  # noqa: E402
from mcts.training.split import load_split  # noqa: E402


def with_fold_families(rows: list[EvalRow], train_ids: list[str], folds: int) -> list[EvalRow]:
    """The rows with `family_in_train` read against the other folds' questions (a fold adapter
    trained on those only); a row that is not a train question is refused."""
    if folds < 2:
        raise ReportInputError(f"--folds {folds}: fold adapters come in two folds or more")
    seen = family_seen_by_fold(train_ids, folds)
    train = set(train_ids)
    out = []
    for row in rows:
        if row.question_id not in train:
            raise ReportInputError(f"{row.question_id} is not a train question; these are not fold runs")
        out.append(replace(row, family_in_train=seen(row.question_id)))
    return out


def fold_rows(name: str, folder: Path, train_ids: list[str], folds: int, method: str) -> list[EvalRow]:
    """`method`'s rows of the fold runs under `folder`, named `name`, families per fold."""
    runs = sorted(p for p in folder.iterdir() if p.is_dir())
    if not runs:
        raise ReportInputError(f"{folder}: no fold run folders in it")
    check_finished(source_files(runs))
    rows = [replace(r, method=name) for r in collect_rows(runs) if r.method == method]
    if not rows:
        raise ReportInputError(f"{folder}: no {method} rows")
    return with_fold_families(rows, train_ids, folds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", metavar="NAME=DIR", help="fold runs: DIR/0, DIR/1, ...")
    parser.add_argument("--folds", type=int, default=2, help="how many folds the adapters were made with")
    parser.add_argument("--method", default="single")
    args = parser.parse_args(argv)
    train_ids = load_split()["train"]
    rows: list[EvalRow] = []
    names = []
    try:
        for spec in args.runs:
            name, sep, folder = spec.partition("=")
            if not sep or not name or not folder:
                raise ReportInputError(f"{spec!r}: expected NAME=DIR")
            names.append(name)
            rows += fold_rows(name, Path(folder), train_ids, args.folds, args.method)
        columns, table = breakdown(rows, names)
    except (ReportInputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(breakdown_markdown(columns, table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
