"""CLI subcommands `eval` and `analyze-ranking`, registered on `python -m mcts` by `register`.

    python -m mcts eval --kb demo --questions examples/questions.jsonl \\
        --methods single,vote,beam,constant,classic,fast --out runs/demo
    python -m mcts eval ... --out runs/demo --resume          # continue after a crash / Ctrl-C
    python -m mcts eval ... --out runs/dev --shard 0/4         # one of 4 processes (0/4 .. 3/4)
    python -m mcts eval --merge runs/dev [runs/other ...] --out runs/dev   # one table from shards
    python -m mcts eval ... --out runs/dev --workers 4                 # 4 Ray workers on this machine
    python -m mcts eval ... --out runs/dev --ray-address auto --gpus-per-worker 1   # a Ray cluster
    python -m mcts analyze-ranking --kb demo --questions examples/questions.jsonl --limit 10 --out runs/rank
    python -m mcts analyze-ranking --merge runs/rank [runs/rank2 ...]      # table from finished CSVs

Every `SearchSettings` field except `method` is a flag (`--rounds`, `--k`, ...), shared
by all methods. `--workers` / `--ray-address` run the pairs on Ray
(`mcts.evaluation.distributed`); without them the evaluation runs in this process. Exit status: 0 done, 2 bad arguments / KB / model / question file,
130 interrupted (what finished is saved; rerun with --resume). Heavy modules are
imported when a command runs, so `--help` stays instant.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.cli.flags import add_settings_flags, add_world_flags, settings_from_args
from mcts.search.settings import Method, SearchSettings


def _world_flags(parser: argparse.ArgumentParser) -> None:
    add_world_flags(parser)
    parser.add_argument("--limit", type=int, default=None, help="first N questions of the file")
    parser.add_argument(
        "--shard", default=None, help="i/n: this process takes every n-th question from i (0-based)"
    )
    parser.add_argument("--out", default=None, help="output directory (default: runs/<command>-<time>)")
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --out, skipping finished work"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-traces", action="store_true", help="do not save a trace per run")


def _ray_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="run on Ray with N worker actors (each loads the KB and models once); "
        "local Ray unless --ray-address",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help='an existing Ray cluster ("auto", "ray://head:10001"); workers: --workers or what fits',
    )
    parser.add_argument("--cpus-per-worker", type=float, default=1.0, help="Ray CPUs per worker (1)")
    parser.add_argument("--gpus-per-worker", type=float, default=0.0, help="Ray GPUs per worker (0)")


def register(subparsers: Any) -> None:
    """Add `eval` and `analyze-ranking` to the `python -m mcts` subcommands."""
    ev = subparsers.add_parser("eval", help="evaluate search methods on a question file (accuracy and cost)")
    ev.add_argument("--questions", default=None, help="question JSONL (id, question, gold_answers, hops)")
    ev.add_argument(
        "--methods", default="all", help="comma separated: single,vote,beam,constant,classic,fast (or all)"
    )
    ev.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="DIR",
        help="only merge results of these run dirs / shards",
    )
    ev.add_argument(
        "--partial",
        action="store_true",
        help="with --merge: also report results files whose run has not finished every pair",
    )
    _world_flags(ev)
    _ray_flags(ev)
    add_settings_flags(ev)
    ev.set_defaults(func=cmd_eval)

    rk = subparsers.add_parser(
        "analyze-ranking", help="IG ranking analysis against gold (classic MCTS trees)"
    )
    rk.add_argument("--questions", default=None, help="question JSONL with gold answers")
    rk.add_argument(
        "--merge", nargs="+", default=None, metavar="DIR", help="only tabulate the ranking.csv of these dirs"
    )
    rk.add_argument(
        "--search-method",
        choices=[m.value for m in Method],
        default=Method.CLASSIC.value,
        help="tree to analyse",
    )
    rk.add_argument("--no-cot", action="store_true", help="skip the CoT rating baseline")
    rk.add_argument(
        "--cot-model", default=None, help="model of the CoT rating baseline (default: the scorer model)"
    )
    _world_flags(rk)
    add_settings_flags(rk)
    rk.set_defaults(func=cmd_analyze_ranking)


def _err(message: str) -> int:
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _settings(args: argparse.Namespace, method: Method) -> SearchSettings:
    return settings_from_args(args, method.value)  # --preset, then the flags that differ from the paper


def _out_dir(args: argparse.Namespace, command: str) -> Path:
    return Path(args.out) if args.out else Path("runs") / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}"


@dataclass(frozen=True)
class WorldSpec:
    """The world arguments of a command, callable per method; plain data, so Ray can ship
    it to workers, each of which builds (and caches) its own world from it."""

    kb: str | None
    policy: str
    policy_model: str | None
    scorer_model: str | None
    policy_endpoint: str | None
    constant_reward: float
    policy_adapter: str | None = None  # --policy-adapter, as given (build_world resolves it)

    def __call__(self, method: Method) -> Any:
        from mcts.agents.world import build_world

        return build_world(
            self.kb,
            policy_kind=self.policy,  # type: ignore[arg-type]  # argparse choices
            policy_model=self.policy_model,
            scorer_model=self.scorer_model,
            policy_endpoint=self.policy_endpoint,
            method=method,
            constant_reward=self.constant_reward,
            policy_adapter=self.policy_adapter,
        )


def _world_factory(args: argparse.Namespace) -> WorldSpec:
    return WorldSpec(
        args.kb,
        args.policy,
        args.policy_model,
        args.scorer_model,
        args.policy_endpoint,
        args.constant_reward,
        args.policy_adapter,
    )


def _report(sources: list[Path], out: Path, methods: list[str] | None, *, partial: bool = False) -> int:
    from mcts.evaluation.report import (
        ReportInputError,
        check_finished,
        collect_rows,
        source_files,
        write_report,
    )

    try:
        if not partial:
            check_finished(source_files(sources))
        rows = collect_rows(sources)
        if not rows:
            return _err(f"no results found in {', '.join(map(str, sources))}")
        print(write_report(rows, out, methods=methods))
    except ReportInputError as exc:
        return _err(f"{exc} (nothing was written)")
    print(f"report: {out / 'results.md'} (plots beside it)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from mcts.evaluation.runner import (
        EvalInputError,
        Shard,
        load_questions,
        parse_methods,
        result_files,
        run_eval,
    )

    if args.merge:
        dirs = [Path(d) for d in args.merge]
        return _report(dirs, Path(args.out) if args.out else dirs[0], None, partial=args.partial)
    if not args.questions:
        return _err("--questions is required (or --merge DIR... to merge finished runs)")
    try:
        methods = parse_methods(args.methods)
        shard = Shard.parse(args.shard) if args.shard else None
        questions = load_questions(args.questions, limit=args.limit, shard=shard)
        settings = _settings(args, Method.FAST)
    except (EvalInputError, ValueError) as exc:
        return _err(str(exc))
    if not questions:
        return _err("no questions selected (check --limit / --shard)")
    out = _out_dir(args, "eval")
    from mcts.agents.models import describe_defaults

    print(describe_defaults(args.policy_model, args.scorer_model))
    print(f"{len(questions)} questions x {len(methods)} methods -> {out}")
    world_for = _world_factory(args)
    if args.workers is not None or args.ray_address:
        code = _eval_on_ray(args, questions, methods, world_for, settings, out, shard)
        return code if code else _report(result_files(out), out, [m.value for m in methods], partial=True)
    try:
        for method in methods:  # open the KB and load the models up front: bad specs fail fast
            world_for(method)
    except (ValueError, RuntimeError, OSError) as exc:
        return _err(str(exc))
    try:
        run_eval(
            questions,
            methods,
            world_for,
            settings,
            out,
            shard=shard,
            resume=args.resume,
            save_traces=not args.no_traces,
            progress=not args.no_progress,
        )
    except EvalInputError as exc:
        return _err(str(exc))
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished pairs are saved in {out}; continue with --resume", file=sys.stderr)
        return 130
    # Other shards of the same --out may still be running: this table counts what is done.
    return _report(result_files(out), out, [m.value for m in methods], partial=shard is not None)


def _eval_on_ray(
    args: argparse.Namespace,
    questions: Any,
    methods: Any,
    world_for: WorldSpec,
    settings: SearchSettings,
    out: Path,
    shard: Any,
) -> int:
    """The pairs on Ray workers; 0 when done (the caller writes the report), else an exit code."""
    import importlib.util

    from mcts.evaluation.distributed import RayOptions, WorkerStartError, run_eval_ray
    from mcts.evaluation.runner import EvalInputError

    if importlib.util.find_spec("ray") is None:
        return _err("--workers / --ray-address need Ray: pip install -r requirements-dev.txt")
    try:
        options = RayOptions(
            workers=args.workers,
            address=args.ray_address,
            cpus_per_worker=args.cpus_per_worker,
            gpus_per_worker=args.gpus_per_worker,
        )
    except EvalInputError as exc:
        return _err(str(exc))
    try:
        result = run_eval_ray(
            questions,
            methods,
            world_for,
            settings,
            out,
            options,
            shard=shard,
            resume=args.resume,
            save_traces=not args.no_traces,
            progress=not args.no_progress,
        )
    except (EvalInputError, WorkerStartError) as exc:
        return _err(str(exc))
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished pairs are saved in {out}; continue with --resume", file=sys.stderr)
        return 130
    for info in result.workers:
        print(f"worker pid {info.pid} on {info.node}: KB and models loaded in {info.load_s:.1f} s")
    if result.worker_deaths:
        print(f"{result.worker_deaths} worker(s) died mid-pair; their pairs were retried")
    return 0


def cmd_analyze_ranking(args: argparse.Namespace) -> int:
    from mcts.evaluation.ranking import ranking_markdown, read_ranking_csv, run_ranking_analysis
    from mcts.evaluation.runner import EvalInputError, Shard, load_questions

    if args.merge:
        paths = [Path(d) / "ranking.csv" for d in args.merge]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            return _err(f"no ranking.csv in {', '.join(missing)}")
        table = ranking_markdown([row for p in paths for row in read_ranking_csv(p)])
        out = Path(args.out) if args.out else Path(args.merge[0])
        out.mkdir(parents=True, exist_ok=True)
        (out / "ranking.md").write_text(table + "\n", encoding="utf-8")
        print(table)
        return 0
    if not args.questions:
        return _err("--questions is required (or --merge DIR... to tabulate finished runs)")
    try:
        shard = Shard.parse(args.shard) if args.shard else None
        questions = load_questions(args.questions, limit=args.limit, shard=shard)
        settings = _settings(args, Method(args.search_method))
    except (EvalInputError, ValueError) as exc:
        return _err(str(exc))
    out = _out_dir(args, "ranking")
    try:
        world = _world_factory(args)(settings.method)
        cot = None
        if not args.no_cot:
            from mcts.agents.cot_scorer import CotScorer
            from mcts.agents.models import load_model, resolve_model_names

            cot = CotScorer(
                load_model(args.cot_model or resolve_model_names(args.policy_model, args.scorer_model)[1])
            )
    except (ValueError, RuntimeError, OSError) as exc:
        return _err(str(exc))
    print(f"{len(questions)} questions, {settings.method.value} trees -> {out}")
    try:
        run_ranking_analysis(
            questions,
            world,
            settings,
            out,
            cot_scorer=cot,
            seed=settings.seed,
            resume=args.resume,
            progress=not args.no_progress,
            save_traces=not args.no_traces,
        )
    except ValueError as exc:
        return _err(str(exc))
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: finished questions are saved in {out}; continue with --resume", file=sys.stderr
        )
        return 130
    csv_path = out / "ranking.csv"
    rows = read_ranking_csv(csv_path) if csv_path.exists() else []
    table = ranking_markdown(rows)
    (out / "ranking.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"per-parent rows: {csv_path}")
    return 0
