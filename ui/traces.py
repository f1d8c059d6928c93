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
from ui import public
from ui.config import POLICY_KINDS, bundled_trace_path
from ui.forms import form_values
from ui.public import escape, prune_traces, session_folder
from ui.render import main_view
from ui.replay import replay_view
from ui.session import Session
from viz.replay import replay_rounds

log = logging.getLogger(__name__)
TRACE_DIR = Path(tempfile.gettempdir()) / "mcts-kbqa-traces"


def write_trace(trace: Trace, label: str, owner: object = None) -> str | None:
    """Save `trace` under the app's temp folder (one subfolder per `owner` session; the
    oldest files beyond the limit removed); its path, or None if it could not be written."""
    try:
        folder = session_folder(TRACE_DIR, str(id(owner))) if owner is not None else TRACE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"trace-{label}-{stamp}-{time.perf_counter_ns() % 100_000}.json"
        saved = str(save_trace(trace, path))
        prune_traces(TRACE_DIR, public.MODE.limits.traces_kept)
        return saved
    except Exception:  # a trace that cannot be written must not cost the user the run
        log.exception("could not save the trace")
        return None


def open_trace(session: Session, trace: Trace, path: str | None) -> None:
    """Put a recorded run on screen: its tree, settings, rules, events and result."""
    session.reset()
    session.tree, session.recorded_tree = trace.to_tree(), trace.to_tree()
    session.settings, session.meta, session.ig_prompt = trace.settings, trace.meta, trace.ig_prompt
    session.rules = frozenset(CleaningRule(r) for r in trace.cleaning_rules)
    session.result, session.trace_path = trace.result, path
    session.load_events(trace.events)


def form_of(trace: Trace) -> dict[str, Any]:
    """The Search tab's form as the trace ran: question, KB, method and settings, lab rules and prompt."""
    update: dict[str, Any] = {
        "question": trace.question,
        **form_values(trace.settings),
        "rules": sorted(trace.cleaning_rules),
        "ig_prompt": trace.ig_prompt,
    }
    if trace.meta.kb_spec:
        update["kb_spec"] = trace.meta.kb_spec
    if trace.meta.policy_kind in POLICY_KINDS:
        update["policy_kind"] = trace.meta.policy_kind
    return update


def load(session: Session, file: Any) -> dict[str, Any]:
    """Load an uploaded trace: the Search tab shows it, the replay tab replays it, and the
    form holds the question and settings it ran with (so Run repeats it)."""
    path = getattr(file, "name", file)
    if not path:
        return {"status": "Choose a trace file (.json) to load."}
    try:
        trace = load_trace(path)
        for rule in trace.cleaning_rules:
            CleaningRule(rule)  # an unknown rule name is a broken trace, said here
    except (TraceError, ValueError, OSError) as exc:
        return _problem(f"Could not load the trace: {one_line(exc)}")
    open_trace(session, trace, str(path))
    total = replay_rounds(session.events)
    status = (
        f"**Loaded a trace:** {trace.settings.method.value}, {len(session.tree or ())} nodes, {total} rounds"
        f" ({escape(trace.meta.policy_model or 'unknown policy')} / {escape(trace.meta.scorer_model or 'unknown scorer')})."
        " The form above now holds its question and settings."
    )
    return {**main_view(session, status), **replay_view(session), **form_of(trace)}


def load_bundled(session: Session, name: str) -> dict[str, Any]:
    """Load one of the traces shipped in examples/traces/ (same outputs as `load`)."""
    path = bundled_trace_path(name)
    if path is None:
        return _problem(f"No bundled trace named {name!r}.")
    return load(session, str(path))


def _problem(message: str) -> dict[str, Any]:
    message = escape(message)  # may quote the trace file's content
    gr.Warning(message)
    return {"status": f"**Problem:** {message}", "replay_status": f"**Problem:** {message}"}
