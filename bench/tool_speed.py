"""What one demo-KB tool call costs, the old path and the new side by side in one run.

The calls are every action of the shipped traces (examples/traces/*.json, demo KB), run
through a `Toolbox` in the order the traces made them. Each path runs in its own fresh
process, as a `python -m mcts run` does: the LM stack (torch, transformers' model code)
is imported first and not counted, then the demo KB opens (timed apart), then the calls
run twice:

- `cold`: the first pass, what a question in a new process pays (first-use costs
  included: loading the relation ranker's model, starting the parse check's child);
- `warm`: the same calls again in the same process (caches filled).

Paths:

- `old`: the relation ranker on sentence-transformers (`KB_RANKER_BACKEND`), the parse
  check's child started by the first query and waited for there (as before; emulated
  here by not starting it when the KB opens);
- `new`: the ranker on `kb.minilm` (transformers' BertModel, same vectors), the parse
  check's child started beside the store's.

Both start from an empty relation-vector cache (a new user's). Each pass also checks
that the two paths' observations are the same (text, status, payloads; `same` column).
Prints per tool: calls, mean and median ms per call, old over new; the last line is

    RESULT cold_old_ms=<mean> cold_new_ms=<mean> cold_ratio=<x> warm_old_ms=<mean> warm_new_ms=<mean>
           first_trace_old_s=<s> first_trace_new_s=<s> same=<yes|no>

Usage: python -m bench.tool_speed [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "examples" / "traces"
PATHS = ("old", "new")


def trace_actions() -> list[dict]:
    """Every action of the shipped demo-KB traces in node order, as dicts with the trace's
    file name (read once by the parent, so both paths run the same list)."""
    out = []
    for path in sorted(p for p in TRACES.glob("*.json") if p.name != "manifest.json"):
        data = json.loads(path.read_text())
        if data["meta"].get("kb_spec") != "demo":
            continue
        for node in data["nodes"]:
            step = node.get("step")
            if step and step.get("action") and step["action"]["tool"] != "Done":
                out.append({"trace": path.name, **step["action"]})
    return out


def _observation_key(obs) -> str:
    from mcts.search.serialize import observation_to_dict

    return json.dumps(observation_to_dict(replace(obs, elapsed_s=0.0)), sort_keys=True)


def child(path: str, actions: list[dict]) -> dict:
    """One path in this (fresh) process: returns per-call timings and observation keys."""
    import transformers
    from transformers import PreTrainedModel  # noqa: F401  (the LM's model code, as in a search run)

    del transformers
    import kb.embedded
    import kb.query_worker
    from kb.actions import Action
    from kb.spec import open_kb
    from kb.tools import Toolbox

    if path == "old":
        kb.embedded.parser_pool = lambda: None  # the parse check's child starts on first use
        lazy = kb.query_worker.parser_pool

        def parser_pool_waited():
            pool = lazy()
            pool.workers[0].wait_ready()  # the old pool waited for its child when created
            return pool

        kb.query_worker.parser_pool = parser_pool_waited
    started = time.perf_counter()
    tools = Toolbox(open_kb("demo"))
    load_s = time.perf_counter() - started
    passes = {}
    for name in ("cold", "warm"):
        calls = []
        for a in actions:
            action = Action(a["tool"], a["argument"], a["semantic"])
            t = time.perf_counter()
            obs = tools.run(action)
            calls.append((a["trace"], action.tool, time.perf_counter() - t, _observation_key(obs)))
        passes[name] = calls
    return {"load_s": load_s, "passes": passes}


def run_child(path: str, actions: list[dict], timeout_s: float) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        out = Path(cache) / "result.json"
        (Path(cache) / "actions.json").write_text(json.dumps(actions))
        env = {
            **os.environ,
            "MCTS_KBQA_CACHE": cache,
            "KB_RANKER_BACKEND": "sentence-transformers" if path == "old" else "minilm",
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        }
        subprocess.run(
            [sys.executable, "-m", "bench.tool_speed", "--child", path, "--dir", cache],
            cwd=REPO,
            env=env,
            check=True,
            timeout=timeout_s,
        )
        return json.loads(out.read_text())


def _stats(calls: list) -> tuple[float, float]:
    ms = [c[2] * 1000 for c in calls]
    return statistics.mean(ms), statistics.median(ms)


def report(results: dict[str, dict]) -> str:
    lines = [f"demo KB opened: old {results['old']['load_s']:.2f} s, new {results['new']['load_s']:.2f} s"]
    figures = {}
    for name in ("cold", "warm"):
        old, new = results["old"]["passes"][name], results["new"]["passes"][name]
        same = [o[3] == n[3] for o, n in zip(old, new, strict=True)]
        lines += [
            "",
            f"{name} pass   calls  old mean  old median  new mean  new median  old/new (mean)  same",
        ]
        for tool in sorted({c[1] for c in old}) + ["all"]:
            rows = [i for i, c in enumerate(old) if tool in (c[1], "all")]
            (om, omd), (nm, nmd) = _stats([old[i] for i in rows]), _stats([new[i] for i in rows])
            ok = all(same[i] for i in rows)
            lines.append(
                f"{tool:<20} {len(rows):>5} {om:>9.1f} {omd:>11.1f} {nm:>9.1f} {nmd:>11.1f}"
                f" {om / nm:>15.1f}  {'yes' if ok else 'NO'}"
            )
            if tool == "all":
                figures[name] = (om, nm, ok)
    first = old[0][0]
    first_old = sum(c[2] for c in results["old"]["passes"]["cold"] if c[0] == first)
    first_new = sum(c[2] for c in results["new"]["passes"]["cold"] if c[0] == first)
    calls = sum(1 for c in results["old"]["passes"]["cold"] if c[0] == first)
    lines += [
        "",
        f"first trace ({first}, {calls} calls, fresh process): old {first_old:.2f} s, new {first_new:.2f} s",
    ]
    (co, cn, cs), (wo, wn, ws) = figures["cold"], figures["warm"]
    lines.append(
        f"RESULT cold_old_ms={co:.1f} cold_new_ms={cn:.1f} cold_ratio={co / cn:.1f} warm_old_ms={wo:.1f}"
        f" warm_new_ms={wn:.1f} first_trace_old_s={first_old:.2f} first_trace_new_s={first_new:.2f}"
        f" same={'yes' if cs and ws else 'no'}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per path's process")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        folder = Path(args.dir)
        result = child(args.child, json.loads((folder / "actions.json").read_text()))
        (folder / "result.json").write_text(json.dumps(result))
        return
    actions = trace_actions()
    results = {path: run_child(path, actions, args.timeout) for path in PATHS}
    print(report(results))


if __name__ == "__main__":
    main()
