"""Public mode: what an anonymous visitor of the hosted demo may do, and every limit.

On when `PUBLIC_DEMO=1`, and on by itself on Hugging Face Spaces (any of `SPACE_ID`,
`SPACE_HOST`, `SPACE_REPO_NAME` set) unless the operator sets `PUBLIC_DEMO=0`. Then:

- KBs: only the bundled demos and the operator's allow-list (`PUBLIC_KBS`, comma
  separated specs); the free KB field is hidden and a typed spec is refused server-side;
- policy kind, models and policy endpoint: the operator's (`POLICY_KIND`, `POLICY_MODEL`,
  `SCORER_MODEL`, `POLICY_ENDPOINT`); the fields are hidden and whatever a client sends is
  ignored;
- credentials only ever go to the operator's endpoint (`mcts.agents.policy_react`);
- limits: upload size, question and IG-prompt length, per-run wall clock, runs waiting,
  model jobs (run, twin, compare, re-score) per visitor and per address range, re-score
  cost, uploaded tree budget, trace files kept (`ui.trace_store`: per visitor folder,
  quota, age, total). A visitor is the address the operator's proxies saw (`ui.visitor`), never a
  header the client wrote.

`LIMITS` holds the local values (a laptop user trusts themself), `PUBLIC_LIMITS` the
public ones. `GATE` (`ui.run_gate.RunGate`) is the queue in front of model runs: bounded,
it says how many runs are ahead, one visitor holds at most `runs_per_visitor` places and
one address range `runs_per_range`. Knows nothing of Gradio components (the handlers
call it).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from kb.spec import DEMOS
from mcts.search.trace_validation import PUBLIC_TRACE_BUDGET, TraceBudget
from ui.run_gate import Busy, RunGate, busy_line, gradio_queued
from ui.visitor import SPACES_VARS, ProxyTrust, Visitor
from ui.visitor import visitor_of as identify
from viz.escape import md

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
    runs_per_range: int | None = None  # runs one address range (/24, /64) may have running or waiting
    traces_kept: int = 500  # trace files kept in all (taken from the fullest visitor's folder first)
    traces_per_visitor: int = 500  # trace files one visitor keeps (its oldest removed first)
    trace_max_age_s: float | None = None  # a trace file older than this is removed
    max_rescore_nodes: int | None = None  # re-scoring costs one IG pass per node (an upload may hold 20k)
    max_rescore_tokens: int | None = None  # tokens one re-score may feed the scorer (`ui.rescoring`)
    max_whatif_chars: int = 20_000  # an edited history the IG lens re-scores (`ui.lens_probe`)
    trace_budget: TraceBudget | None = (
        None  # what one loaded trace may cost to draw (None: the reader's bounds)
    )


LIMITS = Limits()
PUBLIC_LIMITS = Limits(
    max_upload_bytes=5_000_000,
    max_question_chars=500,
    max_ig_prompt_chars=300,
    run_wall_s=180.0,
    max_waiting=8,
    runs_per_visitor=1,
    runs_per_range=4,  # half the waiting places: one network cannot fill the queue
    traces_kept=200,
    traces_per_visitor=20,  # one visitor's flood of re-scores evicts only its own files
    trace_max_age_s=3600.0,
    max_rescore_nodes=300,
    # The bundled scorer reads ~100 tokens/s on a Space's CPU (two passes per history): 10k
    # stays inside the run's 180 s; a shipped example tree costs ~3k.
    max_rescore_tokens=10_000,
    max_whatif_chars=4_000,  # a history of the shipped examples runs 300-1,500 characters
    trace_budget=PUBLIC_TRACE_BUDGET,
)


@dataclass(frozen=True)
class PublicMode:
    enabled: bool
    allowed_kbs: tuple[str, ...] = tuple(DEMOS)  # bundled demos + operator allow-list
    policy_kind: str = "guided"  # the operator's choices, from the variables `ui.config` reads
    policy_model: str = ""  # "" = the bundled model
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
            policy_kind=env.get("POLICY_KIND", "").strip() or "guided",
            policy_model=env.get("POLICY_MODEL", "").strip(),
            scorer_model=env.get("SCORER_MODEL", "").strip(),
            policy_endpoint=env.get("POLICY_ENDPOINT", "").strip(),
            limits=PUBLIC_LIMITS if enabled else LIMITS,
        )

    def kb_allowed(self, spec: str) -> bool:
        return not self.enabled or (spec or "demo").strip() in self.allowed_kbs


F = TypeVar("F")


def enforce(form: F, mode: PublicMode) -> F:
    """The form a run may use: in public mode the policy kind, model and endpoint fields
    replaced by the operator's (whatever the client sent) and the KB checked against the allow-list.
    Raises ValueError (one line for the status bar) on a KB, question or IG prompt
    outside the limits. Works on any frozen dataclass with the `ui.forms` field names."""
    limits = mode.limits
    question = str(getattr(form, "question", "") or "")
    if len(question) > limits.max_question_chars:
        raise ValueError(
            f"The question is too long ({len(question):,} characters; at most {limits.max_question_chars:,})."
        )
    prompt = str(getattr(form, "ig_prompt", "") or "")
    for what, text in (("question", question), ("IG prompt", prompt)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no page, file or model can carry it
            raise ValueError(f"The {what} holds a character that is not valid Unicode.") from None
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
    for name in ("policy_kind", "policy_model", "scorer_model", "policy_endpoint"):
        if hasattr(form, name):
            changes[name] = getattr(mode, name)
    return replace(form, **changes)  # type: ignore[type-var]


def escape(text: Any) -> str:
    """Text from a trace, a model or a visitor, safe inside a Markdown line (`viz.escape.md`)."""
    return md(text)


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


# ----- the queue in front of model runs (ui.run_gate) --------------------------------------
TRUST = ProxyTrust.from_env()
MODE = PublicMode.from_env()  # read once at import: the app's mode for this process
GATE = RunGate(
    max_waiting=MODE.limits.max_waiting,
    per_visitor=MODE.limits.runs_per_visitor,
    per_range=MODE.limits.runs_per_range,
)
if MODE.enabled:
    # uvicorn (under Gradio) rewrites the socket address from X-Forwarded-For for peers in
    # FORWARDED_ALLOW_IPS (default: loopback), so a client on the host would pick its own
    # identity; forwarded hops are read in ui.visitor under TRUSTED_PROXY_HOPS instead.
    os.environ.setdefault("FORWARDED_ALLOW_IPS", "")


def _session(request: Any, session: Any) -> str:
    return str(getattr(request, "session_hash", None) or f"local-{id(session)}")


def visitor_of(request: Any, session: Any = None) -> Visitor:
    """Who is asking (`ui.visitor`: the address the operator's proxies saw, never one the
    client wrote), with the browser session that holds the place."""
    return identify(request, TRUST, _session(request, session))


def watch_queue(blocks: Any, concurrency_id: str = "models") -> None:
    """Tie waiting places to the runs queued in `blocks` (call after `blocks.queue()`)."""
    GATE.queued = gradio_queued(blocks, concurrency_id)


def admitter(status: str = "status") -> Any:
    """`admit` reporting to the status component named `status` (Search or Compare tab)."""

    def admit_run(session: Any, request: Any = None) -> dict[str, Any]:
        return {status: admit(session, request)["status"]}

    admit_run.__doc__ = admit.__doc__
    return admit_run


def admit(session: Any, request: Any = None) -> dict[str, Any]:
    """The cheap step before a model run: take a place in the queue or refuse (gr.Error,
    which stops the run the event chains after it). Says how many runs are ahead. The
    place is this browser session's; a second click replaces it."""
    try:
        ticket = GATE.enter(visitor_of(request, session))
    except Busy as exc:
        import gradio as gr

        raise gr.Error(str(exc)) from None
    ahead = GATE.ahead(ticket)
    return {"status": busy_line(ahead) if ahead else "**Starting**…"}


def run_validator(fields: Mapping[str, Any] | None = None) -> Any:
    """The validator of a model-run event (Gradio calls it as the run joins its queue, before
    it waits there, with the run's own inputs). First the inputs named in `fields` (name ->
    a field with `problem(name, value)`, `ui.fields`): one out of its range refuses the run
    with Gradio's validation error naming that field, and no place is taken. Then the run's
    place (the admitted one, or a new one under every limit), or a refusal at the door
    (gr.Error), so that runs joined over the API without the admit cannot fill the queue."""
    import gradio as gr

    checks = dict(fields or {})

    def hold_place(session: Any, request: Any = None, **values: Any) -> list[Any]:
        problems = {
            name: checks[name].problem(name, value) for name, value in values.items() if name in checks
        }
        # One answer per input, in the event's order: the session state, then the form's fields.
        answers = [gr.validate(True, "")] + [
            gr.validate(problems.get(name) is None, problems.get(name) or "") for name in values
        ]
        if any(problems.values()):
            return answers  # refused before the queue: no place held
        try:
            GATE.hold(visitor_of(request, session))
        except Busy as exc:
            raise gr.Error(str(exc)) from None
        return answers

    hold_place.__annotations__["request"] = gr.Request  # the annotation Gradio reads to pass it in
    return hold_place


def claim(session: Any, request: Any = None) -> int:
    """Called by a model job as it starts: its session's admitted place (or a new one, for
    API callers that skipped `admit`), marked running. Raises Busy; `release` it after.
    The session's trace files go to this visitor's folder from now on (`ui.trace_store`)."""
    visitor = visitor_of(request, session)
    if hasattr(session, "owner"):
        session.owner = visitor.key
    return GATE.claim(visitor)


def release(ticket: int | None) -> None:
    if ticket is not None:
        GATE.leave(ticket)


def withdraw(session: Any, request: Any = None) -> bool:
    """Stop pressed: free this browser session's waiting place, if its run has not started."""
    return GATE.withdraw(_session(request, session))


def over_time(started_s: float, limits: Limits | None = None) -> bool:
    """Whether a run started at `started_s` (time.perf_counter) is past the wall-clock limit."""
    limit = (limits or MODE.limits).run_wall_s
    return limit is not None and time.perf_counter() - started_s > limit
