"""The layout of the tabs after Search: the cleaning-rule lab, traces & replay, compare, about.

Each component is registered on the `Page` under the name its handlers use; `ui.events`
wires them.
"""

from __future__ import annotations

import gradio as gr

from mcts.search.cleaning import DEFAULT_RULES, RULE_INFO, CleaningRule
from mcts.search.protocols import DEFAULT_IG_PROMPT
from ui import handlers, rescoring, run_start
from ui.config import bundled_traces
from ui.fields import SettingSlider
from ui.glossary import glossary_markdown
from ui.theme import ABOUT_MD, LAB_MD
from ui.wiring import Page

TRACES_HELP = (
    "Load a trace recorded by the app or by `python -m mcts run --trace out.json` and replay it "
    "round by round. No model is needed: a CPU-only Space can show recorded GPU runs. Loading a "
    "trace also puts its question and settings into the Search tab's form (which then says so). "
    "The run on screen is downloadable from the Search tab."
)


def lab_tab(page: Page) -> None:
    with gr.Tab("Cleaning-rule lab", id="lab"):
        # Controls on the left, results on the right: what Re-score changes stays in
        # view beside its button at 1280x800 (stacked, they fell below the fold).
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=300):
                page.add(
                    "rescore_btn",
                    gr.Button("Re-score the tree with these rules", variant="primary", elem_id="rescore-btn"),
                )
                page.add(
                    "rules",
                    gr.CheckboxGroup(
                        [
                            (f"{RULE_INFO[r].label}: {RULE_INFO[r].explanation}", r.value)
                            for r in CleaningRule
                        ],
                        value=sorted(r.value for r in DEFAULT_RULES),
                        label="Cleaning rules (all on = the paper)",
                        elem_id="rules",
                    ),
                )
                page.add(
                    "ig_prompt",
                    gr.Textbox(
                        DEFAULT_IG_PROMPT, label="IG prompt (between the history and the question)", lines=1
                    ),
                )
                gr.Markdown(LAB_MD, elem_id="lab-help")
            with gr.Column(scale=3, min_width=320):
                page.add(
                    "lab_status",
                    gr.Markdown(run_start.LAB_READY, elem_id="lab-status"),
                )
                page.add("rank_changes", gr.Markdown(elem_id="rank-changes"))
                page.add("lab_plot", gr.Plot(label="Re-scored tree", elem_id="lab-plot"))
        page.add(
            "reward_table",
            gr.Dataframe(
                headers=rescoring.REWARD_TABLE_HEADERS,
                label="Rewards in the run → re-scored (largest change first)",
                interactive=False,
                elem_id="reward-table",
                max_height=360,
                column_widths=["7%", "57%", "12%", "12%", "12%"],
            ),
        )


def traces_tab(page: Page) -> None:
    # The slider and its tree on the right, high on the page: moving the slider
    # visibly redraws the tree (stacked under the upload box, it started ~730 px down).
    with gr.Tab("Traces & replay", id="traces"), gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=300):
            page.add(
                "bundled",
                gr.Dropdown(
                    bundled_traces(),
                    value=None,
                    label="Open a recorded example trace",
                    elem_id="bundled-trace",
                    info="recorded with the bundled model on the demo KB",
                ),
            )
            page.add(
                "upload",
                gr.File(
                    label="…or upload a trace (.json)",
                    file_types=[".json"],
                    type="filepath",
                    elem_id="trace-upload",
                    height=140,
                ),
            )
            gr.Markdown(TRACES_HELP)
        with gr.Column(scale=3, min_width=320):
            # Its round is checked by the replay event's validator (replay.validate_round).
            page.add(
                "replay_slider",
                SettingSlider(
                    0,
                    1,
                    value=0,
                    step=1,
                    label="Show the tree after round",
                    interactive=False,
                    elem_id="replay-slider",
                ),
            )
            page.add("replay_status", gr.Markdown(elem_id="replay-status"))
            page.add("replay_plot", gr.Plot(label="Replay", elem_id="replay-plot"))


def compare_tab(page: Page) -> None:
    with gr.Tab("Compare methods", id="compare"):
        gr.Markdown("Run two methods on the question of the Search tab, with the same settings and models.")
        page.add("compare_info", gr.Markdown(elem_id="compare-info"))
        with gr.Row():
            page.add("method_a", gr.Dropdown(handlers.METHOD_CHOICES, value="fast", label="Method A"))
            page.add("method_b", gr.Dropdown(handlers.METHOD_CHOICES, value="classic", label="Method B"))
        with gr.Row():
            page.add("compare_btn", gr.Button("Run both", variant="primary"))
            page.add("compare_stop", gr.Button("Stop", variant="stop", interactive=False))
        page.add("compare_status", gr.Markdown())
        with gr.Row(equal_height=False):
            with gr.Column(min_width=320):
                page.add("plot_a", gr.Plot(label="Method A"))
                page.add("cost_a", gr.Markdown())
            with gr.Column(min_width=320):
                page.add("plot_b", gr.Plot(label="Method B"))
                page.add("cost_b", gr.Markdown())


def about_tab() -> None:
    with gr.Tab("How it works", id="about"):
        gr.Markdown(ABOUT_MD)
        gr.Markdown(f"### Glossary\n{glossary_markdown()}", elem_id="about-glossary")
