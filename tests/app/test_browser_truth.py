"""The truth overlay and the constant-reward twin in headless Chromium, on one example question.

Model-free and fast: "Who directed Inception?" replays its shipped Fast MCTS trace, and
its twin replays the shipped constant-reward trace (both seeded into a private run
cache, the app's instant examples); a cache miss would search the toy world
(`tests.toy_world`). No console error on the way.
"""

from __future__ import annotations

import pytest

from tests.browser_support import require_chromium
from tests.doubles import serve_on_toy_world

pytestmark = [pytest.mark.browser]

INCEPTION = "Who directed Inception?"  # an example with a shipped Fast MCTS and constant-reward trace


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    from ui import handlers

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(handlers, "REPLAY_ROUND_S", 0.02)  # the replay's animation, shortened
        with serve_on_toy_world(mp, tmp_path_factory) as address:
            yield address


def test_the_truth_overlay_and_the_twin_on_an_example_question(url, browser) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.locator("#question textarea").fill(INCEPTION)
    page.locator("#run-btn").click()
    expect(page.locator("#status")).to_contain_text("Finished (cached run", timeout=60_000)

    # Off by default: the tree shows the search, no verdict.
    toggle = page.locator("#truth-toggle input[type=checkbox]")
    expect(toggle).not_to_be_checked()
    tree = page.locator("#tree-plot")
    assert "truly best" not in tree.inner_text()
    toggle.check()
    summary = page.locator("#truth-summary")
    expect(summary).to_contain_text("picked the truly best child in", timeout=30_000)
    expect(summary).to_contain_text("a random order would pick")
    expect(summary).to_contain_text("the paper (CWQ, Llama-3.1-8B)")
    expect(tree).to_contain_text("IG's top child is truly best (gold)")  # the legend entry
    page.get_by_text("All nodes (table: select a row to inspect it)").click()
    expect(page.locator("#node-table")).to_contain_text("true value (gold)")
    # the overlay's column has its own width: its header is not cut, nor the columns it shifts
    for header in ("true value (gold)", "PPL(H',Q)"):
        cell = page.locator("#node-table th", has_text=header).first
        cut = cell.evaluate(
            "th => [th, ...th.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)"
        )
        assert not cut, f"the node table's {header!r} header is cut"

    page.locator("#twin-btn").click()
    expect(page.locator("#twin-status")).to_contain_text("Twin replayed from the run cache", timeout=30_000)
    diff = page.locator("#twin-diff")
    expect(diff).to_contain_text("only the reward differs")
    expect(diff).to_contain_text("F1 against gold")
    for side in ("#twin-plot-a", "#twin-plot-b"):
        expect(page.locator(f"{side} .js-plotly-plot")).to_be_visible()
    expect(page.locator("#twin-plot-b")).to_contain_text("Constant reward (the twin)")
    expect(page.locator("#twin-plot-a")).to_contain_text("visited by this run only")

    toggle.uncheck()
    expect(summary).to_have_text("")
    assert not errors, f"console errors: {errors}"
    page.close()
