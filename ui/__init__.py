"""The Gradio app's logic: configuration, per-session state, event pumping, handlers.

`app.py` lays out components and wires events; the functions it wires live here.
Nothing below `ui` imports Gradio; `ui.config`, `ui.session` and `ui.stream` do not either.
"""
