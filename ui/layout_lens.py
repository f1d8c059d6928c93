"""The IG lens's tools under the node inspector: the evidence that moved the reward, and what-if.

Both run the scorer on a click (`ui.lens_probe`); the anatomy, the lit question and the
restatements above them are read from the trace and cost nothing (`viz.ig_lens`).
"""

from __future__ import annotations

import gradio as gr

from ui import public
from ui.lens_probe import EVIDENCE_HINT
from ui.wiring import Page


def lens_tools(page: Page) -> None:
    with gr.Accordion("IG lens: the evidence that moved this reward", open=False, elem_id="lens-evidence"):
        with gr.Row(equal_height=True):
            page.add("evidence_btn", gr.Button("Find the evidence (runs the scorer)", elem_id="evidence-btn"))
            page.add("evidence_stop", gr.Button("Stop", variant="stop", elem_id="evidence-stop", scale=0))
        page.add("evidence_status", gr.Markdown(EVIDENCE_HINT, elem_id="evidence-status"))
        page.add("evidence_view", gr.HTML(elem_id="evidence-view"))
    with gr.Accordion("IG lens: what if the history said…", open=False, elem_id="lens-whatif"):
        page.add(
            "whatif_text",
            gr.Textbox(
                label="This node's cleaned history (edit it, then score it)",
                lines=6,
                max_lines=16,
                max_length=public.MODE.limits.max_whatif_chars,
                elem_id="whatif-text",
            ),
        )
        page.add("whatif_btn", gr.Button("Score the edit (runs the scorer)", elem_id="whatif-btn"))
        page.add("whatif_result", gr.Markdown(elem_id="whatif-result"))
