"""The selection score a run used, and why the selection entered a child, for the inspector.

- `score_cells` / `score_line`: the node's score under the run's own rule (UCT or PUCT,
  `SearchSettings.selection`), its rank among its open siblings with the tree's current
  statistics, and the terms it adds up from (W/N + c·√(ln N_parent / N), or
  W/N + c_puct·P·√N_parent / (1 + N));
- `selection_figure`: for one round chosen from the run's events
  (`mcts.search.selection_replay`), one stacked horizontal bar per sibling, the exploitation
  term W/N and the exploration term (PUCT: the prior term) as they stood when that round's
  selection ran, the child entered marked;
- `round_choices` / `selection_caption`: the round chooser's entries and the line under the bars.

Knows nothing of Gradio; every string from the tree is escaped for where it goes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mcts.search.selection_replay import (
    SelectionAt,
    SelectionStep,
    SiblingScore,
    rank_among_open,
    sibling_scores,
)
from mcts.search.settings import SearchSettings, Selection
from mcts.search.tree import Tree
from viz.escape import md, num, plotly

EXPLOIT_COLOUR = "#2563eb"  # W/N
EXPLORE_COLOUR = "#f59e0b"  # the exploration / prior term
FOLLOWED = "the highest score among the open siblings is followed next; closed branches (terminal, or fully explored) are never entered again"


def rule_name(settings: SearchSettings) -> str:
    return "PUCT" if settings.selection == Selection.PUCT else "UCT"


def rule_formula(settings: SearchSettings) -> str:
    """The rule in one line, with its constant."""
    if settings.selection == Selection.PUCT:
        return f"PUCT = W/N + c_puct·P·√N_parent / (1 + N), c_puct = {settings.c_puct:g}"
    return f"UCT = W/N + c·√(ln N_parent / N), c = {settings.c:g} (an unvisited child first)"


def explore_name(selection: Selection) -> str:
    return (
        "prior term c_puct·P·√N_parent/(1+N)"
        if selection == Selection.PUCT
        else "exploration c·√(ln N_parent/N)"
    )


def _f(x: float, digits: int = 3) -> str:
    return num(x, f".{digits}f") if math.isfinite(x) else ("∞" if x > 0 else "–")


def _row(tree: Tree, node_id: int, settings: SearchSettings) -> tuple[SiblingScore, tuple[SiblingScore, ...]]:
    rows = sibling_scores(tree, tree[node_id].parent, settings)
    return next(r for r in rows if r.node_id == node_id), rows


def score_cells(tree: Tree, node_id: int, settings: SearchSettings) -> list[tuple[str, str]]:
    """(name, value) cells for the inspector's table: the rule's score and the node's rank."""
    if tree[node_id].is_root:
        return []
    own, rows = _row(tree, node_id, settings)
    rank = rank_among_open(rows, node_id)
    name = rule_name(settings)
    shown = f"{rank[0]} of {rank[1]} open" if rank is not None else f"closed ({len(rows)} siblings)"
    return [(name, _f(own.score)), (f"{name} rank", shown)]


def score_line(tree: Tree, node_id: int, settings: SearchSettings) -> str:
    """The score's terms with this node's numbers, and what its rank means (Markdown)."""
    node = tree[node_id]
    if node.is_root:
        return ""
    own, rows = _row(tree, node_id, settings)
    parent_n = tree[node.parent].visits
    if settings.selection == Selection.PUCT:
        terms = (
            f"PUCT = W/N + c_puct·P·√N_parent / (1 + N) = {_f(own.mean_value)} + "
            f"{settings.c_puct:g}·{_f(own.prior or 0.0)}·√{num(parent_n)} / (1 + {num(own.visits)}) = "
            f"{_f(own.mean_value)} + {_f(own.explore)} = **{_f(own.score)}**"
        )
    elif own.visits == 0:
        terms = "UCT = ∞: an unvisited child is entered before any visited sibling"
    else:
        terms = (
            f"UCT = W/N + c·√(ln N_parent / N) = {_f(own.mean_value)} + "
            f"{settings.c:g}·√(ln {num(parent_n)} / {num(own.visits)}) = "
            f"{_f(own.mean_value)} + {_f(own.explore)} = **{_f(own.score)}**"
        )
    rank = rank_among_open(rows, node_id)
    where = (
        f"rank {rank[0]} of {rank[1]} open siblings" if rank is not None else "closed: never entered again"
    )
    return (
        f"*Selection ({rule_name(settings)}, the rule this run used), with the tree's statistics now:* "
        f"{terms}; {where}: {FOLLOWED}. *Why this child was selected* below rebuilds any round's scores."
    )


def round_label(step: SelectionStep) -> str:
    how = "by the score" if step.by_rule else "greedy descent"
    return f"round {step.round} → node {step.entered} ({how})"


def round_choices(steps: Sequence[SelectionStep]) -> list[tuple[str, int]]:
    """The chooser's entries, latest round first: (label, round)."""
    return [(round_label(s), s.round) for s in sorted(steps, key=lambda s: -s.round)]


def selection_caption(at: SelectionAt, inspected: int) -> str:
    """The line under the bars: what the round did and where the inspected node stood."""
    step = at.step
    rank = rank_among_open(at.siblings, inspected)
    own = "closed then" if rank is None else f"rank {rank[0]} of {rank[1]} open"
    head = (
        f"**Round {num(step.round)}**, at node {num(step.parent_id)} (N_parent = {num(at.parent_visits)}), "
        f"{'UCT, c' if at.rule == Selection.UCT else 'PUCT, c_puct'} = {at.constant:g}: "
    )
    if step.by_rule:
        body = f"the selection entered node {num(step.entered)}, the highest score among the open siblings"
    else:
        best = at.best
        body = (
            f"the greedy descent entered node {num(step.entered)}, the policy's top step, without comparing "
            f"scores"
            + (f" (the score would have picked node {num(best)})" if best not in (None, step.entered) else "")
        )
    return f"{head}{body}. Node {num(inspected)}: {md(own)}. Bars: W/N (blue) + {md(explore_name(at.rule))} (amber)."


def _bar_names(at: SelectionAt, inspected: int) -> list[str]:
    """The y labels, node ids (the steps' names ride inside the bars, so a phone keeps room for
    the bars): ▶ marks the child entered, bold the inspected node, (closed) the closed."""
    names = []
    for r in at.siblings:
        mark = "▶ " if r.node_id == at.step.entered else ""
        text = plotly(f"{mark}{r.node_id}{' (closed)' if r.closed else ''}")
        names.append(f"<b>{text}</b>" if r.node_id == inspected else text)
    return names


def selection_figure(at: SelectionAt, inspected: int, labels: dict[int, str] | None = None) -> Any:
    """One stacked horizontal bar per sibling: W/N + the exploration term = the score."""
    import plotly.graph_objects as go

    rows = list(at.siblings)
    names = _bar_names(at, inspected)
    finite = [r.explore if math.isfinite(r.explore) else 0.0 for r in rows]
    hover = [
        plotly(
            f"node {r.node_id}: N = {r.visits}, W/N = {_f(r.mean_value)}"
            f"{', P = ' + _f(r.prior) if r.prior is not None else ''}, "
            f"exploration = {_f(r.explore)}, score = {_f(r.score)}{' (closed)' if r.closed else ''}"
        )
        for r in rows
    ]
    faded = [0.35 if r.closed else 1.0 for r in rows]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=names,
            x=[r.mean_value for r in rows],
            orientation="h",
            name="W/N (exploitation)",
            marker={"color": EXPLOIT_COLOUR, "opacity": faded},
            text=[plotly((labels or {}).get(r.node_id, "")) for r in rows],
            textposition="inside",
            insidetextanchor="start",
            textfont={"color": "white"},
            hovertext=hover,
            hoverinfo="text",
        )
    )
    fig.add_trace(
        go.Bar(
            y=names,
            x=finite,
            orientation="h",
            name=plotly(explore_name(at.rule)),
            marker={"color": EXPLORE_COLOUR, "opacity": faded},
            text=[_f(r.score) if math.isfinite(r.score) else "∞ unvisited: first" for r in rows],
            textposition="outside",
            cliponaxis=False,
            hovertext=hover,
            hoverinfo="text",
        )
    )
    top = max([r.mean_value + e for r, e in zip(rows, finite, strict=True)] + [0.1])
    fig.update_layout(
        barmode="stack",
        height=120 + 34 * len(rows),
        margin={"l": 10, "r": 16, "t": 36, "b": 10},
        xaxis={"title": {"text": "score = W/N + exploration"}, "range": [0, top * 1.25]},
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "traceorder": "normal"},
        font={"size": 12},
        plot_bgcolor="white",
        paper_bgcolor="white",
    )
    return fig
