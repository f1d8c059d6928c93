"""The tree visualiser: layout, Plotly figure and text panels as pure functions.

`viz` reads `mcts.search.tree.Tree` and the search's plain records; it imports no model
code and no Gradio (Plotly is imported only when a figure is built).
"""

from viz.figure import best_value_path, build_figure, hover_text
from viz.layout import MoreMarker, TreeLayout, layout_tree
from viz.panels import (
    NODE_TABLE_HEADERS,
    VOTE_TABLE_HEADERS,
    answer_markdown,
    cost_markdown,
    history_html,
    node_choices,
    node_detail_markdown,
    node_table,
    rank_changes_markdown,
    status_line,
    uct_rank,
    vote_rows,
)
from viz.replay import ReplayFrame, replay_rounds, tree_at_round

__all__ = [
    "NODE_TABLE_HEADERS",
    "VOTE_TABLE_HEADERS",
    "MoreMarker",
    "ReplayFrame",
    "TreeLayout",
    "answer_markdown",
    "best_value_path",
    "build_figure",
    "cost_markdown",
    "history_html",
    "hover_text",
    "layout_tree",
    "node_choices",
    "node_detail_markdown",
    "node_table",
    "rank_changes_markdown",
    "replay_rounds",
    "status_line",
    "tree_at_round",
    "uct_rank",
    "vote_rows",
]
