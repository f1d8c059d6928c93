"""The Plotly figure of a search tree.

A pure function of `mcts.search.tree.Tree`, an optional layout and highlight sets:
edges, one marker trace per node kind (so the legend explains the shapes), node
colour = IG reward on a diverging scale spanning this tree's rewards, white at the
neutral reward alpha/2 (ratio 1), labels that name each node apart from its siblings
(`viz.labels`) in the richest form that fits each level without a collision
(`viz.label_fit`; the page's script picks again for the plot's real width), marker
size growing with visits, nodes a re-score moved ringed, the best path and the last round's
selected path drawn over the edges, and a hover card per node. Every node point
carries its node id as `customdata` so a click can open the inspector.

Built as plain dicts and wrapped without re-validation, so 500 nodes take a few
milliseconds. Knows nothing of models, Gradio or the search loop.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from mcts.search.rules import best_branch_path
from mcts.search.tree import ROOT_ID, Node, Tree
from viz.escape import plotly
from viz.label_fit import LabelForms, design_pixels, label_forms
from viz.labels import TOOL_ABBR, StepLabel, step_labels
from viz.layout import DEFAULT_MAX_CHILDREN, TreeLayout, layout_tree
from viz.legibility import PLOT_WIDTH_PX, reward_axis

TREE_DETAIL_CHARS = 26  # the second line of a tree label; the hover card has the whole action


@dataclass(frozen=True)
class NodeKind:
    key: str
    label: str  # legend text
    symbol: str
    coloured: bool  # True: colour = reward; False: fixed grey


KINDS: tuple[NodeKind, ...] = (
    NodeKind("root", "question (root)", "square", False),
    NodeKind("step", "step", "circle", True),
    NodeKind("answer", "terminal with answer", "star", True),
    NodeKind("terminal_empty", "terminal, no answer", "star-triangle-down", True),
    NodeKind("empty_result", "empty result", "diamond", True),
    NodeKind("tool_error", "tool error", "x", True),
    NodeKind("parse_error", "unparsable step", "triangle-up", True),
    NodeKind("pending", "not scored yet", "circle", False),
)
_KIND_BY_KEY = {k.key: k for k in KINDS}


def node_kind(node: Node) -> str:
    """Which legend group a node belongs to (errors first: they explain the most)."""
    if node.id == ROOT_ID:
        return "root"
    if node.validity == "parse_error":
        return "parse_error"
    if node.validity == "tool_error":
        return "tool_error"
    if node.terminal:
        return "answer" if node.answer else "terminal_empty"
    if node.validity == "empty_result":
        return "empty_result"
    if node.reward is None:
        return "pending"
    return "step"


def tool_label(node: Node) -> str:
    """The node's tool, short ("SPARQL"); "Q" for the root, "?" for a step that did not parse."""
    if node.step is None:
        return "Q"
    if node.step.action is None:
        return "?"
    return TOOL_ABBR.get(node.step.action.tool, node.step.action.tool)


MAX_MARKER_PX = 30.0


def marker_size(visits: int, scale: float = 1.0) -> float:
    """Diameter grows with sqrt(visits), bounded so one hot node cannot cover its siblings."""
    return max(4.0, min(10.0 + 4.0 * math.sqrt(max(visits, 0)), MAX_MARKER_PX) * scale)


def node_marker_px(node: Node, scale: float) -> float:
    """A node marker's diameter in pixels (terminals a little larger: they end a branch)."""
    return marker_size(node.visits, scale) + (4 * scale if node.terminal else 0)


def marker_radius(node: Node, scale: float) -> float:
    """Half the marker and its outline: what a neighbour's label must clear."""
    return node_marker_px(node, scale) / 2 + (1.0 if node.terminal else 0.5) * max(scale, 0.5)


def tree_label(node_id: int, label: StepLabel, *, detail: bool) -> str:
    """A tree label as Plotly text: "3 SPARQL" over "place_of_birth" (detail), or "3 SPARQL"."""
    head = plotly(f"{node_id} {label.tool}")
    if not detail or not label.detail:
        return head
    text = label.detail
    if len(text) > TREE_DETAIL_CHARS:
        text = text[: TREE_DETAIL_CHARS - 1] + "…"
    return f"{head}<br>{plotly(text)}"


def marker_scale(width_units: float) -> float:
    """Shrink every marker when the tree is so wide that neighbours would touch."""
    unit_px = PLOT_WIDTH_PX / max(width_units + 1.6, 1.0)
    # Floor: below ~0.4 markers turn into dots whose colour cannot be read; at that
    # point overlap is the lesser evil and zooming in separates them.
    return max(0.4, min(1.0, 0.9 * unit_px / MAX_MARKER_PX))


def _wrap(text: str, width: int = 72, max_lines: int = 4) -> str:
    text = " ".join(str(text).split())
    lines = [text[i : i + width] for i in range(0, len(text), width)] or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1] + "…"
    return "<br>".join(plotly(line) for line in lines)  # Plotly text is pseudo-HTML: <uri> is a tag


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return plotly(value)  # not a number after all: text, never a tag
    if math.isinf(value):
        return "∞ (unvisited)"
    return f"{value:.{digits}g}" if abs(value) >= 1000 else f"{value:.{digits}f}"


def hover_text(tree: Tree, node: Node, c: float, true_value: float | None = None) -> str:
    """The hover card: action, N, W/N, r, PPL(H'), PPL(H', Q), UCT (and a little context);
    with the truth overlay, the node's true value (mean F1 against gold below it)."""
    if node.step is None:
        return f"<b>Question</b><br>{_wrap(tree.question)}<br>N={node.visits}  W/N={_num(node.mean_value)}"
    step = node.step
    action = step.action.render() if step.action is not None else f"(unparsable) {step.raw_text}"
    parts = [
        f"<b>node {node.id}</b> · depth {node.depth} · round {node.round} · {plotly(node.validity)}",
        f"<b>action</b> {_wrap(action)}",
        f"<b>obs</b> {_wrap(step.observation.text, max_lines=2)}",
        f"N={node.visits}  W/N={_num(node.mean_value)}  r={_num(node.reward)}  UCT={_num(tree.uct(node.id, c))}",
        f"PPL(H')={_num(node.ppl_history, 2)}  PPL(H',Q)={_num(node.ppl_with_question, 2)}",
    ]
    if true_value is not None:
        parts.append(f"<b>true value</b> (gold) {_num(true_value)}")
    if node.terminal:
        names = ", ".join(v.name for v in node.answer) or "(empty)"
        parts.append(f"<b>answer</b> {_wrap(names, max_lines=2)}")
    return "<br>".join(parts)


def best_value_path(tree: Tree) -> list[int]:
    """Root .. the best branch (W/N), as every screen names it: `mcts.search.rules.best_branch`."""
    return best_branch_path(tree)


def _path_xy(path: Sequence[int], layout: TreeLayout) -> tuple[list[float | None], list[float | None]]:
    xs: list[float | None] = []
    ys: list[float | None] = []
    for a, b in zip(path, path[1:], strict=False):
        if a in layout.positions and b in layout.positions:
            (xa, da), (xb, db) = layout.positions[a], layout.positions[b]
            xs += [xa, xb, None]
            ys += [-da, -db, None]
    return xs, ys


def build_figure(
    tree: Tree,
    *,
    layout: TreeLayout | None = None,
    best_path: Sequence[int] | None = None,
    selected_path: Sequence[int] = (),
    inspected: int | None = None,
    flipped: Collection[int] = (),
    c: float = 1.0,
    alpha: float = 2.0,
    max_children: int = DEFAULT_MAX_CHILDREN,
    title: str | None = None,
    height: int | None = None,
    best_label: str = "best branch (W/N)",  # the one name of `rules.best_branch` on every screen
    truth: TruthMarks | None = None,
    only_here: Collection[int] | None = None,
) -> Any:
    """A `plotly.graph_objects.Figure` of the tree.

    best_path: ids root..node drawn in gold (default: the best branch, `rules.best_branch`).
    selected_path: the last round's selection path, drawn dashed.
    inspected: a node ringed as "currently inspected".
    flipped: nodes whose rank among their siblings a re-score changed (ringed in orange).
    truth: the truth overlay (gold): true values in the hover cards, each sibling group's
        top child by r ringed green (truly best) or red (not).
    only_here: nodes the other tree of a side-by-side comparison did not visit (squared;
        the legend names them whenever a set is given, empty or not).
    """
    import plotly.graph_objects as go

    best = list(best_value_path(tree) if best_path is None else best_path)
    if layout is None:
        keep: set[int] = set(best) | set(selected_path)
        if inspected is not None:
            keep.add(inspected)
        layout = layout_tree(tree, max_children=max_children, keep=keep)
    pos = layout.positions
    scale = marker_scale(layout.width)
    fig_height = height or default_height(layout)
    priority = [*best, *selected_path, *([inspected] if inspected is not None else [])]
    forms = tree_label_forms(tree, layout, scale, priority, fig_height)
    data = [
        *_edge_traces(layout, best, selected_path, best_label),
        *_node_traces(tree, pos, c, forms, scale, truth),
        *_collapsed_traces(layout, scale),
        *_highlight_traces(pos, scale, flipped, truth, only_here, inspected),
    ]
    rewards = [tree[n].reward for n in pos if tree[n].reward is not None]
    fig_layout = _figure_layout(layout, alpha, title, fig_height, rewards)
    # Each level's label forms and what they need: the page's script re-picks by them.
    fig_layout["meta"] = {"kbqa_labels": {str(d): needs for d, needs in forms.needs.items()}}
    return go.Figure({"data": data, "layout": fig_layout}, _validate=False)


def default_height(layout: TreeLayout) -> int:
    return max(380, 120 + 80 * (layout.depth + 1))


def tree_label_forms(
    tree: Tree, layout: TreeLayout, scale: float, priority: Sequence[int], height_px: float
) -> LabelForms:
    """Every visible node's label forms (`viz.label_fit`), from "3 SPARQL" over its detail
    down to none, fitted to the design width."""
    steps = step_labels(tree)
    shown = list(layout.positions)
    radius = {n: marker_radius(tree[n], scale) for n in shown}
    full = {n: tree_label(n, steps[n], detail=True) for n in shown}
    short = {n: tree_label(n, steps[n], detail=False) for n in shown}
    return label_forms(layout, full, short, radius, priority, design_pixels(layout, height_px))


def _edge_traces(
    layout: TreeLayout, best: Sequence[int], selected_path: Sequence[int], best_label: str
) -> list[dict[str, Any]]:
    """Every edge (to the "+n" markers too) in grey, then the best path and the last
    round's selection drawn over them."""
    pos = layout.positions
    ex: list[float | None] = []
    ey: list[float | None] = []
    for a, b in layout.edges:
        ex += [pos[a][0], pos[b][0], None]
        ey += [-pos[a][1], -pos[b][1], None]
    for m in layout.more:
        ex += [pos[m.parent_id][0], m.x, None]
        ey += [-pos[m.parent_id][1], -m.depth, None]
    traces = [_line_trace(ex, ey, "edges", "#9aa3ad", 1.2, show_legend=False)]
    if len(best) > 1:
        bx, by = _path_xy(best, layout)
        traces.append(_line_trace(bx, by, best_label, "#e6a700", 5.0))
    if len(selected_path) > 1:
        sx, sy = _path_xy(selected_path, layout)
        traces.append(_line_trace(sx, sy, "selected last round", "#7b3294", 2.5, dash="dash"))
    return traces


def _node_traces(
    tree: Tree,
    pos: dict[int, tuple[float, int]],
    c: float,
    forms: LabelForms,
    scale: float,
    truth: TruthMarks | None,
) -> list[dict[str, Any]]:
    """One marker trace per node kind present, in `KINDS` order, each reward-coloured kind
    followed by its grey legend entry."""
    groups: dict[str, list[Node]] = {}
    for node_id in sorted(pos):
        node = tree[node_id]
        groups.setdefault(node_kind(node), []).append(node)
    traces: list[dict[str, Any]] = []
    for kind in KINDS:
        nodes = groups.get(kind.key)
        if nodes:
            traces.append(_node_trace(tree, kind, nodes, pos, c, forms, scale, truth))
            if kind.coloured:
                traces.append(_legend_entry(kind))
    return traces


def _collapsed_traces(layout: TreeLayout, scale: float) -> list[dict[str, Any]]:
    """The "+n" markers of collapsed fans (none when nothing is collapsed)."""
    if not layout.more:
        return []
    trace = {
        "type": "scatter",
        "mode": "markers+text",
        "name": "collapsed children",
        "x": [m.x for m in layout.more],
        "y": [-m.depth for m in layout.more],
        "text": [f"+{len(m.hidden)}" for m in layout.more],
        "textposition": "middle right",
        "customdata": [m.parent_id for m in layout.more],
        "hovertext": [
            f"+{len(m.hidden)} more children of node {m.parent_id} ({m.hidden_nodes} nodes);"
            "<br>pick them in the node list"
            for m in layout.more
        ],
        "hoverinfo": "text",
        "marker": {"symbol": "circle-open-dot", "size": max(14 * scale, 6), "color": "#6c757d"},
    }
    return [trace]


def _highlight_traces(
    pos: dict[int, tuple[float, int]],
    scale: float,
    flipped: Collection[int],
    truth: TruthMarks | None,
    only_here: Collection[int] | None,
    inspected: int | None,
) -> list[dict[str, Any]]:
    """The rings over nodes: rank flipped by a re-score, the truth overlay's verdicts,
    visited by this run only, and the inspected node (drawn last, on top)."""
    ring = max(scale, 0.6)
    traces: list[dict[str, Any]] = []
    ringed = [n for n in sorted(flipped) if n in pos]
    if ringed:
        marker = {"symbol": "circle-open", "size": 26 * ring, "color": "#e8590c", "line": {"width": 2.5}}
        traces.append(_marker_trace(ringed, pos, "rank flipped by re-score", marker))
    if truth is not None:
        for ids, name, colour in (
            (truth.right, "IG's top child is truly best (gold)", "#2f9e44"),
            (truth.wrong, "IG's top child is not truly best (gold)", "#e03131"),
        ):
            traces.append(_ring_trace(ids, pos, name, colour, 30 * ring, "circle-open"))
        # Groups whose children all share one true value: nothing to pick right or wrong there.
        for ids, name in ((truth.nowhere, NOWHERE_LABEL), (truth.even, EVEN_LABEL)):
            if ids:
                traces.append(_ring_trace(ids, pos, name, "#868e96", 30 * ring, "circle-open"))
    if only_here is not None:
        traces.append(
            _ring_trace(only_here, pos, "visited by this run only", "#1c7ed6", 24 * ring, "square-open")
        )
    if inspected is not None and inspected in pos:
        marker = {"symbol": "circle-open", "size": 36, "color": "#111", "line": {"width": 3}}
        traces.append(_marker_trace([inspected], pos, "inspected", marker))
    return traces


def _marker_trace(
    ids: Sequence[int], pos: dict[int, tuple[float, int]], name: str, marker: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [pos[n][0] for n in ids],
        "y": [-pos[n][1] for n in ids],
        "hoverinfo": "skip",
        "marker": marker,
    }


@dataclass(frozen=True)
class TruthMarks:
    """What the truth overlay draws: true values by node, top children right and wrong, and
    the top children of groups where every child has the same true value, 0 (`nowhere`) or
    more (`even`), ringed grey."""

    values: dict[int, float]
    right: frozenset[int]
    wrong: frozenset[int]
    nowhere: frozenset[int] = frozenset()
    even: frozenset[int] = frozenset()


NOWHERE_LABEL = "no branch here reaches the answer (gold)"
EVEN_LABEL = "every branch here is as good (gold)"


def _ring_trace(
    ids: Collection[int], pos: dict[int, tuple[float, int]], name: str, colour: str, size: float, symbol: str
) -> dict[str, Any]:
    """Open markers over nodes; drawn (and in the legend) even when empty, so the legend
    names both verdicts whether or not this tree has one of them."""
    shown = [n for n in sorted(ids) if n in pos]
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [pos[n][0] for n in shown] or [None],
        "y": [-pos[n][1] for n in shown] or [None],
        "hoverinfo": "skip",
        "marker": {"symbol": symbol, "size": size, "color": colour, "line": {"width": 3}},
    }


def _line_trace(
    xs: list[float | None],
    ys: list[float | None],
    name: str,
    colour: str,
    width: float,
    *,
    dash: str = "solid",
    show_legend: bool = True,
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": xs,
        "y": ys,
        "hoverinfo": "skip",
        "showlegend": show_legend,
        "line": {"color": colour, "width": width, "dash": dash},
    }


def _node_trace(
    tree: Tree,
    kind: NodeKind,
    nodes: list[Node],
    pos: dict[int, tuple[float, int]],
    c: float,
    forms: LabelForms,
    scale: float,
    truth: TruthMarks | None = None,
) -> dict[str, Any]:
    marker: dict[str, Any] = {
        "symbol": kind.symbol,
        "size": [node_marker_px(n, scale) for n in nodes],
        "line": {
            "color": ["#111" if n.terminal else "#444" for n in nodes],
            "width": [(2.0 if n.terminal else 1.0) * max(scale, 0.5) for n in nodes],
        },
        "opacity": 1.0,
    }
    legend: dict[str, Any] = {"legendgroup": kind.key}
    if kind.coloured:
        marker["color"] = [n.reward if n.reward is not None else float("nan") for n in nodes]
        marker["coloraxis"] = "coloraxis"
        legend["showlegend"] = False  # a reward-coloured legend symbol would be drawn black
    else:
        marker["color"] = "#adb5bd" if kind.key == "pending" else "#495057"
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "markers+text",
        "name": kind.label,
        "x": [pos[n.id][0] for n in nodes],
        "y": [-pos[n.id][1] for n in nodes],
        "customdata": [n.id for n in nodes],
        "hovertext": [hover_text(tree, n, c, truth.values.get(n.id) if truth else None) for n in nodes],
        "hoverinfo": "text",
        "marker": marker,
        "hoverlabel": {"align": "left"},
        **legend,
    }
    trace["text"] = [forms_text(forms, n.id) for n in nodes]
    trace["textposition"] = "bottom center"
    trace["textfont"] = {"size": 10, "color": "#343a40"}
    # Every form of every point's label, and the point's level: what the page re-picks from.
    trace["meta"] = {
        "kbqa": {
            "lv": [forms.levels[n.id] for n in nodes],
            "forms": [[form.get(n.id, "") for n in nodes] for form in forms.texts],
        }
    }
    return trace


def forms_text(forms: LabelForms, node_id: int) -> str:
    """The label a node shows at the design width."""
    return forms.texts[forms.design[forms.levels[node_id]]].get(node_id, "")


def _legend_entry(kind: NodeKind) -> dict[str, Any]:
    """A point-less trace that shows the kind's shape in neutral grey in the legend."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": kind.label,
        "legendgroup": kind.key,
        "x": [None],
        "y": [None],
        "hoverinfo": "skip",
        "marker": {
            "symbol": kind.symbol,
            "size": 11,
            "color": "#c9ced6",
            "line": {"color": "#444", "width": 1},
        },
    }


def _figure_layout(
    layout: TreeLayout, alpha: float, title: str | None, height: int, rewards: Sequence[float] = ()
) -> dict[str, Any]:
    depth = layout.depth
    return {
        "title": {"text": plotly(title or ""), "x": 0.01, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 50, "r": 20, "t": 40 if title else 16, "b": 20},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "hovermode": "closest",
        "dragmode": "pan",
        "uirevision": "tree",  # keep the user's zoom across streamed updates where Plotly can
        "showlegend": True,
        "legend": {
            "itemsizing": "constant",
            "orientation": "h",
            "y": -0.02,
            "yanchor": "top",
            "x": 0,
            "font": {"size": 11},
        },
        "xaxis": {"visible": False, "range": [-0.8, layout.width + 0.8]},
        "yaxis": {
            "title": {"text": "depth"},
            "tickvals": [-d for d in range(depth + 1)],
            "ticktext": [str(d) for d in range(depth + 1)],
            "range": [-depth - 0.6, 0.5],
            "zeroline": False,
            "gridcolor": "#eef0f2",
        },
        "coloraxis": reward_axis(rewards, alpha),
    }
