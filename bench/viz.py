"""Figure build time and JSON size of the tree visualiser at 100 / 500 / 2,000 nodes.

Target: < 150 ms and < 500 KB at 500 nodes. Build = layout + Plotly
figure + JSON (what Gradio sends per streamed update). The fastest of several
builds (the least disturbed by other processes on a shared machine), wall clock and
this process's CPU time side by side.
Usage: python -m bench.viz [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from tests.synthetic_tree import synthetic_tree
from viz.figure import build_figure
from viz.layout import layout_tree


def measure(n_nodes: int, repeat: int) -> tuple[float, float, float, float, float]:
    """(layout ms, figure ms, build ms incl. JSON, build CPU ms, JSON KB): fastest of `repeat`."""
    tree = synthetic_tree(n_nodes, seed=0)
    lay_ms, fig_ms, total_ms, cpu_ms = [], [], [], []
    size = 0
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        lay = layout_tree(tree)
        t1 = time.perf_counter()
        fig = build_figure(tree, layout=lay, selected_path=tree.path(len(tree) - 1))
        t2 = time.perf_counter()
        text = fig.to_json()
        t3 = time.perf_counter()
        cpu_ms.append((time.process_time() - c0) * 1e3)
        lay_ms.append((t1 - t0) * 1e3)
        fig_ms.append((t2 - t1) * 1e3)
        total_ms.append((t3 - t0) * 1e3)
        size = len(text.encode())
    return min(lay_ms), min(fig_ms), min(total_ms), min(cpu_ms), size / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    build_figure(synthetic_tree(10))  # warm-up: imports plotly once
    results = {}
    print(f"{'nodes':>6} {'layout ms':>10} {'figure ms':>10} {'build ms':>9} {'cpu ms':>7} {'json KB':>8}")
    for n in (100, 500, 2000):
        lay, fig, total, cpu, kb = measure(n, args.repeat)
        results[n] = (total, kb)
        print(f"{n:>6} {lay:>10.1f} {fig:>10.1f} {total:>9.1f} {cpu:>7.1f} {kb:>8.0f}")
    total, kb = results[500]
    print(f"budget at 500 nodes: build {total / 150:.2f}x of 150 ms, JSON {kb / 500:.2f}x of 500 KB")
    print(f"RESULT build_ms_500={total:.1f} json_kb_500={kb:.0f}")


if __name__ == "__main__":
    main()
