"""Tree labels never collide (`viz.label_fit`): estimated label boxes, mapped from data
coordinates to pixels, on trees of 15, 30 and 60 nodes at a 1280 px page and a 390 px
phone, with the forms the figure carries and the rule the page's script applies."""

from __future__ import annotations

import json

import pytest

from mcts.search.trace import load_trace
from tests.synthetic_tree import synthetic_tree
from ui.config import TRACES_DIR
from viz.figure import KINDS, best_value_path, build_figure, marker_radius, marker_scale, tree_label_forms
from viz.label_fit import DESIGN_PLOT_PX, X_PAD_UNITS, choose, collisions, label_boxes, text_px
from viz.layout import layout_tree

NODE_TRACES = {k.label for k in KINDS}
# The plot area Chromium gives the tree (measured on the Search tab): width, and the height
# that the top margin and the legend take from the figure's.
PAGES = {"desktop": (DESIGN_PLOT_PX, 160.0), "phone": (156.0, 264.0)}


def _setup(tree, page: str):
    lay = layout_tree(tree)
    fig = build_figure(tree, layout=lay)
    best = best_value_path(tree)
    forms = tree_label_forms(tree, lay, marker_scale(lay.width), best, fig.layout.height)
    radius = {n: marker_radius(tree[n], marker_scale(lay.width)) for n in lay.positions}
    width, lost = PAGES[page]
    per_x = width / (lay.width + 2 * X_PAD_UNITS)
    per_y = (fig.layout.height - lost) / (lay.depth + 1.1)
    return lay, fig, forms, radius, per_x, per_y


def _figure_texts(fig) -> dict[int, str]:
    out = {}
    for t in fig.data:
        if t.name in NODE_TRACES and t.customdata is not None:
            out.update({int(i): s for i, s in zip(t.customdata, t.text, strict=True) if s})
    return out


def _page_rule(fig, per_x: float, per_y: float) -> dict[int, str]:
    """What the page's script (`ui.theme.JS`, relabel) shows, read from the figure's JSON."""
    data = json.loads(fig.to_json())
    needs = data["layout"]["meta"]["kbqa_labels"]
    pick = {
        lv: next((f for f, (nx, ny) in enumerate(n) if nx <= per_x and ny <= per_y), len(n) - 1)
        for lv, n in needs.items()
    }
    out = {}
    for t in data["data"]:
        k = (t.get("meta") or {}).get("kbqa")
        if k:
            for j, (node_id, lv) in enumerate(zip(t["customdata"], k["lv"], strict=True)):
                if k["forms"][pick[str(lv)]][j]:
                    out[node_id] = k["forms"][pick[str(lv)]][j]
    return out


@pytest.mark.parametrize("page", ["desktop", "phone"])
@pytest.mark.parametrize("size", [15, 30, 60])
def test_no_label_meets_another_label_or_a_marker(size: int, page: str) -> None:
    tree = synthetic_tree(size, seed=size)
    lay, fig, forms, radius, per_x, per_y = _setup(tree, page)
    texts = choose(forms, per_x, per_y)
    assert collisions(label_boxes(lay, texts, radius, per_x, per_y)) == []
    assert _page_rule(fig, per_x, per_y) == texts, "the page's rule and choose() differ"
    best = best_value_path(tree)
    if page == "desktop":
        assert _figure_texts(fig) == texts, "the figure starts with the desktop choice"
        assert set(best) <= set(texts), "the best branch stays named"
    if size == 15:
        assert set(texts) >= set(best[:3]), "the top of the best branch is named on a phone too"


def test_the_check_finds_collisions_when_every_level_is_forced_to_its_richest_form() -> None:
    tree = synthetic_tree(60, seed=60)
    lay, _fig, forms, radius, per_x, per_y = _setup(tree, "phone")
    assert collisions(label_boxes(lay, forms.texts[0], radius, per_x, per_y))


def test_the_obama_tree_shows_every_relation_at_1280_px_and_ids_on_a_phone() -> None:
    tree = load_trace(TRACES_DIR / "fast-obama.json").to_tree()
    lay, fig, forms, radius, per_x, per_y = _setup(tree, "desktop")
    texts = _figure_texts(fig)
    assert texts[3] == "3 SPARQL<br>place_of_birth" and texts[11] == "11 SPARQL<br>←parents"
    _, _, _, _, px, py = _setup(tree, "phone")
    phone = choose(forms, px, py)
    assert set(phone) == set(lay.positions), "every node keeps at least its id"
    assert collisions(label_boxes(lay, phone, radius, px, py)) == []


def test_width_estimates_are_a_little_generous() -> None:
    # Widths Chromium measured (getBBox, 10 px default font) for labels of the Obama tree.
    measured = {
        "3 SPARQL<br>place_of_birth": 62.8,
        "1 Nodes": 37.2,
        "7 SPARQL<br>education/institution": 88.4,
    }
    for text, px in measured.items():
        assert px <= text_px(text) <= 1.2 * px
