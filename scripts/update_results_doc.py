"""Write eval reports into the documentation, so no results table is typed by hand.

    python scripts/update_results_doc.py dev-test=runs/dev-test demo=runs/demo

Each argument is `NAME=RUN_DIR` (an `eval --out` folder, every shard finished). In README.md
and docs/*.md, the lines between `<!-- results:NAME -->` and `<!-- /results:NAME -->` become
that run's report (`mcts.evaluation.report.report_markdown`: every method, then F1 by kind of
question), and the lines between `<!-- headline -->` and `<!-- /headline -->` become one
table of the named runs side by side (F1 overall and on the faithful questions, per method).
The lines between `<!-- ranker -->` and `<!-- /ranker -->` become the shipped option ranker's
fit (`models/relation_retriever/option_ranker.json`, written by `train-policy --mode options`).
With `--outputs`, the lines between `<!-- output: COMMAND -->` and `<!-- /output -->` become
the table lines COMMAND prints (only `python -m mcts study ...`, `python -m mcts.training.MODULE
...`, `python -m studies.NAME ...` and `python scripts/*.py` commands, run from the repository
root with this interpreter), so a study table is as fresh as its runs; `--only TEXT` re-runs
just the blocks whose command contains TEXT.
A run that is unfinished or pools parts of the split is refused and no file is changed.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from mcts.evaluation.report import (
    ReportInputError,
    breakdown,
    check_finished,
    check_poolable,
    collect_rows,
    method_stats,
    report_markdown,
    source_files,
)
from mcts.evaluation.runner import EvalRow
from ui.labels import method_label

ROOT = Path(__file__).resolve().parents[1]

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
RANKER = ROOT / "models" / "relation_retriever" / "option_ranker.json"
STEP_NAMES = {
    "search_nodes": "which entity to search",
    "hop": "which relation to follow first",
    "extend": "which relation to follow second",
    "done": "stop after the answer",
    "answer_patterns": "look one hop further",
    "entity_patterns": "explore the found entity",
}
HEADLINE_COLUMNS = ("all", "faithful", "family unseen", "held out")


def load_run(run: Path) -> list[EvalRow]:
    check_finished(source_files([run]))
    rows = collect_rows([run])
    if not rows:
        raise ReportInputError(f"{run}: no results")
    check_poolable(rows)
    return rows


def headline_markdown(runs: dict[str, list[EvalRow]]) -> str:
    """Methods as rows; per run, F1 on all its questions and on the kinds that matter most."""
    names = list(dict.fromkeys(m for rows in runs.values() for m in (s.method for s in method_stats(rows))))
    head, cells = ["method"], {m: [f"{method_label(m)} (`{m}`)"] for m in names}
    for run_name, rows in runs.items():
        columns, table = breakdown(rows)
        labels = [label for label, _ in columns]
        for wanted in HEADLINE_COLUMNS:
            if wanted not in labels:
                continue
            i = labels.index(wanted)
            head.append(f"{run_name}: {wanted} (n={columns[i][1]})")
            for m in names:
                cells[m].append(f"{100 * table[m][i]:.2f}" if m in table else "-")
        seconds = {s.method: s.seconds for s in method_stats(rows)}
        head.append(f"{run_name}: s/q")
        for m in names:
            cells[m].append(f"{seconds[m]:.1f}" if m in seconds else "-")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in cells.values()]
    return "\n".join(lines)


def ranker_markdown(path: Path = RANKER) -> str:
    """Held-out top-1 of the shipped ranker per kind of gold step, and overall, from its fit."""
    info = json.loads(path.read_text(encoding="utf-8"))["info"]
    fit = info["trained"]
    choose = fit["trained"]["choose"]
    lines = [
        f"Fitted with l2 = {fit['l2']} on {fit['trained']['train']['states']} train states; "
        f"held out (the {choose['states']} choose states pooled with 2-fold cross-validation over "
        f"the train questions): top-1 **{100 * choose['held_out_top1']:.1f}%** "
        f"(hand-set weights on the choose states: {100 * fit['hand_set']['choose']['top1']:.1f}%).",
        "",
        "| gold step | right / states | top-1 |",
        "|---|---:|---:|",
    ]
    for step, (right, total) in sorted(choose["held_out_by_step"].items(), key=lambda kv: -kv[1][1]):
        lines.append(
            f"| {STEP_NAMES.get(step, step)} (`{step}`) | {right} / {total} | {100 * right / total:.1f} |"
        )
    return "\n".join(lines)


OUTPUT_BLOCK = re.compile(r"(<!-- output: (.+?) -->\n)(.*?)(<!-- /output -->)", re.S)
ALLOWED_OUTPUT = re.compile(
    r"python (?:-m mcts study |-m mcts\.training\.[a-z_]+ |-m studies\.[a-z_]+ |scripts/[\w]+\.py )[^;&|`$<>]*"
)


def command_table(command: str) -> str:
    """The markdown tables a documented command prints (its other lines dropped)."""
    if not ALLOWED_OUTPUT.fullmatch(command):
        raise ReportInputError(f"not a command the docs may run: {command!r}")
    argv = [sys.executable, *shlex.split(command)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    if done.returncode != 0:
        raise ReportInputError(f"{command} failed: {done.stderr.strip().splitlines()[-1:]}")
    tables: list[list[str]] = [[]]
    for line in done.stdout.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])  # a line between two tables keeps them two tables
    return "\n\n".join("\n".join(t) for t in tables if t)


def replace_outputs(text: str, only: str = "") -> str:
    """Each output block's table, fresh; with `only`, just the blocks whose command contains it."""

    def fresh(m: re.Match[str]) -> str:
        if only not in m.group(2):
            return m.group(0)
        return m.group(1) + command_table(m.group(2)) + "\n" + m.group(4)

    return OUTPUT_BLOCK.sub(fresh, text)


def replace_block(text: str, tag: str, body: str) -> tuple[str, bool]:
    pattern = re.compile(rf"(<!-- {re.escape(tag)} -->\n)(.*?)(<!-- /{re.escape(tag)} -->)", re.S)
    new, count = pattern.subn(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text)
    return new, count > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", help="NAME=RUN_DIR")
    parser.add_argument(
        "--docs", nargs="*", default=None, help="files to update (default: README.md, docs/*.md)"
    )
    parser.add_argument("--outputs", action="store_true", help="also re-run the commands of output blocks")
    parser.add_argument(
        "--only",
        default="",
        metavar="TEXT",
        help="with --outputs: only the blocks whose command contains TEXT",
    )
    args = parser.parse_args(argv)
    runs: dict[str, list[EvalRow]] = {}
    try:
        for spec in args.runs:
            name, sep, run = spec.partition("=")
            if not sep or not name or not run:
                raise ReportInputError(f"expected NAME=RUN_DIR, got {spec!r}")
            runs[name] = load_run(Path(run))
    except ReportInputError as exc:
        print(f"error: {exc} (no file was changed)", file=sys.stderr)
        return 2
    blocks = {f"results:{name}": report_markdown(rows) for name, rows in runs.items()}
    if runs:  # the headline is the named runs side by side: without runs, leave it as it is
        blocks["headline"] = headline_markdown(runs)
    blocks["ranker"] = ranker_markdown()
    docs = [Path(d) for d in args.docs] if args.docs is not None else list(DOCS)
    updated: dict[Path, str] = {}
    try:
        for doc in docs:
            text = doc.read_text(encoding="utf-8")
            new = text
            for tag, body in blocks.items():
                new, found = replace_block(new, tag, body)
                if found:
                    print(f"{doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc}: {tag}")
            if args.outputs:
                new = replace_outputs(new, args.only)
            updated[doc] = new
    except ReportInputError as exc:
        print(f"error: {exc} (no file was changed)", file=sys.stderr)
        return 2
    for doc, new in updated.items():  # every block computed first: all files change, or none
        if new != doc.read_text(encoding="utf-8"):
            tmp = doc.with_name(doc.name + ".tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
