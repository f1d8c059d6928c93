"""What one uploaded trace costs the app: load, replay step, inspect, truth toggle, reply size.

Builds synthetic traces (`tests.synthetic_tree`, an example question on the demo KB so the
truth overlay has gold to work with, one RoundStarted/RoundFinished pair per round so the
replay has rounds), writes them to files and times the app's own handlers on them, the
fastest of `--repeat` runs. Each size is also checked against the app's upload budget
(`mcts.search.trace_validation.TraceBudget`, the public mode's): a trace over it is
refused at load, and the line says so next to what loading it would have cost.

Usage: python -m bench.trace_cost [--sizes 500,2000,20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcts.search.events import RoundFinished, RoundStarted
from mcts.search.settings import SearchSettings
from mcts.search.trace import save_trace, trace_from_tree
from mcts.search.trace_validation import PUBLIC_TRACE_BUDGET, TraceBudget, budget_problem
from tests.synthetic_tree import synthetic_tree

QUESTION = "Who directed Inception?"  # an example question: the truth overlay scores it


def write_synthetic(n_nodes: int, folder: Path) -> Path:
    tree = synthetic_tree(n_nodes, seed=0)
    tree.question = QUESTION
    rounds = max(n.round for n in tree.nodes)
    events: list[Any] = []
    for r in range(1, rounds + 1):
        made = [n.id for n in tree.nodes if n.round <= r]
        events += [
            RoundStarted(round=r, max_rounds=rounds),
            RoundFinished(r, len(made), 0, 0, made[-1], None),
        ]
    from mcts.search.run_meta import RunMeta

    trace = trace_from_tree(
        tree, SearchSettings(rounds=rounds), meta=RunMeta(kb_spec="demo"), events=tuple(events)
    )
    return save_trace(trace, folder / f"synthetic-{n_nodes}.json")


def fastest(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def reply_bytes(update: dict[str, Any]) -> int:
    """About what Gradio sends for `update`: figures as Plotly JSON, frames as records, the rest as text."""
    total = 0
    for value in update.values():
        if hasattr(value, "to_json"):
            total += len(value.to_json().encode())
        elif hasattr(value, "to_dict"):
            total += len(json.dumps(value.to_dict(orient="split"), default=str).encode())
        else:
            total += len(json.dumps(value, default=str).encode())
    return total


def measure(path: Path, repeat: int) -> dict[str, float]:
    from ui import inspector, overlay, replay, traces
    from ui.session import Session

    session = Session()
    # The load without the budget: what the app paid before the budget refused such a tree.
    load_s, update = fastest(lambda: traces.load_with(session, str(path), None), repeat)
    rounds = max(replay.replay_range(session)[1], 1)
    step_s, _ = fastest(lambda: replay.replay(session, rounds // 2), repeat)
    inspect_s, _ = fastest(lambda: inspector.inspect_node(session, len(session.tree or ()) - 1), repeat)
    truth_s, _ = fastest(lambda: overlay.toggle_truth(session, not session.show_truth), repeat)
    return {
        "load_s": load_s,
        "reply_mb": reply_bytes(update) / 1e6,
        "step_s": step_s,
        "inspect_s": inspect_s,
        "truth_s": truth_s,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="300,1000,2000,20000")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    budget: TraceBudget = PUBLIC_TRACE_BUDGET
    print(f"budget: {budget.describe()}")
    print(
        f"{'nodes':>6} {'file MB':>8} {'load s':>7} {'reply MB':>9} {'step s':>7} {'inspect s':>9} {'truth s':>8}  budget"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = write_synthetic(n, Path(tmp))
            over = budget_problem(json.loads(path.read_text(encoding="utf-8")), budget)
            verdict = (
                "within: loads" if over is None else f"refused in {_refusal_s(path, budget):.2f} s: {over}"
            )
            m = measure(path, args.repeat)
            print(
                f"{n:>6} {path.stat().st_size / 1e6:>8.2f} {m['load_s']:>7.2f} {m['reply_mb']:>9.2f} "
                f"{m['step_s']:>7.3f} {m['inspect_s']:>9.3f} {m['truth_s']:>8.3f}  {verdict}"
            )


def _refusal_s(path: Path, budget: TraceBudget) -> float:
    from ui import traces
    from ui.session import Session

    t0 = time.perf_counter()
    traces.load_with(Session(), str(path), budget)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
