"""Traces in the app: write the run on screen to a downloadable file, load an uploaded
or shipped trace into the session.

Writing never costs the user the run (a failure is logged and the download is left
out); a broken trace file gives one clear line and changes nothing.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import gradio as gr

from mcts.search.cleaning import CleaningRule
from mcts.search.loop import one_line
from mcts.search.trace import Trace, TraceError, load_trace, save_trace
from ui.config import bundled_trace_path
from ui.render import main_view
from ui.replay import replay, slider_update
from ui.session import Session
from viz.replay import replay_rounds

log = logging.getLogger(__name__)
TRACE_DIR = Path(tempfile.gettempdir()) / "mcts-kbqa-traces"


def write_trace(trace: Trace, label: str) -> str | None:
    """Save `trace` under the app's temp folder; its path, or None if it could not be written."""
    try:
        TRACE_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = TRACE_DIR / f"trace-{label}-{stamp}-{time.perf_counter_ns() % 100_000}.json"
        return str(save_trace(trace, path))
    except Exception:  # a trace that cannot be written must not cost the user the run
        log.exception("could not save the trace")
        return None


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
    session.result, session.trace_path = trace.result, str(path)
    session.events = []
    session.absorb(trace.events)
    total = replay_rounds(session.events)
    status = (
        f"**Loaded a trace:** {trace.settings.method.value}, {len(tree)} nodes, {total} rounds"
        f" ({trace.meta.policy_model or 'unknown policy'} / {trace.meta.scorer_model or 'unknown scorer'})."
    )
    rep_fig, rep_status = replay(session, total)
    return (
        *main_view(session, status),
        slider_update(total),
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
