"""F1 per kind of question (the record's `meta.compositionality_type`) for runs side by side.

Kinds are the question file's (simple, composition, conjunction, comparative, superlative,
count on the demo; CWQ's on `dev.jsonl`), so a policy change that helps one kind and hurts
another shows where. After them, one column per slice of the demo split
(`examples/splits/demo.json`: the questions each choice was made on), so a figure on the
questions a choice was made on and one on the questions it was not made on stand apart.
Knows the question file and the demo split; not how the runs were made.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from mcts.evaluation.facets import DEMO_SPLIT_FILE
from mcts.evaluation.report import check_finished, collect_rows, source_files

KIND_ORDER = ("simple", "composition", "conjunction", "comparative", "superlative", "count")


def demo_slices(path: Path = DEMO_SPLIT_FILE) -> dict[str, str]:
    """question id -> the demo split's choice made on it (`preset`, `policy`, ...)."""
    choices = json.loads(path.read_text(encoding="utf-8")).get("choices", {})
    return {str(q): name for name, choice in choices.items() for q in choice.get("questions", [])}


def question_kinds(path: Path) -> dict[str, str]:
    """question id -> its kind ("other" when the record names none)."""
    kinds = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            kinds[str(record["id"])] = str((record.get("meta") or {}).get("compositionality_type") or "other")
    return kinds


def kind_table(runs: dict[str, Path], kinds: dict[str, str], slices: dict[str, str] | None = None) -> str:
    """One row per (run name, method), mean F1 per kind, over all, then per demo slice."""
    f1s: dict[tuple[str, str], dict[str, list[float]]] = {}
    slice_columns = {f"chose {name} here" for name in (slices or {}).values()}
    for name, folder in runs.items():
        check_finished(source_files([folder]))  # a half-finished run would count only its first questions
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
