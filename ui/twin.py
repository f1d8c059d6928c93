"""The constant-reward twin: the run on screen again with a constant reward, side by side.

One click runs the same question, KB, settings, seed, cleaning rules and IG prompt as the
Fast MCTS run on screen, with method `constant` (the paper's ablation: every new node gets
the same reward, so only the policy and the visit counts steer), and draws both trees
with the nodes visited by one only marked (`viz.twin`), the answer each reached and, for
an example question, each answer's F1 against gold. A run is a model run like any other:
it goes through the run gate (`ui.public`: admitted, one per visitor, the wall-clock
limit) and the run cache (`ui.run_cache`, keyed as a normal run with the method changed),
so an example's twin is recorded once and replayed after.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import gradio as gr

from mcts.search.loop import one_line
from mcts.search.settings import Method, SearchSettings
from mcts.search.trace import trace_from_search
from ui import handlers, public, run_cache
from ui.forms import RunInputs, settings_problem
from ui.labels import method_label
from ui.render import TWIN_HEIGHT, figure, twin_view
from ui.session import Session, TwinRun
from viz.escape import md


def twin_inputs(session: Session, form: RunInputs) -> tuple[RunInputs, SearchSettings]:
    """The twin's form and settings: the run on screen with method `constant`; the models
    are the page's (public mode: the operator's). Raises ValueError with the line to show."""
    tree = session.tree
    if tree is None or len(tree) < 2:
        raise ValueError("Run a Fast MCTS search (or load a trace of one) first: the twin repeats it.")
    method = session.settings.method
    if method == Method.CONSTANT:
        raise ValueError("This run already has a constant reward; run Fast MCTS to compare the two.")
    if method != Method.FAST:
        raise ValueError(
            f"The twin is Fast MCTS's ablation; the run on screen is {method_label(method)}. Run Fast MCTS first."
        )
    problem = settings_problem(session.settings)
    if problem is not None:  # a loaded trace may hold settings a run from the form could not
        raise ValueError(
            f"The run on screen has settings this demo does not run ({problem}); the twin repeats them."
        )
    twin_form = replace(
        form,
        question=tree.question,
        kb_spec=session.meta.kb_spec or form.kb_spec,
        method=Method.CONSTANT.value,
        rules=sorted(r.value for r in session.rules),
        ig_prompt=session.ig_prompt,
    )
    return public.enforce(twin_form, public.MODE), session.settings.with_(method=Method.CONSTANT)


def run_twin(
    session: Session,
    form: RunInputs,
    request: gr.Request = None,  # type: ignore[assignment]
) -> Iterator[dict[str, Any]]:
    """Run (or replay from the cache) the constant-reward twin of the run on screen."""
    yield from handlers.gated(session, form, request, lambda f: _run_twin(session, f, request), _problem)


def _run_twin(session: Session, form: RunInputs, request: gr.Request | None) -> Iterator[dict[str, Any]]:
    try:
        twin_form, settings = twin_inputs(session, form)
    except ValueError as exc:
        yield _problem(str(exc))
        return
    source, question = session.tree, twin_form.question
    assert source is not None  # twin_inputs checked it
    key = handlers._cache_key(twin_form, question, settings)
    cached = run_cache.lookup(key) if key else None
    if cached is not None:
        trace = cached[0]
        session.twin = TwinRun(source, trace.to_tree(), trace.settings, trace.result, cached=True)
        yield twin_view(session)
        return
    yield {
        "twin_status": f"**Starting the twin** · {method_label(Method.CONSTANT)}…",
        "twin_diff": "",
        "stop_btn": gr.update(interactive=True),
    }
    try:
        world = handlers.get_world(twin_form, Method.CONSTANT)
    except Exception as exc:  # a KB or model that will not load
        yield _problem(one_line(exc))
        return
    search = handlers.form_search(question, settings, world, twin_form)
    view = Session(tree=search.tree, settings=settings, meta=world.meta)
    started = view.started_at = time.perf_counter()
    run_key = handlers.session_key(request, session)
    with handlers.live(run_key, search, started) as batches:  # the Search tab's Stop reaches the twin too
        for batch in batches:
            view.absorb(batch)
            rounds = sum(1 for e in view.events if e.kind == "round_started")
            update: dict[str, Any] = {
                "twin_status": f"**Running the twin** · round {rounds} of {settings.rounds} · {len(search.tree)} nodes"
            }
            if batch:
                fig = figure(view, title="Constant reward (the twin)", height=TWIN_HEIGHT)
                update["twin_plot_b"] = gr.update(value=fig, visible=True)
            yield update
    yield {"stop_btn": gr.update(interactive=False)}
    result = search.result
    if key and result is not None and result.stop_reason not in ("cancelled", "error"):
        run_cache.store(trace_from_search(search), key)
    if session.tree is not source:  # another run replaced the one this is the twin of
        yield {"twin_status": "*The run on screen changed while the twin ran; run the twin again.*"}
        return
    session.twin = TwinRun(source, search.tree, settings, result, cached=False)
    yield twin_view(session)


def _problem(message: str) -> dict[str, Any]:
    message = md(message)  # may quote a KB, a model or a trace
    gr.Warning(message)
    return {"twin_status": f"**Problem:** {message}"}
