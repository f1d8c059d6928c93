"""Why this child was selected, in headless Chromium at 1280x800 and 390x844: the inspector
names the rule the run used (PUCT for the Obama example) with the node's rank, the round
chooser lists only rounds through the node's parent, the bars redraw for another round,
and nothing errs in the console.

Model-free: the example question replays its shipped trace from a private run cache.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import require_chromium
from tests.doubles import serve_on_toy_world

pytestmark = [pytest.mark.browser]

OBAMA = "Where was Barack Obama born?"  # small preset (PUCT), shipped trace: replayed


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    from ui import handlers

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(handlers, "REPLAY_ROUND_S", 0.02)  # the replay's animation, shortened
        with serve_on_toy_world(mp, tmp_path_factory) as address:
            yield address


def pick_node(page, node_id: int) -> None:
    """The node list, filtered by typing, the option whose label starts with the id (typing
    "3 ·" alone also matches node 4's "4 · d3 · ...")."""
    page.locator("#node-dd input").focus()  # focus, not click: no wait for the layout to settle
    page.keyboard.press("Control+A")
    page.keyboard.type(f"{node_id} · d")
    page.get_by_role("option", name=re.compile(rf"^{node_id} · d\d")).click()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_selection_score_and_the_round_bars_of_a_replayed_node(url, browser, width, height) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.locator("#question textarea").fill(OBAMA)
    page.locator("#run-btn").click()
    expect(page.locator("#status")).to_contain_text("Finished (cached run", timeout=60_000)

    pick_node(page, 3)
    detail = page.locator("#node-detail")
    expect(detail).to_contain_text("Node 3 · depth 3")
    expect(detail).to_contain_text("PUCT rank")
    expect(detail).to_contain_text("1 of 3 open")  # N = 7, followed: first by the run's rule
    expect(detail).to_contain_text("the highest score among the open siblings is followed next")
    assert "UCT rank3 of 3" not in detail.inner_text().replace(" ", "")

    note, plot = page.locator("#sel-note"), page.locator("#sel-plot")
    expect(note).to_contain_text("Round 5", timeout=30_000)
    expect(note).to_contain_text("the selection entered node 3")
    expect(plot.locator(".js-plotly-plot")).to_be_visible()
    expect(plot).to_contain_text("▶ 3")
    expect(plot).to_contain_text("place_of_birth")  # the step's name, inside its bar
    expect(plot).to_contain_text("prior term")
    bars = plot.locator("g.barlayer path")
    assert bars.count() == 6, "two stacked bars (W/N, prior term) for each of the three siblings"

    chooser = page.locator("#sel-round input")
    chooser.click()
    options = page.get_by_role("option")
    expect(options).to_have_count(2)  # only rounds 5 and 4 went through node 2
    page.get_by_role("option", name="round 4 → node 3 (greedy descent)").click()
    expect(note).to_contain_text("Round 4")
    expect(note).to_contain_text("greedy descent entered node 3")

    # Another node: its own rounds, the latest chosen.
    pick_node(page, 8)
    expect(note).to_contain_text("at node 3", timeout=30_000)
    expect(note).to_contain_text("entered node 8")

    box = plot.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box
    sizes = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert sizes[0] <= sizes[1], "nothing sticks out sideways"
    assert not errors, f"console errors: {errors}"
    page.close()
