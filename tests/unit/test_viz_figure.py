"""The Plotly tree figure: one point per visible node, hover fields, highlights, size budget."""

from __future__ import annotations

import json
import math

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.steps import Step
from mcts.search.tree import Tree
from tests.synthetic_tree import synthetic_tree
from viz.figure import KINDS, best_value_path, build_figure, hover_text, node_kind
from viz.layout import layout_tree

NODE_TRACES = {k.label for k in KINDS}


def _node_points(fig) -> dict[int, dict]:
    """node id -> {trace name, hovertext} over the node traces."""
    out = {}
    for trace in fig.data:
        if trace.name in NODE_TRACES and trace.customdata is not None:
            for i, node_id in enumerate(trace.customdata):
                assert node_id not in out, "a node is drawn twice"
                out[int(node_id)] = {"trace": trace.name, "hover": trace.hovertext[i]}
    return out


def _small_tree() -> Tree:
    tree = Tree("Who wrote Dune?")
    a = tree.add_child(
        0,
        Step("find it", Action("SearchNodes", "Dune"), Observation('"Dune" | Description: novel')),
        reward=1.6,
        ppl_history=20.0,
        ppl_with_question=16.0,
        visits=3,
        value_sum=4.2,
    )
    tree.root.visits = 4
    tree.root.value_sum = 5.0
    tree.add_child(
        a.id,
        Step("q", Action("ExecuteSPARQL", "SELECT ?x WHERE { <a> ?p ?x }"), Observation.error("bad")),
        validity="tool_error",
        reward=0.3,
        visits=1,
        value_sum=0.3,
    )
    tree.add_child(
        a.id,
        Step("done", Action("Done"), Observation("Done.")),
        terminal=True,
        answer=(Value("Frank Herbert", "m.01"),),
        reward=1.9,
        visits=1,
        value_sum=1.9,
    )
    tree.add_child(
        0,
        Step("?", None, Observation.error("parse"), raw_text="Act"),
        validity="parse_error",
        reward=0.5,
        visits=1,
        value_sum=0.5,
    )
    tree.add_child(0, Step("x", Action("SearchTypes", "book"), Observation("")))  # not scored yet
    return tree


def test_every_node_is_one_point_with_its_id_as_customdata() -> None:
    tree = _small_tree()
    points = _node_points(build_figure(tree))
    assert sorted(points) == list(range(len(tree)))
    assert points[0]["trace"] == "question (root)"
    assert points[2]["trace"] == "tool error"
    assert points[3]["trace"] == "terminal with answer"
    assert points[4]["trace"] == "unparsable step"
    assert points[5]["trace"] == "not scored yet"
    assert node_kind(tree[1]) == "step"


def test_hover_shows_action_visits_value_reward_ppls_and_uct() -> None:
    tree = _small_tree()
    text = hover_text(tree, tree[1], c=1.0)
    for field in (
        'SearchNodes("Dune")',
        "N=3",
        "W/N=1.400",
        "r=1.600",
        "PPL(H')=20.00",
        "PPL(H',Q)=16.00",
        "UCT=",
    ):
        assert field in text, field
    uct = 1.4 + math.sqrt(math.log(4) / 3)
    assert f"UCT={uct:.3f}" in text
    # SPARQL angle brackets are escaped, not swallowed as tags.
    assert "&lt;a&gt;" in hover_text(tree, tree[2], c=1.0)
    assert "unvisited" in hover_text(tree, tree[5], c=1.0)


def test_reward_colours_share_one_colour_axis_with_a_colour_bar() -> None:
    fig = build_figure(_small_tree(), alpha=2.0)
    coloured = [
        t for t in fig.data if t.name in {"step", "terminal with answer", "tool error"} and t.customdata
    ]
    assert len(coloured) == 3 and all(t.marker.coloraxis == "coloraxis" for t in coloured)
    step = next(t for t in fig.data if t.name == "step" and t.customdata)
    assert list(step.marker.color) == [1.6]
    legend = next(t for t in fig.data if t.name == "step" and not t.customdata)
    assert (
        legend.showlegend is not False and legend.legendgroup == step.legendgroup and step.showlegend is False
    )
    axis = fig.layout.coloraxis
    assert "IG reward" in axis.colorbar.title.text


def test_the_colour_scale_spans_this_trees_rewards_with_neutral_marked_white() -> None:
    tree = _small_tree()
    rewards = [n.reward for n in tree.nodes if n.reward is not None]
    axis = build_figure(tree, alpha=2.0).layout.coloraxis
    assert (axis.cmin, axis.cmax) == (min(rewards), max(rewards))
    assert "1.00 (neutral)" in axis.colorbar.ticktext and list(axis.colorbar.tickvals) == [0.3, 1.0, 1.9]
    white_at = next(p for p, colour in axis.colorscale if colour == "#f7f7f7")
    assert abs(axis.cmin + white_at * (axis.cmax - axis.cmin) - 1.0) < 1e-9
    # Rewards all above neutral (a small model's 1.0-1.6): the bar starts at neutral, not at 0.
    for node in tree.nodes:
        if node.reward is not None:
            node.reward = 1.2 + 0.1 * (node.id % 4)
    axis = build_figure(tree, alpha=2.0).layout.coloraxis
    assert axis.cmin == 1.0 and abs(axis.cmax - 1.5) < 1e-9


def test_nodes_whose_rank_a_rescore_flipped_are_ringed() -> None:
    fig = build_figure(_small_tree(), flipped={1, 4, 99})
    ring = next(t for t in fig.data if t.name == "rank flipped by re-score")
    assert len(ring.x) == 2  # node 99 is not in the tree


def test_size_grows_with_visits() -> None:
    tree = _small_tree()
    tree.add_child(
        0, Step("y", Action("SearchNodes", "b"), Observation("o")), reward=1.0, visits=9, value_sum=9
    )
    step = next(t for t in build_figure(tree).data if t.name == "step" and t.customdata)
    sizes = dict(zip(step.customdata, step.marker.size, strict=True))
    assert sizes[6] > sizes[1]


def test_best_and_selected_paths_are_drawn() -> None:
    tree = _small_tree()
    assert best_value_path(tree) == [0, 1, 3]  # the answering terminal with the highest W/N
    fig = build_figure(tree, selected_path=[0, 4], inspected=2)
    names = [t.name for t in fig.data]
    assert "best branch (W/N)" in names and "selected last round" in names and "inspected" in names
    best = next(t for t in fig.data if t.name == "best branch (W/N)")
    assert sum(x is not None for x in best.x) == 4  # two segments


def _labels(fig) -> dict[int, str]:
    """node id -> label text of every node that carries one."""
    out = {}
    for t in fig.data:
        if t.name in NODE_TRACES and t.customdata is not None and t.text is not None:
            out.update({int(i): text for i, text in zip(t.customdata, t.text, strict=True) if text})
    return out


def test_small_trees_label_every_node_with_its_tool_and_what_sets_it_apart() -> None:
    labels = _labels(build_figure(_small_tree()))
    assert sorted(labels) == list(range(len(_small_tree())))
    assert labels[1] == '1 Nodes<br>"Dune"'
    assert labels[3].startswith("3 Done<br>→ Frank Herbert")


def test_collapsed_fans_are_drawn_as_markers_and_not_counted_as_nodes() -> None:
    tree = synthetic_tree(400, seed=7)
    lay = layout_tree(tree, max_children=3)
    fig = build_figure(tree, layout=lay)
    assert len(_node_points(fig)) == len(lay.positions) < len(tree)
    more = next(t for t in fig.data if t.name == "collapsed children")
    assert len(more.x) == len(lay.more)


def test_five_hundred_nodes_stay_under_the_json_budget() -> None:
    tree = synthetic_tree(500, seed=1)
    fig = build_figure(tree)
    text = fig.to_json()
    assert len(text.encode()) < 500 * 1024
    parsed = json.loads(text)
    assert sum(len(t.get("customdata", [])) for t in parsed["data"] if t["name"] in NODE_TRACES) == len(tree)
