"""Inspecting nodes, re-scoring with other cleaning rules, loading and replaying traces.

Inspect and replay are cheap and never need a model. Re-score calls the scorer only
(the policy and the tools are not re-run). Bad input (a node id that does not exist,
a broken trace file, no tree yet) gives one clear line and changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import gradio as gr

from mcts.search.cleaning import CleaningRule
from mcts.search.events import NodeSelected, RoundFinished
from mcts.search.loop import one_line
from mcts.search.rescore import rescore_tree
from mcts.search.trace import TraceError, load_trace, save_trace, trace_from_tree
from mcts.search.voting import best_terminal_by_ig, best_terminal_by_value, decide
from ui.config import bundled_trace_path
from ui.handlers import _TRACE_DIR, get_scorer, parse_rules
from ui.render import EMPTY_DETAIL, figure, inspector, main_view, table_frame
from ui.session import Session
from viz import build_figure, rank_changes_markdown
from viz.panels import action_text
from viz.replay import replay_rounds, tree_at_round

log = logging.getLogger(__name__)
REWARD_TABLE_HEADERS = ["id", "action", "r before", "r after", "Δr"]


def parse_node_id(value: Any) -> int | None:
    """A node id from a dropdown value, a table cell or the click bridge ("12" or "12@<nonce>")."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return int(value)
    text = str(value).split("@", 1)[0].strip()
    try:
        return int(float(text))
    except ValueError:
        return None


def inspect(session: Session, node: Any) -> tuple[Any, ...]:
    """Show one node. Outputs: detail, history, figure, dropdown value."""
    tree = session.tree
    node_id = parse_node_id(node)
    if tree is None:
        return ("*No tree yet: run a search or load a trace.*", "", gr.skip(), gr.skip())
    if node_id is None or not 0 <= node_id < len(tree):
        return (f"*No node {node!s} in this tree (ids 0–{len(tree) - 1}).*", "", gr.skip(), gr.skip())
    session.inspected = node_id
    detail, hist = inspector(session)
    return (detail, hist, figure(session), gr.update(value=node_id))


def inspect_row(session: Session, evt: gr.SelectData) -> tuple[Any, ...]:
    """A click on a node-table row: the first cell is the node id."""
    row = getattr(evt, "row_value", None)
    value = row[0] if row else None
    if value is None and isinstance(evt.index, list | tuple) and session.tree is not None:
        value = evt.index[0]  # the table lists nodes in id order
    return inspect(session, value)


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
    session.best_node = _principal_leaf(new_tree)
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


def _principal_leaf(tree: Any) -> int:
    """Follow the child with the highest W/N (ties: lowest id), as the search reports it."""
    node_id = 0
    while tree[node_id].children:
        node_id = min(tree[node_id].children, key=lambda c: (-tree[c].mean_value, c))
    return node_id


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _save_view_trace(session: Session) -> str | None:
    if session.tree is None:
        return None
    try:
        _TRACE_DIR.mkdir(parents=True, exist_ok=True)
        trace = trace_from_tree(
            session.tree, session.settings, meta=session.meta,
            cleaning_rules=tuple(sorted(r.value for r in session.rules)), ig_prompt=session.ig_prompt,
            events=tuple(session.events), result=session.result,
        )  # fmt: skip
        path = _TRACE_DIR / f"trace-rescored-{id(session) % 10_000}-{len(session.events)}.json"
        return str(save_trace(trace, path))
    except Exception:
        log.exception("could not save the re-scored trace")
        return session.trace_path


def load(session: Session, file: Any) -> tuple[Any, ...]:
    """Load an uploaded trace. Outputs: the main view, then slider, replay figure,
    replay status, rule checkboxes, IG prompt."""
    skip = gr.skip()
    path = getattr(file, "name", file)
    if not path:
        return (*main_view(session, "Choose a trace file (.json) to load."), skip, skip, skip, skip, skip)
    try:
        trace = load_trace(path)
        tree = trace.to_tree()
        rules = frozenset(CleaningRule(r) for r in trace.cleaning_rules)
    except (TraceError, ValueError, OSError) as exc:
        msg = f"Could not load the trace: {one_line(exc)}"
        gr.Warning(msg)
        return (f"**Problem:** {msg}",) + (skip,) * 9 + (skip, skip, f"**Problem:** {msg}", skip, skip)
    session.reset()
    session.tree, session.recorded_tree = tree, trace.to_tree()
    session.settings, session.meta, session.rules, session.ig_prompt = (
        trace.settings,
        trace.meta,
        rules,
        trace.ig_prompt,
    )
    session.events, session.result, session.trace_path = list(trace.events), trace.result, str(path)
    for event in trace.events:
        if isinstance(event, NodeSelected):
            session.selected_path = tuple(event.path)
        elif isinstance(event, RoundFinished):
            session.best_node = event.best_node_id
    total = replay_rounds(session.events)
    status = (
        f"**Loaded a trace:** {trace.settings.method.value}, {len(tree)} nodes, {total} rounds"
        f" ({trace.meta.policy_model or 'unknown policy'} / {trace.meta.scorer_model or 'unknown scorer'})."
    )
    rep_fig, rep_status = replay(session, total)
    return (
        *main_view(session, status),
        gr.update(minimum=0, maximum=max(total, 1), value=total, step=1, interactive=total > 0),
        rep_fig,
        rep_status,
        sorted(r.value for r in rules),
        trace.ig_prompt,
    )


def load_bundled(session: Session, name: str) -> tuple[Any, ...]:
    """Load one of the traces shipped in examples/traces/ (same outputs as `load`)."""
    path = bundled_trace_path(name)
    if path is None:
        skip = gr.skip()
        msg = f"No bundled trace named {name!r}."
        return (f"**Problem:** {msg}",) + (skip,) * 9 + (skip, skip, f"**Problem:** {msg}", skip, skip)
    return load(session, str(path))


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


__all__ = [
    "EMPTY_DETAIL",
    "inspect",
    "inspect_row",
    "load",
    "parse_node_id",
    "replay",
    "rescore",
    "sync_replay",
]


def sync_replay(session: Session) -> tuple[Any, Any, str]:
    """After a run: point the replay slider at the run just finished. Outputs: slider, figure, status."""
    total = replay_rounds(session.events)
    if session.recorded_tree is None:
        return gr.skip(), gr.skip(), gr.skip()
    fig, status = replay(session, total)
    return (
        gr.update(minimum=0, maximum=max(total, 1), value=total, step=1, interactive=total > 0),
        fig,
        status,
    )
