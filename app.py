"""MCTS-KBQA: the Gradio demo. Layout and event wiring only; the logic is in `ui/`.

    python app.py [--host 127.0.0.1] [--port 7860] [--kb demo] [--policy-model ID] [--scorer-model ID]

Starts offline with the bundled model and demo KB (models load on the first run).
On Hugging Face Spaces the same file is the entry point (README front matter).
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


def new_session() -> Session:
    """Each browser session gets its own tree and view."""
    return Session()


def build_app(config: AppConfig | None = None, defaults: SearchSettings | None = None) -> gr.Blocks:
    """The whole page. `defaults` pre-fills the settings form (the paper's values if None)."""
    import gradio as gr

    from mcts.search.cleaning import DEFAULT_RULES, RULE_INFO, CleaningRule
    from mcts.search.protocols import DEFAULT_IG_PROMPT
    from mcts.search.settings import SearchSettings
    from ui import handlers, inspector, replay, rescoring, traces
    from ui.config import WIKIDATA_EXAMPLES_FILE, bundled_traces, gpu_decorator, load_example_questions
    from ui.render import EMPTY_DETAIL
    from ui.theme import ABOUT_MD, HEADER_HTML, LAB_MD
    from viz import NODE_TABLE_HEADERS, VOTE_TABLE_HEADERS

    GPU = gpu_decorator()  # noqa: N806  (spaces.GPU on ZeroGPU, identity elsewhere)
    config = config or AppConfig()
    d = defaults or SearchSettings()
    with gr.Blocks(title="MCTS-KBQA · IG-reward tree search") as demo:
        state = gr.State(new_session)
        gr.HTML(HEADER_HTML)
        with gr.Tabs():
            with gr.Tab("Search", id="search"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3):
                        question = gr.Textbox(
                            label="Question", lines=2, max_lines=6, elem_id="question",
                            placeholder="Ask something the knowledge base can answer, e.g. Who directed Inception?",
                        )  # fmt: skip
                        with gr.Row():
                            kb = gr.Dropdown(
                                choices=["demo", "demo-wikidata"], value=config.kb, allow_custom_value=True, label="Knowledge base",
                                info='"demo", a .nt/.ttl file or folder, or an http(s) SPARQL endpoint',
                            )  # fmt: skip
                            method = gr.Dropdown(
                                handlers.METHOD_CHOICES, value=d.method.value, label="Search method"
                            )
                        with gr.Row():
                            run_btn = gr.Button("Run search", variant="primary", elem_id="run-btn")
                            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop-btn")
                    with gr.Column(scale=2):
                        with gr.Accordion("Search settings (paper defaults)", open=False):
                            with gr.Row():
                                rounds = gr.Slider(1, 30, value=d.rounds, step=1, label="rounds")
                                k = gr.Slider(1, 10, value=d.k, step=1, label="k candidates")
                            with gr.Row():
                                c = gr.Number(d.c, label="UCT c", minimum=0)
                                alpha = gr.Number(d.alpha, label="α (reward scale)", minimum=0)
                                beta = gr.Number(d.beta, label="β (sharpness)", minimum=0)
                            with gr.Row():
                                expected_depth = gr.Slider(
                                    0, 20, value=d.expected_depth, step=1, label="expected depth"
                                )
                                max_depth = gr.Slider(1, 20, value=d.max_depth, step=1, label="max depth")
                            with gr.Row():
                                early_stop = gr.Slider(
                                    1,
                                    20,
                                    value=d.early_stop_terminals,
                                    step=1,
                                    label="early stop after answers",
                                )
                                seed = gr.Number(d.seed, label="seed", precision=0)
                        with gr.Accordion("Models", open=False):
                            policy_kind = gr.Radio(
                                ["guided", "react"], value=config.policy_kind, label="policy"
                            )
                            policy_model = gr.Textbox(
                                config.policy_model,
                                label="policy model",
                                placeholder="bundled SmolLM2-135M-Instruct",
                            )
                            scorer_model = gr.Textbox(
                                config.scorer_model,
                                label="IG scorer model",
                                placeholder="bundled SmolLM2-135M-Instruct",
                            )
                            policy_endpoint = gr.Textbox(
                                config.policy_endpoint,
                                label="policy endpoint (optional)",
                                placeholder="OpenAI-compatible URL, e.g. a vLLM server (react policy)",
                            )
                examples = load_example_questions()
                if examples:
                    gr.Examples(
                        [[q, "demo"] for q in examples],
                        inputs=[question, kb],
                        label="Example questions (Freebase-shaped demo KB)",
                        cache_examples=False,
                    )
                wikidata_examples = load_example_questions(WIKIDATA_EXAMPLES_FILE, limit=6)
                if wikidata_examples:
                    gr.Examples(
                        [[q, "demo-wikidata"] for q in wikidata_examples],
                        inputs=[question, kb],
                        label="Example questions (Wikidata-shaped demo KB)",
                        cache_examples=False,
                    )
                status = gr.Markdown("Ready. Type a question and press **Run search**.", elem_id="status")
                plot = gr.Plot(label="Search tree", elem_id="tree-plot")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3, elem_id="inspector"):
                        gr.Markdown("### Node inspector")
                        node_dd = gr.Dropdown(
                            choices=[],
                            label="Node",
                            info="or click a point in the tree, or a table row",
                            elem_id="node-dd",
                        )
                        detail = gr.Markdown(EMPTY_DETAIL, elem_id="node-detail")
                        history = gr.HTML(elem_id="history")
                    with gr.Column(scale=2, elem_id="answer-panel"):
                        answer = gr.Markdown("*No answer yet.*", elem_id="answer")
                        votes = gr.Dataframe(
                            headers=VOTE_TABLE_HEADERS,
                            label="Vote over terminal branches",
                            interactive=False,
                            wrap=True,
                        )
                        cost = gr.Markdown(elem_id="cost")
                        trace_file = gr.File(
                            label="Trace of this run (download)", interactive=False, elem_id="trace-file"
                        )
                with gr.Accordion("All nodes (table: select a row to inspect it)", open=False):
                    table = gr.Dataframe(
                        headers=NODE_TABLE_HEADERS,
                        interactive=False,
                        wrap=True,
                        elem_id="node-table",
                        max_height=420,
                    )
                click_node = gr.Textbox(visible="hidden", elem_id="click-node")
                click_go = gr.Button("inspect clicked node", visible="hidden", elem_id="click-go")

            with gr.Tab("Cleaning-rule lab", id="lab"):
                gr.Markdown(LAB_MD)
                rules = gr.CheckboxGroup(
                    [(f"{RULE_INFO[r].label}: {RULE_INFO[r].explanation}", r.value) for r in CleaningRule],
                    value=sorted(r.value for r in DEFAULT_RULES), label="Cleaning rules (all on = the paper)", elem_id="rules",
                )  # fmt: skip
                ig_prompt = gr.Textbox(
                    DEFAULT_IG_PROMPT, label="IG prompt (between the history and the question)", lines=1
                )
                rescore_btn = gr.Button(
                    "Re-score the tree with these rules", variant="primary", elem_id="rescore-btn"
                )
                lab_status = gr.Markdown(elem_id="lab-status")
                rank_changes = gr.Markdown(elem_id="rank-changes")
                reward_table = gr.Dataframe(
                    headers=rescoring.REWARD_TABLE_HEADERS,
                    label="Rewards before → after (largest change first)",
                    interactive=False,
                    max_height=360,
                    column_widths=["7%", "57%", "12%", "12%", "12%"],
                )
                lab_plot = gr.Plot(label="Re-scored tree", elem_id="lab-plot")

            with gr.Tab("Traces & replay", id="traces"):
                gr.Markdown(
                    "Load a trace recorded by the app or by `python -m mcts run --trace out.json` and replay it round by "
                    "round. No model is needed: a CPU-only Space can show recorded GPU runs. The run on screen is "
                    "downloadable from the Search tab."
                )
                with gr.Row(equal_height=False):
                    upload = gr.File(
                        label="Upload a trace (.json)",
                        file_types=[".json"],
                        type="filepath",
                        elem_id="trace-upload",
                    )
                    bundled = gr.Dropdown(
                        bundled_traces(), value=None, label="…or open a recorded example trace", elem_id="bundled-trace",
                        info="recorded with the bundled model on the demo KB",
                    )  # fmt: skip
                replay_slider = gr.Slider(
                    0, 1, value=0, step=1, label="Show the tree after round", interactive=False
                )
                replay_status = gr.Markdown()
                replay_plot = gr.Plot(label="Replay", elem_id="replay-plot")

            with gr.Tab("Compare methods", id="compare"):
                gr.Markdown(
                    "Run two methods on the question of the Search tab, with the same settings and models."
                )
                with gr.Row():
                    method_a = gr.Dropdown(handlers.METHOD_CHOICES, value="fast", label="Method A")
                    method_b = gr.Dropdown(handlers.METHOD_CHOICES, value="classic", label="Method B")
                with gr.Row():
                    compare_btn = gr.Button("Run both", variant="primary")
                    compare_stop = gr.Button("Stop", variant="stop")
                compare_status = gr.Markdown()
                with gr.Row(equal_height=False):
                    with gr.Column():
                        plot_a = gr.Plot(label="Method A")
                        cost_a = gr.Markdown()
                    with gr.Column():
                        plot_b = gr.Plot(label="Method B")
                        cost_b = gr.Markdown()

            with gr.Tab("How it works", id="about"):
                gr.Markdown(ABOUT_MD)

        # ---- wiring
        main_outputs = [status, plot, table, node_dd, answer, votes, cost, trace_file, detail, history]
        settings_inputs = [  # order = the handlers' parameters after the method
            rounds,
            k,
            c,
            alpha,
            beta,
            expected_depth,
            max_depth,
            early_stop,
            seed,
            policy_kind,
            policy_model,
            scorer_model,
            policy_endpoint,
        ]
        replay_outputs = [replay_slider, replay_plot, replay_status]
        model_group = {"concurrency_id": "models", "concurrency_limit": 1}
        cheap = {"concurrency_limit": None}

        run_event = run_btn.click(
            GPU(handlers.run), [state, question, kb, method, *settings_inputs, rules, ig_prompt], main_outputs,
            api_name="run", **model_group,
        )  # fmt: skip
        question.submit(
            GPU(handlers.run), [state, question, kb, method, *settings_inputs, rules, ig_prompt], main_outputs,
            api_visibility="private", **model_group,
        ).then(replay.sync_replay, state, replay_outputs, api_name="sync_replay_submit", api_visibility="private", **cheap)  # fmt: skip
        run_event.then(replay.sync_replay, state, replay_outputs, api_name="sync_replay", **cheap)
        stop_btn.click(handlers.stop, state, status, api_name="stop", **cheap)

        inspect_outputs = [detail, history, plot, node_dd]
        node_dd.input(inspector.inspect_node, [state, node_dd], inspect_outputs, api_name="inspect", **cheap)
        table.select(inspector.inspect_row, state, inspect_outputs, api_visibility="private", **cheap)
        click_go.click(
            inspector.inspect_node, [state, click_node], inspect_outputs, api_visibility="private", **cheap
        )

        rescore_btn.click(
            GPU(rescoring.rescore), [state, rules, ig_prompt, scorer_model],
            [lab_status, rank_changes, reward_table, lab_plot, *main_outputs], api_name="rescore", **model_group,
        )  # fmt: skip
        upload.upload(
            traces.load,
            [state, upload],
            [*main_outputs, *replay_outputs, rules, ig_prompt],
            api_name="load_trace",
            **cheap,
        )
        bundled.input(
            traces.load_bundled, [state, bundled], [*main_outputs, *replay_outputs, rules, ig_prompt],
            api_name="load_example_trace", **cheap,
        )  # fmt: skip
        replay_slider.release(
            replay.replay, [state, replay_slider], [replay_plot, replay_status], api_name="replay", **cheap
        )
        compare_btn.click(
            GPU(handlers.compare), [state, question, kb, method_a, method_b, *settings_inputs],
            [compare_status, plot_a, cost_a, plot_b, cost_b], api_name="compare", **model_group,
        )  # fmt: skip
        compare_stop.click(handlers.stop, state, compare_status, api_visibility="private", **cheap)
    demo.queue(max_size=config.queue_size, default_concurrency_limit=1)
    return demo


def launch_kwargs() -> dict[str, Any]:
    """Theme, CSS and the click bridge go to launch() in Gradio 6."""
    from ui.theme import CSS, JS, theme

    return {"theme": theme(), "css": CSS, "js": JS}


def main(argv: list[str] | None = None) -> None:
    config = parse_config(argv)
    demo = build_app(config)
    demo.launch(server_name=config.host, server_port=config.port, **launch_kwargs())


if __name__ == "__main__":
    main(sys.argv[1:])
