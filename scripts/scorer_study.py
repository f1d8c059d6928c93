"""Choose the IG scorer by what it does to the search, and report the choice.

    python scripts/scorer_study.py runs/scorers --run test=runs/dev-test [--keep FILE] [--json FILE]
    python scripts/scorer_study.py --from-json examples/scorer_study.json

ROOT holds one `eval --out` folder per (question set, scorer), named `SET-SCORER`: SET is
one of `SETS` (`choose`: the dev choose split; `demo`: demo questions 17-40, the demo split's
`policy` slice; `test`: the dev test split; `demo16`: demo questions 1-16), SCORER is
`constant` (the constant-reward ablation), `single` (the greedy path) or `MODEL-VARIANT`
(Fast MCTS with that scorer model and IG variant, e.g. `smollm-paper`, `gemma-question`).
A folder named `SET` alone, or given as `--run SET=DIR`, holds several methods (`single`,
`fast`, `constant`, as the documented dev-test run does), Fast MCTS with the shipped scorer.
The commands that make them are in docs/results.md.

The scorer chosen is the IG scorer with the highest F1 pooled over the choice sets (every
question weighs the same) among those that changed at least one answer from the constant
reward's (one that changed none is the constant reward in effect); ties go to the shipped
default, then by name. Printed: one table for the choice sets and one for the report sets
(chosen scorer, shipped scorer, constant reward, greedy path), each with F1, how many answers differ from
the constant reward's, on how many the tree differs from the constant reward's (an action
path visited by one only, as the app's twin marks it), the mean spread of the reward between siblings in the saved trees
(max r - min r: how far the reward can tell siblings apart) and seconds per question. With --json, every cell is written too (the app quotes
some of them, `ui.ig_evidence`), with the agent-code fingerprint they were measured with.

A study can grow over several sittings: `--keep FILE` takes, from an earlier study file, the
cells of scorers that ROOT does not hold (only when that file was measured with the current
agent code). `--from-json FILE` prints the tables from a study file alone, with no runs: the
documentation's block is rebuilt that way from the committed `examples/scorer_study.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcts.agents.fingerprint import agent_code_fingerprint  # noqa: E402  (the repo root is put on the path first)
from mcts.evaluation.report import ReportInputError, check_finished, collect_rows, source_files  # noqa: E402
from mcts.evaluation.runner import EvalRow  # noqa: E402
from mcts.search.trace import load_trace  # noqa: E402
from viz.twin import diff_trees  # noqa: E402  (the app's twin: nodes matched by action path)

CHOICE_SETS = {"choose": "dev choose", "demo": "demo 17-40"}
REPORT_SETS = {"test": "dev test", "demo16": "demo 1-16"}
SETS = {**CHOICE_SETS, **REPORT_SETS}
SHIPPED = "smollm-paper"  # the bundled SmolLM2-135M with the paper's IG: the shipped default
MODELS = {"smollm": "SmolLM2-135M (bundled)", "gemma": "Gemma 3 270M (optional)"}
VARIANTS = {
    "paper": "paper IG",
    "question": "IG on the question",
    "question_clipped": "IG on the question, clipped",
}
BASELINES = {"constant": "constant reward (ablation)", "single": "greedy path (no search)"}
# In a folder of several methods (`SET`, or `--run SET=DIR`), Fast MCTS ran with the shipped scorer.
METHOD_SCORER = {"single": "single", "constant": "constant", "fast": SHIPPED}


@dataclass(frozen=True)
class Cell:
    """One scorer on one question set."""

    f1: float  # mean F1 (0..1)
    n: int
    differ: int | None  # answers unlike the constant reward's on the same questions (None: no constant run)
    seconds: float  # mean wall seconds per question
    answers: dict[str, tuple[str, ...]]  # question id -> sorted answer ids
    spread: float | None = None  # mean (max r - min r) over sibling groups of the saved trees
    trees_differ: int | None = (
        None  # questions whose tree visits an action path the constant's does not, or back
    )


def scorer_label(scorer: str) -> str:
    if scorer in BASELINES:
        return BASELINES[scorer]
    model, _, variant = scorer.partition("-")
    return f"{MODELS.get(model, model)}, {VARIANTS.get(variant, variant)}"


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


def _tree(row: EvalRow | None) -> Any:
    if row is None or not row.trace or not Path(row.trace).is_file():
        return None
    return load_trace(row.trace).to_tree()


def trees_differ(rows: list[EvalRow], constant: list[EvalRow] | None) -> int | None:
    """On how many questions the saved tree differs from the constant reward's (an action path
    visited by one only, as the app's twin marks them); None without both sets of traces."""
    if not constant:
        return None
    theirs = {r.question_id: r for r in constant}
    pairs = [(_tree(r), _tree(theirs.get(r.question_id))) for r in rows]
    if any(a is None or b is None for a, b in pairs):
        return None
    return sum(bool(d.only_a or d.only_b) for d in (diff_trees(a, b) for a, b in pairs))


def sibling_spread(rows: list[EvalRow]) -> float | None:
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


def read_cells(root: Path, runs: dict[str, Path] | None = None) -> dict[str, dict[str, Cell]]:
    """set -> scorer -> cell, for every `SET-SCORER` and `SET` folder under root and every
    `runs` folder (set -> a folder of several methods)."""
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
            raise SystemExit(f"{folder}: a SET-SCORER folder holds one method, found {sorted(methods)}")
        raw.setdefault(name, {})[scorer] = rows
    for name, folder in (runs or {}).items():
        raw.setdefault(name, {}).update(_by_method(folder))
    cells: dict[str, dict[str, Cell]] = {}
    for name, by_scorer in raw.items():
        answers = {s: {r.question_id: tuple(sorted(str(a.get("id")) for a in r.answer)) for r in rows}
                   for s, rows in by_scorer.items()}  # fmt: skip
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


def cells_from_json(data: dict[str, Any]) -> dict[str, dict[str, Cell]]:
    """set -> scorer -> cell, as a study file (`--json`) wrote them (no per-question answers)."""
    cells: dict[str, dict[str, Cell]] = {}
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: not a readable study file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sets"), dict):
        raise SystemExit(f"{path}: not a study file (no 'sets')")
    return data


def keep_earlier(cells: dict[str, dict[str, Cell]], earlier: dict[str, Any], fingerprint: str) -> list[str]:
    """Add the earlier study's cells that `cells` lacks; returns them as 'set/scorer'. Figures
    measured with other agent code are never mixed with today's."""
    if earlier.get("agent_code_fingerprint") != fingerprint:
        raise SystemExit(
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


def pooled(cells: dict[str, dict[str, Cell]], scorer: str, sets: dict[str, str]) -> float | None:
    """F1 over the union of the sets' questions; None unless the scorer ran on every one."""
    mine = [cells.get(s, {}).get(scorer) for s in sets]
    if any(c is None for c in mine):
        return None
    total = sum(c.n for c in mine if c is not None)
    return sum(c.f1 * c.n for c in mine if c is not None) / total


def ig_scorers(cells: dict[str, dict[str, Cell]]) -> list[str]:
    return sorted({s for by in cells.values() for s in by if s not in BASELINES})


def steers(cells: dict[str, dict[str, Cell]], scorer: str) -> bool:
    """Whether the scorer changed any answer of the choice sets from the constant reward's; one
    that changed none is the constant reward in effect, whatever its F1."""
    return any((c := cells.get(s, {}).get(scorer)) is not None and c.differ for s in CHOICE_SETS)


def chosen_scorer(cells: dict[str, dict[str, Cell]]) -> str | None:
    scored = [(pooled(cells, s, CHOICE_SETS), s) for s in ig_scorers(cells) if steers(cells, s)]
    scored = [(f1, s) for f1, s in scored if f1 is not None]
    if not scored:
        return None
    return min(scored, key=lambda t: (-round(t[0], 6), t[1] != SHIPPED, t[1]))[1]


def _cell_text(cell: Cell | None) -> list[str]:
    if cell is None:
        return ["-", "-", "-", "-", "-"]
    differ = "-" if cell.differ is None else f"{cell.differ} of {cell.n}"
    moved = "-" if cell.trees_differ is None else f"{cell.trees_differ} of {cell.n}"
    spread = "-" if cell.spread is None else f"{cell.spread:.3f}"
    return [f"{100 * cell.f1:.2f}", differ, moved, spread, f"{cell.seconds:.1f}"]


def table(
    cells: dict[str, dict[str, Cell]], sets: dict[str, str], scorers: list[str], mark: str | None
) -> str:
    present = {k: v for k, v in sets.items() if k in cells}
    head = ["scorer"]
    for key, label in present.items():
        n = max(c.n for c in cells[key].values())
        head += [f"{label}: F1 (n={n})", f"{label}: answer ≠ constant", f"{label}: tree ≠ constant"]
        head += [f"{label}: r spread", f"{label}: s/q"]
    if len(present) > 1:
        head.append("pooled F1")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for scorer in scorers:
        label = f"**{scorer_label(scorer)}** (chosen)" if scorer == mark else scorer_label(scorer)
        row = [f"{label} `{scorer}`"]
        for key in present:
            row += _cell_text(cells[key].get(scorer))
        if len(present) > 1:
            both = pooled(cells, scorer, present)
            row.append("-" if both is None else f"{100 * both:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def evidence(cells: dict[str, dict[str, Cell]], chosen: str | None, written_by: str) -> dict:
    """Every cell, per set (the app quotes the chosen scorer, the shipped one and the baselines)."""
    keep = list(dict.fromkeys([chosen or SHIPPED, SHIPPED, *ig_scorers(cells), "constant", "single"]))
    sets = {}
    for key, label in SETS.items():
        if key not in cells:
            continue
        sets[key] = {
            "label": label,
            "role": "choice" if key in CHOICE_SETS else "report",
            "scorers": {s: {"f1": round(c.f1, 4), "n": c.n, "differ_from_constant": c.differ,
                            "sibling_spread": None if c.spread is None else round(c.spread, 4),
                            "trees_differ_from_constant": c.trees_differ,
                            "seconds": round(c.seconds, 1)}
                        for s in keep if (c := cells[key].get(s)) is not None},
        }  # fmt: skip
    return {
        "chosen": chosen,
        "shipped": SHIPPED,
        "labels": {s: scorer_label(s) for s in keep},
        "sets": sets,
        "agent_code_fingerprint": agent_code_fingerprint(),
        "written_by": written_by,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, nargs="?", help="folder of SET-SCORER eval runs")
    ap.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="SET=DIR",
        help="a folder of several methods for SET (Fast MCTS = the shipped scorer)",
    )
    ap.add_argument("--json", type=Path, help="also write every cell here (the app quotes some)")
    ap.add_argument(
        "--keep", type=Path, metavar="FILE", help="an earlier study file: its cells of scorers ROOT lacks"
    )
    ap.add_argument(
        "--from-json", type=Path, metavar="FILE", help="print the tables of a study file; no runs"
    )
    args = ap.parse_args(argv)
    if args.from_json is not None:
        if args.root is not None or args.run or args.keep or args.json:
            raise SystemExit("--from-json prints a study file's tables and takes no runs, --keep or --json")
        cells = cells_from_json(read_study(args.from_json))
        _print_tables(cells, chosen_scorer(cells))
        return 0
    if args.root is None:
        raise SystemExit("give ROOT, a folder of SET-SCORER eval runs, or --from-json FILE")
    runs: dict[str, Path] = {}
    for spec in args.run:
        name, sep, folder = spec.partition("=")
        if not sep or name not in SETS or not Path(folder).is_dir():
            raise SystemExit(
                f"--run expects SET=DIR with SET one of {', '.join(SETS)} and DIR a folder: {spec!r}"
            )
        runs[name] = Path(folder)
    if not args.root.is_dir():
        raise SystemExit(f"{args.root}: not a folder of eval runs (see the commands in docs/results.md)")
    try:
        cells = read_cells(args.root, runs)
    except ReportInputError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.keep is not None:
        kept = keep_earlier(cells, read_study(args.keep), agent_code_fingerprint())
        if kept:
            print(f"kept from {args.keep}: {', '.join(kept)}", file=sys.stderr)
    chosen = chosen_scorer(cells)
    _print_tables(cells, chosen)
    if args.json:
        command = " ".join(["python scripts/scorer_study.py", *(argv if argv is not None else sys.argv[1:])])
        args.json.write_text(json.dumps(evidence(cells, chosen, command), indent=1) + "\n", encoding="utf-8")
    return 0


def _print_tables(cells: dict[str, dict[str, Cell]], chosen: str | None) -> None:
    choice = ig_scorers(cells) + [s for s in BASELINES if any(s in cells.get(k, {}) for k in CHOICE_SETS)]
    print(table(cells, CHOICE_SETS, choice, chosen))
    report = [
        s
        for s in dict.fromkeys((chosen, SHIPPED, "constant", "single"))
        if s and any(s in cells.get(k, {}) for k in REPORT_SETS)
    ]
    if report:
        print()
        print(table(cells, REPORT_SETS, report, chosen))


if __name__ == "__main__":
    raise SystemExit(main())
