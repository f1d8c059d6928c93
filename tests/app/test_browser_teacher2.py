"""The teacher's screen in headless Chromium, second pass, at 1280x800 and 390x844 with no
console error: nothing of the last run stays on screen once a new one starts, the lab
compares every re-score with the run's own rewards and names rules in words, truth rings
only where siblings differ, every example question in the picker (which stays open), the
constant reward's colour bar, and the glossary.

Model-free: example questions replay the shipped traces (a private run cache); a live
run searches the toy world (`tests.doubles.slow_toy_world`) whose loading and policy
calls wait on events the test sets, so the page can be read while the models "load"
and before the first expansion; re-scoring uses a scorer double.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.browser_support import pick_node_by_keyboard, require_chromium
from tests.doubles import serve_on_toy_world, slow_toy_world
from tests.toy_world import ToyScorer, ig_from_reward

pytestmark = [pytest.mark.browser]

INCEPTION = "Who directed Inception?"  # shipped Fast MCTS and constant-reward traces: replayed
SPOUSE = "Who is the spouse of Barack Obama?"  # not an example: a live (toy) search
FORREST = (
    "Where was the director of Forrest Gump born?"  # an example without a trace: every toy answer is wrong
)
SIZES = [(1280, 800), (390, 844)]


class LengthScorer(ToyScorer):
    """Re-scoring without a model: a reward from the cleaned history's length, so rules move it."""

    def score(self, question, cleaned_histories, *, alpha, beta, prompt="", variant="paper"):
        self.usage.calls += 1
        return [ig_from_reward(0.2 + (len(h) * 7919 % 160) / 100, alpha, beta) for h in cleaned_histories]


@dataclass(frozen=True)
class Gates:
    """A live run's two waits: the world's loading, and every policy call."""

    loading: threading.Event
    policy: threading.Event

    def open(self) -> None:
        self.loading.set()
        self.policy.set()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    from ui import handlers, rescoring

    gates = Gates(threading.Event(), threading.Event())
    gates.open()
    world, _ = slow_toy_world(call_s=0.05, hold=gates.policy)

    def loading_world(form: Any, method: Any) -> Any:
        gates.loading.wait(timeout=120)
        return world(form, method)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rescoring, "get_scorer", lambda name: (LengthScorer(), "toy-length"))
        mp.setattr(handlers, "REPLAY_ROUND_S", 0.02)  # the cached replay's animation, shortened
        server = serve_on_toy_world(mp, tmp_path_factory)
        mp.setattr(handlers, "get_world", loading_world)
        mp.setattr(handlers, "is_warm", lambda form, method: False)
        with server as address:
            yield address, gates
    gates.open()


@pytest.fixture()
def open_page(browser: Any) -> Any:
    """Opens a page at a size with its console errors collected; closes it after the test,
    passed or not."""
    opened: list[Any] = []

    def open_(url: str, size: tuple[int, int]) -> tuple[Any, list[str]]:
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        opened.append(page)
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.locator("#question textarea").wait_for()
        return page, errors

    yield open_
    for page in opened:
        page.close()


def run(page: Any, question: str, button: str = "#run-btn", finished: str | None = "Finished") -> None:
    from playwright.sync_api import expect

    page.locator("#question textarea").fill(question)
    page.locator(button).click()
    if finished:
        expect(page.locator("#status")).to_contain_text(finished, timeout=60_000)


def tab(page: Any, name: str) -> None:
    """Open a tab: its button, or at phone width (the tabs that do not fit fold into a menu)
    the menu's entry."""
    button = page.get_by_role("tab", name=name)
    if button.count() and button.first.is_visible():
        button.first.click()
        return
    page.locator(".overflow-menu > button").click()
    page.locator(".overflow-dropdown button", has_text=name).click()


def plot_traces(page: Any, selector: str) -> dict[str, int]:
    """The drawn Plotly figure's traces by name: how many points each has."""
    return page.evaluate(
        """sel => Object.fromEntries((document.querySelector(sel + ' .js-plotly-plot')?.data || [])
             .map(t => [t.name, (t.x || []).filter(x => x !== null).length]))""",
        selector,
    )


@pytest.mark.parametrize("size", SIZES)
def test_a_fresh_run_clears_tree_inspector_twin_and_lab_before_the_models_load(app, open_page, size) -> None:
    from playwright.sync_api import expect

    url, gates = app
    page, errors = open_page(url, size)
    run(page, INCEPTION, finished="Finished (cached run")
    pick_node_by_keyboard(page, 3)
    detail = page.locator("#node-detail")
    expect(detail).to_contain_text(re.compile(r"Node \d+ · depth"), timeout=30_000)
    inspected = re.search(r"Node \d+ · depth", detail.inner_text()).group(0)
    page.locator("#twin-btn").click()
    expect(page.locator("#twin-status")).to_contain_text("Twin replayed", timeout=30_000)
    tab(page, "Cleaning-rule lab")
    page.locator("#rules label", has_text="Drop thoughts").click()
    page.locator("#rescore-btn").click()
    expect(page.locator("#lab-status")).to_contain_text("Re-scored", timeout=30_000)
    tab(page, "Search")

    gates.loading.clear()
    gates.policy.clear()
    try:
        run(page, SPOUSE, button="#fresh-btn", finished=None)
        tree = page.locator("#tree-plot")
        expect(page.locator("#status")).to_contain_text("Loading", timeout=30_000)
        expect(tree).to_contain_text("Loading models…")  # the old tree is gone while the models load
        expect(detail).to_contain_text("Pick a node")
        assert inspected not in detail.inner_text()
        expect(page.locator("#twin-status")).to_have_text("")
        expect(page.locator("#twin-plot-a")).to_be_hidden()
        expect(page.locator("#answer")).to_contain_text("Searching")
        gates.loading.set()
        expect(tree).to_contain_text("Searching…")  # loaded; the first expansion is on its way
        tab(page, "Cleaning-rule lab")
        expect(page.locator("#lab-status")).to_contain_text("After Re-score")
        expect(page.locator("#rank-changes")).to_have_text("")
        tab(page, "Search")
    finally:
        gates.open()
    expect(page.locator("#status")).to_contain_text("Finished", timeout=60_000)
    assert "Searching…" not in page.locator("#tree-plot").inner_text()
    assert not errors, f"console errors: {errors}"


def reward_rows(page: Any) -> dict[int, list[str]]:
    """The lab's reward table by node id: the rows it draws (it draws those in view)."""
    table = page.locator("#reward-table")
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    rows = page.evaluate(
        """() => [...document.querySelectorAll('#reward-table .virtual-row')]
             .map(r => [...r.querySelectorAll('.body-cell')].map(c => c.textContent.trim()))"""
    )
    return {int(cells[0]): cells for cells in rows if cells and cells[0].isdigit()}


def rows_against(page: Any, recorded: dict[int, float], timeout_s: float = 15.0) -> dict[int, list[str]]:
    """The reward table once every drawn row's "r in the run" is the run's recorded r (the
    table redraws a little after the status line); the last rows read if it never is."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = reward_rows(page)
        if rows and all(abs(float(c[2]) - recorded[i]) < 1e-4 for i, c in rows.items()):
            return rows
        if time.monotonic() > deadline:
            return rows
        page.wait_for_timeout(300)


@pytest.mark.parametrize("size", SIZES)
def test_every_rescore_compares_with_the_runs_own_rewards_and_names_rules_in_words(
    app, open_page, size
) -> None:
    from playwright.sync_api import expect

    from mcts.search.cleaning import RULE_INFO, CleaningRule
    from mcts.search.trace import load_trace
    from ui.config import TRACES_DIR

    recorded = {n.id: n.reward for n in load_trace(TRACES_DIR / "fast-obama.json").to_tree().nodes[1:]}
    url, _ = app
    page, errors = open_page(url, size)
    tab(page, "Traces & replay")
    page.locator("#bundled-trace input").click()
    page.get_by_role("option", name="fast-obama.json").click()
    expect(page.locator("#replay-status")).to_contain_text("Round", timeout=30_000)
    tab(page, "Cleaning-rule lab")
    thoughts = page.locator("#rules label", has_text=RULE_INFO[CleaningRule.DROP_THOUGHTS].label)
    mask = page.locator("#rules label", has_text=RULE_INFO[CleaningRule.MASK_SEARCH_NODES].label)
    status = page.locator("#lab-status")
    thoughts.click()
    page.locator("#rescore-btn").click()
    expect(status).to_contain_text("Re-scored", timeout=30_000)
    expect(page.locator("#reward-table")).to_contain_text("r in the run")
    first = rows_against(page, recorded)
    thoughts.click()
    mask.click()
    page.locator("#rescore-btn").click()
    expect(status).to_contain_text(f"off: {RULE_INFO[CleaningRule.MASK_SEARCH_NODES].label}", timeout=30_000)
    second = rows_against(page, recorded)
    assert second and first
    for node_id, cells in second.items():
        assert float(cells[2]) == pytest.approx(recorded[node_id], abs=1e-4), f"node {node_id}: {cells}"
    assert any(float(first[i][3]) != float(second[i][2]) for i in second), (
        "the run's r, not the last re-score's"
    )
    text = status.inner_text()
    for rule, info in RULE_INFO.items():
        assert info.label in text and rule.value not in text
    assert not errors, f"console errors: {errors}"


@pytest.mark.parametrize("size", SIZES)
def test_truth_rings_stay_off_a_question_where_no_branch_reaches_the_answer(app, open_page, size) -> None:
    from playwright.sync_api import expect

    from viz.figure import NOWHERE_LABEL

    url, _ = app
    page, errors = open_page(url, size)
    run(page, FORREST)
    page.locator("#truth-toggle input[type=checkbox]").check()
    summary = page.locator("#truth-summary")
    expect(summary).to_contain_text("no branch here reaches the answer", timeout=30_000)
    expect(page.locator("#tree-plot")).to_contain_text(NOWHERE_LABEL)
    drawn = plot_traces(page, "#tree-plot")
    assert drawn[NOWHERE_LABEL] >= 1, drawn
    assert drawn["IG's top child is truly best (gold)"] == 0, "no green ring where every answer is wrong"
    assert not errors, f"console errors: {errors}"


@pytest.mark.parametrize("size", SIZES)
def test_the_picker_holds_every_example_by_kind_and_stays_open_after_a_run(app, open_page, size) -> None:
    from playwright.sync_api import expect

    url, _ = app
    page, errors = open_page(url, size)
    picker = page.locator("#examples-demo")
    expect(picker).to_contain_text("all 40, by kind")
    for kind in ("One hop", "Multi-hop (3)", "Through a CVT", "Counting (4)", "Homonyms"):
        expect(picker).to_contain_text(kind)
    expect(picker.get_by_text(FORREST)).to_be_visible()
    picker.get_by_text("How many times was John Lennon married?").click()
    expect(page.locator("#question textarea")).to_have_value("How many times was John Lennon married?")
    run(page, INCEPTION, finished="Finished (cached run")
    expect(picker.get_by_text(FORREST)).to_be_visible()  # still open after the run
    if size[0] >= 1000:  # side by side with the question: the open picker scrolls inside its box
        page.wait_for_timeout(800)  # the smooth scroll to the status line
        tree = page.locator("#tree-plot").bounding_box()
        assert tree is not None and tree["y"] < size[1] - 200, f"the tree starts {tree} px down"
    wikidata = page.locator("#examples-demo-wikidata")
    wikidata.get_by_text("all 27, by kind").click()
    wikidata.get_by_text("Who was the 16th President of the United States?").click()
    expect(page.locator("#question textarea")).to_have_value(
        "Who was the 16th President of the United States?"
    )
    expect(page.locator("#kb-method-row input").first).to_have_value("demo-wikidata")
    width = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert width[0] <= width[1], "nothing sticks out sideways"
    assert not errors, f"console errors: {errors}"


@pytest.mark.parametrize("size", SIZES)
def test_the_twins_colour_bar_says_the_reward_is_constant(app, open_page, size) -> None:
    from playwright.sync_api import expect

    url, _ = app
    page, errors = open_page(url, size)
    run(page, INCEPTION, finished="Finished (cached run")
    page.locator("#twin-btn").click()
    twin = page.locator("#twin-plot-b")
    expect(twin).to_contain_text("every node r = 1", timeout=30_000)
    expect(twin).to_contain_text("constant reward:")
    assert "less likely" not in twin.inner_text()
    expect(page.locator("#twin-plot-a")).to_contain_text("less likely")  # the IG run keeps its own bar
    assert not errors, f"console errors: {errors}"


@pytest.mark.parametrize("size", SIZES)
def test_the_glossary_glosses_every_term_on_the_search_and_about_tabs(app, open_page, size) -> None:
    from playwright.sync_api import expect

    from ui.glossary import GLOSSARY

    url, _ = app
    page, errors = open_page(url, size)
    page.locator("#glossary").get_by_text("Glossary: every term on this page").click()
    glossary = page.locator("#glossary")
    for term in ("CVT", "prior term (PUCT)", "likeliest branch", "c_puct", "fingerprint"):
        expect(glossary).to_contain_text(f"{term}: {GLOSSARY[term][:40]}")
    tab(page, "How it works")
    expect(page.locator("#about-glossary")).to_contain_text(f"CVT: {GLOSSARY['CVT'][:40]}")
    assert not errors, f"console errors: {errors}"
