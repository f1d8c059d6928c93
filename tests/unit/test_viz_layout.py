"""The tidy tree layout: no overlaps, parents centred, no crossing edges, fans collapsed."""

from __future__ import annotations

from collections import defaultdict

import pytest

from kb.actions import Action
from kb.observation import Observation
from mcts.search.steps import Step
from mcts.search.tree import Tree
from tests.synthetic_tree import synthetic_tree
from viz.layout import layout_tree


def _step(i: int) -> Step:
    return Step(f"t{i}", Action("SearchNodes", f"e{i}"), Observation(f"o{i}"))


def _chain_and_fan() -> Tree:
    tree = Tree("q")
    a = tree.add_child(0, _step(1)).id
    b = tree.add_child(0, _step(2)).id
    for i in range(3):
        tree.add_child(a, _step(10 + i))
    tree.add_child(b, _step(20))
    return tree


def _assert_tidy(tree: Tree, gap: float = 1.0) -> None:
    lay = layout_tree(tree, max_children=len(tree))
    by_level: dict[int, list[float]] = defaultdict(list)
    for x, depth in lay.positions.values():
        by_level[depth].append(x)
    for xs in by_level.values():
        xs.sort()
        assert all(b - a >= gap - 1e-9 for a, b in zip(xs, xs[1:], strict=False)), "nodes overlap on a level"
    for node in tree.nodes:
        x, depth = lay.positions[node.id]
        assert depth == node.depth
        if node.children:
            first = lay.positions[node.children[0]][0]
            last = lay.positions[node.children[-1]][0]
            assert x == pytest.approx((first + last) / 2), f"node {node.id} not centred"
            kids = [lay.positions[c][0] for c in node.children]
            assert kids == sorted(kids), "children out of order"
    # No crossing edges: on each level, the order of children follows the order of parents.
    for depth in range(1, lay.depth + 1):
        level = sorted((x, tree[i].parent) for i, (x, d) in lay.positions.items() if d == depth)
        parent_x = [lay.positions[p][0] for _, p in level]
        assert parent_x == sorted(parent_x), f"edges cross between levels {depth - 1} and {depth}"


def test_small_tree_is_tidy_and_parents_centred() -> None:
    tree = _chain_and_fan()
    _assert_tidy(tree)
    lay = layout_tree(tree)
    assert lay.positions[0][1] == 0 and lay.depth == 2
    assert min(x for x, _ in lay.positions.values()) == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_trees_have_no_overlaps_or_crossings(seed: int) -> None:
    _assert_tidy(synthetic_tree(150, seed=seed))


def test_root_only_tree() -> None:
    lay = layout_tree(Tree("q"))
    assert lay.positions == {0: (0.0, 0)} and lay.edges == () and lay.width == 0.0


def test_wide_fan_collapses_into_a_more_marker_keeping_the_most_visited() -> None:
    tree = Tree("q")
    for i in range(12):
        node = tree.add_child(0, _step(i))
        node.visits = i  # child 12 (last) is the most visited
    lay = layout_tree(tree, max_children=5)
    shown = [c for c in tree.root.children if c in lay.positions]
    assert len(shown) == 4 and len(lay.more) == 1
    assert shown == [9, 10, 11, 12]
    marker = lay.more[0]
    assert marker.parent_id == 0 and len(marker.hidden) == 8 and marker.hidden_nodes == 8
    assert set(marker.hidden) | set(shown) == set(tree.root.children)


def test_kept_ids_are_never_collapsed() -> None:
    tree = Tree("q")
    for i in range(12):
        tree.add_child(0, _step(i))
    deep = tree.add_child(1, _step(99)).id  # under the least visited child
    lay = layout_tree(tree, max_children=5, keep={deep})
    assert deep in lay.positions and 1 in lay.positions
    hidden = {h for m in lay.more for h in m.hidden}
    assert 1 not in hidden


def test_layout_is_deterministic() -> None:
    tree = synthetic_tree(300, seed=5)
    assert layout_tree(tree) == layout_tree(tree)


def test_collapsed_tree_stays_tidy() -> None:
    tree = synthetic_tree(400, seed=7)
    lay = layout_tree(tree, max_children=3)
    assert lay.more, "this tree has fans wider than 3"
    items: dict[int, list[float]] = defaultdict(list)
    for x, depth in lay.positions.values():
        items[depth].append(x)
    for m in lay.more:
        items[m.depth].append(m.x)
    for xs in items.values():
        xs.sort()
        assert all(b - a >= 1 - 1e-9 for a, b in zip(xs, xs[1:], strict=False))
    hidden_total = sum(m.hidden_nodes for m in lay.more)
    assert len(lay.positions) + hidden_total == len(tree)


def test_bad_max_children_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_children"):
        layout_tree(Tree("q"), max_children=0)
