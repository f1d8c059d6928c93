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


@dataclass(frozen=True)
class _Items:
    """What is drawn, in breadth-first order: real nodes and "+n more" markers.

    `items[i]` is ("node", node id) or ("more", index into `markers`); `children[i]` are
    the item indices of item i's shown children (its marker last); `order` is the BFS
    order of item indices (parents before children)."""

    items: list[tuple[str, int]]
    children: list[list[int]]
    markers: list[tuple[int, list[int]]]  # (parent id, hidden child ids) per marker
    order: list[int]


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
    # Items are built top-down and placed bottom-up.
    found = _collect_items(tree, max_children, frozenset(keep_all))
    boxes = _pack_boxes(found, gap)
    xs, depths = _absolute_positions(found, boxes)
    return _assemble(tree, found, xs, depths)


def _collect_items(tree: Tree, max_children: int, keep: frozenset[int]) -> _Items:
    found = _Items(items=[("node", ROOT_ID)], children=[[]], markers=[], order=[0])
    i = 0
    while i < len(found.order):
        idx = found.order[i]
        i += 1
        kind, ref = found.items[idx]
        if kind != "node":
            continue
        shown, hidden = _shown_children(tree, ref, max_children, keep)
        for child in shown:
            _add_item(found, idx, ("node", child))
        if hidden:
            found.markers.append((ref, hidden))
            _add_item(found, idx, ("more", len(found.markers) - 1))
    return found


def _add_item(found: _Items, parent: int, item: tuple[str, int]) -> None:
    found.items.append(item)
    found.children.append([])
    found.children[parent].append(len(found.items) - 1)
    found.order.append(len(found.items) - 1)


def _pack_boxes(found: _Items, gap: float) -> list[_Box]:
    """Every item's subtree box, children before parents (BFS order reversed)."""
    boxes: dict[int, _Box] = {}
    for idx in reversed(found.order):
        boxes[idx] = _pack([(kid, boxes[kid]) for kid in found.children[idx]], gap)
    return [boxes[idx] for idx in range(len(found.items))]


def _pack(kids: list[tuple[int, _Box]], gap: float) -> _Box:
    """One parent's box: its children's boxes side by side, each pushed right just far
    enough to clear the right contour of those before it, the parent centred over the
    first and the last."""
    if not kids:
        return _Box(left=[0.0], right=[0.0], offsets=[])
    placed: list[tuple[int, float]] = []
    acc_right: list[float] = []  # right contour of what is placed so far
    for kid, box in kids:
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
    for (_, x), (_, box) in zip(offsets, kids, strict=True):
        for lvl in range(len(box.left)):
            if lvl + 1 < len(left):
                left[lvl + 1] = min(left[lvl + 1], box.left[lvl] + x)
                right[lvl + 1] = max(right[lvl + 1], box.right[lvl] + x)
            else:
                left.append(box.left[lvl] + x)
                right.append(box.right[lvl] + x)
    return _Box(left=left, right=right, offsets=offsets)


def _absolute_positions(found: _Items, boxes: list[_Box]) -> tuple[list[float], list[int]]:
    """(x, depth) of every item, top-down from the boxes' relative offsets."""
    xs = [0.0] * len(found.items)
    depths = [0] * len(found.items)
    for idx in found.order:
        for kid, dx in boxes[idx].offsets:
            xs[kid] = xs[idx] + dx
            depths[kid] = depths[idx] + 1
    return xs, depths


def _assemble(tree: Tree, found: _Items, xs: list[float], depths: list[int]) -> TreeLayout:
    """The layout in node ids, x shifted to start at 0."""
    min_x = min(xs)
    positions: dict[int, tuple[float, int]] = {}
    edges: list[tuple[int, int]] = []
    more: list[MoreMarker] = []
    for idx in found.order:
        kind, ref = found.items[idx]
        x = round(xs[idx] - min_x, 6)
        if kind == "node":
            positions[ref] = (x, depths[idx])
            for kid in found.children[idx]:
                if found.items[kid][0] == "node":
                    edges.append((ref, found.items[kid][1]))
        else:
            parent_id, hidden = found.markers[ref]
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
