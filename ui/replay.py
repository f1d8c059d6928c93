"""Replay: the recorded tree as it stood at the end of any round. Cheap, model-free."""

from __future__ import annotations

from typing import Any

import gradio as gr

from mcts.search.loop import one_line
from ui.ranges import range_problem
from ui.session import Session
from viz import build_figure
from viz.replay import replay_rounds, tree_at_round

REPLAY_OUTPUTS = ("replay_slider", "replay_plot", "replay_status")


def slider_update(total: int, value: int | None = None) -> Any:
    """The replay slider spanning rounds 0..total, set to `value` (default: the last)."""
    return gr.update(
        minimum=0,
        maximum=max(total, 1),
        value=total if value is None else value,
        step=1,
        interactive=total > 0,
    )


def replay_range(session: Session) -> tuple[int, int]:
    """The rounds the replay slider spans for this browser session (as `slider_update` set them)."""
    total = replay_rounds(session.events) if getattr(session, "recorded_tree", None) is not None else 0
    return 0, max(total, 1)


def validate_round(session: Session, round_no: Any) -> list[Any]:
    """The replay event's validator (Gradio calls it as the event joins its queue): a round
    that is not a number, or outside the rounds of the tree on screen, is refused with
    Gradio's validation error naming the round (the slider lets any value through, `ui.fields`)."""
    problem = range_problem("round", round_no, *replay_range(session))
    return [gr.validate(True, ""), gr.validate(problem is None, problem or "")]


def replay_frame(session: Session, round_no: float) -> tuple[Any, str]:
    """(figure, status line) of the recorded tree at the end of round `round_no`."""
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
        frame.tree,
        best_path=best,
        selected_path=frame.selected_path,
        c=session.settings.c,
        alpha=session.settings.alpha,
        height=520,
    )
    return fig, f"Round {frame.round} of {total} · {len(frame.tree)} nodes"


def replay(session: Session, round_no: float) -> dict[str, Any]:
    """The slider moved (drag, arrow keys or the number box): redraw that round."""
    fig, status = replay_frame(session, round_no)
    return {"replay_plot": fig, "replay_status": status}


def replay_view(session: Session) -> dict[str, Any]:
    """The replay tab pointed at the run on screen, at its last round."""
    if session.recorded_tree is None:
        return {}
    total = replay_rounds(session.events)
    fig, status = replay_frame(session, total)
    return {"replay_slider": slider_update(total), "replay_plot": fig, "replay_status": status}


def sync_replay(session: Session) -> dict[str, Any]:
    """After a run (finished, stopped or failed): replay tab on the new run; Stop greyed out."""
    return {**replay_view(session), "stop_btn": gr.update(interactive=False)}
