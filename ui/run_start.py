"""What the page shows the moment a new run starts: nothing that belongs to the run before.

A run's first update clears the tree (a note such as "Loading models…" stands where it
was), the node list and table, the inspector, the answer panel, the truth overlay, the
twin and the cleaning-rule lab, so no panel shows the last question's numbers while the
models load. Pure values keyed by component name; the session is reset by the caller.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.render import EMPTY_DETAIL, table_frame
from ui.rescoring import REWARD_TABLE_HEADERS
from viz import NODE_TABLE_HEADERS, VOTE_TABLE_HEADERS

LAB_OUTPUTS = ("lab_status", "rank_changes", "reward_table", "lab_plot")
LAB_READY = "After **Re-score**: what changed, and the tree with the nodes that changed rank ringed."
LOADING = "Loading models…"
SEARCHING = "Searching…"
REPLAYING = "Replaying the recorded run…"
SEARCHING_ANSWER = "*Searching: the answer appears when the run ends.*"


def placeholder_figure(message: str) -> Any:
    """An empty plot that says what is coming instead of a tree."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_annotation(
        text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 20}
    )
    fig.update_layout(
        height=380,
        xaxis={"visible": False},
        yaxis={"visible": False},
        plot_bgcolor="white",
        paper_bgcolor="white",
        margin={"l": 20, "r": 20, "t": 20, "b": 20},
    )
    return fig


def lab_cleared() -> dict[str, Any]:
    """The lab as before any re-score: its tables and tree belong to the tree that went."""
    return {
        "lab_status": LAB_READY,
        "rank_changes": "",
        "reward_table": table_frame([], REWARD_TABLE_HEADERS),
        "lab_plot": None,
    }


def cleared_view(message: str) -> dict[str, Any]:
    """Every panel of the Search tab and the lab, empty, with `message` where the tree was
    (MAIN_OUTPUTS but the status line, and LAB_OUTPUTS)."""
    hidden = gr.update(value=None, visible=False)
    return {
        "plot": placeholder_figure(message),
        "table": table_frame([], NODE_TABLE_HEADERS),
        "node_dd": gr.update(choices=[], value=None),
        "answer": SEARCHING_ANSWER,
        "votes": table_frame([], VOTE_TABLE_HEADERS),
        "cost": "",
        "trace_file": None,
        "detail": EMPTY_DETAIL,
        "history": "",
        "truth": "",
        "twin_status": "",
        "twin_plot_a": hidden,
        "twin_plot_b": hidden,
        "twin_diff": "",
        **lab_cleared(),
    }
