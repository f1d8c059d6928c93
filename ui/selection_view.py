"""Why this child was selected: the inspector's round chooser and its bars.

For the inspected node, the chooser lists only the rounds whose selection went through the
node's parent into one of its children (latest first, the default); the bars show, per
sibling, W/N and the exploration term (PUCT: the prior term) as they stood when that
round's selection ran, rebuilt from the run's events (`mcts.search.selection_replay`,
drawn by `viz.selection_terms`). Cheap and model-free: a replayed or cached run shows the
same. A run whose events lack what is needed (an older trace, beam, vote or the single
path) gets one line saying so; a round that is not one of the listed ones, or is not a
number, gets one line and changes nothing else.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from mcts.search.selection_replay import SelectionStep, selection_at, steps_through, why_unavailable
from mcts.search.tree import Tree
from ui.inspector import parse_node_id
from ui.session import Session
from ui.wiring import Page
from viz.escape import md
from viz.labels import step_labels
from viz.selection_terms import round_choices, selection_caption, selection_figure

SELECTION_OUTPUTS = ("sel_round", "sel_plot", "sel_note")
BAR_LABEL_CHARS = 24  # a bar's name; at 390 px a longer one squeezes the bars
HINT = "*Pick a node below the root to see why the selection entered it, round by round.*"


class RoundChooser(gr.Dropdown):
    """gr.Dropdown that lets any value through Gradio's processing, so that a round which is
    not among the choices reaches the handler and is answered by one clear line (Gradio's
    own check would raise an error naming the whole list)."""

    is_template = True  # Gradio: drawn as the parent class, a Dropdown

    def preprocess(self, payload: Any) -> Any:
        return payload


def selection_block(page: Page) -> None:
    """The chooser, the bars and their line, registered on the page (inside the inspector)."""
    with gr.Accordion("Why this child was selected (round by round)", open=True, elem_id="selection-box"):
        page.add(
            "sel_round",
            RoundChooser(
                choices=[],
                label="Round",
                info="only rounds whose selection went through this node's parent",
                interactive=True,
                elem_id="sel-round",
            ),
        )
        page.add(
            "sel_plot",
            gr.Plot(label="W/N + exploration term, per sibling", elem_id="sel-plot", visible=False),
        )
        page.add("sel_note", gr.Markdown(HINT, elem_id="sel-note"))


def _tree(session: Session) -> Tree | None:
    """The run as recorded (a re-score changes the tree on screen, not what the run did)."""
    recorded = session.recorded_tree
    return recorded if recorded is not None else session.tree


def _node_id(tree: Tree | None, node: Any) -> int | None:
    node_id = parse_node_id(node)
    return node_id if tree is not None and node_id is not None and 0 <= node_id < len(tree) else None


def _cleared(note: str) -> dict[str, Any]:
    return {
        "sel_round": gr.update(choices=[], value=None),
        "sel_plot": gr.update(value=None, visible=False),
        "sel_note": note,
    }


def _draw(session: Session, tree: Tree, node_id: int, step: SelectionStep) -> dict[str, Any]:
    try:
        at = selection_at(tree, session.events, session.settings, step)
    except ValueError as exc:  # a tree whose ids are not in creation order (a hand-made trace)
        return {"sel_plot": gr.update(value=None, visible=False), "sel_note": f"*{exc}*"}
    names = step_labels(tree)  # the tool and what tells the siblings apart (as the tree names them)
    labels = {r.node_id: _short(names[r.node_id].text) for r in at.siblings if r.node_id in names}
    return {
        "sel_plot": gr.update(value=selection_figure(at, node_id, labels), visible=True),
        "sel_note": selection_caption(at, node_id),
    }


def _short(text: str, limit: int = BAR_LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _steps(session: Session, tree: Tree, node_id: int) -> tuple[list[SelectionStep], str | None]:
    problem = why_unavailable(tree, session.events, session.settings, node_id)
    if problem is not None:
        return [], problem
    return steps_through(tree, session.events, session.settings, tree[node_id].parent), None


def selection_for_node(session: Session, node: Any) -> dict[str, Any]:
    """The inspected node changed: its rounds in the chooser (the latest chosen) and its bars."""
    tree = _tree(session)
    node_id = _node_id(tree, node)
    if tree is None or node_id is None:
        return _cleared(HINT)
    steps, problem = _steps(session, tree, node_id)
    if problem is not None:
        return _cleared(f"*{problem}*")
    latest = max(steps, key=lambda s: s.round)
    return {
        "sel_round": gr.update(choices=round_choices(steps), value=latest.round),
        **_draw(session, tree, node_id, latest),
    }


def selection_for_round(session: Session, node: Any, round_no: Any) -> dict[str, Any]:
    """A round chosen: redraw the bars for it; a round that is not listed gets one line."""
    tree = _tree(session)
    node_id = _node_id(tree, node)
    if tree is None or node_id is None:
        return {"sel_note": HINT}
    steps, problem = _steps(session, tree, node_id)
    if problem is not None:
        return {"sel_note": f"*{problem}*"}
    rounds = sorted(s.round for s in steps)
    chosen = _round(round_no)
    step = next((s for s in steps if s.round == chosen), None)
    if step is None:
        shown = md(str(round_no)[:40])
        listed = ", ".join(str(r) for r in rounds)
        return {
            "sel_note": f"*Round {shown} is not one whose selection went through node {tree[node_id].parent}: "
            f"choose one of {listed}.*"
        }
    return _draw(session, tree, node_id, step)


def _round(value: Any) -> int | None:
    """A round number from the chooser ("5", 5, 5.0); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = str(value).strip()
    return int(text) if text.isdigit() and len(text) <= 9 else None
