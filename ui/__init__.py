"""The Gradio app's logic; `app.py` lays out components and wires events by name.

Wiring: `wiring` (handlers to components by name), `forms` (typed inputs), `render`
(session -> component values). Handlers by job: `handlers` (run, fresh run, stop,
compare), `inspector`, `rescoring`, `traces` (write, load), `replay`, `presets`
(buttons, CPU defaults), `public` (public-mode limits). Support: `session` (one
browser session's state), `stream` (event pump), `worlds` (models and KBs),
`run_cache` (instant examples), `gold` (gold answers of example questions),
`config`, `theme`. `config`, `session`, `stream`, `forms`, `gold`, `run_cache` and
`worlds` do not import Gradio.
"""
