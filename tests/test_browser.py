"""The page in headless Chromium: type a question, run, see the tree, inspect nodes.

Uses Debian's `/usr/bin/chromium` through Python playwright (never `playwright
install`); skipped with a message when chromium is absent (`make browser-deps`).
Runs the real bundled model on the demo KB with a small budget (2 rounds, k = 3).
Screenshots go to pytest's tmp dir, or to $MCTS_SCREENSHOT_DIR when set.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mcts.search.settings import SearchSettings

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

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def url():
    if not CHROMIUM.exists():
        pytest.skip(
            "chromium not found at /usr/bin/chromium: run `make browser-deps` (apt-get install chromium)"
        )
    pytest.importorskip("playwright.sync_api")
    import app

    demo = app.build_app(defaults=SearchSettings(rounds=2, k=3))
    demo.launch(
        prevent_thread_lock=True, server_port=None, server_name="127.0.0.1", quiet=True, **app.launch_kwargs()
    )
    try:
        yield demo.local_url
    finally:
        demo.close()


@pytest.fixture()
def shots(tmp_path) -> Path:
    out = Path(os.environ.get("MCTS_SCREENSHOT_DIR", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_run_render_click_and_keyboard_inspect(url, shots) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.locator("#question textarea").fill("Who directed Inception?")
        page.locator("#run-btn").click()
        expect(page.locator("#status")).to_contain_text("Finished", timeout=900_000)
        points = page.locator("#tree-plot .scatterlayer .trace .points path")
        expect(points.first).to_be_visible()
        page.screenshot(path=str(shots / "01-after-run.png"), full_page=True)
        assert points.count() >= 2, "the root and at least one child are drawn"

        # Click a point: Plotly fires plotly_click only after a hover on it.
        page.locator("#tree-plot").scroll_into_view_if_needed()
        box = points.nth(points.count() - 1).bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x - 30, y - 30)
        page.mouse.move(x, y, steps=5)
        expect(page.locator(".hoverlayer .hovertext").first).to_be_visible(timeout=10_000)
        page.mouse.click(x, y)
        detail = page.locator("#node-detail")
        expect(detail).to_contain_text(re.compile(r"Node \d+"), timeout=30_000)
        clicked = re.search(r"Node (\d+)", detail.inner_text()).group(1)
        assert clicked != "0", "the last point drawn is a step, not the question"
        expect(detail).to_contain_text("UCT rank")
        expect(page.locator("#history")).to_contain_text("Cleaned history H'")
        page.screenshot(path=str(shots / "02-clicked-node.png"), full_page=True)

        # Keyboard only: focus the node list, type an id to filter, arrow down, Enter.
        dd = page.locator("#node-dd input")
        dd.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type("0 ·")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        expect(detail).to_contain_text("Node 0 · the question", timeout=30_000)
        page.locator("#node-detail").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "03-keyboard-node.png"), full_page=True)
        browser.close()
