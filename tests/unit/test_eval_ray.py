"""The evaluation on Ray: same results file and resume as in-process, killed workers, same answers.

One local Ray (2 CPUs, no dashboard) serves the whole module and is shut down after it,
with its processes checked gone. The toy world (tests/toy_world.py) makes the scheduling
tests cheap; the last test runs the bundled model on the demo KB both ways.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcts.evaluation.report import collect_rows, markdown_table, method_stats
from mcts.evaluation.runner import load_questions, read_rows, results_path, run_eval
from mcts.search.protocols import Policy, Scorer, Tools
from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method, SearchSettings
from tests.toy_world import NOLAN, OTHER, QUESTION, ToyPolicy, ToyScorer, ToyTools

ray = pytest.importorskip("ray")
from mcts.evaluation.distributed import RayOptions, run_eval_ray  # noqa: E402  (needs ray)

TOY = SearchSettings(rounds=3, k=3, max_depth=4, early_stop_terminals=3, vote_samples=3, beam_width=2)
DEMO_QUESTIONS = Path(__file__).resolve().parents[2] / "examples" / "questions.jsonl"


class StallOncePolicy(ToyPolicy):
    """The first proposal made in any worker (across processes, via an exclusive marker
    file) writes the worker's pid there and waits to be killed; all others are the toy's."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self._marker = marker

    def propose(self, question, history, k, *, rng, greedy=False):
        try:
            fd = os.open(self._marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return super().propose(question, history, k, rng=rng, greedy=greedy)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(120)  # the test kills this process long before
        raise AssertionError("worker was not killed")


@dataclass
class _World:
    policy: Policy
    scorer: Scorer = field(default_factory=ToyScorer)
    tools: Tools = field(default_factory=ToyTools)
    meta: RunMeta = field(default_factory=lambda: RunMeta(kb_spec="toy", policy_kind="toy"))


@dataclass(frozen=True)
class ToyWorlds:
    """Picklable world factory (Ray ships it to the workers)."""

    stall_marker: str = ""

    def __call__(self, method: Method) -> _World:
        return _World(policy=StallOncePolicy(self.stall_marker) if self.stall_marker else ToyPolicy())


def _toy_questions(tmp_path: Path, n: int) -> list:
    path = tmp_path / "q.jsonl"
    lines = []
    for i in range(n):
        gold = NOLAN if i % 2 == 0 else OTHER
        rec = {"id": f"toy:{i}", "question": QUESTION, "gold_answers": [{"mid": gold.id, "name": gold.name}]}
        lines.append(json.dumps({**rec, "hops": 1 + i % 2}))
    path.write_text("\n".join(lines) + "\n")
    return load_questions(path)


def _pairs_in(out: Path) -> list[tuple[str, str]]:
    return [(r.question_id, r.method) for r in read_rows([results_path(out)])]


def _ray_descendants() -> list:
    """Ray's processes under this one (raylet, gcs_server, workers); not the embedded KB's
    query workers, which die with their parent."""
    import psutil

    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(proc.cmdline())
            if proc.is_running() and any(m in cmd for m in ("ray::", "/ray/", "raylet", "gcs_server")):
                found.append(proc)
        except psutil.Error:  # exited while we looked
            pass
    return found


@pytest.fixture(scope="module")
def local_ray():
    before = {p.pid for p in _ray_descendants()}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    deadline = time.monotonic() + 20
    while (left := [p for p in _ray_descendants() if p.pid not in before]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, f"Ray processes left after shutdown: {[p.pid for p in left]}"


def test_pairs_stream_into_the_same_results_file_and_resume_skips_what_in_process_wrote(tmp_path, local_ray):
    qs = _toy_questions(tmp_path, 3)
    out = tmp_path / "run"
    # In-process first, single only; then Ray resumes the same file with both methods.
    run_eval(qs, [Method.SINGLE], ToyWorlds(), TOY, out, progress=False)
    result = run_eval_ray(
        qs, [Method.SINGLE, Method.FAST], ToyWorlds(), TOY, out, RayOptions(workers=2), resume=True
    )
    assert sorted((r.question_id, r.method) for r in result.rows) == [(f"toy:{i}", "fast") for i in range(3)]
    pairs = _pairs_in(out)
    assert sorted(pairs) == sorted((f"toy:{i}", m) for i in range(3) for m in ("single", "fast"))
    rows = read_rows([results_path(out)])
    assert all(r.error == "" and (out / r.trace).is_file() for r in rows)
    assert {r.pid for r in result.workers} and all(w.load_s >= 0 for w in result.workers)
    # The report reads the mixed file like any other.
    table = markdown_table(method_stats(collect_rows([out]), ["single", "fast"]))
    assert "| single |" in table and "| fast |" in table
    # Nothing left to do: a second resume starts no worker and writes nothing.
    again = run_eval_ray(qs, [Method.SINGLE, Method.FAST], ToyWorlds(), TOY, out, RayOptions(), resume=True)
    assert again.rows == [] and again.workers == ()
    assert len(_pairs_in(out)) == 6


def test_a_worker_killed_mid_pair_has_its_pair_retried_and_every_pair_is_written_once(tmp_path, local_ray):
    qs = _toy_questions(tmp_path, 3)
    out = tmp_path / "run"
    marker = tmp_path / "stalled-worker.pid"
    killed: list[int] = []

    def kill_the_stalled_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = marker.read_text() if marker.exists() else ""
            if text:
                killed.append(int(text))
                os.kill(int(text), signal.SIGKILL)
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_the_stalled_worker, daemon=True)
    killer.start()
    methods = [Method.SINGLE, Method.FAST]
    result = run_eval_ray(
        qs, methods, ToyWorlds(str(marker)), TOY, out, RayOptions(workers=2), progress=False
    )
    killer.join(timeout=5)
    assert killed, "no worker stalled"
    assert result.worker_deaths == 1
    pairs = _pairs_in(out)
    assert sorted(pairs) == sorted((q.id, m.value) for q in qs for m in methods)  # each exactly once
    assert all(r.error == "" for r in read_rows([results_path(out)]))


def test_cli_workers_flag_runs_the_pairs_on_ray_and_prints_the_same_table(
    tmp_path, local_ray, monkeypatch, capsys
):
    import mcts.cli.eval_commands as cli_eval
    from mcts.cli.main import main

    qs = _toy_questions(tmp_path, 2)
    monkeypatch.setattr(cli_eval, "_world_factory", lambda args: ToyWorlds())  # shipped to the workers
    out = tmp_path / "run"
    argv = ["eval", "--questions", str(tmp_path / "q.jsonl"), "--methods", "single,fast", "--out", str(out)]
    assert main([*argv, "--rounds", "3", "--k", "3", "--workers", "2", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| single |" in printed and "| fast |" in printed and "models loaded in" in printed
    assert sorted(_pairs_in(out)) == sorted((q.id, m) for q in qs for m in ("single", "fast"))


def test_cli_workers_flag_reports_a_bad_kb_in_one_line(tmp_path, local_ray, capsys):
    from mcts.cli.main import main

    q = tmp_path / "q.jsonl"
    q.write_text(DEMO_QUESTIONS.read_text().splitlines()[0] + "\n")
    argv = ["eval", "--kb", str(tmp_path / "no-such-kb.ttl"), "--questions", str(q), "--methods", "single"]
    assert main([*argv, "--workers", "1", "--no-progress", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "no-such-kb" in err[-1]


@pytest.mark.slow
def test_two_ray_workers_give_the_same_answers_and_node_counts_as_in_process(tmp_path, local_ray):
    """The real thing: bundled model, demo KB, 2 questions x (single, fast), same seed: four
    pairs, so both workers load a world and take pairs."""
    from mcts.agents.models import ModelLoadError
    from mcts.cli.eval_commands import WorldSpec

    spec = WorldSpec("demo", "guided", None, None, None, 1.0)
    try:
        spec(Method.SINGLE)
    except ModelLoadError as exc:
        pytest.skip(f"bundled model not available: {exc}")
    qs = load_questions(DEMO_QUESTIONS, limit=2)
    methods = [Method.SINGLE, Method.FAST]
    settings = SearchSettings(rounds=2, k=2, max_depth=3, early_stop_terminals=2, seed=0)
    import torch

    # Same arithmetic both ways: a Ray worker with 1 CPU runs torch on 1 thread. The
    # in-process run goes in a thread beside the Ray run (3 torch threads on 2 cores
    # instead of one engine after the other: about half the wall time).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(1) as pool:

            def in_process():
                torch.set_num_threads(1)  # OpenMP's thread count is per calling thread
                return run_eval(
                    qs, methods, spec, settings, tmp_path / "local", progress=False, save_traces=False
                )

            local_run = pool.submit(in_process)
            remote = run_eval_ray(
                qs,
                methods,
                spec,
                settings,
                tmp_path / "ray",
                RayOptions(workers=2),
                save_traces=False,
                progress=False,
            )
            local = local_run.result()
    finally:
        torch.set_num_threads(threads)

    def key(rows):
        return {(r.question_id, r.method): (r.answer, r.nodes, r.rounds, r.terminals, r.error) for r in rows}

    assert len(remote.rows) == len(local) == 4
    assert key(remote.rows) == key(local)
    assert len({w.pid for w in remote.workers}) == 2
