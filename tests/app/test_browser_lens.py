"""The IG lens in headless Chromium: every view of why a node got its reward.

An example question replays its shipped trace (a private run cache, no search); the
inspector then shows the reward's anatomy, the question lit by the history and the
restatements from the trace alone, and the two tools that run the real bundled scorer:
the evidence (each piece of the cleaned history removed in turn) and what-if (an edited
history scored). At 1280x800 and at phone width, with no console error.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import private_run_cache, require_chromium, served

pytestmark = [pytest.mark.browser, pytest.mark.slow]

INCEPTION = "Who directed Inception?"  # an example with a shipped trace
NODE = 3  # a node of that trace with siblings and a SPARQL result in its history


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    with pytest.MonkeyPatch.context() as mp:
        private_run_cache(mp, tmp_path_factory)
        with served() as address:
            yield address


def pick_node(page, node_id: int) -> None:
    """The node list's entry whose label starts with the id ("3 · d3 · SPARQL …")."""
    box = page.locator("#node-dd input")
    box.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(f"{node_id} · d")
    page.get_by_role("option", name=re.compile(rf"^{node_id} · ")).click()


def _inspected(browser, url: str, width: int, height: int):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.locator("#question textarea").fill(INCEPTION)
    page.locator("#run-btn").click()
    expect(page.locator("#status")).to_contain_text("Finished (cached run", timeout=60_000)
    pick_node(page, NODE)
    detail = page.locator("#node-detail")
    expect(detail).to_contain_text(f"Node {NODE}")
    return page, errors


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_the_lens_explains_a_replayed_node_from_the_trace_alone(url, browser, width, height) -> None:
    from playwright.sync_api import expect

    page, errors = _inspected(browser, url, width, height)
    detail = page.locator("#node-detail")
    for view in (
        "IG lens: why this reward",
        "Reward anatomy",
        "The question lit by the history",
        "Restatements found",
    ):
        expect(detail).to_contain_text(view)
    # The lit question: one shaded span per question word, each with its gain on hover.
    assert detail.locator("span[title$='nats']").count() >= 3
    page.close()
    assert not errors, f"console errors: {errors}"


def test_the_evidence_and_what_if_run_the_scorer_on_a_click(url, browser) -> None:
    from playwright.sync_api import expect

    page, errors = _inspected(browser, url, 1280, 800)
    page.locator("#lens-evidence").get_by_text("IG lens: the evidence that moved this reward").click()
    page.locator("#evidence-btn").click()
    status = page.locator("#evidence-status")
    expect(status).to_contain_text("Evidence that moved the reward", timeout=120_000)
    expect(status).to_contain_text("segments")
    assert page.locator("#evidence-view span[title*='removing it changes r by']").count() >= 2

    page.locator("#lens-whatif").get_by_text("IG lens: what if the history said").click()
    box = page.locator("#whatif-text textarea")
    expect(box).not_to_have_value("")  # the node's cleaned history, ready to edit
    history = box.input_value()
    box.fill(history.rsplit("Observation:", 1)[0].rstrip())
    page.locator("#whatif-btn").click()
    result = page.locator("#whatif-result")
    expect(result).to_contain_text("would rank", timeout=120_000)
    expect(result).to_contain_text("not saved")
    # Another node picked: its own history to edit, the old result gone.
    pick_node(page, NODE + 1)
    expect(result).not_to_contain_text("would rank")
    expect(box).not_to_have_value(history)
    page.close()
    assert not errors, f"console errors: {errors}"
