"""MCTS-KBQA: the Gradio demo. Layout and event wiring only; the logic is in `ui/`.

    python app.py [--host 127.0.0.1] [--port 7860] [--kb demo] [--policy-model ID] [--scorer-model ID]

Starts offline with the bundled model and demo KB (models load on the first run).
On Hugging Face Spaces the same file is the entry point (README front matter).
Each tab's layout registers its components by name on one `Page` (`ui.layout_search`,
`ui.layout_tabs`); `ui.events` wires them: every handler reads a typed form or named
values and returns a dict keyed by those names (`ui.wiring`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from ui.config import AppConfig, parse_config  # noqa: E402  (light: `--help` stays fast)
from ui.session import Session  # noqa: E402

DELETE_CACHE = (600, 3600)  # (every s, older than s): Gradio's delete_cache for uploads and outputs

if TYPE_CHECKING:
    import gradio as gr

    from mcts.search.settings import SearchSettings


def new_session() -> Session:
    """Each browser session gets its own tree and view."""
    return Session()


def build_app(config: AppConfig | None = None, defaults: SearchSettings | None = None) -> gr.Blocks:
    """The whole page. `defaults` pre-fills the settings form (if None: the paper's on a GPU,
    the CPU preset without one)."""
    import gradio as gr

    from ui import presets, public
    from ui.events import wire_events
    from ui.layout_search import PageStart, search_tab
    from ui.layout_tabs import about_tab, compare_tab, lab_tab, traces_tab
    from ui.theme import HEADER_HTML
    from ui.wiring import Page

    config = config or AppConfig()
    machine = presets.machine_defaults()
    start = PageStart(
        config=config,
        settings=defaults or machine.settings,
        machine=machine,
        preset=machine.preset if defaults is None else "",
    )
    # Gradio's upload and output cache: files older than an hour go, checked every 10 minutes.
    with gr.Blocks(title="MCTS-KBQA · IG-reward tree search", delete_cache=DELETE_CACHE) as demo:
        page = Page(gr.State(new_session))
        gr.HTML(HEADER_HTML)
        with gr.Tabs():
            search_tab(page, start)
            lab_tab(page)
            traces_tab(page)
            compare_tab(page)
            about_tab()
        wire_events(demo, page, start)
    # Public mode: no REST route around the queue (Gradio opens them off Spaces), so every
    # run waits its turn in the one model slot and the run gate sees it.
    demo.queue(max_size=config.queue_size, default_concurrency_limit=1, api_open=not public.MODE.enabled)
    public.watch_queue(demo)  # a waiting place lives while its run is in this queue
    return demo


def launch_kwargs(demo: gr.Blocks) -> dict[str, Any]:
    """Theme, CSS and the click bridge go to launch() in Gradio 6; the shipped traces may be
    downloaded from wherever the app was started; the middleware answers a request naming no
    event of `demo` with a 404 (`ui.route_guard`) instead of Gradio's 500."""
    from starlette.middleware import Middleware

    from ui.config import TRACES_DIR
    from ui.public import MODE
    from ui.route_guard import RouteGuard
    from ui.theme import CSS, JS, theme

    kwargs: dict[str, Any] = {"theme": theme(), "css": CSS, "js": JS, "allowed_paths": [str(TRACES_DIR)]}
    kwargs["app_kwargs"] = {"middleware": [Middleware(RouteGuard, blocks=demo)]}
    if MODE.limits.max_upload_bytes is not None:
        kwargs["max_file_size"] = MODE.limits.max_upload_bytes  # uploads over it are refused by Gradio
    return kwargs


def main(argv: list[str] | None = None) -> None:
    config = parse_config(argv)
    demo = build_app(config)
    demo.launch(server_name=config.host, server_port=config.port, **launch_kwargs(demo))


if __name__ == "__main__":
    main(sys.argv[1:])
