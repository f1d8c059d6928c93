"""What the app's buttons do: run (streamed), stop, compare two methods.

Each handler validates its input first and answers bad input with one clear line in
the status bar and a toast (the app keeps serving). Searches run through
`ui.stream.pump`, which redraws once per burst of events and keeps the clock ticking
during model calls. Models and KBs come from `mcts.agents.world.build_world` (cached per
process, shared read-only by all sessions); each session's tree is its own.
Inspecting is in `ui.inspector`, re-scoring in `ui.rescoring`, traces in
`ui.traces`, replay in `ui.replay`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from mcts.search.cleaning import CleaningRule
from mcts.search.loop import Search, check_question, one_line
from mcts.search.settings import Method, SearchSettings
from mcts.search.trace import trace_from_search
from ui.render import figure, live_status, main_view, message_view
from ui.session import Session
from ui.stream import pump
from ui.traces import write_trace
from viz import cost_markdown

log = logging.getLogger(__name__)

METHOD_CHOICES: list[tuple[str, str]] = [
    ("Fast MCTS (IG reward, no simulation)", Method.FAST.value),
    ("Classic MCTS (simulate, score the end)", Method.CLASSIC.value),
    ("Constant reward (ablation)", Method.CONSTANT.value),
    ("Beam search by IG", Method.BEAM.value),
    ("N-sample vote", Method.VOTE.value),
    ("Single greedy path", Method.SINGLE.value),
]
MAX_KB_SPEC_CHARS = 500

# Live searches by browser session: Stop reaches only its own session's run.
_ACTIVE: dict[str, Search] = {}
_ACTIVE_LOCK = threading.Lock()
_WARM: set[tuple[Any, ...]] = set()  # world arguments already loaded in this process


def session_key(request: gr.Request | None, session: Session) -> str:
    hash_ = getattr(request, "session_hash", None) if request is not None else None
    return str(hash_) if hash_ else f"local-{id(session)}"


def _register(key: str, search: Search | None) -> None:
    with _ACTIVE_LOCK:
        if search is None:
            _ACTIVE.pop(key, None)
        else:
            _ACTIVE[key] = search


def make_settings(
    method: str,
    rounds: float,
    k: float,
    c: float,
    alpha: float,
    beta: float,
    expected_depth: float,
    max_depth: float,
    early_stop: float,
    seed: float,
) -> SearchSettings:
    """SearchSettings from the form; raises ValueError with one clear line."""
    try:
        return SearchSettings(
            method=Method(method),
            rounds=int(rounds),
            k=int(k),
            c=float(c),
            alpha=float(alpha),
            beta=float(beta),
            expected_depth=int(expected_depth),
            max_depth=int(max_depth),
            early_stop_terminals=int(early_stop),
            seed=int(seed),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad setting: {one_line(exc)}") from exc


def parse_rules(values: list[str] | None) -> frozenset[CleaningRule]:
    return frozenset(CleaningRule(v) for v in (values or []))


def get_world(
    kb_spec: str, policy_kind: str, policy_model: str, scorer_model: str, method: Method, endpoint: str = ""
) -> Any:
    """Build (or reuse) the world; probe a remote endpoint so a dead URL fails here, clearly."""
    from mcts.agents.world import build_world

    spec = (kb_spec or "").strip() or "demo"
    if len(spec) > MAX_KB_SPEC_CHARS:
        raise ValueError(f"the KB spec has {len(spec):,} characters; give a short path or URL")
    world = build_world(
        spec,
        policy_kind=policy_kind,  # type: ignore[arg-type]
        policy_model=(policy_model or "").strip() or None,
        scorer_model=(scorer_model or "").strip() or None,
        policy_endpoint=(endpoint or "").strip() or None,
        method=method,
    )
    if spec.startswith(("http://", "https://")):
        try:
            world.kb.query("ASK { ?s ?p ?o }", timeout_s=5.0)
        except Exception as exc:
            raise ValueError(f"cannot reach the SPARQL endpoint {spec}: {one_line(exc)}") from exc
    return world


_SCORERS: dict[str, Any] = {}


def get_scorer(scorer_model: str) -> tuple[Any, str]:
    """(IG scorer, its model name) for re-scoring: no KB and no policy needed, so a trace
    recorded against a KB this machine does not have can still be re-scored."""
    from mcts.agents.models import load_model, resolve_model_names
    from mcts.agents.scorer import IGScorer

    _, name = resolve_model_names(None, (scorer_model or "").strip() or None)
    with _ACTIVE_LOCK:
        scorer = _SCORERS.get(name)
    if scorer is None:
        scorer = IGScorer(load_model(name))
        with _ACTIVE_LOCK:
            scorer = _SCORERS.setdefault(name, scorer)
    return scorer, name


def world_key(
    kb_spec: str, policy_kind: str, policy_model: str, scorer_model: str, method: Method
) -> tuple[Any, ...]:
    return (
        (kb_spec or "demo").strip(),
        policy_kind,
        policy_model.strip(),
        scorer_model.strip(),
        method == Method.CONSTANT,
    )


def _prepare(question: str, settings_args: tuple[Any, ...]) -> tuple[SearchSettings, str]:
    """Validated settings and question; raises ValueError with the line to show."""
    problem = check_question(question or "")
    if problem is not None:
        raise ValueError(problem[0].upper() + problem[1:] + ".")
    settings = make_settings(*settings_args)
    return settings, question.strip()


def run(
    session: Session,
    question: str,
    kb_spec: str,
    method: str,
    rounds: float,
    k: float,
    c: float,
    alpha: float,
    beta: float,
    expected_depth: float,
    max_depth: float,
    early_stop: float,
    seed: float,
    policy_kind: str,
    policy_model: str,
    scorer_model: str,
    policy_endpoint: str,
    rules: list[str],
    ig_prompt: str,
    request: gr.Request = None,  # type: ignore[assignment]
) -> Iterator[tuple[Any, ...]]:
    """Run one search and stream the tree; the last update carries the answer and the trace."""
    key = session_key(request, session)
    try:
        settings, question = _prepare(
            question, (method, rounds, k, c, alpha, beta, expected_depth, max_depth, early_stop, seed)
        )
        prompt = (ig_prompt or "").strip()
        if not prompt:
            raise ValueError("The IG prompt is empty; restore the default in the cleaning-rule lab.")
    except ValueError as exc:
        gr.Warning(str(exc))
        yield message_view(f"**Problem:** {exc}")
        return
    wkey = world_key(kb_spec, policy_kind, policy_model, scorer_model, settings.method) + (policy_endpoint,)
    if wkey not in _WARM:
        yield message_view("**Loading** the knowledge base and models (first run only; about 20 s on a CPU)…")
    try:
        world = get_world(kb_spec, policy_kind, policy_model, scorer_model, settings.method, policy_endpoint)
    except Exception as exc:  # bad KB spec, unreachable endpoint, model that will not load
        msg = one_line(exc)
        gr.Warning(msg)
        yield message_view(f"**Problem:** {msg}")
        return
    _WARM.add(wkey)
    search = Search(
        question, settings, policy=world.policy, scorer=world.scorer, tools=world.tools,
        cleaning_rules=parse_rules(rules), ig_prompt=prompt, meta=world.meta,
    )  # fmt: skip
    session.reset()
    session.tree, session.settings, session.meta = search.tree, settings, world.meta
    session.rules, session.ig_prompt = search.cleaning_rules, prompt
    session.recorded_tree = None
    session.started_at = time.perf_counter()
    _register(key, search)
    try:
        yield main_view(session, live_status(session, "Starting"), full=False)
        for batch in pump(search):
            phase = "Stopping" if search.cancelled else "Running"
            if not batch:  # a model call in flight: tick the clock only
                yield message_view(_running_status(session, search, phase))
                continue
            session.absorb(batch)
            yield main_view(session, _running_status(session, search, phase), full=False, cost=search.cost())
        session.result = search.result
        session.trace_path = write_trace(trace_from_search(search), settings.method.value)
        session.recorded_tree = search.tree
        yield main_view(session, _final_status(session))
    finally:
        _register(key, None)


def _running_status(session: Session, search: Search, phase: str) -> str:
    cost = search.cost()
    rounds_started = sum(1 for e in session.events if e.kind == "round_started")
    return (
        f"**{phase}** · round {rounds_started} of {session.settings.rounds} · {len(search.tree)} nodes · "
        f"model {cost.model_s:.1f} s · tools {cost.kb_s:.2f} s · elapsed {cost.wall_s:.1f} s"
    )


def _final_status(session: Session) -> str:
    res = session.result
    if res is None:
        return live_status(session, "Finished")
    names = ", ".join(v.name for v in res.answer) or "no answer"
    detail = (
        f" ({res.detail})"
        if res.detail and res.stop_reason in ("error", "invalid_question", "cancelled")
        else ""
    )
    return (
        f"**Finished: {res.stop_reason.replace('_', ' ')}**{detail} · answer: {names} · {res.rounds} rounds · "
        f"{res.nodes} nodes · model {res.cost.model_s:.1f} s · tools {res.cost.kb_s:.2f} s · wall {res.cost.wall_s:.1f} s"
    )


def stop(session: Session, request: gr.Request = None) -> str:  # type: ignore[assignment]
    """Cancel this session's running search; it ends after the current model call."""
    key = session_key(request, session)
    with _ACTIVE_LOCK:
        search = _ACTIVE.get(key)
    if search is None:
        return "Nothing is running."
    search.cancel()
    return "**Stopping** after the current model call…"


def compare(
    session: Session,
    question: str,
    kb_spec: str,
    method_a: str,
    method_b: str,
    rounds: float,
    k: float,
    c: float,
    alpha: float,
    beta: float,
    expected_depth: float,
    max_depth: float,
    early_stop: float,
    seed: float,
    policy_kind: str,
    policy_model: str,
    scorer_model: str,
    policy_endpoint: str,
    request: gr.Request = None,  # type: ignore[assignment]
) -> Iterator[tuple[Any, ...]]:
    """Run two methods one after the other on the same question; trees and costs side by side.

    Outputs: status, figure A, cost A, figure B, cost B.
    """
    key = session_key(request, session)
    skip = gr.skip()
    try:
        runs = []
        for method in (method_a, method_b):
            settings, q = _prepare(
                question, (method, rounds, k, c, alpha, beta, expected_depth, max_depth, early_stop, seed)
            )
            runs.append(settings)
    except ValueError as exc:
        gr.Warning(str(exc))
        yield (f"**Problem:** {exc}", skip, skip, skip, skip)
        return
    panes: list[tuple[Any, str]] = [(None, "*Waiting…*"), (None, "*Waiting…*")]
    for i, settings in enumerate(runs):
        label = settings.method.value
        yield (f"**Preparing** **{label}**…", *panes[0], *panes[1])
        try:
            world = get_world(
                kb_spec, policy_kind, policy_model, scorer_model, settings.method, policy_endpoint
            )
        except Exception as exc:
            gr.Warning(one_line(exc))
            yield (f"**Problem:** {one_line(exc)}", skip, skip, skip, skip)
            return
        search = Search(
            q, settings, policy=world.policy, scorer=world.scorer, tools=world.tools, meta=world.meta
        )
        view = Session(tree=search.tree, settings=settings, meta=world.meta)
        _register(key, search)
        try:
            for batch in pump(search):
                status = _running_status(view, search, f"Running {label}")
                if not batch:
                    yield (status, skip, skip, skip, skip)
                    continue
                view.absorb(batch)
                panes[i] = (figure(view, height=460), cost_markdown(search.cost()))
                yield (status, *panes[0], *panes[1])
        finally:
            _register(key, None)
        view.result = search.result
        res = search.result
        answer = ", ".join(v.name for v in res.answer) if res and res.answer else "no answer"
        stop_reason = res.stop_reason.replace("_", " ") if res else "?"
        panes[i] = (
            figure(view, height=460),
            f"**{label}** · answer: {answer} · {stop_reason}\n\n" + cost_markdown(res.cost if res else None),
        )
        if res is not None and res.stop_reason == "cancelled":
            yield ("**Comparison stopped.**", *panes[0], *panes[1])
            return
    yield ("**Comparison finished.**", *panes[0], *panes[1])
