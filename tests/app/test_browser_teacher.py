"""The demo as a teacher uses it, in headless Chromium: no stale answer during a
run, no silent method switch after a trace load, the answer rule explained, results in
view after a click, a usable phone screen, glosses beside the numbers.

Model-free and fast: example questions replay the shipped traces (seeded into a private
run cache, the app's instant examples), and a live run searches a toy world (`tests.toy_world`, its policy slowed so
the running state can be seen) through the app's real handlers; re-scoring uses a toy
scorer. What the bundled model itself does in the page is `tests/app/test_browser.py`.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (
    in_viewport,
    pick_node_by_keyboard,
    require_chromium,
)
from tests.doubles import serve_on_toy_world
from tests.toy_world import ToyScorer

pytestmark = [pytest.mark.browser]

OBAMA = "Where was Barack Obama born?"  # an example with a shipped trace: replayed, no model
SPOUSE = "Who is the spouse of Barack Obama?"  # not an example: a live (toy) search


class LengthScorer(ToyScorer):
    """Re-scoring without a model: a reward from the history's length, so ranks move."""

    def score(self, question, cleaned_histories, *, alpha, beta, prompt="", variant="paper"):
        from tests.toy_world import ig_from_reward

        self.usage.calls += 1
        return [ig_from_reward(0.2 + (len(h) * 7919 % 160) / 100, alpha, beta) for h in cleaned_histories]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    from ui import rescoring

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rescoring, "get_scorer", lambda name: (LengthScorer(), "toy-length"))
        with serve_on_toy_world(mp, tmp_path_factory) as address:
            yield address


def open_page(browser, url, width=1280, height=800):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    page.locator("#question textarea").wait_for()
    return page


def run_question(page, question: str) -> None:
    page.locator("#question textarea").fill(question)
    page.locator("#run-btn").click()


def load_bundled_trace(page, name: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Traces & replay").click()
    page.locator("#bundled-trace input").click()
    page.get_by_role("option", name=name).click()
    expect(page.locator("#replay-status")).to_contain_text("Round", timeout=30_000)


def expect_answer_cleared_while_running(page, stale: str, stale_cost: str) -> None:
    """The next run's first rounds: the previous answer, votes and cost are gone (the cost
    panel may show this run's live cost)."""
    from playwright.sync_api import expect

    status = page.locator("#status")
    expect(status).to_contain_text(re.compile(r"Running · .* · round [1-9]"), timeout=60_000)
    answer = page.locator("#answer")
    assert stale not in answer.inner_text(), "the answer panel still shows the previous run's answer"
    assert "Gold answer" not in answer.inner_text()
    expect(answer).to_contain_text("Searching")
    assert page.locator("#cost").inner_text() != stale_cost
    # The table is a Dataframe, which the page redraws after the text panels: wait for it
    # rather than read it once (a single read saw the previous run's votes on a busy CPU).
    expect(page.locator("#vote-table")).not_to_contain_text(stale, timeout=10_000)


def test_a_live_run_after_a_cached_example_clears_the_answer_and_names_method_and_preset(
    url, browser
) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, url)
    status, answer = page.locator("#status"), page.locator("#answer")
    run_question(page, OBAMA)
    expect(status).to_contain_text("Finished (cached run", timeout=60_000)
    expect(status).to_contain_text("Fast MCTS (IG reward, no simulation) · small preset")
    expect(answer).to_contain_text("Honolulu")
    expect(answer).to_contain_text("Gold answer")

    cost = page.locator("#cost").inner_text()
    run_question(page, SPOUSE)
    expect_answer_cleared_while_running(page, "Honolulu", cost)
    expect(status).to_contain_text("Fast MCTS (IG reward, no simulation) · small preset")
    expect(status).to_contain_text("Finished", timeout=60_000)
    expect(status).to_contain_text("Fast MCTS (IG reward, no simulation) · small preset")
    assert "Honolulu" not in answer.inner_text()
    # The likeliest branch answers "Someone Else"; the best branch by W/N found Nolan: said why.
    expect(answer).to_contain_text("Answer: Someone Else")
    expect(answer).to_contain_text("Why not the best branch?")
    expect(answer).to_contain_text("likeliest branch")
    expect(answer).to_contain_text("Christopher Nolan")
    # The vote table's weight is a log-probability here: the line says why it is negative.
    expect(answer).to_contain_text(re.compile(r"weight:.*log-probability.*negative"))
    page.close()


def test_a_loaded_trace_says_it_changed_the_method_and_one_click_restores_the_defaults(url, browser) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, url)
    load_bundled_trace(page, "constant-inception.json")
    page.get_by_role("tab", name="Search").click()
    method = page.locator("#method input")
    expect(method).to_have_value("Constant reward (ablation)")
    note = page.locator("#form-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Loading the trace changed this form")
    expect(note).to_contain_text("Constant reward (ablation)")
    assert in_viewport(page, "#restore-defaults"), "the way back is on the first screen"
    expect(page.locator("#answer")).to_contain_text("Christopher Nolan")

    # Ask a new question with the trace's method: the trace's answer goes, the status names the method.
    cost = page.locator("#cost").inner_text()
    run_question(page, SPOUSE)
    expect_answer_cleared_while_running(page, "Christopher Nolan", cost)
    status = page.locator("#status")
    expect(status).to_contain_text("Constant reward (ablation) · small preset")
    expect(status).to_contain_text("Finished", timeout=60_000)
    expect(status).to_contain_text("Constant reward (ablation) · small preset")

    page.locator("#restore-defaults").click()
    expect(method).to_have_value("Fast MCTS (IG reward, no simulation)")
    expect(note).to_be_hidden()
    expect(page.locator("#question textarea")).to_have_value(SPOUSE)  # the question stays
    page.close()


def test_rescore_results_and_the_replay_tree_are_in_view_after_the_click(url, browser) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, url)
    load_bundled_trace(page, "fast-obama.json")
    # The replay tree sits under its slider, on the first screen with it.
    assert in_viewport(page, "#replay-slider")
    plot = page.locator("#replay-plot .js-plotly-plot").bounding_box()
    assert plot is not None and plot["y"] < 800 - 250, f"the replay tree starts {plot} px down"
    page.locator("#replay-slider input[type=range]").focus()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#replay-status")).to_contain_text(re.compile(r"Round \d+ of \d+"))
    assert in_viewport(page, "#replay-status")

    page.get_by_role("tab", name="Cleaning-rule lab").click()
    page.locator("#rules label").first.click()  # drop thoughts: off
    page.locator("#rescore-btn").click()
    expect(page.locator("#lab-status")).to_contain_text("Re-scored", timeout=30_000)
    expect(page.locator("#rank-changes")).to_contain_text(re.compile(r"sibling group"))
    for selector in ("#rescore-btn", "#lab-status", "#rank-changes"):
        assert in_viewport(page, selector), f"{selector} is below the fold after Re-score"
    lab_plot = page.locator("#lab-plot .js-plotly-plot").bounding_box()
    assert lab_plot is not None and lab_plot["y"] < 800 - 250, "the re-scored tree starts on the first screen"
    page.close()


def test_phone_width_shows_the_question_first_and_the_whole_method_name(url, browser) -> None:
    page = open_page(browser, url, 390, 844)
    question = page.locator("#question textarea").bounding_box()
    assert question is not None and question["y"] < 844 / 2, (
        f"the Question box starts {question['y']} px down"
    )
    assert in_viewport(page, "#run-btn"), "Run is on the first screen"
    width = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert width[0] <= width[1], "nothing sticks out sideways"
    fits = page.evaluate(
        "() => { const i = document.querySelector('#method input'); return [i.scrollWidth, i.clientWidth]; }"
    )
    assert fits[0] <= fits[1], f"the method's name is cut off: {fits}"
    page.close()


def test_the_inspector_and_the_node_table_gloss_uct_wn_and_the_prior(url, browser) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, url)
    run_question(page, OBAMA)
    expect(page.locator("#status")).to_contain_text("Finished", timeout=60_000)
    pick_node_by_keyboard(page, 1)
    detail = page.locator("#node-detail")
    expect(detail).to_contain_text(re.compile(r"Node [1-9]\d* · depth"), timeout=30_000)
    # The Obama example ran PUCT (small preset): the gloss is that rule's, with its prior term.
    expect(detail).to_contain_text("PUCT: W/N + c_puct·P·√N_parent / (1 + N)")
    expect(detail).to_contain_text("W/N: the node's mean value")
    expect(detail).to_contain_text("prior term (PUCT): c_puct·P·√N_parent / (1 + N)")
    expect(detail).to_contain_text("prior P: the probability the policy gave")
    page.get_by_text("All nodes (table: select a row to inspect it)").click()
    expect(page.locator("#node-table-gloss")).to_contain_text("W/N mean value")
    expect(page.locator("#node-table-gloss")).to_contain_text("UCT = W/N + c")
    page.close()
