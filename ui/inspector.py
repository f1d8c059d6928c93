"""The node inspector: one node's numbers and histories, chosen by id, click or table row.

Cheap and model-free. A node id that does not exist, or no tree yet, gives one clear
line and changes nothing.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.render import figure, inspector
from ui.session import Session
from viz.escape import md


def parse_node_id(value: Any) -> int | None:
    """A node id from a dropdown value, a table cell or the click bridge ("12" or "12@<nonce>")."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = value if isinstance(value, float) else str(value).split("@", 1)[0].strip()
    try:
        return int(float(text))
    except (ValueError, OverflowError):  # not a number; inf, 1e400 or 400 nines
        return None


def inspect_node(session: Session, node: Any) -> dict[str, Any]:
    """Show one node: its detail and histories, ringed in the tree, chosen in the list."""
    tree = session.tree
    node_id = parse_node_id(node)
    if tree is None:
        return {"detail": "*No tree yet: run a search or load a trace.*", "history": ""}
    if node_id is None or not 0 <= node_id < len(tree):
        shown = md(str(node)[:40])
        return {"detail": f"*No node {shown} in this tree (ids 0–{len(tree) - 1}).*", "history": ""}
    session.inspected = node_id
    detail, hist = inspector(session)
    return {"detail": detail, "history": hist, "plot": figure(session), "node_dd": gr.update(value=node_id)}


def inspect_row(session: Session, evt: gr.SelectData) -> dict[str, Any]:
    """A click on a node-table row: the first cell is the node id."""
    row = getattr(evt, "row_value", None)
    value = row[0] if row else None
    if value is None and isinstance(evt.index, list | tuple) and session.tree is not None:
        value = evt.index[0]  # the table lists nodes in id order
    return inspect_node(session, value)
