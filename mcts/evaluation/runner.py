"""Batch evaluation: every method on the same questions, one JSONL line per (question, method).

`run_eval` runs each question through each method with the same settings and seed,
scores the voted answer against gold (`mcts.evaluation.metrics`), records the best F1 among the
run's terminal branches (the "found but not picked" gap) and the run's cost, saves
the trace, and appends one line to `<out>/results[.shard-i-of-n].jsonl`, flushed and
fsynced, as soon as the pair finishes. A crash or Ctrl-C loses at most the pair in
flight; `resume=True` skips every pair already written without an error.

Sharding: `Shard(i, n)` keeps every n-th question (0-based i), after `limit`, so n
processes that share nothing but the file system can split a question file; each
writes its own results file, and `mcts.evaluation.report` merges them. Ray
(`mcts.evaluation.distributed`) does the same job with load balancing and retries; it
reuses `pending_pairs`, `score_pair`, `append_row` and `failed_row` from here, so both
engines write the same lines and either one resumes the other's file.

The world (KB, tools, policy, scorer) comes from a factory per method, so the same
loop runs the real models (`mcts.agents.world.build_world`) and test doubles. This module
knows nothing of argparse, plotting or model internals.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from kb.observation import Value
from mcts.evaluation.facets import SPLIT_FILE, Facets, load_split_info
from mcts.evaluation.metrics import GoldAnswer, gold_from_record, score_answers
from mcts.search.protocols import Policy, Scorer, Tools
from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method, SearchSettings

log = logging.getLogger(__name__)

ALL_METHODS: tuple[Method, ...] = (
    Method.SINGLE,
    Method.VOTE,
    Method.BEAM,
    Method.CONSTANT,
    Method.CLASSIC,
    Method.FAST,
)


class EvalInputError(ValueError):
    """A question file, method list or shard spec that cannot be used; one clear line."""


class WorldLike(Protocol):
    tools: Tools
    policy: Policy
    scorer: Scorer
    meta: RunMeta


WorldFactory = Callable[[Method], WorldLike]


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    gold: tuple[GoldAnswer, ...]
    hops: int | None = None
    source: str = ""
    facets: Facets = Facets()


@dataclass(frozen=True)
class Shard:
    index: int  # 0-based
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise EvalInputError(f"shard must be i/n with 0 <= i < n, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not m:
            raise EvalInputError(f"shard must look like i/n (0-based i, e.g. 0/4), got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @property
    def suffix(self) -> str:
        return f".shard-{self.index}-of-{self.count}"


@dataclass(frozen=True)
class EvalRow:
    """One (question, method) result: the line written to the results JSONL."""

    question_id: str
    method: str
    question: str
    source: str
    hops: int | None
    seed: int
    answer: list[dict[str, Any]]  # [{name, id, datatype}] in the method's order
    answer_sparql: str
    gold: list[dict[str, Any]]  # [{name, ids}]
    precision: float
    recall: float
    f1: float
    hits1: bool
    exact: bool
    best_branch_f1: float  # max F1 over terminal branches (>= f1: the voted answer is one of them)
    terminals: int
    stop_reason: str
    detail: str
    rounds: int
    nodes: int
    cost: dict[str, Any]  # CostSummary.to_dict()
    trace: str = ""  # trace path relative to the results directory ("" when not saved)
    meta: dict[str, Any] = field(default_factory=dict)
    error: str = ""  # set when the pair failed outside the search; resume retries it
    # The question's facets (`mcts.evaluation.facets`), for the report's breakdowns.
    faithful: bool | None = None
    family: str = ""
    family_in_train: bool | None = None
    part: str = ""
    held_out: bool | None = None
    chosen_here: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRow:
        known = set(cls.__dataclass_fields__)
        missing = {"question_id", "method"} - set(data)
        if missing:
            raise ValueError(f"results line lacks {', '.join(sorted(missing))}")
        return cls(**{k: v for k, v in data.items() if k in known})


def parse_methods(text: str) -> tuple[Method, ...]:
    """ "single,vote,fast" or "all" -> methods in the given order (duplicates dropped)."""
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return ALL_METHODS
    valid = ", ".join(m.value for m in ALL_METHODS)
    out: list[Method] = []
    for name in names:
        try:
            method = Method(name)
        except ValueError:
            raise EvalInputError(f"unknown method {name!r}; choose from {valid} or all") from None
        if method not in out:
            out.append(method)
    if not out:
        raise EvalInputError(f"no methods given; choose from {valid} or all")
    return tuple(out)


def load_questions(
    path: str | Path,
    *,
    limit: int | None = None,
    shard: Shard | None = None,
    split: str | Path = SPLIT_FILE,
) -> list[EvalQuestion]:
    """Read a question JSONL (`id`, `question`, `gold_answers`, optional `hops`, `source`,
    `path_matches_gold_relations`); facets come from the record, its id and `split`."""
    path = Path(path)
    if not path.is_file():
        raise EvalInputError(f"question file not found: {path}")
    try:
        split_info = load_split_info(split)
    except ValueError as exc:
        raise EvalInputError(str(exc)) from None
    out: list[EvalQuestion] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                qid = str(rec.get("id") or f"line{lineno}")
                out.append(
                    EvalQuestion(
                        id=qid,
                        question=str(rec["question"]),
                        gold=gold_from_record(rec),
                        hops=int(rec["hops"]) if rec.get("hops") is not None else None,
                        source=str(rec.get("source", "")),
                        facets=split_info.facets(qid, rec),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise EvalInputError(f"{path}:{lineno}: not a question record ({exc})") from None
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise EvalInputError(f"{path}: question ids are not unique")
    if limit is not None:
        out = out[: max(0, limit)]
    if shard is not None:
        out = out[shard.index :: shard.count]
    return out


def results_path(out_dir: Path, shard: Shard | None = None) -> Path:
    return out_dir / f"results{shard.suffix if shard else ''}.jsonl"


def read_rows(paths: Iterable[Path]) -> list[EvalRow]:
    """Rows from results files; a torn or corrupt line (crash mid-write) is skipped with a warning."""
    rows: list[EvalRow] = []
    for path in paths:
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(EvalRow.from_dict(json.loads(line)))
                except (ValueError, TypeError) as exc:
                    log.warning("%s:%d: skipped unreadable results line (%s)", path, lineno, exc)
    return rows


def result_files(directory: Path) -> list[Path]:
    """Every results file of a run directory (unsharded and all shards)."""
    return sorted(directory.glob("results*.jsonl"))


def safe_filename(text: str) -> str:
    """A question id as a file name: unsafe characters become "_", at most 120 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:120]


def _values(values: Sequence[Value]) -> list[dict[str, Any]]:
    return [{"name": v.name, "id": v.id, "datatype": v.datatype} for v in values]


def _gold(gold: Sequence[GoldAnswer]) -> list[dict[str, Any]]:
    return [{"name": g.name, "ids": list(g.ids)} for g in gold]


def save_pair_trace(trace: Any, out_dir: Path, question_id: str, method: str) -> str:
    """Write a `Trace` to `<out_dir>/traces/<id>__<method>.json`; returns the relative path."""
    from mcts.search.trace import save_trace

    rel = Path("traces") / f"{safe_filename(question_id)}__{method}.json"
    save_trace(trace, out_dir / rel)
    return rel.as_posix()


def evaluate_one(
    question: EvalQuestion,
    method: Method,
    world: WorldLike,
    settings: SearchSettings,
    *,
    out_dir: Path | None = None,
) -> EvalRow:
    """Run one method on one question and score it. The search reports its own errors."""
    from mcts.search.trace import trace_from_search

    row, search = score_pair(question, method, world, settings)
    if out_dir is None:
        return row
    try:
        return replace(
            row, trace=save_pair_trace(trace_from_search(search), out_dir, question.id, method.value)
        )
    except Exception as exc:  # a trace that cannot be written must not lose the result
        log.warning("trace of %s/%s not saved: %s", question.id, method.value, exc)
        return row


def facet_fields(question: EvalQuestion) -> dict[str, Any]:
    return asdict(question.facets)  # the row's facet fields carry the same names


def score_pair(
    question: EvalQuestion, method: Method, world: WorldLike, settings: SearchSettings
) -> tuple[EvalRow, Any]:
    """Run and score one pair; returns the row (no trace path yet) and the finished `Search`."""
    from mcts.search.loop import run_search

    run_settings = settings.with_(method=method)
    search, result = run_search(
        question.question,
        run_settings,
        policy=world.policy,
        scorer=world.scorer,
        tools=world.tools,
        meta=world.meta,
    )
    score = score_answers(result.answer, question.gold)
    branch_f1 = [score_answers(n.answer, question.gold).f1 for n in search.tree.terminals() if n.answer]
    row = EvalRow(
        question_id=question.id,
        method=method.value,
        question=question.question,
        source=question.source,
        hops=question.hops,
        seed=run_settings.seed,
        answer=_values(result.answer),
        answer_sparql=result.sparql,
        gold=_gold(question.gold),
        precision=score.precision,
        recall=score.recall,
        f1=score.f1,
        hits1=score.hits1,
        exact=score.exact,
        best_branch_f1=max([score.f1, *branch_f1]),
        terminals=result.terminals,
        stop_reason=result.stop_reason,
        detail=result.detail,
        rounds=result.rounds,
        nodes=result.nodes,
        cost=result.cost.to_dict(),
        meta=world.meta.to_dict(),
        **facet_fields(question),
    )
    return row, search


def failed_row(
    question: EvalQuestion, method: Method, settings: SearchSettings, exc: BaseException
) -> EvalRow:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return EvalRow(
        question_id=question.id,
        method=method.value,
        question=question.question,
        source=question.source,
        hops=question.hops,
        seed=settings.seed,
        answer=[],
        answer_sparql="",
        gold=_gold(question.gold),
        precision=0.0,
        recall=0.0,
        f1=0.0,
        hits1=False,
        exact=False,
        best_branch_f1=0.0,
        terminals=0,
        stop_reason="error",
        detail=message,
        rounds=0,
        nodes=0,
        cost={},
        error=f"{type(exc).__name__}: {message}",
        **facet_fields(question),
    )


def append_row(path: Path, row: EvalRow) -> None:
    # One complete line per write, flushed and synced: a crash leaves at most a torn last
    # line, which read_rows skips. A file not ending in a newline (torn) gets one first.
    path.parent.mkdir(parents=True, exist_ok=True)
    needs_newline = False
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            needs_newline = fh.read(1) != b"\n"
    with path.open("a", encoding="utf-8") as fh:
        if needs_newline:
            fh.write("\n")
        fh.write(row.to_json() + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def manifest_path(results: Path) -> Path:
    """Beside `results.shard-0-of-2.jsonl`: `results.shard-0-of-2.manifest.json`."""
    return results.with_name(results.name.removesuffix(".jsonl") + ".manifest.json")


def write_manifest(results: Path, questions: Sequence[EvalQuestion], methods: Sequence[Method]) -> None:
    """Record which pairs this results file is meant to hold (joined with what an earlier run
    of it meant), so a report can tell a finished file from a half-written one."""
    path = manifest_path(results)
    ids, names = [q.id for q in questions], [m.value for m in methods]
    old = read_manifest(results)
    if old is not None:
        ids = list(dict.fromkeys([*old[0], *ids]))
        names = list(dict.fromkeys([*old[1], *names]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"questions": ids, "methods": names}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(results: Path) -> tuple[list[str], list[str]] | None:
    """(question ids, methods) a results file is meant to hold; None when it has no manifest."""
    path = manifest_path(results)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [str(q) for q in data["questions"]], [str(m) for m in data["methods"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EvalInputError(f"{path}: not a results manifest ({exc})") from None


def pending_pairs(
    path: Path, questions: Sequence[EvalQuestion], methods: Sequence[Method], *, resume: bool
) -> list[tuple[EvalQuestion, list[Method]]]:
    """Per question, the methods with no error-free line in `path` yet (all of them without
    `resume`; a non-empty `path` without `resume` is refused, never overwritten)."""
    if path.exists() and path.stat().st_size > 0 and not resume:
        raise EvalInputError(
            f"{path} already has results; pass --resume to continue it or choose another --out"
        )
    done = {(r.question_id, r.method) for r in read_rows([path]) if not r.error} if resume else set()
    todo = [(q, [m for m in methods if (q.id, m.value) not in done]) for q in questions]
    return [(q, ms) for q, ms in todo if ms]


def run_eval(
    questions: Sequence[EvalQuestion],
    methods: Sequence[Method],
    world_for: WorldFactory,
    settings: SearchSettings,
    out_dir: str | Path,
    *,
    shard: Shard | None = None,
    resume: bool = False,
    save_traces: bool = True,
    progress: bool = True,
) -> list[EvalRow]:
    """Evaluate every (question, method) pair not yet done; returns the rows written now."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = results_path(out, shard)
    todo = pending_pairs(path, questions, methods, resume=resume)
    write_manifest(path, questions, methods)
    written: list[EvalRow] = []
    # Two bars: questions (outer) and the methods of the current question (inner).
    outer = _bar(todo, progress, unit="question", position=0, leave=True)
    try:
        for question, todo_methods in outer:
            inner = _bar(todo_methods, progress, unit="method", position=1, leave=False)
            for method in inner:
                if progress:
                    inner.set_description(f"{method.value:<8}")
                try:
                    row = evaluate_one(
                        question, method, world_for(method), settings, out_dir=out if save_traces else None
                    )
                except Exception as exc:  # one broken pair must not stop the batch
                    log.exception("pair %s/%s failed", question.id, method.value)
                    row = failed_row(question, method, settings, exc)
                append_row(path, row)
                written.append(row)
                if progress:
                    outer.set_postfix(
                        last=f"{method.value} f1={row.f1:.2f} {row.cost.get('wall_s', 0.0):.0f}s"
                    )
    finally:
        if progress:
            outer.close()
    return written


def _bar(items: Sequence[Any], enabled: bool, **kwargs: Any) -> Any:
    if not enabled:
        return items
    from tqdm import tqdm

    return tqdm(items, dynamic_ncols=True, **kwargs)
