"""The tree's labels in headless Chromium, at 1280x800 and 390x844: no two node labels meet
(their SVG text boxes, read from the page), siblings read apart in the tree, the node list
and the node table, the plot's name badge stays off Plotly's toolbar, no console errors.

Model-free: the example questions replay the shipped traces (seeded into a private run
cache). A tree of about 60 nodes is checked at the figure level (`tests/unit/test_label_fit.py`):
no paper-preset trace is shipped.
"""

from __future__ import annotations

import pytest

from tests.browser_support import require_chromium
from tests.doubles import serve_on_toy_world

pytestmark = [pytest.mark.browser]

OBAMA = "Where was Barack Obama born?"
INCEPTION = "Who directed Inception?"
VIEWPORTS = [(1280, 800), (390, 844)]

# Every shown node label of the search tree as a screen box (getBBox mapped by the text's
# screen matrix), the plot's name badge and Plotly's toolbar.
READ_PAGE = """() => {
  const gd = document.querySelector('#tree-plot .js-plotly-plot');
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; };
  const labels = [];
  for (const t of gd.querySelectorAll('.scatterlayer .textpoint text')) {
    const text = t.textContent;
    if (!text || getComputedStyle(t).display === 'none') continue;
    const b = t.getBBox(), m = t.getScreenCTM();
    const p = (x, y) => { const q = new DOMPoint(x, y).matrixTransform(m); return [q.x, q.y]; };
    const [x0, y0] = p(b.x, b.y), [x1, y1] = p(b.x + b.width, b.y + b.height);
    labels.push({text, x0, y0, x1, y1});
  }
  return {labels, badge: box(document.querySelector('#tree-plot [data-testid=block-label]')),
          modebar: box(gd.querySelector('.modebar')),
          hover: gd.data.flatMap((t) => t.hovertext || [])};
}"""


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_chromium()
    with pytest.MonkeyPatch.context() as mp, serve_on_toy_world(mp, tmp_path_factory) as address:
        yield address


def meets(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (
        a["x0"] < b["x1"] - slack
        and b["x0"] < a["x1"] - slack
        and a["y0"] < b["y1"] - slack
        and b["y0"] < a["y1"] - slack
    )


def show_tree(browser, url: str, question: str, width: int, height: int):
    """A page at this size with the question's cached run on screen; (page, console errors)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.locator("#question textarea").fill(question)
    page.locator("#run-btn").click()
    expect(page.locator("#status")).to_contain_text("Finished", timeout=60_000)
    page.locator("#tree-plot .scatterlayer .textpoint text").first.wait_for()
    page.wait_for_timeout(1500)  # the page's script re-picks the label forms after the draw
    return page, errors


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
@pytest.mark.parametrize("question", [OBAMA, INCEPTION])
def test_no_two_node_labels_meet_and_the_badge_is_off_the_toolbar(
    url, browser, question, width, height
) -> None:
    page, errors = show_tree(browser, url, question, width, height)
    seen = page.evaluate(READ_PAGE)
    labels = seen["labels"]
    clashes = [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1 :] if meets(a, b)]
    assert not clashes, f"labels meet at {width} px: {clashes}"
    texts = [lab["text"] for lab in labels]
    if width == 1280:
        assert len(labels) >= 12, f"every node is named at 1280 px: {texts}"
    else:
        assert len(labels) >= 6, f"a phone still shows the nodes' ids: {texts}"
    assert seen["badge"] is not None and seen["modebar"] is not None
    assert not meets(seen["badge"], seen["modebar"], slack=0), "the badge covers Plotly's toolbar"
    assert errors == []
    page.close()


def test_obama_siblings_read_apart_in_the_tree_the_node_list_and_the_table(url, browser) -> None:
    from playwright.sync_api import expect

    page, errors = show_tree(browser, url, OBAMA, 1280, 800)
    seen = page.evaluate(READ_PAGE)
    texts = " | ".join(lab["text"] for lab in seen["labels"])
    for part in ("place_of_birth", "children", "nationality", "←parents", "→ Honolulu"):
        assert part in texts, f"{part!r} not among the tree's labels: {texts}"
    # The whole action is on hover.
    assert any("ns:people.person.children" in h.replace("<br>", "") for h in seen["hover"])

    page.locator("#node-dd input").click()
    for name in ("3 · d3 · SPARQL place_of_birth", "4 · d3 · SPARQL children", "5 · d3 · SPARQL nationality"):
        expect(page.get_by_role("option", name=name, exact=False)).to_be_visible()
    page.keyboard.press("Escape")

    page.get_by_text("All nodes (table: select a row to inspect it)").click()
    table = page.locator("#node-table")
    for name in ("SPARQL place_of_birth", "SPARQL children", "SPARQL nationality"):
        expect(table).to_contain_text(name)
    expect(table).to_contain_text("ns:people.person.place_of_birth")  # the whole action beside it
    assert errors == []
    page.close()
