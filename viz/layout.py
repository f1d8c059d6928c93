"""Tidy top-down layout of a search tree: where each node is drawn.

A pure function of `mcts.search.tree.Tree` (plus the ids that must stay visible). It
places every visible node at (x, depth): parents centred over their first and
last child, subtrees packed left to right as tightly as their contours allow
(Reingold-Tilford style), so edges never cross and nodes never overlap. A parent
with more than `max_children` children shows the most visited ones and one
"+n more" marker standing for the rest. Deterministic: same tree, same picture.

It knows nothing of Plotly, models or the search loop.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from mcts.search.tree import ROOT_ID, Tree

DEFAULT_MAX_CHILDREN = 8  # k = 5 in the paper, so real fans rarely collapse


@dataclass(frozen=True)
class MoreMarker:
    """Stands for the children of `parent_id` that a wide fan hides."""

    parent_id: int
    hidden: tuple[int, ...]  # hidden child ids (each with its whole subtree)
    hidden_nodes: int  # hidden children plus all their descendants
    x: float
    depth: int


@dataclass(frozen=True)
class TreeLayout:
    positions: dict[int, tuple[float, int]]  # visible node id -> (x, depth)
    edges: tuple[tuple[int, int], ...]  # (parent, child), both visible
    more: tuple[MoreMarker, ...]
    width: float  # max x - min x (x starts at 0)
    depth: int  # deepest visible level

    def visible(self) -> list[int]:
        return sorted(self.positions)


@dataclass
class _Box:
    """A laid-out subtree in its own coordinates (root at x = 0)."""

    left: list[float]  # leftmost x per level below and including the root
    right: list[float]  # rightmost x per level
    offsets: list[tuple[int, float]]  # (item index, x) of each direct child item


def _subtree_size(tree: Tree, node_id: int) -> int:
    count, stack = 0, [node_id]
    while stack:
        n = stack.pop()
        count += 1
        stack.extend(tree[n].children)
    return count


def _shown_children(
    tree: Tree, node_id: int, max_children: int, keep: frozenset[int]
) -> tuple[list[int], list[int]]:
    """(shown, hidden) children, shown in creation order; kept ids always shown."""
    children = tree[node_id].children
    if len(children) <= max_children:
        return list(children), []
    slots = max(max_children - 1, 1)  # one slot goes to the marker
    must = [c for c in children if c in keep]
    rest = sorted((c for c in children if c not in keep), key=lambda c: (-tree[c].visits, c))
    chosen = set(must) | set(rest[: max(slots - len(must), 0)])
    shown = [c for c in children if c in chosen]
    hidden = [c for c in children if c not in chosen]
    return shown, hidden


def layout_tree(
    tree: Tree,
    *,
    max_children: int = DEFAULT_MAX_CHILDREN,
    keep: Collection[int] = (),
    gap: float = 1.0,
) -> TreeLayout:
    """Place every visible node; `keep` ids (and their ancestors) are never collapsed.

    `gap` is the minimum horizontal distance between two items on one level.
    """
    if max_children < 1:
        raise ValueError(f"max_children must be >= 1, got {max_children}")
    keep_all: set[int] = set()
    for node_id in keep:
        if 0 <= node_id < len(tree):
            keep_all.update(tree.path(node_id))
    keep_set = frozenset(keep_all)

    # Items: real nodes (id >= 0) and markers; built top-down, placed bottom-up.
    # An item is (kind, ref): ("node", id) or ("more", parent index into markers).
    items: list[tuple[str, int]] = [("node", ROOT_ID)]
    item_children: list[list[int]] = [[]]
    markers_raw: list[tuple[int, list[int]]] = []
    order = [0]
    i = 0
    while i < len(order):
        idx = order[i]
        i += 1
        kind, ref = items[idx]
        if kind != "node":
            continue
        shown, hidden = _shown_children(tree, ref, max_children, keep_set)
        for child in shown:
            items.append(("node", child))
            item_children.append([])
            item_children[idx].append(len(items) - 1)
            order.append(len(items) - 1)
        if hidden:
            markers_raw.append((ref, hidden))
            items.append(("more", len(markers_raw) - 1))
            item_children.append([])
            item_children[idx].append(len(items) - 1)
            order.append(len(items) - 1)

    boxes: list[_Box | None] = [None] * len(items)
    for idx in reversed(order):  # children before parents (BFS order reversed)
        kids = item_children[idx]
        if not kids:
            boxes[idx] = _Box(left=[0.0], right=[0.0], offsets=[])
            continue
        placed: list[tuple[int, float]] = []
        acc_right: list[float] = []  # right contour of what is placed so far
        for kid in kids:
            box = boxes[kid]
            assert box is not None
            shift = 0.0
            if acc_right:
                shift = max(
                    acc_right[lvl] - box.left[lvl] + gap for lvl in range(min(len(acc_right), len(box.left)))
                )
            placed.append((kid, shift))
            for lvl, r in enumerate(box.right):
                if lvl < len(acc_right):
                    acc_right[lvl] = max(acc_right[lvl], r + shift)
                else:
                    acc_right.append(r + shift)
        centre = (placed[0][1] + placed[-1][1]) / 2
        offsets = [(kid, x - centre) for kid, x in placed]
        left = [0.0]
        right = [0.0]
        for kid, x in offsets:
            box = boxes[kid]
            assert box is not None
            for lvl in range(len(box.left)):
                if lvl + 1 < len(left):
                    left[lvl + 1] = min(left[lvl + 1], box.left[lvl] + x)
                    right[lvl + 1] = max(right[lvl + 1], box.right[lvl] + x)
                else:
                    left.append(box.left[lvl] + x)
                    right.append(box.right[lvl] + x)
        boxes[idx] = _Box(left=left, right=right, offsets=offsets)

    # Absolute positions, top-down.
    xs = [0.0] * len(items)
    depths = [0] * len(items)
    for idx in order:
        box = boxes[idx]
        assert box is not None
        for kid, dx in box.offsets:
            xs[kid] = xs[idx] + dx
            depths[kid] = depths[idx] + 1
    min_x = min(xs)

    positions: dict[int, tuple[float, int]] = {}
    edges: list[tuple[int, int]] = []
    more: list[MoreMarker] = []
    for idx in order:
        kind, ref = items[idx]
        x = round(xs[idx] - min_x, 6)
        if kind == "node":
            positions[ref] = (x, depths[idx])
            for kid in item_children[idx]:
                if items[kid][0] == "node":
                    edges.append((ref, items[kid][1]))
        else:
            parent_id, hidden = markers_raw[ref]
            size = sum(_subtree_size(tree, h) for h in hidden)
            more.append(MoreMarker(parent_id, tuple(hidden), size, x, depths[idx]))
    width = max(xs) - min_x
    return TreeLayout(
        positions=positions,
        edges=tuple(edges),
        more=tuple(more),
        width=round(width, 6),
        depth=max(depths),
    )
