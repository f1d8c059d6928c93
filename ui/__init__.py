"""The Gradio app's logic; `app.py` builds the page from the layout and the events here.

Page: `layout_search` (the Search tab), `layout_tabs` (the lab, traces & replay,
compare, about), `events` (every event, by component name).
Wiring: `wiring` (handlers to components by name), `forms` (typed inputs), `render`
(session -> component values). Handlers by job: `handlers` (run, fresh run, stop,
compare), `inspector`, `rescoring`, `traces` (write, load), `replay`, `presets`
(buttons, CPU defaults), `public` (public-mode limits), `overlay` (the Show-truth
toggle), `twin` (the constant-reward twin). Support: `session` (one
browser session's state), `stream` (event pump), `worlds` (models and KBs),
`run_cache` (instant examples), `gold` (gold answers of example questions), `truth`
(true values and the reward's sibling verdicts against gold),
`config`, `theme`. `config`, `session`, `stream`, `forms`, `gold`, `truth`, `run_cache`
and `worlds` do not import Gradio.
"""
