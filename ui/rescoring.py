"""Re-score the tree on screen with other cleaning rules or another IG prompt.

Calls the scorer only: the policy and the tools are not re-run, so the tree keeps its
shape and only rewards, values and the order of siblings can change. Nothing to
re-score, an empty prompt or a scorer failure give one clear line and change nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import gradio as gr

from mcts.search.loop import one_line
from mcts.search.rescore import rescore_tree
from mcts.search.rules import best_branch
from mcts.search.trace import trace_from_tree
from mcts.search.voting import best_terminal_by_ig, best_terminal_by_value, decide
from ui.handlers import get_scorer, parse_rules
from ui.render import figure, main_view, table_frame
from ui.session import Session
from ui.traces import write_trace
from viz import rank_changes_markdown
from viz.panels import action_text

log = logging.getLogger(__name__)
REWARD_TABLE_HEADERS = ["id", "action", "r before", "r after", "Δr"]


def rescore(session: Session, rules: list[str], ig_prompt: str, scorer_model: str) -> tuple[Any, ...]:
    """Re-score the tree on screen with the chosen rules and prompt.

    Outputs: lab status, rank changes, reward table, lab figure, then the main view.
    """
    tree = session.tree
    skip = gr.skip()
    nothing = (skip,) * 10
    if tree is None or len(tree) < 2:
        msg = "Nothing to re-score yet: run a search or load a trace first."
        gr.Warning(msg)
        return (f"**Problem:** {msg}", skip, skip, skip, *nothing)
    prompt = (ig_prompt or "").strip()
    if not prompt:
        gr.Warning("The IG prompt is empty.")
        return ("**Problem:** The IG prompt is empty.", skip, skip, skip, *nothing)
    try:
        scorer, scorer_name = get_scorer(scorer_model)
        new_rules = parse_rules(rules)
        new_tree, changes = rescore_tree(
            tree, scorer, session.settings, cleaning_rules=new_rules, ig_prompt=prompt
        )
    except Exception as exc:
        log.exception("re-score failed")
        gr.Warning(one_line(exc))
        return (f"**Problem:** Re-score failed: {one_line(exc)}", skip, skip, skip, *nothing)
    rows = []
    for old, new in zip(tree.nodes[1:], new_tree.nodes[1:], strict=True):
        a, b = old.reward, new.reward
        delta = (b - a) if a is not None and b is not None else None
        rows.append([new.id, action_text(new, 60), _r(a), _r(b), _r(delta)])
    rows.sort(key=lambda r: -abs(r[4] or 0.0))
    moved = sum(1 for r in rows if r[4] is not None and abs(r[4]) > 1e-6)
    session.tree, session.rules, session.ig_prompt = new_tree, new_rules, prompt
    session.best_node = best_branch(new_tree)
    if session.result is not None:  # new values can move the vote's tie-breaks and the best branches
        answer, sparql, node_ids, votes = decide(new_tree, session.settings.vote_mode)
        session.result = replace(
            session.result, answer=answer, sparql=sparql, answer_node_ids=node_ids, votes=votes,
            best_by_value=best_terminal_by_value(new_tree), best_by_ig=best_terminal_by_ig(new_tree),
        )  # fmt: skip
    session.trace_path = _save_view_trace(session)
    labels = ", ".join(sorted(r.value for r in new_rules)) or "none"
    status = (
        f"**Re-scored** {len(rows)} nodes with {scorer_name}, rules: {labels}. "
        f"{moved} rewards changed; {len(changes)} sibling groups reordered."
    )
    return (
        status,
        rank_changes_markdown(changes),
        table_frame(rows, REWARD_TABLE_HEADERS),
        figure(session, height=520),
        *main_view(session, status),
    )


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _save_view_trace(session: Session) -> str | None:
    if session.tree is None:
        return None
    trace = trace_from_tree(
        session.tree, session.settings, meta=session.meta,
        cleaning_rules=tuple(sorted(r.value for r in session.rules)), ig_prompt=session.ig_prompt,
        events=tuple(session.events), result=session.result,
    )  # fmt: skip
    return write_trace(trace, "rescored") or session.trace_path
