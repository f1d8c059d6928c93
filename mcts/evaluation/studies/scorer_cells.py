"""The scorer study's measurements: one `Cell` per (question set, scorer), read from eval runs
or from a study file written before.

ROOT holds one `eval --out` folder per (question set, scorer), named `SET-SCORER`: SET is
one of `SETS` (`choose`: the dev choose split; `demo`: demo questions 17-40, the demo split's
`policy` slice; `test`: the dev test split; `demo16`: demo questions 1-16), SCORER is
`constant` (the constant-reward ablation), `single` (the greedy path) or `MODEL-VARIANT`
(Fast MCTS with that scorer model and IG variant, e.g. `smollm-paper`, `gemma-question`).
A folder named `SET` alone, or given as a run of SET, holds several methods (`single`,
`fast`, `constant`, as the documented dev-test run does), Fast MCTS with the shipped scorer.

Two trees differ when one visited an action path (the rendered actions from the root) the
other did not: the app's twin view (`viz.twin`) matches nodes the same way; that layer sits
above this one, so the key is built here and a test holds the two together.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcts.evaluation.report import ReportInputError, check_finished, collect_rows, source_files
from mcts.evaluation.runner import EvalRow
from mcts.search.steps import Step
from mcts.search.trace import load_trace
from mcts.search.tree import ROOT_ID, Tree

CHOICE_SETS = {"choose": "dev choose", "demo": "demo 17-40"}
REPORT_SETS = {"test": "dev test", "demo16": "demo 1-16"}
SETS = {**CHOICE_SETS, **REPORT_SETS}
SHIPPED = "smollm-paper"  # the bundled SmolLM2-135M with the paper's IG: the shipped default
# In a folder of several methods (`SET`, or a run given for SET), Fast MCTS ran with the shipped scorer.
METHOD_SCORER = {"single": "single", "constant": "constant", "fast": SHIPPED}

Cells = dict[str, dict[str, "Cell"]]  # set -> scorer -> cell


@dataclass(frozen=True)
class Cell:
    """One scorer on one question set."""

    f1: float  # mean F1 (0..1)
    n: int
    differ: int | None  # answers unlike the constant reward's on the same questions (None: no constant run)
    seconds: float  # mean wall seconds per question
    answers: dict[str, tuple[str, ...]]  # question id -> sorted answer ids
    spread: float | None = None  # mean (max r - min r) over sibling groups of the saved trees
    # questions whose tree visits an action path the constant reward's does not, or back
    trees_differ: int | None = None


def _rows(folder: Path) -> list[EvalRow]:
    check_finished(source_files([folder]))  # a half-finished run would count only its first questions
    rows = collect_rows([folder])
    return [replace(r, trace=str(folder / r.trace)) if r.trace else r for r in rows]


def _by_method(folder: Path) -> dict[str, list[EvalRow]]:
    """A folder of several methods (the documented runs): each method under its scorer name."""
    out: dict[str, list[EvalRow]] = {}
    for row in _rows(folder):
        if row.method in METHOD_SCORER:
            out.setdefault(METHOD_SCORER[row.method], []).append(row)
    return out


def _tree(row: EvalRow | None) -> Tree | None:
    if row is None or not row.trace or not Path(row.trace).is_file():
        return None
    return load_trace(row.trace).to_tree()


def _action_text(step: Step | None) -> str:
    if step is None:
        return "(question)"
    text = step.action.render() if step.action is not None else f"(unparsable) {step.raw_text.strip()}"
    return " ".join(text.split())


def visited_paths(tree: Tree) -> set[tuple[str, ...]]:
    """The action path from the root of every visited node (the root: ())."""
    keys: dict[int, tuple[str, ...]] = {ROOT_ID: ()}
    for node in tree.nodes[1:]:  # a parent always precedes its children
        if node.visits > 0 and node.parent in keys:
            keys[node.id] = (*keys[node.parent], _action_text(node.step))
    return set(keys.values())


def trees_differ(rows: Sequence[EvalRow], constant: Sequence[EvalRow] | None) -> int | None:
    """On how many questions the saved tree differs from the constant reward's (an action path
    visited by one only); None without both sets of traces."""
    if not constant:
        return None
    theirs = {r.question_id: r for r in constant}
    pairs = [(_tree(r), _tree(theirs.get(r.question_id))) for r in rows]
    if any(a is None or b is None for a, b in pairs):
        return None
    return sum(visited_paths(a) != visited_paths(b) for a, b in pairs if a is not None and b is not None)


def sibling_spread(rows: Sequence[EvalRow]) -> float | None:
    """How far apart the rewards of siblings are, on average, in the saved trees: a reward
    can only steer PUCT between siblings as far as it tells them apart. None without traces
    or sibling groups (the greedy path has none)."""
    spreads = []
    for row in rows:
        path = Path(row.trace) if row.trace else None
        if path is None or not path.is_file():
            continue
        by_parent: dict[int, list[float]] = {}
        for node in json.loads(path.read_text(encoding="utf-8")).get("nodes", []):
            if node.get("parent") is not None and node.get("reward") is not None:
                by_parent.setdefault(node["parent"], []).append(float(node["reward"]))
        spreads += [max(r) - min(r) for r in by_parent.values() if len(r) > 1]
    return sum(spreads) / len(spreads) if spreads else None


def _raw_rows(root: Path, runs: Mapping[str, Path]) -> dict[str, dict[str, list[EvalRow]]]:
    """set -> scorer -> rows, from ROOT's `SET-SCORER` and `SET` folders and the given runs."""
    raw: dict[str, dict[str, list[EvalRow]]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        name, _, scorer = folder.name.partition("-")
        if name not in SETS:
            continue
        if not scorer:
            raw.setdefault(name, {}).update(_by_method(folder))
            continue
        rows = _rows(folder)
        methods = {r.method for r in rows}
        if len(methods) != 1:
            raise ReportInputError(f"{folder}: a SET-SCORER folder holds one method, found {sorted(methods)}")
        raw.setdefault(name, {})[scorer] = rows
    for name, folder in runs.items():
        raw.setdefault(name, {}).update(_by_method(folder))
    return raw


def read_cells(root: Path, runs: Mapping[str, Path] | None = None) -> Cells:
    """set -> scorer -> cell, for every `SET-SCORER` and `SET` folder under root and every
    `runs` folder (set -> a folder of several methods)."""
    cells: Cells = {}
    for name, by_scorer in _raw_rows(root, runs or {}).items():
        answers = {
            s: {r.question_id: tuple(sorted(str(a.get("id")) for a in r.answer)) for r in rows}
            for s, rows in by_scorer.items()
        }
        constant = answers.get("constant")
        cells[name] = {}
        for scorer, rows in by_scorer.items():
            mine = answers[scorer]
            differ = None if constant is None else sum(mine[q] != constant.get(q) for q in mine)
            seconds = sum(float(r.cost.get("wall_s", 0.0)) for r in rows) / len(rows)
            f1 = sum(r.f1 for r in rows) / len(rows)
            moved = trees_differ(rows, by_scorer.get("constant")) if scorer != "single" else None
            cells[name][scorer] = Cell(f1, len(rows), differ, seconds, mine, sibling_spread(rows), moved)
    return cells


def cells_from_json(data: Mapping[str, Any]) -> Cells:
    """set -> scorer -> cell, as a study file wrote them (no per-question answers)."""
    cells: Cells = {}
    for name, block in data.get("sets", {}).items():
        cells[name] = {
            scorer: Cell(
                f1=float(c["f1"]),
                n=int(c["n"]),
                differ=c.get("differ_from_constant"),
                seconds=float(c.get("seconds", 0.0)),
                answers={},
                spread=c.get("sibling_spread"),
                trees_differ=c.get("trees_differ_from_constant"),
            )
            for scorer, c in block.get("scorers", {}).items()
        }
    return cells


def read_study(path: Path) -> dict[str, Any]:
    """A study file's content; one that is not readable or holds no sets is refused."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: not a readable study file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sets"), dict):
        raise ReportInputError(f"{path}: not a study file (no 'sets')")
    return data


def keep_earlier(cells: Cells, earlier: Mapping[str, Any], fingerprint: str) -> list[str]:
    """Add the earlier study's cells that `cells` lacks; returns them as 'set/scorer'. Figures
    measured with other agent code are never mixed with today's."""
    if earlier.get("agent_code_fingerprint") != fingerprint:
        raise ReportInputError(
            f"--keep: that study was measured with agent code {earlier.get('agent_code_fingerprint')!r}, "
            f"this is {fingerprint!r}; run its scorers again instead"
        )
    kept = []
    for name, by_scorer in cells_from_json(earlier).items():
        mine = cells.setdefault(name, {})
        for scorer, cell in by_scorer.items():
            if scorer not in mine:
                mine[scorer] = cell
                kept.append(f"{name}/{scorer}")
    return kept
