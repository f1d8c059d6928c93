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
from mcts.search.trace import load_trace
from tests.browser_support import (
    in_viewport,
    pick_node_by_keyboard,
    private_run_cache,
    require_chromium,
    served,
)
from ui.config import TRACES_DIR

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    with pytest.MonkeyPatch.context() as mp:
        private_run_cache(mp, tmp_path_factory)  # the first run searches
        with served(defaults=SearchSettings(rounds=2, k=3)) as address:
            yield address


@pytest.fixture()
def shots(tmp_path) -> Path:
    out = Path(os.environ.get("MCTS_SCREENSHOT_DIR", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_run_shows_status_in_view_then_tree_gold_answer_click_and_keyboard_inspect(
    url, shots, browser
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    expect(page.locator("#stop-btn")).to_be_disabled()
    page.locator("#question textarea").fill("Who directed Inception?")  # an example: it has a gold answer
    page.locator("#run-btn").click()
    status = page.locator("#status")
    expect(status).to_contain_text(re.compile(r"Starting|Loading|Running"), timeout=60_000)
    assert in_viewport(page, "#status"), "after Run the status line is in the first viewport"
    expect(status).to_contain_text(re.compile(r"round \d+ of 2 · \d+ nodes · elapsed"), timeout=600_000)
    expect(page.locator("#stop-btn")).to_be_enabled()
    page.screenshot(path=str(shots / "00-running-1280x800.png"))
    expect(status).to_contain_text("Finished", timeout=900_000)
    expect(page.locator("#stop-btn")).to_be_disabled(timeout=30_000)
    points = page.locator("#tree-plot .scatterlayer .trace .points path")
    expect(points.first).to_be_visible()
    assert points.count() >= 2, "the root and at least one child are drawn"
    answer = page.locator("#answer")
    expect(answer).to_contain_text("Gold answer")
    expect(answer).to_contain_text("Christopher Nolan")
    expect(answer).to_contain_text(re.compile(r"F1 \d\.\d\d"))
    page.screenshot(path=str(shots / "01-after-run-1280x800.png"))

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
    page.set_viewport_size({"width": 800, "height": 900})
    page.locator("#node-detail").scroll_into_view_if_needed()
    cell = page.locator("#node-detail td").first.bounding_box()
    assert cell is not None and cell["height"] < 40, "inspector numbers stay on one line at 800 px"
    page.screenshot(path=str(shots / "03-inspector-800.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})

    # Keyboard only: focus the node list, type an id to filter, arrow down, Enter.
    pick_node_by_keyboard(page, 0)
    expect(detail).to_contain_text("Node 0 · the question", timeout=30_000)
    page.close()


def test_replay_follows_the_slider_from_the_keyboard(url, shots, browser) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.get_by_role("tab", name="Traces & replay").click()
    page.locator("#bundled-trace input").click()
    page.get_by_role("option", name="fast-obama.json").click()
    replay_status = page.locator("#replay-status")
    rounds = load_trace(TRACES_DIR / "fast-obama.json").result.rounds  # what the recorded run ran
    expect(replay_status).to_contain_text(f"Round {rounds} of {rounds}", timeout=30_000)
    page.locator("#replay-slider input[type=range]").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(replay_status).to_contain_text(f"Round {rounds - 2} of {rounds}", timeout=30_000)
    number = page.locator("#replay-slider input[type=number]")
    number.fill("1")
    number.press("Enter")
    expect(replay_status).to_contain_text(f"Round 1 of {rounds}", timeout=30_000)
    page.screenshot(path=str(shots / "04-replay-keyboard.png"))
    page.get_by_role("tab", name="Search").click()
    expect(page.locator("#question textarea")).to_have_value("Where was Barack Obama born?")
    page.close()
