"""The Search tab's layout: the question and its settings, the tree, the node inspector,
the answer, the truth overlay and the twin, and the node table.

Each component is registered on the `Page` under the name its handlers use (`ui.forms`,
`ui.render`); `ui.events` wires them. Nothing here runs a search.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from mcts.search.settings import SearchSettings
from ui import handlers, ig_evidence, public
from ui.config import EXAMPLES_FILE, WIKIDATA_EXAMPLES_FILE, AppConfig
from ui.example_groups import example_groups
from ui.fields import SettingNumber, SettingSlider
from ui.forms import SETTING_RANGES
from ui.glossary import glossary_markdown
from ui.layout_lens import lens_tools
from ui.parting_example import parting_markdown
from ui.presets import MachineDefaults
from ui.render import EMPTY_DETAIL
from ui.selection_view import selection_block
from ui.wiring import Page
from viz import NODE_TABLE_HEADERS, VOTE_TABLE_HEADERS
from viz.answer_rule import NODE_TABLE_GLOSS
from viz.panels import node_table_widths


@dataclass(frozen=True)
class PageStart:
    """What the page opens with: the app's config, the settings form and the machine's presets."""

    config: AppConfig
    settings: SearchSettings  # the settings form's values
    machine: MachineDefaults  # the preset buttons and the note on this machine
    preset: str  # the preset the form starts from ("" when the caller gave its own settings)


def search_tab(page: Page, start: PageStart) -> None:
    with gr.Tab("Search", id="search"):
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=380):
                _ask_column(page, start)
            with gr.Column(scale=2, min_width=320):
                _settings_column(page, start)
        page.add("plot", gr.Plot(label="Search tree", elem_id="tree-plot"))
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=420, elem_id="inspector"):
                _inspector(page)
            with gr.Column(scale=2, min_width=340, elem_id="answer-panel"):
                _answer_panel(page)
        _truth_box(page)
        with gr.Accordion("All nodes (table: select a row to inspect it)", open=False):
            gr.Markdown(NODE_TABLE_GLOSS, elem_id="node-table-gloss")
            page.add(
                "table",
                gr.Dataframe(
                    headers=NODE_TABLE_HEADERS,
                    interactive=False,
                    wrap=True,
                    elem_id="node-table",
                    max_height=420,
                    column_widths=node_table_widths(NODE_TABLE_HEADERS),
                ),
            )
        with gr.Accordion("Glossary: every term on this page, in one line", open=False, elem_id="glossary"):
            gr.Markdown(glossary_markdown())
        # A click on a point of the tree: the page's script fills the node and presses the button.
        page.add("click_node", gr.Textbox(visible="hidden", elem_id="click-node"))
        page.add("click_go", gr.Button("inspect clicked node", visible="hidden", elem_id="click-go"))


def _ask_column(page: Page, start: PageStart) -> None:
    """The question, its KB and method, the form's notice, Run / Fresh run / Stop, the status line."""
    page.add(
        "question",
        gr.Textbox(
            label="Question",
            lines=2,
            max_lines=6,
            elem_id="question",
            placeholder="Ask something the knowledge base can answer, e.g. Who directed Inception?",
        ),
    )
    with gr.Row(elem_id="kb-method-row"):
        locked = public.MODE.enabled
        page.add(
            "kb_spec",
            gr.Dropdown(
                choices=list(public.MODE.allowed_kbs) if locked else ["demo", "demo-wikidata"],
                value=start.config.kb,
                allow_custom_value=not locked,
                label="Knowledge base",
                info="the bundled demos and the operator's KBs"
                if locked
                else '"demo", a .nt/.ttl file or folder, or an http(s) SPARQL endpoint',
            ),
        )
        page.add(
            "method",
            gr.Dropdown(
                handlers.METHOD_CHOICES,
                value=start.settings.method.value,
                label="Search method",
                elem_id="method",
            ),
        )
    # Shown after a trace load changed the form (ui.form_notice): a class must
    # not run the ablation a loaded trace left behind without knowing it.
    with page.add("form_note_box", gr.Group(visible=False, elem_id="form-note-box")):
        page.add("form_note", gr.Markdown(elem_id="form-note"))
        page.add("restore_btn", gr.Button("Back to the defaults", size="sm", elem_id="restore-defaults"))
    with gr.Row():
        page.add("run_btn", gr.Button("Run search", variant="primary", elem_id="run-btn"))
        page.add("fresh_btn", gr.Button("Fresh run", elem_id="fresh-btn", size="md"))
        page.add("stop_btn", gr.Button("Stop", variant="stop", elem_id="stop-btn", interactive=False))
    page.add("preset", gr.Textbox(start.preset, visible=False))
    page.add(
        "status",
        gr.Markdown(
            "Ready. Type a question (or pick an example) and press **Run search**.",
            elem_id="status",
        ),
    )


def _settings_column(page: Page, start: PageStart) -> None:
    """The machine's note and preset buttons, the settings, the models, the example questions."""
    page.add("machine_note", gr.Markdown(start.machine.note, elem_id="machine-note"))
    with gr.Row():
        for name, label in start.machine.buttons.items():
            page.add(preset_button(name), gr.Button(label, size="sm", elem_id=f"preset-{name}"))
    with gr.Accordion("Search settings", open=False, elem_id="settings"):
        _settings_fields(page, start.settings)
    with gr.Accordion("Models", open=False, visible=not public.MODE.enabled):
        _model_fields(page, start.config)
    _example_questions(page)


def preset_button(name: str) -> str:
    """The page name of preset `name`'s button."""
    return f"preset_{name}"


def _settings_fields(page: Page, d: SearchSettings) -> None:
    """One field per `ui.forms.SETTINGS_FIELDS`, each drawn with its checked range."""
    r = SETTING_RANGES
    with gr.Row():
        page.add("rounds", SettingSlider(*r["rounds"], value=d.rounds, step=1, label="rounds"))
        page.add("k", SettingSlider(*r["k"], value=d.k, step=1, label="k candidates"))
    with gr.Row():
        page.add("c", SettingNumber(d.c, label="UCT c", minimum=r["c"][0]))
        page.add("alpha", SettingNumber(d.alpha, label="α (reward scale)", minimum=r["alpha"][0]))
        page.add("beta", SettingNumber(d.beta, label="β (sharpness)", minimum=r["beta"][0]))
    with gr.Row():
        page.add(
            "expected_depth",
            SettingSlider(*r["expected_depth"], value=d.expected_depth, step=1, label="expected depth"),
        )
        page.add("max_depth", SettingSlider(*r["max_depth"], value=d.max_depth, step=1, label="max depth"))
    with gr.Row():
        page.add(
            "early_stop",
            SettingSlider(
                *r["early_stop"], value=d.early_stop_terminals, step=1, label="early stop after answers"
            ),
        )
        page.add(
            "seed",
            SettingNumber(d.seed, label="seed", precision=0, minimum=r["seed"][0], maximum=r["seed"][1]),
        )


def _model_fields(page: Page, config: AppConfig) -> None:
    page.add("policy_kind", gr.Radio(["guided", "react"], value=config.policy_kind, label="policy"))
    page.add(
        "policy_model",
        gr.Textbox(config.policy_model, label="policy model", placeholder="bundled SmolLM2-135M-Instruct"),
    )
    page.add(
        "scorer_model",
        gr.Textbox(config.scorer_model, label="IG scorer model", placeholder="bundled SmolLM2-135M-Instruct"),
    )
    page.add(
        "policy_endpoint",
        gr.Textbox(
            config.policy_endpoint,
            label="policy endpoint (optional)",
            placeholder="OpenAI-compatible URL, e.g. a vLLM server (react policy)",
        ),
    )


def _example_questions(page: Page) -> None:
    """Every example question of both demo KBs, grouped by kind; a click fills the question
    and its KB. No run event updates these accordions, so they stay as the visitor left them."""
    fills = [page["question"], page["kb_spec"]]
    for path, kb, title, is_open in (
        (EXAMPLES_FILE, "demo", "Example questions (Freebase-shaped demo KB)", True),
        (WIKIDATA_EXAMPLES_FILE, "demo-wikidata", "Example questions (Wikidata-shaped demo KB)", False),
    ):
        groups = example_groups(path)
        if not groups:
            continue
        count = sum(len(g.questions) for g in groups)
        with (
            gr.Accordion(f"{title}: all {count}, by kind", open=is_open, elem_id=f"examples-{kb}"),
            gr.Column(elem_classes=["examples-scroll"]),  # scrolls inside: the tree stays near the status
        ):
            for group in groups:
                gr.Examples(
                    [[q, kb] for q in group.questions],
                    inputs=fills,
                    label=f"{group.kind} ({len(group.questions)})",
                    examples_per_page=len(group.questions),  # the whole group, no pages
                    visible_columns=[0],  # the question only: the accordion names the KB
                    cache_examples=False,
                    api_visibility="private",
                )


def _inspector(page: Page) -> None:
    gr.Markdown("### Node inspector")
    page.add(
        "node_dd",
        gr.Dropdown(
            choices=[],
            label="Node",
            info="or click a point in the tree, or a table row",
            elem_id="node-dd",
        ),
    )
    page.add("detail", gr.Markdown(EMPTY_DETAIL, elem_id="node-detail"))
    selection_block(page)  # why the selection entered this node: a round chooser and its bars
    page.add("history", gr.HTML(elem_id="history"))
    lens_tools(page)


def _answer_panel(page: Page) -> None:
    page.add("answer", gr.Markdown("*No answer yet.*", elem_id="answer"))
    page.add(
        "votes",
        gr.Dataframe(
            headers=VOTE_TABLE_HEADERS,
            label="Vote over terminal branches",
            interactive=False,
            wrap=True,
            elem_id="vote-table",
            column_widths=["46%", "16%", "18%", "20%"],
        ),
    )
    page.add("cost", gr.Markdown(elem_id="cost"))
    page.add(
        "trace_file",
        gr.File(label="Trace of this run (download)", interactive=False, elem_id="trace-file"),
    )


def _truth_box(page: Page) -> None:
    """Off by default: a class sees the search first, then asks whether IG was right."""
    with gr.Accordion("Is IG right here? The truth overlay and the twin", open=True, elem_id="truth-box"):
        with gr.Row(equal_height=True):
            page.add(
                "truth_toggle",
                gr.Checkbox(
                    False,
                    label="Show truth (gold)",
                    elem_id="truth-toggle",
                    info="example questions: each node's true value, IG's top child ringed right or wrong",
                ),
            )
            page.add("twin_btn", gr.Button("Run the constant-reward twin", elem_id="twin-btn"))
        page.add("truth", gr.Markdown(elem_id="truth-summary"))
        page.add("twin_status", gr.Markdown(elem_id="twin-status"))
        with gr.Row(equal_height=False):
            page.add("twin_plot_a", gr.Plot(label="IG reward", elem_id="twin-plot-a", visible=False))
            page.add(
                "twin_plot_b", gr.Plot(label="Constant-reward twin", elem_id="twin-plot-b", visible=False)
            )
        page.add("twin_diff", gr.Markdown(elem_id="twin-diff"))
        # One run's groups are few: what IG did over many questions, as measured.
        gr.Markdown(parting_markdown(), elem_id="parting-example")
        gr.Markdown(ig_evidence.evidence_markdown(), elem_id="ig-evidence")
