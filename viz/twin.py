"""Two trees of one question side by side: which nodes each visited that the other did not.

Nodes are matched by their action path from the root (the rendered actions of every step
on the way down), not by id: two searches number their nodes in the order they grew. A
node counts as visited once N >= 1. Pure functions of `mcts.search.tree.Tree` and plain
numbers; every string from a tree goes through `viz.escape`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcts.search.tree import ROOT_ID, Tree
from viz.escape import md
from viz.panels import action_text


@dataclass(frozen=True)
class TreeDiff:
    only_a: frozenset[int]  # node ids of tree A whose action path B never visited
    only_b: frozenset[int]
    shared: int  # action paths both visited (the root included)
    visited_a: int
    visited_b: int


def path_keys(tree: Tree) -> dict[int, tuple[str, ...]]:
    """Node id -> its action path from the root, for every visited node (the root: ())."""
    keys: dict[int, tuple[str, ...]] = {ROOT_ID: ()}
    for node in tree.nodes[1:]:  # a parent always precedes its children
        if node.visits > 0 and node.parent in keys:
            keys[node.id] = (*keys[node.parent], action_text(node))
    return keys


def diff_trees(a: Tree, b: Tree) -> TreeDiff:
    ka, kb = path_keys(a), path_keys(b)
    sa, sb = set(ka.values()), set(kb.values())
    return TreeDiff(
        only_a=frozenset(i for i, k in ka.items() if k not in sb),
        only_b=frozenset(i for i, k in kb.items() if k not in sa),
        shared=len(sa & sb),
        visited_a=len(ka),
        visited_b=len(kb),
    )


@dataclass(frozen=True)
class TwinSide:
    label: str  # "Fast MCTS (IG reward)"
    answer: str  # the answer's names, as the run gave them ("" = no answer)
    f1: float | None  # against gold; None when gold is unknown


def _side(side: TwinSide) -> str:
    answer = md(side.answer) if side.answer else "no answer"
    f1 = f" · F1 against gold **{side.f1:.2f}**" if side.f1 is not None else ""
    return f"- **{md(side.label)}**: {answer}{f1}"


def twin_markdown(diff: TreeDiff, a: TwinSide, b: TwinSide) -> str:
    """What differed between a run and its twin, in words a class can follow."""
    lines = [
        "**Same question, settings, seed and policy; only the reward differs.**",
        "",
        _side(a),
        _side(b),
        "",
        f"The IG run visited {diff.visited_a} nodes, the twin {diff.visited_b}; {diff.shared} action paths "
        f"were visited by both, **{len(diff.only_a)} by the IG run only** and **{len(diff.only_b)} by the "
        "twin only** (blue squares in each tree).",
    ]
    if a.f1 is not None and b.f1 is not None:
        if a.f1 > b.f1:
            verdict = "Here the IG reward led to a better answer than no reward signal at all."
        elif a.f1 < b.f1:
            verdict = "Here the constant reward did better: the IG reward steered the search away from the gold answer."
        else:
            verdict = "Here both ended equally good: the IG reward made no difference to the answer."
        lines += ["", verdict]
    if not diff.only_a and not diff.only_b:
        lines += [
            "",
            "Both searches visited the same action paths: with this policy, budget and seed the reward "
            "did not change where the search went.",
        ]
    return "\n".join(lines)
