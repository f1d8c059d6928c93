"""Replay: the recorded tree as it stood at the end of any round. Cheap, model-free."""

from __future__ import annotations

from typing import Any

import gradio as gr

from mcts.search.loop import one_line
from ui.session import Session
from viz import build_figure
from viz.replay import replay_rounds, tree_at_round


def slider_update(total: int) -> Any:
    """The replay slider spanning rounds 0..total, set to the last."""
    return gr.update(minimum=0, maximum=max(total, 1), value=total, step=1, interactive=total > 0)


def replay(session: Session, round_no: float) -> tuple[Any, str]:
    """The recorded tree at the end of a round. Outputs: replay figure, replay status."""
    source = session.recorded_tree
    if source is None:
        return None, "Run a search or load a trace to replay it."
    total = replay_rounds(session.events)
    try:
        frame = tree_at_round(source, session.events, int(round_no or 0))
    except ValueError as exc:
        return None, f"**Problem:** {one_line(exc)}"
    best = (
        frame.tree.path(frame.best_node_id)
        if frame.best_node_id is not None and frame.best_node_id < len(frame.tree)
        else None
    )
    fig = build_figure(
        frame.tree, best_path=best, selected_path=frame.selected_path, c=session.settings.c,
        alpha=session.settings.alpha, height=520, best_label="best branch (W/N)",
    )  # fmt: skip
    return fig, f"Round {frame.round} of {total} · {len(frame.tree)} nodes"


def sync_replay(session: Session) -> tuple[Any, Any, str]:
    """After a run: point the replay slider at the run just finished. Outputs: slider, figure, status."""
    total = replay_rounds(session.events)
    if session.recorded_tree is None:
        return gr.skip(), gr.skip(), gr.skip()
    fig, status = replay(session, total)
    return slider_update(total), fig, status
