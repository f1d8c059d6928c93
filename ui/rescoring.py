"""Re-score the tree on screen with other cleaning rules or another IG prompt.

Calls the scorer only: the policy and the tools are not re-run, so the tree keeps its
shape and only rewards, values and the order of siblings can change. Nothing to
re-score, an empty prompt or a scorer failure give one clear line and change nothing.

A re-score is a model job like a run (`ui.public`): it holds a place in the run gate (taken
by the event's validator as it joins the queue, so a second model job of the same visitor
is refused at the door), its cost is checked before the scorer starts (`estimated_tokens`
against `Limits.max_rescore_tokens`), and past the per-run wall clock it stops between
sibling groups and shows what it re-scored so far.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Any

import gradio as gr

from mcts.search.cleaning import RULE_INFO, CleaningRule, clean_history
from mcts.search.loop import one_line
from mcts.search.rescore import RankChange, rescore_tree
from mcts.search.rules import best_branch
from mcts.search.trace import trace_from_tree
from mcts.search.tree import Tree
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
# "r in the run": the rewards the run (or the loaded trace) recorded, whatever was re-scored since.
REWARD_TABLE_HEADERS = ["id", "action", "r in the run", "r re-scored", "Δr"]


def text_tokens(text: str) -> int:
    """An upper estimate of the tokens of `text`: a digit is a token of its own in the
    bundled model's vocabulary; other text runs about 3 characters a token or more."""
    digits = sum(ch.isdigit() for ch in text)
    return digits + (len(text) - digits + 2) // 3


def estimated_tokens(tree: Tree, rules: frozenset[CleaningRule], prompt: str) -> int:
    """An upper estimate of the tokens a re-score feeds the scorer: per node its cleaned
    history, the question and the IG prompt (`text_tokens`)."""
    tokens = text_tokens
    fixed = tokens(tree.question) + tokens(prompt)
    return sum(
        tokens(clean_history([*tree.steps(n.id), *n.simulation], rules, question=tree.question).text) + fixed
        for n in tree.nodes[1:]
    )


def _checked(session: Session, rules: list[str], prompt: str) -> frozenset[CleaningRule]:
    """The rules, once the tree and the prompt may be re-scored; raises ValueError with the line to show."""
    tree = session.tree
    limits = public.MODE.limits
    if tree is None or len(tree) < 2:
        raise ValueError("Nothing to re-score yet: run a search or load a trace first.")
    if not prompt:
        raise ValueError("The IG prompt is empty.")
    if limits.max_rescore_nodes is not None and len(tree) > limits.max_rescore_nodes:
        raise ValueError(
            f"This tree has {len(tree):,} nodes; this demo re-scores trees of at most {limits.max_rescore_nodes:,}."
        )
    if len(prompt) > limits.max_ig_prompt_chars:
        raise ValueError(f"The IG prompt is too long (at most {limits.max_ig_prompt_chars:,} characters).")
    new_rules = parse_rules(rules)
    cost = estimated_tokens(tree, new_rules, prompt)
    if limits.max_rescore_tokens is not None and cost > limits.max_rescore_tokens:
        raise ValueError(
            f"Re-scoring this tree would feed the scorer about {cost:,} tokens ({len(tree) - 1:,} nodes); "
            f"this demo re-scores at most {limits.max_rescore_tokens:,}."
        )
    return new_rules


def rescore(
    session: Session,
    rules: list[str],
    ig_prompt: str,
    scorer_model: str,
    request: gr.Request = None,  # type: ignore[assignment]
) -> dict[str, Any]:
    """Re-score the tree on screen with the chosen rules and prompt: the lab's panels,
    then the Search tab redrawn with the new rewards (flipped siblings marked). Holds the
    visitor's place in the run gate while the scorer works."""
    ticket: int | None = None
    try:
        ticket = public.claim(session, request)
        return _rescore(session, rules, (ig_prompt or "").strip(), scorer_model)
    except public.Busy as exc:
        return _problem(str(exc))
    finally:
        public.release(ticket)


def _rescore(session: Session, rules: list[str], prompt: str, scorer_model: str) -> dict[str, Any]:
    try:
        new_rules = _checked(session, rules, prompt)
    except ValueError as exc:
        return _problem(str(exc))
    tree = run_tree(session)
    assert tree is not None  # _checked said so
    if public.MODE.enabled:
        scorer_model = public.MODE.scorer_model  # public mode: the operator's scorer, whatever was sent
    started = time.perf_counter()
    stopped: list[bool] = []

    def past_clock() -> bool:
        if public.over_time(started):
            stopped.append(True)
        return bool(stopped)

    try:
        scorer, scorer_name = get_scorer(scorer_model)
        new_tree, changes = rescore_tree(
            tree, scorer, session.settings, cleaning_rules=new_rules, ig_prompt=prompt, stop=past_clock
        )
    except Exception as exc:
        log.exception("re-score failed")
        return _problem(f"Re-score failed: {one_line(exc)}")
    return _show(session, tree, new_tree, changes, new_rules, prompt, scorer_name, bool(stopped))


def _show(
    session: Session,
    tree: Tree,
    new_tree: Tree,
    changes: list[RankChange],
    new_rules: frozenset[CleaningRule],
    prompt: str,
    scorer_name: str,
    stopped: bool,
) -> dict[str, Any]:
    """Put the re-scored tree on screen: the lab's panels and the Search tab; `tree` is the
    run's own (`run_tree`), so every re-score compares with the rewards the run recorded."""
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
    limit = public.MODE.limits.run_wall_s
    head = (
        f"**Stopped at the {limit:.0f} s limit:** re-scored part of the tree (the rest keeps the run's rewards)"
        if stopped
        else f"**Re-scored** {len(rows)} nodes"
    )
    status = (
        f"{head} with {escape(scorer_name)}; {rules_in_words(new_rules)}. "
        f"Against the run's own rewards: {moved} rewards changed; {len(changes)} sibling groups reordered "
        f"({len(session.flipped)} nodes changed rank, ringed in the trees)."
    )
    return {
        "lab_status": status,
        "rank_changes": rank_changes_markdown(changes),
        "reward_table": table_frame(rows, REWARD_TABLE_HEADERS),
        "lab_plot": figure(session, height=520),
        **main_view(session, status),
    }


def run_tree(session: Session) -> Tree | None:
    """The tree with the rewards the run recorded (kept when the run ends or the trace
    loads), which every re-score starts from and compares with; the tree on screen when
    there is no such record of the same shape."""
    tree, recorded = session.tree, session.recorded_tree
    if recorded is not None and tree is not None and len(recorded) == len(tree):
        return recorded
    return tree


def rules_in_words(rules: Collection[CleaningRule]) -> str:
    """The cleaning rules on and off, by their labels (`RULE_INFO`), in the lab's order."""
    on = [RULE_INFO[r].label for r in RULE_INFO if r in rules]
    off = [RULE_INFO[r].label for r in RULE_INFO if r not in rules]
    said = f"rules on: {', '.join(on)}" if on else "no cleaning rule on"
    return f"{said}; off: {', '.join(off)}" if off else f"{said} (all of them)"


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
