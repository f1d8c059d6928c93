"""CLI subcommand `study`, registered on `python -m mcts` by `register`: analyses of
finished eval runs, no new search.

    python -m mcts study answers runs/dev-test                 # every answer rule's F1, 95% CIs
    python -m mcts study ranking runs/dev-test --methods fast,constant   # sibling rankers
    python -m mcts study kinds base=runs/demo-policy/none --questions examples/questions.jsonl
    python -m mcts study folds shipped=runs/folds              # held-out train folds
    python -m mcts study misses runs/dev-test --questions ../shared/data/fbqa/dev.jsonl --method single
    python -m mcts study vs-greedy runs/dev-test --method fast
    python -m mcts study scorers runs/scorers --run test=runs/dev-test --json examples/scorer_study.json
    python -m mcts study scorers --from-json examples/scorer_study.json
    python -m mcts study acceptance --markdown --check         # the goals on docs/acceptance.json
    python -m mcts study lens runs/demo-twins --records runs/demo-twins/lens.jsonl   # the IG lens study

Each study is a module of `mcts.evaluation.studies` (answers and ranking:
`mcts.evaluation.study`), imported when its command runs, so `--help` stays instant. Exit
status: 0 done, 1 `acceptance --check` with a goal not met, 2 bad arguments or runs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any


def _err(message: str) -> int:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _named(specs: list[str], what: str = "RUN_DIR") -> dict[str, Path]:
    """NAME=DIR arguments as a dict; a malformed one or a missing folder is refused."""
    out = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not Path(folder).is_dir():
            raise ValueError(f"expected NAME={what} with {what} a folder, got {spec!r}")
        out[name] = Path(folder)
    return out


def register(subparsers: Any) -> None:
    """Add `study` and its analyses to the `python -m mcts` subcommands."""
    study = subparsers.add_parser("study", help="analyses of finished eval runs (no new search)")
    sub = study.add_subparsers(dest="what", required=True, metavar="STUDY")
    _register_trees(sub)
    _register_rows(sub)
    _register_vs_greedy(sub)
    _register_scorers(sub)
    _register_acceptance(sub)
    _register_lens(sub)


def _register_trees(sub: Any) -> None:
    for what, text in (
        ("answers", "every answer rule's F1 on the stored trees, 95%% CIs"),
        ("ranking", "IG variants, the policy prior and a random order ranking siblings against true values"),
    ):
        p = sub.add_parser(what, help=text)
        p.add_argument("runs", nargs="+", help="eval output directories (results*.jsonl + traces/)")
        p.add_argument("--methods", default=None, help="comma separated methods to include (default: all)")
        p.add_argument("--seed", type=int, default=0, help="random ranker and bootstrap seed")
        if what == "ranking":
            p.add_argument(
                "--ig-variants",
                default="paper,question,question_clipped",
                help="IG variants to re-score every sibling group with",
            )
            p.add_argument("--scorer-model", default=None, help="IG scorer model (env SCORER_MODEL)")
            p.add_argument("--no-ig", action="store_true", help="skip IG re-scoring (no model)")
        p.set_defaults(func=cmd_trees)


def _register_vs_greedy(sub: Any) -> None:
    vs = sub.add_parser(
        "vs-greedy", help="where a search loses to the greedy path: does its tree hold that answer"
    )
    vs.add_argument("run", help="an eval directory with `single` and the search method")
    vs.add_argument("--method", default="fast")
    vs.set_defaults(func=cmd_vs_greedy)


def _register_rows(sub: Any) -> None:
    kinds = sub.add_parser("kinds", help="F1 per kind of question (and demo slice), runs side by side")
    kinds.add_argument("runs", nargs="+", metavar="NAME=RUN", help="finished eval output folders")
    kinds.add_argument("--questions", type=Path, required=True, help="the question file the runs answered")
    kinds.set_defaults(func=cmd_kinds)

    folds = sub.add_parser("folds", help="held-out train folds broken down, families counted per fold")
    folds.add_argument("runs", nargs="+", metavar="NAME=DIR", help="fold runs: DIR/0, DIR/1, ...")
    folds.add_argument("--folds", type=int, default=2, help="how many folds the adapters were made with")
    folds.add_argument("--method", default="single")
    folds.set_defaults(func=cmd_folds)

    misses = sub.add_parser("misses", help="each answer not exact, by the step that went wrong")
    misses.add_argument("runs", nargs="+", help="eval output folders or results files")
    misses.add_argument("--questions", type=Path, required=True, help="the question JSONL the runs answered")
    misses.add_argument("--method", default="single")
    misses.add_argument(
        "--folds",
        type=int,
        default=0,
        help="the runs are held-out train folds (`study folds`): count a family as seen "
        "only when another of this many folds holds it",
    )
    misses.set_defaults(func=cmd_misses)


def _register_scorers(sub: Any) -> None:
    p = sub.add_parser("scorers", help="choose the IG scorer by what it does to the search")
    p.add_argument("root", type=Path, nargs="?", help="folder of SET-SCORER eval runs")
    p.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="SET=DIR",
        help="a folder of several methods for SET (Fast MCTS = the shipped scorer)",
    )
    p.add_argument("--json", type=Path, help="also write every cell here (the app quotes some)")
    p.add_argument(
        "--keep", type=Path, metavar="FILE", help="an earlier study file: its cells of scorers ROOT lacks"
    )
    p.add_argument("--from-json", type=Path, metavar="FILE", help="print the tables of a study file; no runs")
    p.set_defaults(func=cmd_scorers)


def _register_acceptance(sub: Any) -> None:
    p = sub.add_parser("acceptance", help="the search's goals measured: met or not, and why not")
    p.add_argument(
        "runs",
        nargs="*",
        metavar="NAME=RUN",
        help="eval runs with single, fast and constant (default: the measurement in docs/acceptance.json)",
    )
    p.add_argument("--out", type=Path, default=None, help="write the runs' per-question measurement here")
    p.add_argument("--markdown", action="store_true", help="one markdown table instead of plain lines")
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is not met")
    p.set_defaults(func=cmd_acceptance)


def _register_lens(sub: Any) -> None:
    p = sub.add_parser(
        "lens", help="the IG reward's terms, restatement, and sibling ranking with the masking rule"
    )
    p.add_argument("runs", nargs="+", help="eval output directories (results*.jsonl + traces/)")
    p.add_argument(
        "--methods", default="fast,constant", help="comma separated methods (default: fast,constant)"
    )
    p.add_argument(
        "--records", type=Path, default=None, help="node records JSONL: appended per tree, resumed from"
    )
    p.add_argument("--from-records", action="store_true", help="print the tables of --records only; no model")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--parts", default="abcd", help="which tables: letters of abcd (default: all)")
    p.add_argument("--scorer-model", default=None, help="IG scorer model (env SCORER_MODEL)")
    p.add_argument(
        "--every-group",
        action="store_true",
        help="score the mask and opaque-id configurations on every sibling group, not only "
        "the groups whose true values differ (slower; widens tables a and b)",
    )
    p.set_defaults(func=cmd_lens)


def cmd_lens(args: argparse.Namespace) -> int:
    from mcts.evaluation.studies import lens
    from mcts.evaluation.studies.lens_tables import study_markdown

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not args.parts or set(args.parts) - set("abcd"):
        return _err(f"--parts {args.parts!r}: letters of abcd")
    bad = [d for d in args.runs if not Path(d).is_dir()]
    if bad:
        return _err(f"{bad[0]}: not an eval output folder")
    runs = lens.load_with_hops(args.runs, methods)
    if not runs:
        return _err(f"no finished {','.join(methods)} runs with traces in {', '.join(args.runs)}")
    if args.from_records:
        if args.records is None or not args.records.is_file():
            return _err("--from-records reads --records FILE: give an existing one")
        wanted = {(x.run.label, x.run.question_id) for x in runs}
        records = [r for r in lens.read_records(args.records) if (r.run, r.question_id) in wanted]
    else:
        from mcts.agents.models import load_model, resolve_model_names
        from mcts.agents.scorer import IGScorer

        name = resolve_model_names(None, args.scorer_model)[1]
        scorer = IGScorer(load_model(name))
        records = lens.measure_runs(
            runs,
            scorer,
            args.records,
            scorer_model=name,
            every_group=args.every_group,
            progress=lambda m: print(m, file=sys.stderr),
        )
    if not records:
        return _err("no sibling group in these trees")
    print(study_markdown(records, parts=args.parts, seed=args.seed))
    return 0


def cmd_trees(args: argparse.Namespace) -> int:
    from mcts.evaluation.study import answer_rules_markdown, load_runs, ranking_study, ranking_study_markdown

    methods = [m.strip() for m in args.methods.split(",")] if args.methods else None
    runs = load_runs(args.runs, methods)
    if not runs:
        return _err(f"no finished runs with traces in {', '.join(args.runs)}")
    if args.what == "answers":
        print(answer_rules_markdown(runs))
        return 0
    scorer = None
    if not args.no_ig:
        from mcts.agents.models import load_model, resolve_model_names
        from mcts.agents.scorer import IGScorer

        scorer = IGScorer(load_model(resolve_model_names(None, args.scorer_model)[1]))
    variants = [v.strip() for v in args.ig_variants.split(",") if v.strip()]
    rows = ranking_study(runs, scorer, variants, seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
    print(ranking_study_markdown(rows, seed=args.seed))
    return 0


def cmd_vs_greedy(args: argparse.Namespace) -> int:
    from mcts.evaluation.studies.vs_greedy import GREEDY, losses, markdown
    from mcts.evaluation.study import load_runs

    runs = load_runs([args.run], methods=[GREEDY, args.method])
    lost, tally = losses(runs, args.method)
    if not tally.total:
        return _err(f"{args.run} has no question finished by both {GREEDY} and {args.method}")
    print(markdown(lost, tally, args.method))
    return 0


def cmd_kinds(args: argparse.Namespace) -> int:
    from mcts.evaluation.report import ReportInputError
    from mcts.evaluation.studies.kinds import demo_slices, kind_table, question_kinds

    try:
        print(kind_table(_named(args.runs), question_kinds(args.questions), demo_slices()))
    except (ReportInputError, ValueError, OSError) as exc:
        return _err(str(exc))
    return 0


def _fold_seen(folds: int) -> tuple[list[str], Any]:
    """The split's train ids and, per id, whether another of `folds` folds holds its family."""
    from mcts.evaluation.report import ReportInputError
    from mcts.training.option_states import family_seen_by_fold
    from mcts.training.split import load_split

    if folds < 2:
        raise ReportInputError(f"--folds {folds}: fold adapters come in two folds or more")
    train_ids = load_split()["train"]
    return train_ids, family_seen_by_fold(train_ids, folds)


def cmd_folds(args: argparse.Namespace) -> int:
    from mcts.evaluation.report import ReportInputError, breakdown, breakdown_markdown
    from mcts.evaluation.studies.folds import fold_rows

    rows = []
    try:
        named = _named(args.runs, "DIR")
        train_ids, seen = _fold_seen(args.folds)
        for name, folder in named.items():
            rows += fold_rows(name, folder, train_ids, seen, args.method)
        columns, table = breakdown(rows, list(named))
    except (ReportInputError, ValueError, OSError) as exc:
        return _err(str(exc))
    print(breakdown_markdown(columns, table))
    return 0


def cmd_misses(args: argparse.Namespace) -> int:
    from mcts.evaluation.report import ReportInputError, collect_rows
    from mcts.evaluation.studies.folds import with_fold_families
    from mcts.evaluation.studies.misses import misses_markdown, read_records

    try:
        records = read_records(args.questions)
        rows = [r for r in collect_rows(args.runs) if r.method == args.method]
        if rows and args.folds:
            rows = with_fold_families(rows, *_fold_seen(args.folds))
    except (ReportInputError, ValueError, OSError) as exc:
        return _err(str(exc))
    if not rows:
        return _err(f"no {args.method} rows in {', '.join(args.runs)}")
    unknown = [r.question_id for r in rows if r.question_id not in records]
    if unknown:
        return _err(f"{len(unknown)} questions are not in {args.questions} (e.g. {unknown[0]})")
    print(misses_markdown(rows, records, args.method))
    return 0


def cmd_scorers(args: argparse.Namespace) -> int:
    from mcts.agents.fingerprint import agent_code_fingerprint
    from mcts.evaluation.report import ReportInputError
    from mcts.evaluation.studies import scorer_cells as sc
    from mcts.evaluation.studies.scorers import chosen_scorer, evidence, tables

    try:
        if args.from_json is not None:
            if args.root is not None or args.run or args.keep or args.json:
                return _err("--from-json prints a study file's tables and takes no runs, --keep or --json")
            cells = sc.cells_from_json(sc.read_study(args.from_json))
            print(tables(cells, chosen_scorer(cells)))
            return 0
        if args.root is None:
            return _err("give ROOT, a folder of SET-SCORER eval runs, or --from-json FILE")
        runs = _named(args.run, "DIR")
        bad = sorted(set(runs) - set(sc.SETS))
        if bad:
            return _err(f"--run {bad[0]}=...: SET is one of {', '.join(sc.SETS)}")
        if not args.root.is_dir():
            return _err(f"{args.root}: not a folder of eval runs (see the commands in docs/results.md)")
        cells = sc.read_cells(args.root, runs)
        if args.keep is not None:
            kept = sc.keep_earlier(cells, sc.read_study(args.keep), agent_code_fingerprint())
            if kept:
                print(f"kept from {args.keep}: {', '.join(kept)}", file=sys.stderr)
    except (ReportInputError, ValueError, OSError) as exc:
        return _err(str(exc))
    chosen = chosen_scorer(cells)
    print(tables(cells, chosen))
    if args.json:
        command = "python -m mcts study scorers " + shlex.join(_argv_of(args))
        args.json.write_text(json.dumps(evidence(cells, chosen, command), indent=1) + "\n", encoding="utf-8")
    return 0


def _argv_of(args: argparse.Namespace) -> list[str]:
    """The scorers command's arguments as given, to record what wrote a study file."""
    out = [str(args.root)]
    out += [x for spec in args.run for x in ("--run", spec)]
    if args.keep is not None:
        out += ["--keep", str(args.keep)]
    return [*out, "--json", str(args.json)]


def cmd_acceptance(args: argparse.Namespace) -> int:
    from mcts.evaluation.report import ReportInputError
    from mcts.evaluation.studies import acceptance as acc

    try:
        if not args.runs:
            if args.out is not None:
                return _err("--out writes the measurement of runs: give NAME=RUN arguments")
            measured = acc.read_measurements()
        else:
            notes_from = args.out if args.out is not None and args.out.is_file() else acc.ACCEPTANCE_FILE
            notes = {m.name: m.why for m in acc.read_measurements(notes_from)} if notes_from.is_file() else {}
            measured = [
                acc.measure_run(name, run, notes.get(name, {})) for name, run in _named(args.runs).items()
            ]
    except (ReportInputError, ValueError, OSError) as exc:
        return _err(str(exc))
    if args.out is not None:
        source = "python -m mcts study acceptance " + shlex.join([*args.runs, "--out", str(args.out)])
        args.out.write_text(
            json.dumps(acc.measurements_json(measured, source), indent=1) + "\n", encoding="utf-8"
        )
    verdicts = acc.judge_all(measured)
    if args.markdown:
        print(acc.verdicts_markdown(verdicts))
    else:
        print("\n".join(map(acc.summary_line, measured)))
        print(acc.verdicts_text(verdicts))
    return 1 if args.check and not all(v.met for v in verdicts) else 0
