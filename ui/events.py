"""The page's events, by name: each handler gets a typed form or named values and returns
a dict keyed by component name (`ui.wiring`).

Two kinds of event share the queue: a model job (run, fresh run, twin, compare and the
lab's re-score: the one `models` slot, its inputs checked and its place in the run gate
taken as it joins the queue, `ModelRuns.queue`), and everything cheap (no concurrency limit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from mcts.search.cleaning import DEFAULT_RULES
from mcts.search.protocols import DEFAULT_IG_PROMPT
from ui import (
    form_notice,
    handlers,
    inspector,
    lens_probe,
    overlay,
    presets,
    public,
    replay,
    rescoring,
    run_start,
    traces,
    twin,
)
from ui.config import gpu_decorator
from ui.forms import SETTINGS_FIELDS, CompareInputs, RunInputs
from ui.layout_search import PageStart, preset_button
from ui.render import MAIN_OUTPUTS, TWIN_OUTPUTS
from ui.selection_view import SELECTION_OUTPUTS, selection_for_node, selection_for_round
from ui.wiring import Page

# Run: bring the status line (and the tree below it) to the top of the viewport.
SCROLL_TO_STATUS_JS = (
    "() => { document.getElementById('status')?.scrollIntoView({behavior: 'smooth', block: 'start'}); }"
)
MODELS = {"concurrency_id": "models", "concurrency_limit": 1}  # one model at work at a time
CHEAP = {"concurrency_limit": None}
INSPECT_OUTPUTS = ("detail", "history", "plot", "node_dd")
RESCORE_OUTPUTS = ("lab_status", "rank_changes", "reward_table", "lab_plot", *MAIN_OUTPUTS)
LOAD_OUTPUTS = (
    *MAIN_OUTPUTS,
    *replay.REPLAY_OUTPUTS,
    "question",
    "kb_spec",
    "method",
    *SETTINGS_FIELDS,
    "preset",
    "policy_kind",
    "rules",
    "ig_prompt",
)
COMPARE_OUTPUTS = ("compare_status", "compare_info", "compare_stop", "plot_a", "cost_a", "plot_b", "cost_b")


@dataclass(frozen=True)
class ModelRuns:
    """What every event that runs a model shares."""

    gpu: Callable[[Callable[..., Any]], Callable[..., Any]]  # spaces.GPU on ZeroGPU, identity elsewhere
    queue: dict[str, Any]  # its concurrency and its validator (`MODELS`, `public.run_validator`)


def wire_events(demo: gr.Blocks, page: Page, start: PageStart) -> None:
    """Every event of the page; `page` holds the components the layout registered."""
    # A run takes its place in the run gate as it joins the queue, whoever calls it; the
    # settings' ranges are checked there too (ui.fields: Gradio's own check would answer a bare 400).
    validator = public.run_validator({name: page[name] for name in SETTINGS_FIELDS})
    runs = ModelRuns(gpu=gpu_decorator(), queue={**MODELS, "validator": validator})
    _wire_search(page, runs)
    note = _wire_form(page, start)
    _wire_inspector(page)
    _wire_truth_and_twin(page, runs)
    # A re-score runs the scorer: a model job under the same gate, clock and per-visitor limits.
    page["rescore_btn"].click(
        **page.wire(
            rescoring.rescore,
            inputs={"rules": "rules", "ig_prompt": "ig_prompt", "scorer_model": "scorer_model"},
            outputs=RESCORE_OUTPUTS,
            decorate=runs.gpu,
        ),
        api_name="rescore",
        **runs.queue,
    )
    _wire_lens(page, runs)
    _wire_traces(page, note)
    _wire_compare(demo, page, runs)


def _wire_lens(page: Page, runs: ModelRuns) -> None:
    """The IG lens's scorer tools (model jobs under the run gate), and their refresh when
    the inspected node changes (by the list, a table row or a click: all set the list)."""
    scorer = {"node": "node_dd", "scorer_model": "scorer_model"}
    page["evidence_btn"].click(
        **page.wire(
            lens_probe.find_evidence, inputs=scorer, outputs=lens_probe.EVIDENCE_OUTPUTS, decorate=runs.gpu
        ),
        api_name="find_evidence",
        **runs.queue,
    )
    page["evidence_stop"].click(
        **page.wire(lens_probe.stop_evidence, outputs=[]), api_name="stop_evidence", **CHEAP
    )
    page["whatif_btn"].click(
        **page.wire(
            lens_probe.what_if,
            inputs={**scorer, "edited": "whatif_text"},
            outputs=lens_probe.WHATIF_OUTPUTS,
            decorate=runs.gpu,
        ),
        api_name="what_if",
        **runs.queue,
    )
    page["node_dd"].change(
        **page.wire(
            lens_probe.lens_for_node, inputs={"node": "node_dd"}, outputs=lens_probe.LENS_NODE_OUTPUTS
        ),
        api_visibility="private",
        **CHEAP,
    )


def _admit(page: Page, status: str) -> dict[str, Any]:
    """A cheap first step of a model run: a place in the run queue ("N ahead of you") or a refusal."""
    return {
        **page.wire(public.admitter(status), outputs=[status]),
        "api_visibility": "private",
        **CHEAP,
    }


def _wire_search(page: Page, runs: ModelRuns) -> None:
    """Run, Fresh run and Enter in the question; the replay follows each; Stop."""
    main = (*MAIN_OUTPUTS, "stop_btn", *run_start.LAB_OUTPUTS)  # a new run clears the lab too
    admit = _admit(page, "status")
    run = page.wire(handlers.run, form=RunInputs, outputs=main, decorate=runs.gpu)
    run_event = page["run_btn"].click(**admit).success(**run, api_name="run", **runs.queue)
    page["run_btn"].click(None, js=SCROLL_TO_STATUS_JS)
    fresh = page.wire(handlers.run_fresh, form=RunInputs, outputs=main, decorate=runs.gpu)
    fresh_event = page["fresh_btn"].click(**admit).success(**fresh, api_name="fresh_run", **runs.queue)
    page["fresh_btn"].click(None, js=SCROLL_TO_STATUS_JS)
    page["question"].submit(None, js=SCROLL_TO_STATUS_JS)
    submit_event = page["question"].submit(**admit).success(**run, api_visibility="private", **runs.queue)
    sync = page.wire(replay.sync_replay, outputs=(*replay.REPLAY_OUTPUTS, "stop_btn"))
    for event, name in ((run_event, "sync_replay"), (fresh_event, None), (submit_event, None)):
        event.then(**sync, api_name=name, api_visibility="public" if name else "private", **CHEAP)
    page["stop_btn"].click(**page.wire(handlers.stop_search, outputs=["status"]), api_name="stop", **CHEAP)


def _wire_form(page: Page, start: PageStart) -> dict[str, Any]:
    """The preset buttons, Back to the defaults, and the notice of a form that left them.
    Returns the notice's update, which a trace load runs after it fills the form."""
    hide_note = page.wire(form_notice.hide, outputs=form_notice.NOTICE_OUTPUTS[1:])
    preset_outputs = ["method", *SETTINGS_FIELDS, "preset", "machine_note"]
    for name in start.machine.buttons:
        page[preset_button(name)].click(
            **page.wire(presets.preset_handler(name), outputs=preset_outputs),
            api_visibility="private",
            **CHEAP,
        ).then(**hide_note, api_visibility="private", **CHEAP)
    defaults = form_notice.FormDefaults(
        settings=start.settings,
        preset=start.preset,
        rules=tuple(sorted(r.value for r in DEFAULT_RULES)),
        ig_prompt=DEFAULT_IG_PROMPT,
        policy_kind=start.config.policy_kind,
    )
    page["restore_btn"].click(
        **page.wire(form_notice.restore_handler(defaults), outputs=form_notice.RESTORE_OUTPUTS),
        api_visibility="private",
        **CHEAP,
    )
    note = page.wire(form_notice.notice_handler(defaults), form=RunInputs, outputs=form_notice.NOTICE_OUTPUTS)
    # Editing the form by hand keeps a shown notice true (and hides it once back at the defaults).
    refresh = page.wire(
        form_notice.refresh_handler(defaults), form=RunInputs, outputs=form_notice.NOTICE_OUTPUTS
    )
    for name in ("method", *SETTINGS_FIELDS):
        page[name].input(**refresh, api_visibility="private", show_progress="hidden", **CHEAP)
    return note


def _wire_inspector(page: Page) -> None:
    """A node picked in the list, in the table, or by a click on the tree."""
    page["node_dd"].input(
        **page.wire(inspector.inspect_node, inputs={"node": "node_dd"}, outputs=INSPECT_OUTPUTS),
        api_name="inspect",
        **CHEAP,
    )
    page["table"].select(
        **page.wire(inspector.inspect_row, outputs=INSPECT_OUTPUTS, select=True),
        api_visibility="private",
        **CHEAP,
    )
    page["click_go"].click(
        **page.wire(inspector.inspect_node, inputs={"node": "click_node"}, outputs=INSPECT_OUTPUTS),
        api_visibility="private",
        **CHEAP,
    )
    # Why the selection entered the inspected node: its rounds and bars follow the list's value.
    node = {"node": "node_dd"}
    page["node_dd"].change(
        **page.wire(selection_for_node, inputs=node, outputs=SELECTION_OUTPUTS),
        api_visibility="private",
        **CHEAP,
    )
    page["sel_round"].input(
        **page.wire(selection_for_round, inputs={**node, "round_no": "sel_round"}, outputs=SELECTION_OUTPUTS),
        api_visibility="private",
        **CHEAP,
    )


def _wire_truth_and_twin(page: Page, runs: ModelRuns) -> None:
    page["truth_toggle"].input(
        **page.wire(overlay.toggle_truth, inputs={"show": "truth_toggle"}, outputs=overlay.TOGGLE_OUTPUTS),
        api_visibility="private",
        **CHEAP,
    )
    # The twin is a model run: admitted, gated and limited like Run (ui.twin).
    run_twin = page.wire(
        twin.run_twin, form=RunInputs, outputs=[*TWIN_OUTPUTS, "stop_btn"], decorate=runs.gpu
    )
    page["twin_btn"].click(**_admit(page, "twin_status")).success(**run_twin, api_name="twin", **runs.queue)


def _wire_traces(page: Page, note: dict[str, Any]) -> None:
    """Loading a trace fills the Search tab and the replay, then says what it changed in the form."""
    page["upload"].upload(
        **page.wire(traces.load, inputs={"file": "upload"}, outputs=LOAD_OUTPUTS),
        api_name="load_trace",
        **CHEAP,
    ).then(**note, api_visibility="private", **CHEAP)
    page["bundled"].input(
        **page.wire(traces.load_bundled, inputs={"name": "bundled"}, outputs=LOAD_OUTPUTS),
        api_name="load_example_trace",
        **CHEAP,
    ).then(**note, api_visibility="private", **CHEAP)
    # .change follows every input of the slider (drag, arrow keys, the number box), not only a release.
    page["replay_slider"].change(
        **page.wire(
            replay.replay, inputs={"round_no": "replay_slider"}, outputs=["replay_plot", "replay_status"]
        ),
        api_name="replay",
        trigger_mode="always_last",
        validator=replay.validate_round,
        **CHEAP,
    )


def _wire_compare(demo: gr.Blocks, page: Page, runs: ModelRuns) -> None:
    """Run both, Stop, and the line that says what Compare will run (kept current as the form changes)."""
    compare = page.wire(handlers.compare, form=CompareInputs, outputs=COMPARE_OUTPUTS, decorate=runs.gpu)
    page["compare_btn"].click(**_admit(page, "compare_status")).success(
        **compare, api_name="compare", **runs.queue
    )
    page["compare_stop"].click(
        **page.wire(handlers.stop_compare, outputs=["compare_status"]),
        api_visibility="private",
        **CHEAP,
    )
    info = page.wire(handlers.describe_compare, form=CompareInputs, outputs=["compare_info"])
    for name in ("question", "kb_spec", "method_a", *SETTINGS_FIELDS):
        page[name].change(**info, api_visibility="private", show_progress="hidden", **CHEAP)
    demo.load(**info, api_visibility="private", **CHEAP)
