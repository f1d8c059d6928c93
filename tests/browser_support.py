"""What the browser and API tests share: Debian's headless Chromium with the project's
flags, the app served in-process on 127.0.0.1, a private run cache, page helpers.

Chromium is `/usr/bin/chromium` driven through Python playwright (never `playwright
install`); `require_chromium` skips a test with a message when either is absent (`make
browser-deps`). The module-scoped `browser` fixture (tests/conftest.py) is `chromium()`.
Knows no test's world: each test module patches and builds its own app.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> None:
    """Skip the test (with how to install it) unless Chromium and playwright are there."""
    if not CHROMIUM.exists():
        pytest.skip(
            "chromium not found at /usr/bin/chromium: run `make browser-deps` (apt-get install chromium)"
        )
    pytest.importorskip("playwright.sync_api")


@contextmanager
def chromium() -> Iterator[Any]:
    """One headless Chromium (a playwright `Browser`), closed on the way out."""
    from playwright.sync_api import expect, sync_playwright

    # An assertion waits up to 30 s (playwright's default is 5 s): with the suite's workers
    # sharing two cores, Gradio's page can take longer than 5 s to render its first view.
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def served(**build: Any) -> Iterator[str]:
    """`app.build_app(**build)` launched in this process on 127.0.0.1 (Gradio picks a free
    port), with the app's own launch arguments; yields its address, closes it after."""
    import app

    demo = app.build_app(**build)
    demo.launch(
        prevent_thread_lock=True,
        server_port=None,
        server_name="127.0.0.1",
        quiet=True,
        **app.launch_kwargs(demo),
    )
    try:
        yield demo.local_url
    finally:
        demo.close()


def private_run_cache(
    mp: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, *, seeded: bool = False
) -> Path:
    """A fresh run cache for the app under test (`$MCTS_KBQA_RUN_CACHE`, set on `mp`);
    `seeded`: holding the shipped traces (`seed_run_cache`)."""
    cache = tmp_path_factory.mktemp("run-cache")
    mp.setenv("MCTS_KBQA_RUN_CACHE", str(cache))
    if seeded:
        seed_run_cache(cache)
    return cache


def seed_run_cache(folder: Path) -> None:
    """The shipped traces as this machine's cached runs: the examples replay even while
    the agent code's fingerprint has moved past the shipped manifest's."""
    from mcts.search.trace import load_trace
    from ui import run_cache
    from ui.config import TRACES_DIR

    for path in sorted(TRACES_DIR.glob("*-*.json")):
        trace = load_trace(path)
        run_cache.store(trace, run_cache.trace_key(trace), folder=folder)


def in_viewport(page: Any, selector: str) -> bool:
    """Whether the element's top (up to 40 px of it) lies inside the page's viewport."""
    box = page.locator(selector).bounding_box()
    view = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= view["height"]


def pick_node_by_keyboard(page: Any, node_id: int) -> None:
    """Keyboard only: focus the node list, type the id to filter, arrow down, Enter."""
    page.locator("#node-dd input").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(f"{node_id} ·")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
