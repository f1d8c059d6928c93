"""Re-score the tree on screen with other cleaning rules or another IG prompt.

Calls the scorer only: the policy and the tools are not re-run, so the tree keeps its
shape and only rewards, values and the order of siblings can change. Nothing to
re-score, an empty prompt or a scorer failure give one clear line and change nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import gradio as gr

from mcts.search.loop import one_line
from mcts.search.rescore import RankChange, rescore_tree
from mcts.search.rules import best_branch
from mcts.search.trace import trace_from_tree
from mcts.search.voting import best_terminal_by_ig, best_terminal_by_value, decide, tie_break
from ui import public
from ui.forms import parse_rules
from ui.public import escape
from ui.render import figure, main_view, table_frame
from ui.session import Session
from ui.traces import write_trace
from ui.worlds import get_scorer
from viz import rank_changes_markdown
from viz.panels import action_text

log = logging.getLogger(__name__)
REWARD_TABLE_HEADERS = ["id", "action", "r before", "r after", "Δr"]


def rescore(session: Session, rules: list[str], ig_prompt: str, scorer_model: str) -> dict[str, Any]:
    """Re-score the tree on screen with the chosen rules and prompt: the lab's panels,
    then the Search tab redrawn with the new rewards (flipped siblings marked)."""
    tree = session.tree
    prompt = (ig_prompt or "").strip()
    if tree is None or len(tree) < 2:
        return _problem("Nothing to re-score yet: run a search or load a trace first.")
    if not prompt:
        return _problem("The IG prompt is empty.")
    most = public.MODE.limits.max_rescore_nodes
    if most is not None and len(tree) > most:
        return _problem(f"This tree has {len(tree):,} nodes; this demo re-scores trees of at most {most:,}.")
    if len(prompt) > public.MODE.limits.max_ig_prompt_chars:
        return _problem(
            f"The IG prompt is too long (at most {public.MODE.limits.max_ig_prompt_chars:,} characters)."
        )
    if public.MODE.enabled:
        scorer_model = public.MODE.scorer_model  # public mode: the operator's scorer, whatever was sent
    try:
        scorer, scorer_name = get_scorer(scorer_model)
        new_rules = parse_rules(rules)
        new_tree, changes = rescore_tree(
            tree, scorer, session.settings, cleaning_rules=new_rules, ig_prompt=prompt
        )
    except Exception as exc:
        log.exception("re-score failed")
        return _problem(f"Re-score failed: {one_line(exc)}")
    rows = []
    for old, new in zip(tree.nodes[1:], new_tree.nodes[1:], strict=True):
        a, b = old.reward, new.reward
        delta = (b - a) if a is not None and b is not None else None
        rows.append([new.id, action_text(new, 60), _r(a), _r(b), _r(delta)])
    rows.sort(key=lambda r: -abs(r[4] or 0.0))
    moved = sum(1 for r in rows if r[4] is not None and abs(r[4]) > 1e-6)
    session.tree, session.rules, session.ig_prompt = new_tree, new_rules, prompt
    session.flipped = flipped_nodes(changes)
    session.best_node = best_branch(new_tree)
    if session.result is not None:  # new values can move the vote's tie-breaks and the best branches
        mode, temperature = session.settings.vote_mode, session.settings.temperature
        answer, sparql, node_ids, votes = decide(new_tree, mode, temperature)
        session.result = replace(
            session.result,
            answer=answer,
            sparql=sparql,
            answer_node_ids=node_ids,
            votes=votes,
            best_by_value=best_terminal_by_value(new_tree),
            best_by_ig=best_terminal_by_ig(new_tree),
            tie_break=tie_break(new_tree, mode, temperature),
        )
    session.trace_path = _save_view_trace(session)
    labels = ", ".join(sorted(r.value for r in new_rules)) or "none"
    status = (
        f"**Re-scored** {len(rows)} nodes with {scorer_name}, rules: {labels}. "
        f"{moved} rewards changed; {len(changes)} sibling groups reordered "
        f"({len(session.flipped)} nodes changed rank, ringed in the trees)."
    )
    return {
        "lab_status": status,
        "rank_changes": rank_changes_markdown(changes),
        "reward_table": table_frame(rows, REWARD_TABLE_HEADERS),
        "lab_plot": figure(session, height=520),
        **main_view(session, status),
    }


def flipped_nodes(changes: Iterable[RankChange]) -> frozenset[int]:
    """The children whose place among their siblings (by reward) moved."""
    out: set[int] = set()
    for change in changes:
        out.update(c for i, c in enumerate(change.after) if change.before.index(c) != i)
    return frozenset(out)


def _problem(message: str) -> dict[str, Any]:
    message = escape(message)  # may quote a model's or a trace's text
    gr.Warning(message)
    return {"lab_status": f"**Problem:** {message}"}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _save_view_trace(session: Session) -> str | None:
    if session.tree is None:
        return None
    trace = trace_from_tree(
        session.tree,
        session.settings,
        meta=session.meta,
        cleaning_rules=tuple(sorted(r.value for r in session.rules)),
        ig_prompt=session.ig_prompt,
        events=tuple(session.events),
        result=session.result,
    )
    return write_trace(trace, "rescored", owner=session) or session.trace_path
