"""The evaluation on Ray: the same (question, method) pairs, spread over worker actors.

`run_eval_ray` does what `mcts.evaluation.runner.run_eval` does (same pending pairs,
same rows, same `results[.shard-i-of-n].jsonl`, same traces, same `--resume`) with one
Ray task per (question, method) pair:

- each worker is an actor that builds its worlds once (`world_for(method)` for every
  method: the KB is opened and the policy and scorer loaded once per worker) and then
  runs pairs; `RayOptions.cpus_per_worker` / `gpus_per_worker` are its Ray resource
  requests, so Ray places one worker per GPU on a cluster;
- the driver (this process) keeps one pair in flight per ready worker and hands the next
  pair to whichever worker finishes first, so a two-hop question does not hold up a
  shard; it alone writes `results.jsonl` and the traces (workers return the trace), one
  line per finished pair, in the order they finish;
- a worker that dies mid-pair (killed, out of memory, node lost) is replaced and its pair
  goes back to the front of the queue, for the next free worker; a pair whose worker died
  `max_attempts` times is written as an error row (`--resume` retries it). A result is
  written only when a worker returns it, so nothing is written twice.

Without `address`, Ray is started for the run on this machine and stopped after it; if
Ray is already initialised (a test, a notebook), that session is used and left running.
Ray is imported here only, so the in-process evaluation and the app do not need it.
Knows nothing of argparse or model internals.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcts.evaluation.runner import (
    EvalInputError,
    EvalQuestion,
    EvalRow,
    Shard,
    WorldFactory,
    append_row,
    failed_row,
    pending_pairs,
    results_path,
    save_pair_trace,
    score_pair,
    write_manifest,
)
from mcts.search.settings import Method, SearchSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RayOptions:
    workers: int | None = None  # None: as many as the cluster's CPUs (GPUs) allow per worker request
    address: str | None = None  # None: start a local Ray for this run; else an existing cluster
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    max_attempts: int = 3  # a pair whose worker dies this often is written as an error row

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise EvalInputError(f"--workers must be at least 1, got {self.workers}")
        if self.cpus_per_worker <= 0 or self.gpus_per_worker < 0:
            raise EvalInputError("--cpus-per-worker must be > 0 and --gpus-per-worker >= 0")
        if self.max_attempts < 1:
            raise EvalInputError(f"max_attempts must be at least 1, got {self.max_attempts}")


@dataclass(frozen=True)
class WorkerInfo:
    pid: int
    node: str  # the node's IP address
    load_s: float  # seconds to open the KB and load the models in this worker
    error: str = ""  # why the worker could not build its world ("" when it is ready)


@dataclass(frozen=True)
class RayEvalResult:
    rows: list[EvalRow]  # rows written by this run, in the order they finished
    workers: tuple[WorkerInfo, ...]  # every worker that became ready, replacements included
    worker_deaths: int  # workers lost mid-pair (their pairs were retried)


class WorkerStartError(RuntimeError):
    """No worker could build its world (bad KB spec, model, endpoint): one clear line."""


class EvalWorker:
    """The actor body: builds the worlds once, then runs pairs. Wrapped by `ray.remote` at
    run time (so importing this module does not import Ray)."""

    def __init__(self, world_for: WorldFactory, methods: Sequence[Method]) -> None:
        started = time.perf_counter()
        error = ""
        try:
            self._worlds = {m: world_for(m) for m in methods}
        except Exception as exc:  # reported by ready(), so the driver can print one line
            error = " ".join(str(exc).split()) or type(exc).__name__
        self._info = WorkerInfo(os.getpid(), _node_ip(), time.perf_counter() - started, error)

    def ready(self) -> WorkerInfo:
        return self._info

    def run(
        self, question: EvalQuestion, method: Method, settings: SearchSettings, want_trace: bool
    ) -> tuple[EvalRow, Any]:
        """The row and (if wanted) the `Trace`; a pair that raises becomes an error row,
        as in the in-process runner, so one broken pair never costs a worker."""
        from mcts.search.trace import trace_from_search

        try:
            row, search = score_pair(question, method, self._worlds[method], settings)
            return row, trace_from_search(search) if want_trace else None
        except Exception as exc:
            log.exception("pair %s/%s failed", question.id, method.value)
            return failed_row(question, method, settings, exc), None


def _node_ip() -> str:
    import ray

    try:
        return ray.util.get_node_ip_address()
    except Exception:  # outside Ray (a direct call in a test)
        return "local"


@dataclass
class _Slot:
    actor: Any
    info: WorkerInfo | None = None


def run_eval_ray(
    questions: Sequence[EvalQuestion],
    methods: Sequence[Method],
    world_for: WorldFactory,
    settings: SearchSettings,
    out_dir: str | Path,
    options: RayOptions,
    *,
    shard: Shard | None = None,
    resume: bool = False,
    save_traces: bool = True,
    progress: bool = True,
) -> RayEvalResult:
    """Evaluate every pending (question, method) pair on Ray workers (see the module doc).

    `world_for` must be picklable (a module-level function or a frozen dataclass): each
    worker calls it. Raises EvalInputError for a results file that `resume` must allow;
    WorkerStartError when a worker cannot build its world, when the cluster cannot fit
    one worker, or when every worker died (what finished is saved either way)."""
    import ray

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = results_path(out, shard)
    queue = deque((q, m) for q, ms in pending_pairs(path, questions, methods, resume=resume) for m in ms)
    write_manifest(path, questions, methods)
    result = RayEvalResult(rows=[], workers=(), worker_deaths=0)
    if not queue:
        return result
    started_here = not ray.is_initialized()
    if started_here:
        _init_ray(options)
    try:
        return _Driver(queue, methods, world_for, settings, out, path, options, save_traces, progress).run()
    finally:
        if started_here:
            ray.shutdown()


def _init_ray(options: RayOptions) -> None:
    import ray

    if options.address:
        # Ship this checkout to the cluster's workers (code and the small example files;
        # .gitignore'd paths such as .venv and runs/ stay behind). The nodes need the
        # dependencies installed, and the KB / models reachable from there.
        root = Path(__file__).resolve().parents[2]
        env = {"working_dir": str(root), "excludes": [".git", ".venv", "runs", "*.gguf", "*.safetensors"]}
        ray.init(address=options.address, runtime_env=env)
        return
    # Local: enough CPUs for the workers asked for even on a smaller machine (Ray would
    # otherwise wait for resources that never come); they then share the cores.
    cpus = max(os.cpu_count() or 1, int((options.workers or 1) * options.cpus_per_worker + 0.999))
    ray.init(num_cpus=cpus, include_dashboard=False)


def _worker_count(options: RayOptions) -> int:
    import ray

    res = ray.cluster_resources()
    have_cpu, have_gpu = res.get("CPU", 0), res.get("GPU", 0)
    if have_cpu < options.cpus_per_worker or have_gpu < options.gpus_per_worker:
        # Ray would keep such an actor pending forever: say so instead of hanging.
        raise WorkerStartError(
            f"one worker asks for {options.cpus_per_worker:g} CPU / {options.gpus_per_worker:g} GPU; "
            f"the Ray cluster has {have_cpu:g} CPU / {have_gpu:g} GPU in all"
        )
    if options.workers is not None:
        return options.workers
    if options.gpus_per_worker > 0:
        return max(1, int(have_gpu // options.gpus_per_worker))
    return max(1, int(have_cpu // options.cpus_per_worker))


class _Driver:
    """The driver's side of a run: starts the workers, hands out pairs, writes what comes
    back, and replaces a worker that dies (see the module doc)."""

    def __init__(
        self,
        queue: deque[tuple[EvalQuestion, Method]],
        methods: Sequence[Method],
        world_for: WorldFactory,
        settings: SearchSettings,
        out: Path,
        path: Path,
        options: RayOptions,
        save_traces: bool,
        progress: bool,
    ) -> None:
        import ray

        self.queue = queue
        self.methods = tuple(methods)
        self.world_for = world_for
        self.settings = settings
        self.out = out
        self.path = path
        self.options = options
        self.save_traces = save_traces
        self.remote = ray.remote(EvalWorker).options(
            num_cpus=options.cpus_per_worker,
            num_gpus=options.gpus_per_worker,
            max_restarts=0,  # the driver replaces a dead worker and re-queues its pair itself
            max_task_retries=0,  # so a pair is never run twice behind the driver's back
        )
        self.bar = _ProgressBar(Counter(m.value for _, m in queue), progress)
        self.n_workers = min(_worker_count(options), len(queue))
        self.starting: dict[Any, _Slot] = {}
        self.in_flight: dict[Any, tuple[_Slot, tuple[EvalQuestion, Method]]] = {}
        self.idle: deque[_Slot] = deque()
        self.ready_infos: list[WorkerInfo] = []
        self.rows: list[EvalRow] = []
        self.deaths: Counter[tuple[str, str]] = Counter()
        self.lost = 0
        self.spare_starts = self.n_workers * options.max_attempts  # replacements allowed before giving up

    def run(self) -> RayEvalResult:
        import ray

        for _ in range(self.n_workers):
            self.start_worker()
        try:
            while self.queue or self.in_flight:
                # The longest-idle worker takes the next pair, so a re-queued pair goes to a
                # live worker at once rather than waiting for the replacement to load.
                while self.idle and self.queue:
                    slot, pair = self.idle.popleft(), self.queue.popleft()
                    ref = slot.actor.run.remote(pair[0], pair[1], self.settings, self.save_traces)
                    self.in_flight[ref] = (slot, pair)
                if not self.in_flight and not self.starting:
                    if not self.queue:
                        break
                    raise WorkerStartError(
                        f"every worker died; {len(self.queue)} pairs left (rerun with --resume)"
                    )
                # A timeout, so Ctrl-C reaches Python between waits (ray.wait blocks in C++).
                ready = ray.wait([*self.starting, *self.in_flight], num_returns=1, timeout=0.5)[0]
                if not ready:
                    continue
                ref = ready[0]
                if ref in self.starting:
                    self.on_started(self.starting.pop(ref), ref)
                else:
                    self.on_finished(*self.in_flight.pop(ref), ref)
        finally:
            self.bar.close()
            for slot in [*self.starting.values(), *(s for s, _ in self.in_flight.values()), *self.idle]:
                ray.kill(slot.actor, no_restart=True)
        return RayEvalResult(rows=self.rows, workers=tuple(self.ready_infos), worker_deaths=self.lost)

    def start_worker(self) -> None:
        slot = _Slot(self.remote.remote(self.world_for, self.methods))
        self.starting[slot.actor.ready.remote()] = slot

    def replace_worker(self) -> None:
        if self.spare_starts > 0 and self.queue:
            self.spare_starts -= 1
            self.start_worker()

    def write(self, row: EvalRow, trace: Any) -> None:
        if trace is not None:
            try:
                row = replace(row, trace=save_pair_trace(trace, self.out, row.question_id, row.method))
            except Exception as exc:  # a trace that cannot be written must not lose the result
                log.warning("trace of %s/%s not saved: %s", row.question_id, row.method, exc)
        append_row(self.path, row)
        self.rows.append(row)
        self.bar.done(row)

    def on_started(self, slot: _Slot, ref: Any) -> None:
        import ray
        from ray.exceptions import RayActorError

        try:
            slot.info = ray.get(ref)
        except RayActorError as exc:  # died while loading (killed, out of memory)
            log.warning("a worker died while starting (%s)", _cause(exc))
            self.replace_worker()
            return
        if slot.info.error:  # a bad KB spec, model or endpoint: every worker would fail
            raise WorkerStartError(slot.info.error)
        self.ready_infos.append(slot.info)
        self.bar.workers(len(self.ready_infos))
        self.idle.append(slot)

    def on_finished(self, slot: _Slot, pair: tuple[EvalQuestion, Method], ref: Any) -> None:
        import ray
        from ray.exceptions import RayError, RayTaskError

        question, method = pair
        try:
            row, trace = ray.get(ref)
        except RayTaskError as exc:  # raised past run()'s own handler: an error row, as in-process
            self.write(failed_row(question, method, self.settings, RuntimeError(_cause(exc))), None)
            self.idle.append(slot)
            return
        except RayError as exc:  # the worker died or lost the result: the pair goes back, first
            self.on_worker_lost(slot, pair, exc)
            return
        self.write(row, trace)
        self.idle.append(slot)

    def on_worker_lost(self, slot: _Slot, pair: tuple[EvalQuestion, Method], exc: Exception) -> None:
        import ray

        question, method = pair
        ray.kill(slot.actor, no_restart=True)  # a no-op if it is dead already
        self.lost += 1
        key = (question.id, method.value)
        self.deaths[key] += 1
        pid = slot.info.pid if slot.info else "?"
        log.warning("worker %s died on %s/%s (%s); pair re-queued", pid, *key, _cause(exc))
        if self.deaths[key] < self.options.max_attempts:
            self.queue.appendleft(pair)
        else:
            self.write(failed_row(question, method, self.settings, RuntimeError(_cause(exc))), None)
        self.replace_worker()


def _cause(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


class _ProgressBar:
    """One bar over finished pairs, with per-method counts (`single 3/6 fast 2/6`)."""

    def __init__(self, total: Counter[str], enabled: bool) -> None:
        self._total = total
        self._done: Counter[str] = Counter()
        self._bar = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=sum(total.values()), unit="pair", dynamic_ncols=True, desc="ray 0 workers")

    def workers(self, n: int) -> None:
        if self._bar is not None:
            self._bar.set_description(f"ray {n} worker{'s' if n != 1 else ''}")

    def done(self, row: EvalRow) -> None:
        self._done[row.method] += 1
        if self._bar is not None:
            counts = " ".join(f"{m} {self._done[m]}/{n}" for m, n in self._total.items())
            self._bar.set_postfix_str(f"{counts} | last {row.method} f1={row.f1:.2f}")
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
