"""A trace with markup in every string field adds no element to the page.

The trace (tests/markup_trace.py) carries a form with a password field and a bold element,
each tagged `data-inj`, in every free-text field. It is uploaded through the page's own
upload box in headless Debian Chromium (as tests/app/test_browser.py drives it); then the
Search tab with every panel, a node's detail and history, and a hover card over the tree
are checked for any `data-inj` element and for forms or password fields the page did not
have before. No model is loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_support import require_chromium, served
from tests.markup_trace import write_markup_trace

COUNT_JS = """() => ({
  injected: document.querySelectorAll('[data-inj]').length,
  forms: document.querySelectorAll('form').length,
  passwords: document.querySelectorAll('input[type=password]').length,
})"""

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def url():
    require_chromium()
    with served() as address:
        yield address


def test_a_markup_trace_adds_no_element_to_the_page(url, browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    trace = write_markup_trace(tmp_path)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    expect(page.locator("#status")).to_be_visible(timeout=30_000)
    before = page.evaluate(COUNT_JS)
    page.get_by_role("tab", name="Traces & replay").click()
    page.locator("#trace-upload input[type=file]").set_input_files(str(trace))
    expect(page.locator("#replay-status")).to_contain_text("Round", timeout=30_000)
    page.get_by_role("tab", name="Search").click()
    expect(page.locator("#status")).to_contain_text("Loaded a trace", timeout=30_000)
    expect(page.locator("#answer")).to_contain_text('<b data-inj="1">x</b>Honolulu', timeout=30_000)
    after_load = page.evaluate(COUNT_JS)

    page.locator("#node-dd input").click()  # inspect a node: detail and histories
    page.get_by_role("option").nth(1).click()
    expect(page.locator("#node-detail")).to_contain_text("Node 1", timeout=30_000)
    expect(page.locator("#history")).to_contain_text("<form", timeout=30_000)
    after_inspect = page.evaluate(COUNT_JS)

    point = page.locator("#tree-plot .scatterlayer .point").first
    point.hover(force=True)
    page.wait_for_timeout(500)
    hover = page.locator("#tree-plot .hoverlayer").first.text_content() or ""
    after_hover = page.evaluate(COUNT_JS)
    page.close()
    for seen in (after_load, after_inspect, after_hover):
        assert seen == {**before, "injected": 0}, (before, seen)
    assert "<b data-inj" in hover or hover == ""  # shown as text when Plotly draws the card
