"""F1 per kind of question (the record's `meta.compositionality_type`) for runs side by side.

    python scripts/f1_by_kind.py --questions examples/questions.jsonl \\
        base=runs/demo-policy/none trained=runs/demo-policy/adapter

Each argument is `NAME=RUN_DIR` (an `eval --out` folder, finished); one row per run and
method. Kinds are the question file's (simple, composition, conjunction, comparative,
superlative, count on the demo; CWQ's on `dev.jsonl`), so a policy change that helps one
kind and hurts another shows where. After them, one column per slice of the demo split
(`examples/splits/demo.json`: the questions each choice was made on), so a figure on the
questions a choice was made on and one on the questions it was not made on stand apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcts.evaluation.report import ReportInputError, check_finished, collect_rows, source_files  # noqa: E402

KIND_ORDER = ("simple", "composition", "conjunction", "comparative", "superlative", "count")
DEMO_SPLIT = ROOT / "examples" / "splits" / "demo.json"


def demo_slices(path: Path = DEMO_SPLIT) -> dict[str, str]:
    """question id -> the demo split's choice made on it (`preset`, `policy`, ...)."""
    choices = json.loads(path.read_text(encoding="utf-8")).get("choices", {})
    return {str(q): name for name, choice in choices.items() for q in choice.get("questions", [])}


def question_kinds(path: Path) -> dict[str, str]:
    kinds = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            kinds[str(record["id"])] = str((record.get("meta") or {}).get("compositionality_type") or "other")
    return kinds


def kind_table(runs: dict[str, Path], kinds: dict[str, str], slices: dict[str, str] | None = None) -> str:
    f1s: dict[tuple[str, str], dict[str, list[float]]] = {}
    slice_columns = {f"chose {name} here" for name in (slices or {}).values()}
    for name, folder in runs.items():
        check_finished(source_files([folder]))
        for row in collect_rows([folder]):
            by_kind = f1s.setdefault((name, row.method), defaultdict(list))
            by_kind[kinds.get(row.question_id, "other")].append(row.f1)
            by_kind["all"].append(row.f1)
            if slices and row.question_id in slices:
                by_kind[f"chose {slices[row.question_id]} here"].append(row.f1)
    seen = {k for by_kind in f1s.values() for k in by_kind} - {"all"} - slice_columns
    used = [
        c
        for c in dict.fromkeys(f"chose {n} here" for n in (slices or {}).values())
        if any(c in b for b in f1s.values())
    ]
    columns = [k for k in KIND_ORDER if k in seen] + sorted(seen - set(KIND_ORDER)) + ["all", *used]
    counts = {k: max(len(by_kind.get(k, [])) for by_kind in f1s.values()) for k in columns}
    head = ["run", "method", *(f"{k} (n={counts[k]})" for k in columns)]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(columns)]
    for (name, method), by_kind in f1s.items():
        cells = [f"{100 * sum(v) / len(v):.1f}" if (v := by_kind.get(k)) else "-" for k in columns]
        lines.append("| " + " | ".join([name, method, *cells]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=Path, required=True, help="the question file the runs answered")
    ap.add_argument("runs", nargs="+", help="NAME=RUN_DIR")
    args = ap.parse_args(argv)
    runs = {}
    for spec in args.runs:
        name, sep, folder = spec.partition("=")
        if not sep or not Path(folder).is_dir():
            raise SystemExit(f"expected NAME=RUN_DIR with RUN_DIR a folder, got {spec!r}")
        runs[name] = Path(folder)
    try:
        print(kind_table(runs, question_kinds(args.questions), demo_slices()))
    except ReportInputError as exc:
        raise SystemExit(f"error: {exc}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
