"""The run queue in the page, as a visitor meets it in public mode.

Headless Debian Chromium (as tests/app/test_browser.py drives it) against the app in public
mode, the run's world the slow toy world of tests/doubles.py (no model load): a run
started from the page passes the admit and the queue's door (the run event's validator)
and finishes; a second tab of the same visitor is told it already has a run; Stop ends
the run and the same visitor's next run starts.
"""

from __future__ import annotations

import threading

import pytest

from tests.browser_support import require_chromium, served
from ui import public
from ui.run_gate import RunGate

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# The first run's policy waits here until the test has seen the second tab refused and has
# pressed Stop: a fixed pause let a slow machine finish the run before the click.
HOLD = threading.Event()


@pytest.fixture(scope="module")
def url():
    require_chromium()
    from tests.doubles import slow_toy_world
    from ui import handlers

    world, _ = slow_toy_world(0.2, hold=HOLD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(handlers, "get_world", world)
        mp.setattr(handlers, "_cache_key", lambda *a, **k: None)  # every run searches
        mp.setattr(public, "MODE", public.PublicMode.from_env({"PUBLIC_DEMO": "1"}))
        mp.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, per_range=4))
        with served() as address:
            yield address


def test_one_visitor_one_run_then_stop_and_run_again(url, browser) -> None:
    from playwright.sync_api import expect

    first = browser.new_context().new_page()
    first.goto(url)
    first.locator("#question textarea").fill("Who directed Inception?")
    first.locator("#run-btn").click()
    expect(first.locator("#status")).to_contain_text("round", timeout=30_000)
    second = browser.new_context().new_page()  # another tab (its own session), same address
    second.goto(url)
    second.locator("#question textarea").fill("Who directed Inception?")
    second.locator("#run-btn").click()
    expect(second.get_by_text("already have a run").first).to_be_visible(timeout=30_000)
    expect(first.locator("#stop-btn")).to_be_enabled(timeout=30_000)
    first.locator("#stop-btn").click()
    HOLD.set()  # the held policy call returns; the cancelled run stops at its next yield
    expect(first.locator("#status")).to_contain_text("cancelled", timeout=60_000)
    second.locator("#run-btn").click()
    expect(second.locator("#status")).to_contain_text("Finished", timeout=90_000)
