"""Turn a `Session` into the values of the app's output components, keyed by name.

Every handler that changes the tree on screen ends by calling `main_view`, so a
live run, a loaded trace and a re-score all draw the same way. Only Gradio's
`update` helper is used; the drawing itself is `viz`.
"""

from __future__ import annotations

import time
from typing import Any

import gradio as gr

from mcts.search.settings import Method, Selection
from mcts.search.voting import SearchResult
from ui.glossary import GLOSSARY
from ui.gold import check, gold_markdown
from ui.labels import method_label
from ui.session import Session
from ui.truth import TruthOverlay, overlay_for, summary_markdown
from viz import (
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
from viz.answer_rule import weight_gloss, why_not_best
from viz.figure import TruthMarks
from viz.panels import node_table_headers, node_table_widths
from viz.twin import TwinSide, diff_trees, twin_markdown

TWIN_OUTPUTS = ("twin_status", "twin_plot_a", "twin_plot_b", "twin_diff")  # ui.twin's panels
TWIN_HEIGHT = 460
# The components `main_view` fills, by name (the layout registers them under these names).
MAIN_OUTPUTS = (
    "status",
    "plot",
    "table",
    "node_dd",
    "answer",
    "votes",
    "cost",
    "trace_file",
    "detail",
    "history",
    "truth",
    *TWIN_OUTPUTS,
)
EMPTY_DETAIL = (
    "*Pick a node: click a point in the tree, choose it in the list, or select a row of the table.*"
)


def table_frame(rows: list[list[Any]], headers: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=headers)


def truth_of(session: Session) -> TruthOverlay | None:
    """The truth overlay of the tree on screen, while its toggle is on and gold is known."""
    if not session.show_truth:
        return None
    s = session.settings
    return overlay_for(
        session.tree, session.meta.kb_spec, seed=s.seed, constant_reward=s.method == Method.CONSTANT
    )


def truth_marks(truth: TruthOverlay | None) -> TruthMarks | None:
    if truth is None:
        return None
    return TruthMarks(dict(truth.values), truth.right, truth.wrong, truth.nowhere, truth.even_groups)


def truth_panel(session: Session) -> str:
    """The run's ranking figures (or why there are none), while the toggle is on."""
    if not session.show_truth:
        return ""
    return summary_markdown(truth_of(session))


def figure(
    session: Session,
    *,
    title: str | None = None,
    height: int | None = None,
    only_here: frozenset[int] | None = None,
) -> Any:
    if session.tree is None:
        return None
    s = session.settings
    fig = build_figure(
        session.tree,
        best_path=session.best_path(),
        selected_path=session.selected_path,
        inspected=session.inspected,
        flipped=session.flipped,
        c=s.c,
        alpha=s.alpha,
        title=title,
        height=height,
        truth=truth_marks(truth_of(session)),
        only_here=only_here,
    )
    if s.method == Method.CONSTANT:  # the colour bar says what a constant reward paints
        fig.update_layout(coloraxis_colorbar_title_text=constant_bar_title(s.constant_reward))
    return fig


def constant_bar_title(value: float) -> str:
    return f"constant reward:<br>every node r = {value:g}"


def inspector(session: Session) -> tuple[str, str]:
    tree = session.tree
    node_id = session.inspected
    if tree is None or node_id is None or not 0 <= node_id < len(tree):
        return EMPTY_DETAIL, ""
    s = session.settings
    detail = node_detail_markdown(
        tree,
        node_id,
        c=s.c,
        alpha=s.alpha,
        beta=s.beta,
        c_puct=getattr(s, "c_puct", None),
        truth=truth_cells(truth_of(session), node_id),
        settings=s,
    )
    detail = f"{detail}\n\n{inspector_glossary(s.selection)}"  # what W/N and the rule's terms mean
    return detail, history_html(tree, node_id, session.rules)


# The terms under the inspector's numbers, by the rule the run selected by (a UCT run stores
# P but never adds it): the page glossary's own lines (`ui.glossary`), word for word.
INSPECTOR_TERMS = {
    Selection.UCT: ("N", "W/N", "UCT", "c", "prior P"),
    Selection.PUCT: ("N", "W/N", "PUCT", "prior term (PUCT)", "c_puct", "prior P"),
}


def inspector_glossary(selection: Selection | str) -> str:
    lines = [f"**{term}**: {GLOSSARY[term]}" for term in INSPECTOR_TERMS[Selection(selection)]]
    return "<small>" + "<br>".join(lines) + "</small>"


def truth_cells(truth: TruthOverlay | None, node_id: int) -> list[tuple[str, str]]:
    """The inspector's true value (and a terminal's F1) beside r and W/N."""
    if truth is None:
        return []
    value = truth.values.get(node_id)
    cells = [("true value (gold)", "–" if value is None else f"{value:.3f}")]
    if node_id in truth.outcomes:
        cells.append(("answer F1 (gold)", f"{truth.outcomes[node_id]:.2f}"))
    return cells


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


def answer_panel(session: Session) -> str:
    """The answer, how it was chosen, and (for an example question) the gold answer and F1."""
    text = answer_markdown(session.result, session.tree)
    tree = session.tree
    if session.result is not None:
        s = session.settings
        # The best branch (gold line) and the answer rule often disagree: say why, and what
        # the vote table's weight is under this rule (a log-probability is negative).
        why = why_not_best(session.result, tree, s.vote_mode, s.temperature)
        text = "\n\n".join(p for p in (text, why, weight_gloss(s.vote_mode)) if p)
    gold = gold_markdown(check(tree.question, session.meta.kb_spec, session.result)) if tree else ""
    return f"{text}\n\n{gold}" if gold else text


def tree_view(session: Session, status: str, *, cost: Any = None) -> dict[str, Any]:
    """While streaming: the status, tree, table and node list (the slow-changing panels wait)."""
    tree = session.tree
    update: dict[str, Any] = {
        "status": status,
        "plot": figure(session),
        "table": node_table_update(session),
        "node_dd": gr.update(choices=node_choices(tree) if tree else [], value=session.inspected),
    }
    if cost is not None:
        update["cost"] = cost_markdown(cost)
    return update


def node_table_frame(session: Session) -> Any:
    """The node table; with the truth overlay on, a true-value column after r."""
    tree = session.tree
    truth = truth_of(session)
    values = dict(truth.values) if truth is not None else None
    rows = node_table(tree, session.settings.c, values) if tree else []
    return table_frame(rows, node_table_headers(values is not None))


def node_table_update(session: Session) -> Any:
    """The node table with each column's width, which follows its header as the overlay's column
    comes and goes."""
    frame = node_table_frame(session)
    return gr.update(value=frame, column_widths=node_table_widths(list(frame.columns)))


def main_view(session: Session, status: str) -> dict[str, Any]:
    """Every panel of the Search tab (MAIN_OUTPUTS) from the session."""
    detail, hist = inspector(session)
    result = session.result
    return {
        **tree_view(session, status),
        "answer": answer_panel(session),
        "votes": table_frame(vote_rows(result), VOTE_TABLE_HEADERS),
        "cost": cost_markdown(result.cost if result else None),
        "trace_file": session.trace_path,
        "detail": detail,
        "history": hist,
        "truth": truth_panel(session),
        **twin_view(session),
    }


def twin_view(session: Session) -> dict[str, Any]:
    """The twin panels: both trees and what differed, or empty once the run on screen changed."""
    twin = session.twin
    if twin is None or twin.source is not session.tree:
        hidden = gr.update(value=None, visible=False)  # no empty plot boxes before a twin
        return {"twin_status": "", "twin_plot_a": hidden, "twin_plot_b": hidden, "twin_diff": ""}
    diff = diff_trees(twin.source, twin.tree)
    other = Session(tree=twin.tree, settings=twin.settings, meta=session.meta, result=twin.result)
    question, kb = twin.source.question, session.meta.kb_spec
    sides = [
        TwinSide(label, _names(res), _f1(question, kb, res))
        for label, res in (
            (method_label(session.settings.method), session.result),
            (method_label(Method.CONSTANT), twin.result),
        )
    ]
    how = "replayed from the run cache" if twin.cached else "finished"
    return {
        "twin_status": f"**Twin {how}** · {method_label(Method.CONSTANT)} · {len(twin.tree)} nodes.",
        "twin_plot_a": gr.update(
            value=figure(
                session, title="IG reward (the run above)", height=TWIN_HEIGHT, only_here=diff.only_a
            ),
            visible=True,
        ),
        "twin_plot_b": gr.update(
            value=figure(
                other, title="Constant reward (the twin)", height=TWIN_HEIGHT, only_here=diff.only_b
            ),
            visible=True,
        ),
        "twin_diff": twin_markdown(diff, *sides),
    }


def _names(result: SearchResult | None) -> str:
    return ", ".join(v.name for v in result.answer) if result is not None else ""


def _f1(question: str, kb_spec: str, result: SearchResult | None) -> float | None:
    found = check(question, kb_spec, result)
    return None if found is None or found.f1 is None else found.f1


def settings_line(s: Any) -> str:
    """The settings of a run in one line (the Compare tab, cached-run notes)."""
    line = (
        f"{s.method.value} · rounds {s.rounds} · k {s.k} · c {s.c:g} · α {s.alpha:g} · β {s.beta:g} · "
        f"depth {s.expected_depth}/{s.max_depth} · early stop {s.early_stop_terminals} · seed {s.seed}"
    )
    if s.greedy_descent and s.method.value in ("fast", "classic", "constant"):
        line += " · greedy path first"
    return line
