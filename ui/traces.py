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
from mcts.search.trace_validation import TraceBudget
from ui import public
from ui.config import POLICY_KINDS, bundled_trace_path
from ui.forms import form_values
from ui.public import escape
from ui.render import main_view
from ui.replay import replay_view
from ui.session import Session
from ui.trace_store import StorePolicy, owner_folder, tidy
from ui.worlds import MAX_KB_SPEC_CHARS
from viz.replay import replay_rounds

log = logging.getLogger(__name__)
TRACE_DIR = Path(tempfile.gettempdir()) / "mcts-kbqa-traces"


def write_trace(trace: Trace, label: str, owner: object = None) -> str | None:
    """Save `trace` under the app's temp folder, in the folder of `owner`'s visitor (a
    session's `owner`, else the object itself stands in), under the mode's quotas
    (`ui.trace_store`); its path, or None if it could not be written."""
    try:
        key = getattr(owner, "owner", "") or f"object:{id(owner)}"
        folder = owner_folder(TRACE_DIR, key)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"trace-{label}-{stamp}-{time.perf_counter_ns() % 100_000}.json"
        saved = str(save_trace(trace, path))
        limits = public.MODE.limits
        policy = StorePolicy(
            per_owner=limits.traces_per_visitor, total=limits.traces_kept, max_age_s=limits.trace_max_age_s
        )
        tidy(TRACE_DIR, folder, policy)
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


def kb_offered(spec: str) -> bool:
    """Whether the KB dropdown may show `spec`: in public mode one of its choices (the
    allow-list); locally, where the dropdown takes a typed path or URL, a short one-line spec
    (a path or URL never needs angle brackets or control characters)."""
    if public.MODE.enabled:
        return spec in public.MODE.allowed_kbs
    return 0 < len(spec) <= MAX_KB_SPEC_CHARS and spec.isprintable() and not any(ch in spec for ch in "<>")


def form_of(trace: Trace) -> dict[str, Any]:
    """The Search tab's form as the trace ran: question, KB, method and settings, lab rules
    and prompt. A dropdown only ever gets one of its own choices: a KB or policy the page
    does not offer leaves that field as it was (Gradio would otherwise answer with a toast
    that quotes the trace's text)."""
    update: dict[str, Any] = {
        "question": trace.question,
        **form_values(trace.settings),
        "rules": sorted(trace.cleaning_rules),
        "ig_prompt": trace.ig_prompt,
    }
    spec = trace.meta.kb_spec.strip()
    if spec and kb_offered(spec):
        update["kb_spec"] = spec
    if trace.meta.policy_kind in POLICY_KINDS:
        update["policy_kind"] = trace.meta.policy_kind
    return update


def kb_notice(trace: Trace) -> str:
    """The status line's note on a trace whose KB the form cannot take ("" if it can)."""
    spec = trace.meta.kb_spec.strip()
    if not spec or kb_offered(spec):
        return ""
    shown = escape(spec[:80] + ("…" if len(spec) > 80 else ""))
    return f" It ran on the knowledge base {shown}, which this demo does not offer: the form keeps its own."


def load(session: Session, file: Any) -> dict[str, Any]:
    """Load an uploaded trace: the Search tab shows it, the replay tab replays it, and the
    form holds the question and settings it ran with (so Run repeats it). A tree over the
    mode's budget (`Limits.trace_budget`) is refused with the limit named."""
    return load_with(session, file, public.MODE.limits.trace_budget)


def load_with(session: Session, file: Any, budget: TraceBudget | None) -> dict[str, Any]:
    """`load` under `budget` (None: only the reader's own bounds)."""
    path = getattr(file, "name", file)
    if not path:
        return {"status": "Choose a trace file (.json) to load."}
    try:
        trace = load_trace(path, budget)
        for rule in trace.cleaning_rules:
            CleaningRule(rule)  # an unknown rule name is a broken trace, said here
    except (TraceError, ValueError, OSError) as exc:
        return _problem(f"Could not load the trace: {one_line(exc)}")
    open_trace(session, trace, str(path))
    total = replay_rounds(session.events)
    status = (
        f"**Loaded a trace:** {trace.settings.method.value}, {len(session.tree or ())} nodes, {total} rounds"
        f" ({escape(trace.meta.policy_model or 'unknown policy')} / {escape(trace.meta.scorer_model or 'unknown scorer')})."
        " The form above now holds its question and settings." + kb_notice(trace)
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
