"""Public mode: what an anonymous visitor of the hosted demo may do, and every limit.

On when `PUBLIC_DEMO=1`, and on by itself on Hugging Face Spaces (any of `SPACE_ID`,
`SPACE_HOST`, `SPACE_REPO_NAME` set) unless the operator sets `PUBLIC_DEMO=0`. Then:

- KBs: only the bundled demos and the operator's allow-list (`PUBLIC_KBS`, comma
  separated specs); the free KB field is hidden and a typed spec is refused server-side;
- models and policy endpoint: the operator's (`POLICY_MODEL`, `SCORER_MODEL`,
  `POLICY_ENDPOINT`); the fields are hidden and whatever a client sends is ignored;
- credentials only ever go to the operator's endpoint (`mcts.agents.policy_react`);
- limits: upload size, question and IG-prompt length, per-run wall clock, runs waiting,
  runs per visitor, trace files kept (per session folder, oldest removed).

`LIMITS` holds the local values (a laptop user trusts themself), `PUBLIC_LIMITS` the
public ones. `RunGate` is the queue in front of model runs: bounded, it says how many
runs are ahead, and one visitor holds at most `runs_per_visitor` places. Knows nothing
of Gradio components (the handlers call it).
"""

from __future__ import annotations

import hashlib
import html
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from kb.spec import DEMOS

SPACES_VARS = ("SPACE_ID", "SPACE_HOST", "SPACE_REPO_NAME")
_ON = {"1", "true", "yes", "on"}
_OFF = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Limits:
    """Every bound a visitor meets; `None` = no bound."""

    max_upload_bytes: int | None = None  # Gradio's max_file_size (trace uploads)
    max_question_chars: int = 2_000
    max_ig_prompt_chars: int = 2_000
    run_wall_s: float | None = None  # a run is stopped (its tree kept) after this long
    max_waiting: int = 16  # runs waiting for the model slot; more are refused
    runs_per_visitor: int | None = None  # runs one visitor may have running or waiting
    traces_kept: int = 500  # trace files kept in the app's folder (oldest removed)
    max_rescore_nodes: int | None = None  # re-scoring costs one IG pass per node (an upload may hold 20k)


LIMITS = Limits()
PUBLIC_LIMITS = Limits(
    max_upload_bytes=5_000_000,
    max_question_chars=500,
    max_ig_prompt_chars=300,
    run_wall_s=180.0,
    max_waiting=8,
    runs_per_visitor=1,
    traces_kept=200,
    max_rescore_nodes=300,
)


@dataclass(frozen=True)
class PublicMode:
    enabled: bool
    allowed_kbs: tuple[str, ...] = tuple(DEMOS)  # bundled demos + operator allow-list
    policy_model: str = ""  # the operator's choices ("" = bundled model)
    scorer_model: str = ""
    policy_endpoint: str = ""
    limits: Limits = LIMITS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PublicMode:
        env = os.environ if env is None else env
        flag = env.get("PUBLIC_DEMO", "").strip().lower()
        enabled = flag in _ON or (flag not in _OFF and any(env.get(v) for v in SPACES_VARS))
        extra = tuple(s.strip() for s in env.get("PUBLIC_KBS", "").split(",") if s.strip())
        operator_kb = env.get("KB", "").strip()
        allowed = tuple(dict.fromkeys((*DEMOS, *((operator_kb,) if operator_kb else ()), *extra)))
        return cls(
            enabled=enabled,
            allowed_kbs=allowed,
            policy_model=env.get("POLICY_MODEL", "").strip(),
            scorer_model=env.get("SCORER_MODEL", "").strip(),
            policy_endpoint=env.get("POLICY_ENDPOINT", "").strip(),
            limits=PUBLIC_LIMITS if enabled else LIMITS,
        )

    def kb_allowed(self, spec: str) -> bool:
        return not self.enabled or (spec or "demo").strip() in self.allowed_kbs


F = TypeVar("F")


def enforce(form: F, mode: PublicMode) -> F:
    """The form a run may use: in public mode the model and endpoint fields replaced by
    the operator's (whatever the client sent) and the KB checked against the allow-list.
    Raises ValueError (one line for the status bar) on a KB, question or IG prompt
    outside the limits. Works on any frozen dataclass with the `ui.forms` field names."""
    limits = mode.limits
    question = str(getattr(form, "question", "") or "")
    if len(question) > limits.max_question_chars:
        raise ValueError(
            f"The question is too long ({len(question):,} characters; at most {limits.max_question_chars:,})."
        )
    prompt = str(getattr(form, "ig_prompt", "") or "")
    if len(prompt) > limits.max_ig_prompt_chars:
        raise ValueError(
            f"The IG prompt is too long ({len(prompt):,} characters; at most {limits.max_ig_prompt_chars:,})."
        )
    if not mode.enabled:
        return form
    spec = (getattr(form, "kb_spec", "") or "demo").strip() or "demo"
    if not mode.kb_allowed(spec):
        raise ValueError(
            f"This public demo answers from these knowledge bases only: {', '.join(mode.allowed_kbs)}."
        )
    changes: dict[str, Any] = {"kb_spec": spec}
    for name in ("policy_model", "scorer_model", "policy_endpoint"):
        if hasattr(form, name):
            changes[name] = getattr(mode, name)
    return replace(form, **changes)  # type: ignore[type-var]


def escape(text: Any) -> str:
    """Text from a trace, a model or a visitor, safe inside Markdown/HTML."""
    return html.escape(str(text), quote=True)


# ----- traces on disk -------------------------------------------------------------------
def session_folder(root: Path, session_key: str) -> Path:
    """One folder per browser session (a hash: the key itself never reaches the disk)."""
    return root / hashlib.sha256(session_key.encode()).hexdigest()[:16]


def prune_traces(root: Path, keep: int) -> int:
    """Remove the oldest trace files under `root` (all session folders) beyond `keep`;
    empty session folders go too. Returns how many files were removed."""

    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:  # removed meanwhile by another session's prune
            return 0.0

    files = sorted([*root.glob("*/*.json"), *root.glob("*.json")], key=age)
    removed = 0
    for path in files[: max(0, len(files) - keep)]:
        try:
            path.unlink()
            removed += 1
            if path.parent != root and not any(path.parent.iterdir()):
                path.parent.rmdir()
        except OSError:
            continue
    return removed


# ----- the queue in front of model runs ---------------------------------------------------
class Busy(Exception):
    """A run refused at the door; the message is one line for the status bar."""


class RunGate:
    """The model runs' queue as visitors see it: at most `max_waiting` admitted runs not
    yet started, at most `per_visitor` places (waiting or running) per visitor.

    Gradio's own queue decides the order and runs one model event at a time; the gate
    admits a run when it is queued (`enter`, a cheap event before the run: it can refuse
    and say how many are ahead), and the run marks itself started and done (`start`,
    `leave`). A place whose run never started (the tab was closed) expires after `stale_s`.
    """

    def __init__(
        self, *, max_waiting: int = 16, per_visitor: int | None = None, stale_s: float = 900.0
    ) -> None:
        self.max_waiting = max_waiting
        self.per_visitor = per_visitor
        self.stale_s = stale_s
        self._lock = threading.Lock()
        self._waiting: dict[int, tuple[str, float]] = {}  # ticket -> (visitor, admitted at); in order
        self._running: dict[int, str] = {}
        self._next = 0

    def enter(self, visitor: str) -> int:
        """A ticket for a new run of `visitor`; raises Busy with the line to show."""
        now = time.monotonic()
        with self._lock:
            for ticket, (_, since) in list(self._waiting.items()):
                if now - since > self.stale_s:
                    del self._waiting[ticket]
            mine = sum(v == visitor for v, _ in self._waiting.values()) + sum(
                v == visitor for v in self._running.values()
            )
            if self.per_visitor is not None and mine >= self.per_visitor:
                raise Busy("You already have a run in progress; wait for it to finish (or press Stop).")
            if len(self._waiting) >= self.max_waiting:
                raise Busy(
                    f"The demo is busy ({len(self._waiting)} runs waiting); please try again in a minute."
                )
            self._next += 1
            self._waiting[self._next] = (visitor, now)
            return self._next

    def ahead(self, ticket: int) -> int:
        """Runs before this one: those running plus those admitted earlier."""
        with self._lock:
            return len(self._running) + sum(t < ticket for t in self._waiting)

    def start(self, ticket: int) -> None:
        with self._lock:
            visitor, _ = self._waiting.pop(ticket, ("", 0.0))
            self._running[ticket] = visitor

    def leave(self, ticket: int) -> None:
        with self._lock:
            self._running.pop(ticket, None)
            self._waiting.pop(ticket, None)


def busy_line(ahead: int) -> str:
    return (
        f"**Busy:** {ahead} run{'s' if ahead != 1 else ''} ahead of you; yours starts when the model is free."
    )


def visitor_of(request: Any) -> str:
    """Who is asking, for the per-visitor limit: the client address (first forwarded hop
    on Spaces, which sits behind a proxy), else the session."""
    headers = getattr(request, "headers", None) or {}
    forwarded = str(headers.get("x-forwarded-for", "") or "").split(",")[0].strip()
    client = getattr(getattr(request, "client", None), "host", None)
    return forwarded or str(client or getattr(request, "session_hash", "") or "local")


MODE = PublicMode.from_env()  # read once at import: the app's mode for this process
GATE = RunGate(max_waiting=MODE.limits.max_waiting, per_visitor=MODE.limits.runs_per_visitor)
_ADMITTED: dict[str, int] = {}  # session -> ticket of its admitted, not yet started run
_ADMITTED_LOCK = threading.Lock()


def _session(request: Any, session: Any) -> str:
    return str(getattr(request, "session_hash", None) or f"local-{id(session)}")


def admitter(status: str = "status") -> Any:
    """`admit` reporting to the status component named `status` (Search or Compare tab)."""

    def admit_run(session: Any, request: Any = None) -> dict[str, Any]:
        return {status: admit(session, request)["status"]}

    admit_run.__doc__ = admit.__doc__
    return admit_run


def admit(session: Any, request: Any = None) -> dict[str, Any]:
    """The cheap step before a model run: take a place in the queue or refuse (gr.Error,
    which stops the run the event chains after it). Says how many runs are ahead."""
    key = _session(request, session)
    with _ADMITTED_LOCK:
        old = _ADMITTED.pop(key, None)
    if old is not None:
        GATE.leave(old)  # a second click replaces this session's waiting place
    try:
        ticket = GATE.enter(visitor_of(request))
    except Busy as exc:
        import gradio as gr

        raise gr.Error(str(exc)) from None
    with _ADMITTED_LOCK:
        _ADMITTED[key] = ticket
    ahead = GATE.ahead(ticket)
    return {"status": busy_line(ahead) if ahead else "**Starting**…"}


def claim(session: Any, request: Any = None) -> int:
    """Called by a model run as it starts: its admitted ticket (or a new one, for API
    callers that skipped `admit`), marked running. Raises Busy; `release` it after."""
    with _ADMITTED_LOCK:
        ticket = _ADMITTED.pop(_session(request, session), None)
    if ticket is None:
        ticket = GATE.enter(visitor_of(request))
    GATE.start(ticket)
    return ticket


def release(ticket: int | None) -> None:
    if ticket is not None:
        GATE.leave(ticket)


def over_time(started_s: float, limits: Limits | None = None) -> bool:
    """Whether a run started at `started_s` (time.perf_counter) is past the wall-clock limit."""
    limit = (limits or MODE.limits).run_wall_s
    return limit is not None and time.perf_counter() - started_s > limit
