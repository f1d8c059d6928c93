"""What the Search and Compare tabs' buttons do: run (streamed, or replayed from the
run cache), fresh run, stop, compare two methods.

Handlers take the session and a typed form (`ui.forms`) and yield dicts keyed by
component name (`ui.wiring` maps them to components). Bad input gives one clear line
in the status bar and a toast; the app keeps serving. Searches run through
`ui.stream.pump`, which redraws once per burst of events and keeps the clock ticking
during model calls. Worlds come from `ui.worlds`; each session's tree is its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import gradio as gr

from mcts.agents.world import World
from mcts.search.events import Event
from mcts.search.loop import Search, one_line
from mcts.search.settings import Method, SearchSettings
from mcts.search.trace import Trace, trace_from_search
from ui import presets, public, run_cache
from ui.forms import CompareInputs, RunInputs, SearchForm
from ui.labels import METHOD_CHOICES as METHOD_CHOICES  # re-exported: the layout's dropdowns
from ui.labels import run_label
from ui.render import figure, main_view, settings_line, tree_view
from ui.run_start import LOADING, REPLAYING, SEARCHING, cleared_view, placeholder_figure
from ui.session import Session
from ui.stream import pump
from ui.traces import open_trace, write_trace
from ui.worlds import get_world, is_warm
from viz import cost_markdown, replay_rounds, tree_at_round

REPLAY_ROUND_S = 0.35  # pause between rounds when a cached run is replayed (the animation)

# Live searches by browser session: Stop reaches only its own session's run.
_ACTIVE: dict[str, Search] = {}
_ACTIVE_LOCK = threading.Lock()


def session_key(request: gr.Request | None, session: Session) -> str:
    hash_ = getattr(request, "session_hash", None) if request is not None else None
    return str(hash_) if hash_ else f"local-{id(session)}"


def _register(key: str, search: Search | None) -> None:
    with _ACTIVE_LOCK:
        if search is None:
            _ACTIVE.pop(key, None)
        else:
            _ACTIVE[key] = search


F = TypeVar("F", RunInputs, CompareInputs)


def gated(
    session: Session,
    form: F,
    request: gr.Request | None,
    body: Callable[[F], Iterator[dict[str, Any]]],
    problem: Callable[[str], dict[str, Any]],
) -> Iterator[dict[str, Any]]:
    """`body(form)` behind public mode's door (`ui.public`): the form as the operator allows
    it and one place in the run queue for the visitor, given back when the body ends
    (finished, failed or closed). A refusal is the one update `problem(line)`.

    The place is claimed before the form is checked: the run's validator held it as the
    run joined the queue, so a form refused here gives it back too (no waiting place
    outlives a refused run)."""
    ticket: int | None = None
    try:
        ticket = public.claim(session, request)
        form = public.enforce(form, public.MODE)
    except (ValueError, public.Busy) as exc:
        public.release(ticket)
        yield problem(str(exc))
        return
    try:
        yield from body(form)
    finally:
        public.release(ticket)


@contextmanager
def live(key: str, search: Search, started_s: float) -> Iterator[Iterator[list[Event]]]:
    """While open, Stop reaches `search` by the session `key`; gives the search's event
    batches (`ui.stream.pump`) under public mode's per-run wall clock, counted from
    `started_s`: past it the search is cancelled and the tree so far kept."""
    batches = _within_time(search, started_s)
    _register(key, search)
    try:
        yield batches
    finally:
        batches.close()  # closing the pump cancels a search still running
        _register(key, None)


def _within_time(search: Search, started_s: float) -> Iterator[list[Event]]:
    for batch in pump(search):
        if public.over_time(started_s) and not search.cancelled:
            search.cancel()
        yield batch


def form_search(question: str, settings: SearchSettings, world: World, form: RunInputs) -> Search:
    """A search of `question` in `world` with the form's cleaning rules and IG prompt."""
    return Search(
        question,
        settings,
        policy=world.policy,
        scorer=world.scorer,
        tools=world.tools,
        cleaning_rules=form.cleaning_rules(),
        ig_prompt=form.ig_prompt.strip(),
        meta=world.meta,
    )


def _problem(message: str) -> dict[str, Any]:
    message = public.escape(message)  # may quote a visitor's input, a KB or a model
    gr.Warning(message)
    return {"status": f"**Problem:** {message}"}


def _cache_key(form: RunInputs, question: str, settings: SearchSettings) -> str | None:
    if not run_cache.cacheable(question, form.kb_spec):
        return None
    from mcts.agents.models import describe_adapter, resolve_model_names, resolve_policy_adapter

    policy_kind, policy_model, scorer_model, endpoint = form.models()
    policy_name, scorer_name = resolve_model_names(policy_model or None, scorer_model or None)
    adapter = (
        "" if endpoint else describe_adapter(resolve_policy_adapter(None, policy_name, form.kb_spec))
    )  # as the world
    # A constant-reward run loads no scorer; its world (and trace) names the scorer "constant".
    scorer = "constant" if settings.method == Method.CONSTANT else scorer_name
    return run_cache.run_key(
        question,
        form.kb_spec,
        settings,
        policy_kind=policy_kind,
        policy_model=endpoint or policy_name,
        scorer_model=scorer,
        rules=form.rules or [],
        ig_prompt=form.ig_prompt,
        policy_adapter=adapter,
    )


def run(
    session: Session,
    form: RunInputs,
    request: gr.Request = None,  # type: ignore[assignment]
    fresh: bool = False,
) -> Iterator[dict[str, Any]]:
    """Run one search and stream the tree; the last update carries the answer and the trace.

    An example question with settings already seen replays its cached run instead,
    unless `fresh`. Public mode (`ui.public`): the operator's KBs and models whatever the
    form sent, one place in the run queue per visitor, a wall-clock limit."""
    yield from gated(session, form, request, lambda f: _run(session, f, request, fresh), _problem)


def _run(
    session: Session, form: RunInputs, request: gr.Request | None, fresh: bool
) -> Iterator[dict[str, Any]]:
    try:
        question = form.checked_question()
        settings = form.settings(form.method)
        if not (form.ig_prompt or "").strip():
            raise ValueError("The IG prompt is empty; restore the default in the cleaning-rule lab.")
    except ValueError as exc:
        yield _problem(str(exc))
        return
    cache_key = _cache_key(form, question, settings)
    cached = run_cache.lookup(cache_key) if cache_key and not fresh else None
    # Nothing of the last run stays on screen, nor in the session (a click on its old
    # tree must not inspect it): the tree, inspector, answer, truth, twin and lab go now,
    # before the models load, and a note stands where the tree was.
    session.reset()
    if cached is not None:
        yield {"status": f"**Replaying a cached run** · {run_label(settings)}…", **cleared_view(REPLAYING)}
        yield from _replay_cached(session, cached[0])
        return
    warm = is_warm(form, settings.method)
    status = (
        f"**Starting** · {run_label(settings)}…"
        if warm
        else f"**Loading** the knowledge base and models for {run_label(settings)} "
        "(first run only; about 20 s on a CPU)…"
    )
    yield {"status": status, **cleared_view(SEARCHING if warm else LOADING)}
    try:
        world = get_world(form, settings.method)
    except Exception as exc:  # bad KB spec, unreachable endpoint, model that will not load
        yield {**_problem(one_line(exc)), "plot": None, "answer": "*No answer: the run did not start.*"}
        return
    if not warm:
        yield {"plot": placeholder_figure(SEARCHING)}
    search = form_search(question, settings, world, form)
    session.tree, session.settings, session.meta = search.tree, settings, world.meta
    session.rules, session.ig_prompt = search.cleaning_rules, search.ig_prompt
    session.started_at = time.perf_counter()
    with live(session_key(request, session), search, session.started_at) as batches:
        yield {
            **_live_view(session, _running_status(session, search, "Starting")),
            "stop_btn": _enabled(True),
        }
        for batch in batches:
            phase = "Stopping" if search.cancelled else "Running"
            if not batch:  # a model call in flight: tick the clock only
                yield {"status": _running_status(session, search, phase)}
                continue
            session.absorb(batch)
            yield _live_view(session, _running_status(session, search, phase), cost=search.cost())
    session.result = search.result
    trace = trace_from_search(search)
    session.trace_path = write_trace(trace, settings.method.value, owner=session)
    session.recorded_tree = search.tree
    if search.result is not None and search.result.stop_reason not in ("cancelled", "error"):
        if cache_key:
            run_cache.store(trace, cache_key)
        presets.record_time(settings, search.result.cost.wall_s)  # the preset buttons' expected time
    yield {**main_view(session, _final_status(session)), "stop_btn": _enabled(False)}


def run_fresh(
    session: Session,
    form: RunInputs,
    request: gr.Request = None,  # type: ignore[assignment]
) -> Iterator[dict[str, Any]]:
    """Run a new search even when a cached run of the same question and settings exists."""
    yield from run(session, form, request, fresh=True)


def _replay_cached(session: Session, trace: Trace) -> Iterator[dict[str, Any]]:
    """Show a cached run round by round, as if it ran now (no model is loaded)."""
    open_trace(session, trace, None)
    session.trace_path = write_trace(trace, f"cached-{trace.settings.method.value}", owner=session)
    final = session.tree
    total = replay_rounds(session.events)
    for round_no in range(total):
        frame = tree_at_round(session.recorded_tree, session.events, round_no)  # type: ignore[arg-type]
        view = Session(tree=frame.tree, settings=session.settings, selected_path=frame.selected_path)
        status = (
            f"**Replaying a cached run** · {run_label(session.settings)} · round {round_no} of {total} · "
            f"{len(frame.tree)} nodes"
        )
        yield {"status": status, "plot": figure(view)}
        time.sleep(REPLAY_ROUND_S)
    session.tree = final
    res = session.result
    status = (
        f"**Finished (cached run, replayed: same question, settings, models and code)** · "
        f"{run_label(session.settings)} · answer: "
        f"{', '.join(v.name for v in res.answer) if res and res.answer else 'no answer'} · "
        f"{total} rounds · {len(final or ())} nodes. Press **Fresh run** to search again."
    )
    yield {**main_view(session, status), "stop_btn": _enabled(False)}


def _live_view(session: Session, status: str, *, cost: Any = None) -> dict[str, Any]:
    """`tree_view` while streaming; until the first expansion (a lone root) the note
    "Searching…" stays where the tree will be."""
    view = tree_view(session, status, cost=cost)
    if session.tree is not None and len(session.tree) < 2:
        view["plot"] = placeholder_figure(SEARCHING)
    return view


def _enabled(on: bool) -> Any:
    return gr.update(interactive=on)


def _running_status(session: Session, search: Search, phase: str) -> str:
    cost = search.cost()
    rounds_started = sum(1 for e in session.events if e.kind == "round_started")
    return (
        f"**{phase}** · {run_label(session.settings)} · round {rounds_started} of {session.settings.rounds} · "
        f"{len(search.tree)} nodes · "
        f"elapsed {cost.wall_s:.1f} s · model {cost.model_s:.1f} s · tools {cost.kb_s:.2f} s"
    )


def _final_status(session: Session) -> str:
    res = session.result
    if res is None:
        return "**Finished**"
    names = public.escape(", ".join(v.name for v in res.answer) or "no answer")
    detail = (
        f" ({public.escape(res.detail)})"
        if res.detail and res.stop_reason in ("error", "invalid_question", "cancelled")
        else ""
    )
    return (
        f"**Finished: {public.escape(res.stop_reason.replace('_', ' '))}**{detail} · {run_label(session.settings)} · "
        f"answer: {names} · {res.rounds} rounds · "
        f"{res.nodes} nodes · model {res.cost.model_s:.1f} s · tools {res.cost.kb_s:.2f} s · wall {res.cost.wall_s:.1f} s"
    )


def stop(session: Session, request: gr.Request = None) -> str:  # type: ignore[assignment]
    """Cancel this browser session's running search; it ends after the current model call."""
    key = session_key(request, session)
    with _ACTIVE_LOCK:
        search = _ACTIVE.get(key)
    if search is None:
        if public.withdraw(session, request):  # its run had not started: the place is free again
            return "**Stopped** before the run started."
        return "Nothing is running."
    search.cancel()
    return "**Stopping** after the current model call…"


def stop_search(session: Session, request: gr.Request = None) -> dict[str, Any]:  # type: ignore[assignment]
    return {"status": stop(session, request)}


def stop_compare(session: Session, request: gr.Request = None) -> dict[str, Any]:  # type: ignore[assignment]
    return {"compare_status": stop(session, request)}


def compare_info(form: SearchForm, methods: tuple[str, str]) -> str:
    """What the Compare tab runs: the Search tab's question, KB and settings."""
    q = " ".join((form.question or "").split()) or "(no question yet: type one in the Search tab)"
    try:
        line = settings_line(form.settings(methods[0]))
    except ValueError as exc:
        line = f"bad setting: {exc}"
    return f"**Question:** {public.escape(q)}  \n**KB:** {public.escape(form.kb_spec or 'demo')} · {line}"


def compare(
    session: Session,
    form: CompareInputs,
    request: gr.Request = None,  # type: ignore[assignment]
) -> Iterator[dict[str, Any]]:
    """Run two methods one after the other on the same question; trees and costs side by side."""
    yield from gated(
        session,
        form,
        request,
        lambda f: _compare(session, f, request),
        lambda line: {"compare_status": f"**Problem:** {public.escape(line)}"},
    )


def _compare(session: Session, form: CompareInputs, request: gr.Request | None) -> Iterator[dict[str, Any]]:
    info = compare_info(form, (form.method_a, form.method_b))
    started = time.perf_counter()
    try:
        q = form.checked_question()
        runs = [form.settings(m) for m in (form.method_a, form.method_b)]
    except ValueError as exc:
        gr.Warning(str(exc))
        yield {"compare_status": f"**Problem:** {public.escape(exc)}", "compare_info": info}
        return
    key = session_key(request, session)
    for pane, settings in zip("ab", runs, strict=True):
        label = settings.method.value
        yield {
            "compare_status": f"**Preparing** **{label}**…",
            "compare_info": info,
            "compare_stop": _enabled(True),
        }
        try:
            world = get_world(form, settings.method)
        except Exception as exc:
            gr.Warning(one_line(exc))
            yield {
                "compare_status": f"**Problem:** {public.escape(one_line(exc))}",
                "compare_stop": _enabled(False),
            }
            return
        search = Search(
            q, settings, policy=world.policy, scorer=world.scorer, tools=world.tools, meta=world.meta
        )
        view = Session(tree=search.tree, settings=settings, meta=world.meta)
        with live(key, search, started) as batches:  # `started`: the public per-run limit covers both methods
            for batch in batches:
                status = _running_status(view, search, f"Running {label}")
                if not batch:
                    yield {"compare_status": status}
                    continue
                view.absorb(batch)
                yield {
                    "compare_status": status,
                    f"plot_{pane}": figure(view, height=460),
                    f"cost_{pane}": cost_markdown(search.cost()),
                }
        view.result = res = search.result
        answer = public.escape(", ".join(v.name for v in res.answer) if res and res.answer else "no answer")
        stop_reason = public.escape(res.stop_reason.replace("_", " ") if res else "?")
        yield {
            f"plot_{pane}": figure(view, height=460),
            f"cost_{pane}": f"**{label}** · answer: {answer} · {stop_reason}\n\n"
            + cost_markdown(res.cost if res else None),
        }
        if res is not None and res.stop_reason == "cancelled":
            yield {"compare_status": "**Comparison stopped.**", "compare_stop": _enabled(False)}
            return
    yield {"compare_status": "**Comparison finished.**", "compare_stop": _enabled(False)}


def describe_compare(session: Session, form: CompareInputs) -> dict[str, Any]:
    """Keep the Compare tab's header in step with the Search tab's question and settings."""
    return {"compare_info": compare_info(form, (form.method_a, form.method_b))}
