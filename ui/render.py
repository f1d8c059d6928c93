"""Turn a `Session` into the values of the app's output components.

Every handler that changes the tree on screen ends by calling `main_view`, so a
live run, a loaded trace and a re-score all draw the same way. Only Gradio's
`update`/`skip` helpers are used; the drawing itself is `viz`.
"""

from __future__ import annotations

import time
from typing import Any

import gradio as gr

from ui.session import Session
from viz import (
    NODE_TABLE_HEADERS,
    VOTE_TABLE_HEADERS,
    answer_markdown,
    build_figure,
    cost_markdown,
    history_html,
    node_choices,
    node_detail_markdown,
    node_table,
    status_line,
    vote_rows,
)

# The order of the components `main_view` fills (app.py passes them in this order).
MAIN_OUTPUT_NAMES = (
    "status",
    "plot",
    "table",
    "dropdown",
    "answer",
    "votes",
    "cost",
    "trace_file",
    "detail",
    "history",
)
EMPTY_DETAIL = (
    "*Pick a node: click a point in the tree, choose it in the list, or select a row of the table.*"
)


def table_frame(rows: list[list[Any]], headers: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=headers)


def figure(session: Session, *, title: str | None = None, height: int | None = None) -> Any:
    if session.tree is None:
        return None
    s = session.settings
    return build_figure(
        session.tree,
        best_path=session.best_path(),
        selected_path=session.selected_path,
        inspected=session.inspected,
        c=s.c,
        alpha=s.alpha,
        title=title,
        height=height,
        best_label="best branch (W/N)",
    )


def inspector(session: Session) -> tuple[str, str]:
    tree = session.tree
    node_id = session.inspected
    if tree is None or node_id is None or not 0 <= node_id < len(tree):
        return EMPTY_DETAIL, ""
    s = session.settings
    detail = node_detail_markdown(tree, node_id, c=s.c, alpha=s.alpha, beta=s.beta)
    return detail, history_html(tree, node_id, session.rules)


def live_status(session: Session, phase: str) -> str:
    tree = session.tree
    cost = session.result.cost if session.result is not None else None
    rounds_done = sum(1 for e in session.events if e.kind == "round_finished")
    running_round = sum(1 for e in session.events if e.kind == "round_started")
    return status_line(
        phase=phase,
        round_no=max(running_round, rounds_done),
        rounds=session.settings.rounds,
        nodes=len(tree) if tree is not None else 0,
        elapsed_s=(time.perf_counter() - session.started_at) if session.started_at else 0.0,
        model_s=cost.model_s if cost else 0.0,
        kb_s=cost.kb_s if cost else 0.0,
    )


def main_view(session: Session, status: str, *, full: bool = True, cost: Any = None) -> tuple[Any, ...]:
    """Values for MAIN_OUTPUT_NAMES. `full=False` (while streaming) skips the slow-changing panels."""
    tree = session.tree
    fig = figure(session)
    rows = node_table(tree, session.settings.c) if tree is not None else []
    table = table_frame(rows, NODE_TABLE_HEADERS)
    choices = node_choices(tree) if tree is not None else []
    dropdown = gr.update(choices=choices, value=session.inspected)
    if not full:
        return (
            status,
            fig,
            table,
            dropdown,
            gr.skip(),
            gr.skip(),
            cost_markdown(cost) if cost else gr.skip(),
            gr.skip(),
            gr.skip(),
            gr.skip(),
        )
    detail, hist = inspector(session)
    result = session.result
    return (
        status,
        fig,
        table,
        dropdown,
        answer_markdown(result, tree),
        table_frame(vote_rows(result), VOTE_TABLE_HEADERS),
        cost_markdown(cost if cost is not None else (result.cost if result else None)),
        session.trace_path,
        detail,
        hist,
    )


def message_view(status: str) -> tuple[Any, ...]:
    """Only the status line changes (bad input, a failure before the run started)."""
    return (status,) + tuple(gr.skip() for _ in MAIN_OUTPUT_NAMES[1:])
