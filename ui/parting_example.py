"""Where the two rewards part ways: a shipped example whose IG run and constant-reward twin
searched differently, told from the recorded traces themselves.

Most twins visit the same nodes (the policy's prior steers the `small` preset), so a class
needs one example where the reward visibly changed where the search went. The shipped
manifest (`examples/traces/manifest.json`) pairs an IG run with its constant twin for some
questions; this module compares each pair's visits step by step (a step is identified by the
actions on its path, so equal steps match across the two trees) and describes the step whose
visits differ most. Computed at start-up from the files, so the words always match them;
"" when no pair differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcts.search.tree import Tree
from ui.config import TRACES_DIR
from viz.escape import md


@dataclass(frozen=True)
class Parting:
    question: str
    step: str  # the action whose visits differ most, as rendered
    node: int  # its id in the tree that has it (the IG run's when both do)
    ig_visits: int
    constant_visits: int
    ig_answer: str
    constant_answer: str


def _visits_by_path(tree: Tree) -> dict[tuple[str, ...], tuple[int, str, int]]:
    """Per action path from the root: (visits, the last action's text, the node's id)."""
    out = {}
    for node in tree.nodes[1:]:
        actions = tuple(
            (s.action.render() if s.action is not None else s.raw_text.strip()) for s in tree.steps(node.id)
        )
        out[actions] = (node.visits, actions[-1], node.id)
    return out


def _answer(trace) -> str:
    result = trace.result
    names = [a.name or a.id for a in result.answer] if result is not None else []
    return ", ".join(names) or "no answer"


def _pairs(traces_dir: Path) -> Iterator[tuple[Path, Path]]:
    try:
        manifest = json.loads((traces_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    entries = manifest.get("traces", [])
    for ig in entries:
        if ig.get("settings", {}).get("method") != "fast":
            continue
        for twin in entries:
            same = {k: v for k, v in twin.get("settings", {}).items() if k != "method"} == {
                k: v for k, v in ig["settings"].items() if k != "method"
            }
            if (
                twin.get("settings", {}).get("method") == "constant"
                and twin["question"] == ig["question"]
                and same
            ):
                yield traces_dir / ig["file"], traces_dir / twin["file"]


def partings(traces_dir: Path = TRACES_DIR) -> list[Parting]:
    """Every shipped IG/constant pair whose searches differ, the biggest difference first."""
    from mcts.search.trace import TraceError, load_trace

    found: list[tuple[int, Parting]] = []
    for ig_path, twin_path in _pairs(traces_dir):
        try:
            ig, twin = load_trace(ig_path), load_trace(twin_path)
        except TraceError:
            continue
        a, b = _visits_by_path(ig.to_tree()), _visits_by_path(twin.to_tree())
        gaps = {p: a.get(p, (0, "", 0))[0] - b.get(p, (0, "", 0))[0] for p in a.keys() | b.keys()}
        # The biggest difference in visits; on a tie the step the IG run entered more (its
        # reward drew the search there), then the path itself so the choice is stable.
        path = max(gaps, key=lambda p: (abs(gaps[p]), gaps[p] > 0, p), default=())
        if not path or gaps[path] == 0:
            continue
        step, node = (a.get(path) or b[path])[1:]
        found.append(
            (
                abs(gaps[path]),
                Parting(
                    ig.question,
                    step,
                    node,
                    a.get(path, (0, "", 0))[0],
                    b.get(path, (0, "", 0))[0],
                    _answer(ig),
                    _answer(twin),
                ),
            )
        )
    return [p for _, p in sorted(found, key=lambda x: -x[0])]


def parting_markdown(traces_dir: Path = TRACES_DIR) -> str:
    """The line pointing a class at the clearest shipped example, or "" when there is none."""
    found = partings(traces_dir)
    if not found:
        return ""
    p = found[0]
    step = p.step if len(p.step) <= 90 else p.step[:89] + "…"
    answers = (
        f"both answer {md(p.ig_answer)}"
        if p.ig_answer == p.constant_answer
        else f"IG answers {md(p.ig_answer)}, the twin {md(p.constant_answer)}"
    )
    why = (
        "Inspect that node's IG lens to see why its reward drew the search there."
        if p.ig_visits > p.constant_visits
        else "The IG rewards drew the search elsewhere: inspect the siblings' IG lens."
    )
    return (
        f"**See the reward change the search:** ask *{md(p.question)}* (an example: it replays at once), "
        f"then run its twin. The IG run entered node {p.node}, “{md(step)}”, {p.ig_visits} time(s), the constant reward's "
        f"{p.constant_visits}; {answers}. {why}"
    )
