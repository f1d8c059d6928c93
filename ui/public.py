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


LIMITS = Limits()
PUBLIC_LIMITS = Limits(
    max_upload_bytes=5_000_000,
    max_question_chars=500,
    max_ig_prompt_chars=300,
    run_wall_s=180.0,
    max_waiting=8,
    runs_per_visitor=1,
    traces_kept=200,
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
    """`slots` runs at a time; at most `max_waiting` waiting; at most `per_visitor` places
    (running or waiting) per visitor. Usage:

        ticket = gate.enter(visitor)          # raises Busy
        while not gate.try_start(ticket):     # poll; show gate.ahead(ticket) meanwhile
            ...
        try: run ... finally: gate.leave(ticket)
    """

    def __init__(self, slots: int = 1, *, max_waiting: int = 16, per_visitor: int | None = None) -> None:
        self.slots = slots
        self.max_waiting = max_waiting
        self.per_visitor = per_visitor
        self._lock = threading.Lock()
        self._waiting: list[tuple[int, str]] = []  # (ticket, visitor), first come first
        self._running: dict[int, str] = {}
        self._next = 0

    def enter(self, visitor: str) -> int:
        with self._lock:
            mine = sum(v == visitor for _, v in self._waiting) + sum(
                v == visitor for v in self._running.values()
            )
            if self.per_visitor is not None and mine >= self.per_visitor:
                raise Busy("You already have a run in progress; wait for it to finish (or press Stop).")
            if len(self._waiting) >= self.max_waiting:
                raise Busy(
                    f"The demo is busy ({len(self._waiting)} runs waiting); please try again in a minute."
                )
            self._next += 1
            self._waiting.append((self._next, visitor))
            return self._next

    def ahead(self, ticket: int) -> int:
        """Runs before this one: the running ones plus those waiting in front of it."""
        with self._lock:
            position = next((i for i, (t, _) in enumerate(self._waiting) if t == ticket), 0)
            return len(self._running) + position

    def try_start(self, ticket: int) -> bool:
        with self._lock:
            if len(self._running) >= self.slots or not self._waiting or self._waiting[0][0] != ticket:
                return False
            _, visitor = self._waiting.pop(0)
            self._running[ticket] = visitor
            return True

    def leave(self, ticket: int) -> None:
        with self._lock:
            self._running.pop(ticket, None)
            self._waiting = [(t, v) for t, v in self._waiting if t != ticket]


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
