"""MCTS-KBQA: the Gradio demo. Layout and event wiring only; the logic is in `ui/`.

    python app.py [--host 127.0.0.1] [--port 7860] [--kb demo] [--policy-model ID] [--scorer-model ID]

Starts offline with the bundled model and demo KB (models load on the first run).
On Hugging Face Spaces the same file is the entry point (README front matter).
Components are registered by name in one `Page`; every handler reads a typed form or
named values and returns a dict keyed by those names (`ui.wiring`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from ui.config import AppConfig, parse_config  # noqa: E402  (light: `--help` stays fast)
from ui.session import Session  # noqa: E402

if TYPE_CHECKING:
    import gradio as gr

    from mcts.search.settings import SearchSettings

# Run: bring the status line (and the tree below it) to the top of the viewport.
SCROLL_TO_STATUS_JS = (
    "() => { document.getElementById('status')?.scrollIntoView({behavior: 'smooth', block: 'start'}); }"
)


def new_session() -> Session:
    """Each browser session gets its own tree and view."""
    return Session()


def build_app(config: AppConfig | None = None, defaults: SearchSettings | None = None) -> gr.Blocks:
    """The whole page. `defaults` pre-fills the settings form (if None: the paper's on a GPU,
    the CPU preset without one)."""
    import gradio as gr

    from mcts.search.cleaning import DEFAULT_RULES, RULE_INFO, CleaningRule
    from mcts.search.protocols import DEFAULT_IG_PROMPT
    from ui import (
        form_notice,
        handlers,
        ig_evidence,
        inspector,
        overlay,
        presets,
        public,
        replay,
        rescoring,
        traces,
        twin,
    )
    from ui.config import WIKIDATA_EXAMPLES_FILE, bundled_traces, gpu_decorator, load_example_questions
    from ui.fields import SettingNumber, SettingSlider
    from ui.forms import SETTING_RANGES as R  # each setting field is drawn with its checked range
    from ui.forms import SETTINGS_FIELDS, CompareInputs, RunInputs
    from ui.render import EMPTY_DETAIL, MAIN_OUTPUTS, TWIN_OUTPUTS
    from ui.theme import ABOUT_MD, HEADER_HTML, LAB_MD
    from ui.wiring import Page
    from viz import NODE_TABLE_HEADERS, VOTE_TABLE_HEADERS
    from viz.answer_rule import NODE_TABLE_GLOSS
    from viz.panels import node_table_widths

    GPU = gpu_decorator()  # noqa: N806  (spaces.GPU on ZeroGPU, identity elsewhere)
    config = config or AppConfig()
    machine = presets.machine_defaults()
    d = defaults or machine.settings
    c: dict[str, Any] = {}  # every wired component by name (ui.forms fields, handler outputs)
    with gr.Blocks(title="MCTS-KBQA · IG-reward tree search") as demo:
        state = gr.State(new_session)
        gr.HTML(HEADER_HTML)
        with gr.Tabs():
            with gr.Tab("Search", id="search"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3, min_width=380):
                        c["question"] = gr.Textbox(
                            label="Question", lines=2, max_lines=6, elem_id="question",
                            placeholder="Ask something the knowledge base can answer, e.g. Who directed Inception?",
                        )  # fmt: skip
                        with gr.Row(elem_id="kb-method-row"):
                            c["kb_spec"] = gr.Dropdown(
                                choices=list(public.MODE.allowed_kbs) if public.MODE.enabled else ["demo", "demo-wikidata"],
                                value=config.kb, allow_custom_value=not public.MODE.enabled, label="Knowledge base",
                                info="the bundled demos and the operator's KBs" if public.MODE.enabled
                                else '"demo", a .nt/.ttl file or folder, or an http(s) SPARQL endpoint',
                            )  # fmt: skip
                            c["method"] = gr.Dropdown(
                                handlers.METHOD_CHOICES, value=d.method.value, label="Search method",
                                elem_id="method",
                            )  # fmt: skip
                        # Shown after a trace load changed the form (ui.form_notice): a class must
                        # not run the ablation a loaded trace left behind without knowing it.
                        c["form_note_box"] = gr.Group(visible=False, elem_id="form-note-box")
                        with c["form_note_box"]:
                            c["form_note"] = gr.Markdown(elem_id="form-note")
                            restore_btn = gr.Button(
                                "Back to the defaults", size="sm", elem_id="restore-defaults"
                            )
                        with gr.Row():
                            c["run_btn"] = gr.Button("Run search", variant="primary", elem_id="run-btn")
                            c["fresh_btn"] = gr.Button("Fresh run", elem_id="fresh-btn", size="md")
                            c["stop_btn"] = gr.Button(
                                "Stop", variant="stop", elem_id="stop-btn", interactive=False
                            )
                        c["preset"] = gr.Textbox(machine.preset if defaults is None else "", visible=False)
                        c["status"] = gr.Markdown(
                            "Ready. Type a question (or pick an example) and press **Run search**.",
                            elem_id="status",
                        )
                    with gr.Column(scale=2, min_width=320):
                        c["machine_note"] = gr.Markdown(machine.note, elem_id="machine-note")
                        with gr.Row():
                            preset_buttons = {
                                name: gr.Button(label, size="sm", elem_id=f"preset-{name}")
                                for name, label in machine.buttons.items()
                            }
                        with gr.Accordion("Search settings", open=False, elem_id="settings"):
                            with gr.Row():
                                c["rounds"] = SettingSlider(
                                    *R["rounds"], value=d.rounds, step=1, label="rounds"
                                )
                                c["k"] = SettingSlider(*R["k"], value=d.k, step=1, label="k candidates")
                            with gr.Row():
                                c["c"] = SettingNumber(d.c, label="UCT c", minimum=R["c"][0])
                                c["alpha"] = SettingNumber(
                                    d.alpha, label="α (reward scale)", minimum=R["alpha"][0]
                                )
                                c["beta"] = SettingNumber(d.beta, label="β (sharpness)", minimum=R["beta"][0])
                            with gr.Row():
                                c["expected_depth"] = SettingSlider(
                                    *R["expected_depth"],
                                    value=d.expected_depth,
                                    step=1,
                                    label="expected depth",
                                )
                                c["max_depth"] = SettingSlider(
                                    *R["max_depth"], value=d.max_depth, step=1, label="max depth"
                                )
                            with gr.Row():
                                c["early_stop"] = SettingSlider(
                                    *R["early_stop"],
                                    value=d.early_stop_terminals,
                                    step=1,
                                    label="early stop after answers",
                                )
                                c["seed"] = SettingNumber(d.seed, label="seed", precision=0)
                        with gr.Accordion("Models", open=False, visible=not public.MODE.enabled):
                            c["policy_kind"] = gr.Radio(
                                ["guided", "react"], value=config.policy_kind, label="policy"
                            )
                            c["policy_model"] = gr.Textbox(
                                config.policy_model,
                                label="policy model",
                                placeholder="bundled SmolLM2-135M-Instruct",
                            )
                            c["scorer_model"] = gr.Textbox(
                                config.scorer_model,
                                label="IG scorer model",
                                placeholder="bundled SmolLM2-135M-Instruct",
                            )
                            c["policy_endpoint"] = gr.Textbox(
                                config.policy_endpoint, label="policy endpoint (optional)",
                                placeholder="OpenAI-compatible URL, e.g. a vLLM server (react policy)",
                            )  # fmt: skip
                        examples = load_example_questions()
                        c["examples_box"] = gr.Accordion(
                            "Example questions (Freebase-shaped demo KB)", open=True
                        )
                        with c["examples_box"]:
                            if examples:
                                gr.Examples(
                                    [[q, "demo"] for q in examples], inputs=[c["question"], c["kb_spec"]],
                                    label=None, examples_per_page=5, cache_examples=False,
                                )  # fmt: skip
                        wikidata_examples = load_example_questions(WIKIDATA_EXAMPLES_FILE, limit=6)
                        if wikidata_examples:
                            with gr.Accordion("Example questions (Wikidata-shaped demo KB)", open=False):
                                gr.Examples(
                                    [[q, "demo-wikidata"] for q in wikidata_examples],
                                    inputs=[c["question"], c["kb_spec"]], label=None, examples_per_page=6,
                                    cache_examples=False,
                                )  # fmt: skip
                c["plot"] = gr.Plot(label="Search tree", elem_id="tree-plot")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3, min_width=420, elem_id="inspector"):
                        gr.Markdown("### Node inspector")
                        c["node_dd"] = gr.Dropdown(
                            choices=[], label="Node", info="or click a point in the tree, or a table row",
                            elem_id="node-dd",
                        )  # fmt: skip
                        c["detail"] = gr.Markdown(EMPTY_DETAIL, elem_id="node-detail")
                        c["history"] = gr.HTML(elem_id="history")
                    with gr.Column(scale=2, min_width=340, elem_id="answer-panel"):
                        c["answer"] = gr.Markdown("*No answer yet.*", elem_id="answer")
                        c["votes"] = gr.Dataframe(
                            headers=VOTE_TABLE_HEADERS, label="Vote over terminal branches", interactive=False,
                            wrap=True, elem_id="vote-table", column_widths=["46%", "16%", "18%", "20%"],
                        )  # fmt: skip
                        c["cost"] = gr.Markdown(elem_id="cost")
                        c["trace_file"] = gr.File(
                            label="Trace of this run (download)", interactive=False, elem_id="trace-file"
                        )
                # Off by default: a class sees the search first, then asks whether IG was right.
                with gr.Accordion(
                    "Is IG right here? The truth overlay and the twin", open=True, elem_id="truth-box"
                ):
                    with gr.Row(equal_height=True):
                        c["truth_toggle"] = gr.Checkbox(
                            False, label="Show truth (gold)", elem_id="truth-toggle",
                            info="example questions: each node's true value, IG's top child ringed right or wrong",
                        )  # fmt: skip
                        twin_btn = gr.Button("Run the constant-reward twin", elem_id="twin-btn")
                    c["truth"] = gr.Markdown(elem_id="truth-summary")
                    c["twin_status"] = gr.Markdown(elem_id="twin-status")
                    with gr.Row(equal_height=False):
                        c["twin_plot_a"] = gr.Plot(label="IG reward", elem_id="twin-plot-a", visible=False)
                        c["twin_plot_b"] = gr.Plot(
                            label="Constant-reward twin", elem_id="twin-plot-b", visible=False
                        )
                    c["twin_diff"] = gr.Markdown(elem_id="twin-diff")
                    # One run's groups are few: what IG did over many questions, as measured.
                    gr.Markdown(ig_evidence.evidence_markdown(), elem_id="ig-evidence")
                with gr.Accordion("All nodes (table: select a row to inspect it)", open=False):
                    gr.Markdown(NODE_TABLE_GLOSS, elem_id="node-table-gloss")
                    c["table"] = gr.Dataframe(
                        headers=NODE_TABLE_HEADERS, interactive=False, wrap=True, elem_id="node-table",
                        max_height=420, column_widths=node_table_widths(NODE_TABLE_HEADERS),
                    )  # fmt: skip
                c["click_node"] = gr.Textbox(visible="hidden", elem_id="click-node")
                click_go = gr.Button("inspect clicked node", visible="hidden", elem_id="click-go")

            with gr.Tab("Cleaning-rule lab", id="lab"):
                # Controls on the left, results on the right: what Re-score changes stays in
                # view beside its button at 1280x800 (stacked, they fell below the fold).
                with gr.Row(equal_height=False):
                    with gr.Column(scale=2, min_width=300):
                        rescore_btn = gr.Button(
                            "Re-score the tree with these rules", variant="primary", elem_id="rescore-btn"
                        )
                        c["rules"] = gr.CheckboxGroup(
                            [(f"{RULE_INFO[r].label}: {RULE_INFO[r].explanation}", r.value) for r in CleaningRule],
                            value=sorted(r.value for r in DEFAULT_RULES), label="Cleaning rules (all on = the paper)",
                            elem_id="rules",
                        )  # fmt: skip
                        c["ig_prompt"] = gr.Textbox(
                            DEFAULT_IG_PROMPT,
                            label="IG prompt (between the history and the question)",
                            lines=1,
                        )
                        gr.Markdown(LAB_MD, elem_id="lab-help")
                    with gr.Column(scale=3, min_width=320):
                        c["lab_status"] = gr.Markdown(
                            "After **Re-score**: what changed, and the tree with the nodes that changed rank ringed.",
                            elem_id="lab-status",
                        )
                        c["rank_changes"] = gr.Markdown(elem_id="rank-changes")
                        c["lab_plot"] = gr.Plot(label="Re-scored tree", elem_id="lab-plot")
                c["reward_table"] = gr.Dataframe(
                    headers=rescoring.REWARD_TABLE_HEADERS, label="Rewards before → after (largest change first)",
                    interactive=False, max_height=360, column_widths=["7%", "57%", "12%", "12%", "12%"],
                )  # fmt: skip

            # The slider and its tree on the right, high on the page: moving the slider
            # visibly redraws the tree (stacked under the upload box, it started ~730 px down).
            with gr.Tab("Traces & replay", id="traces"), gr.Row(equal_height=False):
                with gr.Column(scale=2, min_width=300):
                    c["bundled"] = gr.Dropdown(
                        bundled_traces(), value=None, label="Open a recorded example trace", elem_id="bundled-trace",
                        info="recorded with the bundled model on the demo KB",
                    )  # fmt: skip
                    c["upload"] = gr.File(
                        label="…or upload a trace (.json)", file_types=[".json"], type="filepath",
                        elem_id="trace-upload", height=140,
                    )  # fmt: skip
                    gr.Markdown(
                        "Load a trace recorded by the app or by `python -m mcts run --trace out.json` and replay it "
                        "round by round. No model is needed: a CPU-only Space can show recorded GPU runs. Loading a "
                        "trace also puts its question and settings into the Search tab's form (which then says so). "
                        "The run on screen is downloadable from the Search tab."
                    )
                with gr.Column(scale=3, min_width=320):
                    # Its round is checked by the replay event's validator (replay.validate_round).
                    c["replay_slider"] = SettingSlider(
                        0, 1, value=0, step=1, label="Show the tree after round", interactive=False,
                        elem_id="replay-slider",
                    )  # fmt: skip
                    c["replay_status"] = gr.Markdown(elem_id="replay-status")
                    c["replay_plot"] = gr.Plot(label="Replay", elem_id="replay-plot")

            with gr.Tab("Compare methods", id="compare"):
                gr.Markdown(
                    "Run two methods on the question of the Search tab, with the same settings and models."
                )
                c["compare_info"] = gr.Markdown(elem_id="compare-info")
                with gr.Row():
                    c["method_a"] = gr.Dropdown(handlers.METHOD_CHOICES, value="fast", label="Method A")
                    c["method_b"] = gr.Dropdown(handlers.METHOD_CHOICES, value="classic", label="Method B")
                with gr.Row():
                    compare_btn = gr.Button("Run both", variant="primary")
                    c["compare_stop"] = gr.Button("Stop", variant="stop", interactive=False)
                c["compare_status"] = gr.Markdown()
                with gr.Row(equal_height=False):
                    with gr.Column(min_width=320):
                        c["plot_a"] = gr.Plot(label="Method A")
                        c["cost_a"] = gr.Markdown()
                    with gr.Column(min_width=320):
                        c["plot_b"] = gr.Plot(label="Method B")
                        c["cost_b"] = gr.Markdown()

            with gr.Tab("How it works", id="about"):
                gr.Markdown(ABOUT_MD)

        # ---- wiring, by name: each handler gets a typed form or named values, returns a dict by name
        page = Page(state, c)
        main = (*MAIN_OUTPUTS, "stop_btn", "examples_box")
        replay_out = (*replay.REPLAY_OUTPUTS, "stop_btn")
        models = {"concurrency_id": "models", "concurrency_limit": 1}
        # A run takes its place in the run gate as it joins the queue, whoever calls it; the
        # settings' ranges are checked there too (ui.fields: Gradio's own check would answer a bare 400).
        runs = {**models, "validator": public.run_validator({name: c[name] for name in SETTINGS_FIELDS})}
        cheap = {"concurrency_limit": None}
        run = page.wire(handlers.run, form=RunInputs, outputs=main, decorate=GPU)
        # A cheap first step takes a place in the run queue ("N ahead of you") or refuses.
        admit = {**page.wire(public.admitter(), outputs=["status"]), "api_visibility": "private", **cheap}
        run_event = c["run_btn"].click(**admit).success(**run, api_name="run", **runs)
        c["run_btn"].click(None, js=SCROLL_TO_STATUS_JS)
        fresh_event = c["fresh_btn"].click(**admit).success(
            **page.wire(handlers.run_fresh, form=RunInputs, outputs=main, decorate=GPU), api_name="fresh_run", **runs
        )  # fmt: skip
        c["fresh_btn"].click(None, js=SCROLL_TO_STATUS_JS)
        c["question"].submit(None, js=SCROLL_TO_STATUS_JS)
        submit_event = c["question"].submit(**admit).success(**run, api_visibility="private", **runs)
        sync = page.wire(replay.sync_replay, outputs=replay_out)
        for event, name in ((run_event, "sync_replay"), (fresh_event, None), (submit_event, None)):
            event.then(**sync, api_name=name, api_visibility="public" if name else "private", **cheap)
        c["stop_btn"].click(**page.wire(handlers.stop_search, outputs=["status"]), api_name="stop", **cheap)
        hide_note = page.wire(form_notice.hide, outputs=form_notice.NOTICE_OUTPUTS[1:])
        for name, btn in preset_buttons.items():
            btn.click(
                **page.wire(presets.preset_handler(name), outputs=["method", *SETTINGS_FIELDS, "preset", "machine_note"]),
                api_visibility="private", **cheap,
            ).then(**hide_note, api_visibility="private", **cheap)  # fmt: skip
        form_defaults = form_notice.FormDefaults(
            settings=d, preset=machine.preset if defaults is None else "", rules=tuple(sorted(r.value for r in DEFAULT_RULES)),
            ig_prompt=DEFAULT_IG_PROMPT, policy_kind=config.policy_kind,
        )  # fmt: skip
        restore_btn.click(
            **page.wire(form_notice.restore_handler(form_defaults), outputs=form_notice.RESTORE_OUTPUTS),
            api_visibility="private", **cheap,
        )  # fmt: skip
        note = page.wire(
            form_notice.notice_handler(form_defaults), form=RunInputs, outputs=form_notice.NOTICE_OUTPUTS
        )
        # Editing the form by hand keeps a shown notice true (and hides it once back at the defaults).
        refresh = page.wire(
            form_notice.refresh_handler(form_defaults), form=RunInputs, outputs=form_notice.NOTICE_OUTPUTS
        )
        for name in ("method", *SETTINGS_FIELDS):
            c[name].input(**refresh, api_visibility="private", show_progress="hidden", **cheap)

        inspect_out = ["detail", "history", "plot", "node_dd"]
        c["node_dd"].input(
            **page.wire(inspector.inspect_node, inputs={"node": "node_dd"}, outputs=inspect_out),
            api_name="inspect", **cheap,
        )  # fmt: skip
        c["table"].select(
            **page.wire(inspector.inspect_row, outputs=inspect_out, select=True), api_visibility="private", **cheap
        )  # fmt: skip
        click_go.click(
            **page.wire(inspector.inspect_node, inputs={"node": "click_node"}, outputs=inspect_out),
            api_visibility="private", **cheap,
        )  # fmt: skip

        c["truth_toggle"].input(
            **page.wire(overlay.toggle_truth, inputs={"show": "truth_toggle"}, outputs=overlay.TOGGLE_OUTPUTS),
            api_visibility="private", **cheap,
        )  # fmt: skip
        # The twin is a model run: admitted, gated and limited like Run (ui.twin).
        twin_btn.click(
            **page.wire(public.admitter("twin_status"), outputs=["twin_status"]), api_visibility="private", **cheap
        ).success(
            **page.wire(twin.run_twin, form=RunInputs, outputs=[*TWIN_OUTPUTS, "stop_btn"], decorate=GPU),
            api_name="twin", **runs,
        )  # fmt: skip
        rescore_out = ["lab_status", "rank_changes", "reward_table", "lab_plot", *MAIN_OUTPUTS]
        rescore_in = {"rules": "rules", "ig_prompt": "ig_prompt", "scorer_model": "scorer_model"}
        rescore_btn.click(
            **page.wire(rescoring.rescore, inputs=rescore_in, outputs=rescore_out, decorate=GPU),
            api_name="rescore", **models,
        )  # fmt: skip
        load_out = [
            *MAIN_OUTPUTS, *replay.REPLAY_OUTPUTS, "question", "kb_spec", "method", *SETTINGS_FIELDS, "preset", "policy_kind",
            "rules", "ig_prompt",
        ]  # fmt: skip
        c["upload"].upload(
            **page.wire(traces.load, inputs={"file": "upload"}, outputs=load_out),
            api_name="load_trace",
            **cheap,
        ).then(**note, api_visibility="private", **cheap)
        c["bundled"].input(
            **page.wire(traces.load_bundled, inputs={"name": "bundled"}, outputs=load_out),
            api_name="load_example_trace", **cheap,
        ).then(**note, api_visibility="private", **cheap)  # fmt: skip
        # .change follows every input of the slider (drag, arrow keys, the number box), not only a release.
        c["replay_slider"].change(
            **page.wire(replay.replay, inputs={"round_no": "replay_slider"}, outputs=["replay_plot", "replay_status"]),
            api_name="replay", trigger_mode="always_last", validator=replay.validate_round, **cheap,
        )  # fmt: skip
        compare_out = [
            "compare_status",
            "compare_info",
            "compare_stop",
            "plot_a",
            "cost_a",
            "plot_b",
            "cost_b",
        ]
        compare_btn.click(
            **page.wire(public.admitter("compare_status"), outputs=["compare_status"]), api_visibility="private", **cheap
        ).success(
            **page.wire(handlers.compare, form=CompareInputs, outputs=compare_out, decorate=GPU),
            api_name="compare", **runs,
        )  # fmt: skip
        c["compare_stop"].click(
            **page.wire(handlers.stop_compare, outputs=["compare_status"]), api_visibility="private", **cheap
        )
        info = page.wire(handlers.describe_compare, form=CompareInputs, outputs=["compare_info"])
        for name in ("question", "kb_spec", "method_a", *SETTINGS_FIELDS):
            c[name].change(**info, api_visibility="private", show_progress="hidden", **cheap)
        demo.load(**info, api_visibility="private", **cheap)
    # Public mode: no REST route around the queue (Gradio opens them off Spaces), so every
    # run waits its turn in the one model slot and the run gate sees it.
    demo.queue(max_size=config.queue_size, default_concurrency_limit=1, api_open=not public.MODE.enabled)
    public.watch_queue(demo)  # a waiting place lives while its run is in this queue
    return demo


def launch_kwargs() -> dict[str, Any]:
    """Theme, CSS and the click bridge go to launch() in Gradio 6; the shipped traces may be
    downloaded from wherever the app was started."""
    from ui.config import TRACES_DIR
    from ui.public import MODE
    from ui.theme import CSS, JS, theme

    kwargs: dict[str, Any] = {"theme": theme(), "css": CSS, "js": JS, "allowed_paths": [str(TRACES_DIR)]}
    if MODE.limits.max_upload_bytes is not None:
        kwargs["max_file_size"] = MODE.limits.max_upload_bytes  # uploads over it are refused by Gradio
    return kwargs


def main(argv: list[str] | None = None) -> None:
    config = parse_config(argv)
    demo = build_app(config)
    demo.launch(server_name=config.host, server_port=config.port, **launch_kwargs())


if __name__ == "__main__":
    main(sys.argv[1:])
