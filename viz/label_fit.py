"""Tree labels that never collide: estimated text boxes, label forms per level, and the check.

A label's width is estimated from its characters and the font size; a level's labels fit
when every two neighbours' half-widths (plus a little clear space) fit into the distance
between them, in pixels: x distance in data units times the plot's pixels per unit. Each
level has forms from rich to bare ("3 SPARQL" over "place_of_birth", "3 SPARQL", "3", the
ids that fit left to right, the best and selected paths' ids, none), each with the pixels
per unit (across and down) it needs. The figure starts with the forms that fit the design
width (a 1280 px page) and carries all of them; the page's script (`ui.theme.JS`) picks
again, by the same rule (`choose`), for the width the plot really has (a phone, a zoom).

Pure functions of a `viz.layout.TreeLayout`, label texts and marker sizes; `label_boxes`
and `collisions` are the check the tests run. Knows nothing of Plotly objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from viz.layout import TreeLayout

FONT_PX = 10.0  # the tree's label font size
LINE_PX = 12.5  # the height one line of it takes
PAD_PX = 6.0  # clear space kept between two labels, or a label and a marker
MARKER_GAP_PX = 1.0  # Plotly draws "bottom center" text this far below the marker's edge
NEVER = 1e9  # "needs more pixels than any screen has" (JSON has no infinity)
# Plot-area width at a 1280 px page (measured in Chromium: the page's padding, the depth
# axis on the left and the colour bar on the right take the rest) and the area's height
# lost to the top margin Gradio gives a titled plot and the legend under it.
DESIGN_PLOT_PX = 1020.0
DESIGN_LOST_HEIGHT_PX = 160.0
X_PAD_UNITS = 0.8  # the x range reaches this far beyond the outermost nodes (`viz.figure`)

_NARROW = set("iljIt.,:;'|!()[]{} ")
_WIDE = set("MWmw@%…←→↑↓≠≤≥")


def char_px(ch: str, font_px: float = FONT_PX) -> float:
    """One character's estimated advance in the default sans font (a little generous)."""
    if ch in _NARROW:
        em = 0.32
    elif ch in _WIDE:
        em = 0.9
    elif ch.isupper() or ch.isdigit():
        em = 0.68
    else:
        em = 0.56
    return em * font_px


@lru_cache(maxsize=4096)
def text_px(text: str, font_px: float = FONT_PX) -> float:
    """The estimated width of a label: its widest line ("<br>" breaks lines)."""
    return max((sum(char_px(c, font_px) for c in line) for line in text.split("<br>")), default=0.0)


def text_lines(text: str) -> int:
    return 0 if not text else text.count("<br>") + 1


@dataclass(frozen=True)
class LabelForms:
    """Every form of every label and what each needs to fit.

    `texts[f]` maps node id -> text of form f (absent: no label in that form); `needs[d][f]`
    is (pixels per x unit, pixels per depth unit) form f needs on level d; `levels` maps
    node id -> level; `design[d]` is the form level d shows at the design width."""

    texts: tuple[dict[int, str], ...]
    needs: dict[int, tuple[tuple[float, float], ...]]
    levels: dict[int, int]
    design: dict[int, int]


def design_pixels(layout: TreeLayout, height_px: float) -> tuple[float, float]:
    """Pixels per x unit and per depth unit at the design width (a 1280 px page)."""
    per_x = DESIGN_PLOT_PX / (layout.width + 2 * X_PAD_UNITS)
    per_y = max(height_px - DESIGN_LOST_HEIGHT_PX, 100.0) / (layout.depth + 1.1)
    return per_x, per_y


def _levels(layout: TreeLayout) -> dict[int, list[int]]:
    """Level -> its node ids, left to right."""
    by_level: dict[int, list[int]] = {}
    for node_id, (_x, depth) in sorted(layout.positions.items(), key=lambda kv: (kv[1][0], kv[0])):
        by_level.setdefault(depth, []).append(node_id)
    return by_level


def _room(wa: float, wb: float, ra: float, rb: float) -> float:
    """Pixels two neighbours need between their centres so that no label (half-widths wa,
    wb; 0 for none) touches the other's label or marker (radii ra, rb)."""
    # A label hangs below its own marker: it can only meet a neighbour's marker that
    # reaches further down than its own.
    reach_b = rb if rb > ra + MARKER_GAP_PX else 0.0
    reach_a = ra if ra > rb + MARKER_GAP_PX else 0.0
    room = 0.0
    if wa:
        room = max(room, wa + max(wb, reach_b))
    if wb:
        room = max(room, wb + max(wa, reach_a))
    return room + PAD_PX if room else 0.0


def _need_x(
    layout: TreeLayout, ids: Sequence[int], texts: Mapping[int, str], radius: Mapping[int, float]
) -> float:
    """Pixels per x unit at which no label on one level (ids left to right) touches another
    label or a neighbour's marker: labels are checked against the next label and against
    the next node (a label that reaches past the next marker meets it first)."""
    pos = layout.positions
    half = {n: text_px(texts.get(n, "")) / 2 for n in ids}
    labelled = [n for n in ids if half[n]]
    pairs = [(a, b, half[a], half[b]) for a, b in zip(labelled, labelled[1:], strict=False)]
    pairs += [(a, b, half[a], 0.0) for a, b in zip(ids, ids[1:], strict=False)]
    pairs += [(a, b, 0.0, half[b]) for a, b in zip(ids, ids[1:], strict=False)]
    need = 0.0
    for a, b, wa, wb in pairs:
        room = _room(wa, wb, radius[a], radius[b])
        if room:
            dx = pos[b][0] - pos[a][0]
            need = max(need, room / dx if dx > 0 else NEVER)
    return need


def _need_y(
    ids: Sequence[int], below: Sequence[int], texts: Mapping[int, str], radius: Mapping[int, float]
) -> float:
    """Pixels per depth unit at which a level's labels clear the next level's markers."""
    lines = max((text_lines(texts.get(n, "")) for n in ids), default=0)
    if lines == 0:
        return 0.0
    mine = max(radius[n] for n in ids)
    theirs = max((radius[n] for n in below), default=0.0)
    return mine + MARKER_GAP_PX + lines * LINE_PX + PAD_PX + theirs


def _thinned(
    layout: TreeLayout, ids: Sequence[int], first: Sequence[int], radius: Mapping[int, float], per_x: float
) -> list[int]:
    """The ids of one level (left to right) whose id labels fit side by side at `per_x`,
    `first` placed first: each kept label clears every kept label and every other marker."""
    xs = [layout.positions[n][0] for n in ids]
    half = [text_px(str(n)) / 2 for n in ids]
    reach = (max(half, default=0.0) + max((radius[n] for n in ids), default=0.0) + PAD_PX) / per_x
    kept = [False] * len(ids)
    at = {n: i for i, n in enumerate(ids)}
    for i in [*[at[n] for n in first if n in at], *range(len(ids))]:
        if kept[i]:
            continue
        clear = True
        for step in (-1, 1):  # outwards on both sides, as far as any label or marker can reach
            j = i + step
            while clear and 0 <= j < len(ids) and abs(xs[j] - xs[i]) < reach:
                room = _room(half[i], half[j] if kept[j] else 0.0, radius[ids[i]], radius[ids[j]])
                clear = abs(xs[j] - xs[i]) * per_x >= room
                j += step
        kept[i] = clear
    return [n for n, k in zip(ids, kept, strict=True) if k]


def label_forms(
    layout: TreeLayout,
    full: Mapping[int, str],
    short: Mapping[int, str],
    radius: Mapping[int, float],
    priority: Sequence[int],
    design: tuple[float, float],
) -> LabelForms:
    """The forms of every level's labels: `full` (two lines), `short`, ids, the ids that fit
    side by side at `design_per_x`, the `priority` nodes' ids (the best and the selected
    path), none. radius: each visible node's marker radius in pixels; design: pixels per x
    and per depth unit at the design width (`design_pixels`)."""
    first = [n for n in dict.fromkeys(priority) if n in layout.positions]
    by_level = _levels(layout)
    ids_only = {n: str(n) for n in layout.positions}
    forms: list[dict[int, str]] = [dict(full), dict(short), ids_only, {}, {}, {}]
    for ids in by_level.values():
        forms[3].update({n: str(n) for n in _thinned(layout, ids, first, radius, design[0])})
        forms[4].update({n: str(n) for n in first if n in ids})
    needs: dict[int, tuple[tuple[float, float], ...]] = {}
    for depth, ids in by_level.items():
        below = by_level.get(depth + 1, [])
        needs[depth] = tuple(
            (
                round(_need_x(layout, ids, form, radius), 3),
                round(_need_y(ids, below, form, radius), 3),
            )
            for form in forms
        )
    levels = {n: d for n, (_x, d) in layout.positions.items()}
    return LabelForms(tuple(forms), needs, levels, _picks(needs, *design))


def _picks(needs: Mapping[int, Sequence[tuple[float, float]]], per_x: float, per_y: float) -> dict[int, int]:
    """Level -> the richest form that fits at these pixels per unit (the last form, no
    labels, always fits): the rule the page's script applies to the plot's real size."""
    return {
        depth: next((f for f, (nx, ny) in enumerate(level) if nx <= per_x and ny <= per_y), len(level) - 1)
        for depth, level in needs.items()
    }


def choose(forms: LabelForms, per_x: float, per_y: float) -> dict[int, str]:
    """Node id -> the label it shows at these pixels per unit (unlabelled nodes absent)."""
    picks = _picks(forms.needs, per_x, per_y)
    out: dict[int, str] = {}
    for node_id, depth in forms.levels.items():
        text = forms.texts[picks[depth]].get(node_id, "")
        if text:
            out[node_id] = text
    return out


# ---------------------------------------------------------------- the check


@dataclass(frozen=True)
class Box:
    """A label's or a marker's estimated box on screen, in pixels (y grows downwards)."""

    node_id: int
    kind: str  # "label" or "marker"
    x0: float
    x1: float
    y0: float
    y1: float

    def meets(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


def label_boxes(
    layout: TreeLayout, texts: Mapping[int, str], radius: Mapping[int, float], per_x: float, per_y: float
) -> list[Box]:
    """Every visible node's marker box and, where it has one, its label's box ("bottom
    center": centred under the marker), from data coordinates mapped to pixels."""
    boxes: list[Box] = []
    for node_id, (x, depth) in layout.positions.items():
        cx, cy, r = (x + X_PAD_UNITS) * per_x, depth * per_y, radius[node_id]
        boxes.append(Box(node_id, "marker", cx - r, cx + r, cy - r, cy + r))
        text = texts.get(node_id, "")
        if text:
            half = text_px(text) / 2
            top = cy + r + MARKER_GAP_PX
            boxes.append(Box(node_id, "label", cx - half, cx + half, top, top + text_lines(text) * LINE_PX))
    return boxes


def collisions(boxes: Sequence[Box]) -> list[tuple[Box, Box]]:
    """Pairs where a label meets another label or another node's marker."""
    labels = [b for b in boxes if b.kind == "label"]
    found = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            if a.meets(b):
                found.append((a, b))
        for m in boxes:
            if m.kind == "marker" and m.node_id != a.node_id and a.meets(m):
                found.append((a, m))
    return found
