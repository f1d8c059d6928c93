"""What keeps a tree of 40-200 nodes readable: labels that never overlap, colours that
show this tree's spread of rewards.

Pure functions of a `viz.layout.TreeLayout` and reward values; `viz.figure` calls them.
Knows nothing of Plotly objects (it returns plain dicts), models or the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from viz.layout import TreeLayout

PLOT_WIDTH_PX = 1000  # the width we design for; Plotly autosizes to the page
LABEL_PX = 62.0  # room one label ("12 Patterns", 10 px font) needs side by side

__all__ = ["LABEL_PX", "PLOT_WIDTH_PX", "reward_axis", "thin_labels"]


def thin_labels(
    layout: TreeLayout, priority: Sequence[int] = (), width_px: float = PLOT_WIDTH_PX
) -> set[int]:
    """The nodes to label so that no two labels on one level overlap.

    Per level, left to right, a label is kept when it is at least `LABEL_PX` from every
    label already kept on that level; the priority nodes (the best and the selected
    path) are placed first, so the branch the eye follows keeps its names.
    """
    unit_px = width_px / max(layout.width + 1.6, 1.0)
    gap = LABEL_PX / unit_px  # in x units
    by_level: dict[int, list[int]] = {}
    for node_id, (_x, depth) in layout.positions.items():
        by_level.setdefault(depth, []).append(node_id)
    first = [n for n in dict.fromkeys(priority) if n in layout.positions]
    kept: set[int] = set()
    for level in by_level.values():
        placed: list[float] = []
        rest = sorted(level, key=lambda n: layout.positions[n][0])
        for node_id in [*[n for n in first if n in level], *rest]:
            x = layout.positions[node_id][0]
            if node_id not in kept and all(abs(x - other) >= gap for other in placed):
                kept.add(node_id)
                placed.append(x)
    return kept


def reward_axis(rewards: Sequence[float], alpha: float) -> dict[str, Any]:
    """A colour axis spanning this tree's rewards, white at the neutral reward alpha/2.

    With a small model the rewards bunch near neutral (1.0-1.6 of 0-2), which a fixed
    0..alpha scale paints pale blue; spanning the observed range shows the spread. The
    neutral value always stays on the bar, marked, so red still means "less likely".
    """
    neutral = alpha / 2
    lo = min([*rewards, neutral])
    hi = max([*rewards, neutral])
    if hi - lo < 1e-6:
        lo, hi = neutral - max(alpha, 1.0) / 20, neutral + max(alpha, 1.0) / 20
    mid = (neutral - lo) / (hi - lo)
    # Each side keeps its full hue range however far the observed rewards reach.
    scale = [
        [0.0, "#b2182b"],
        [mid * 0.5, "#ef8a62"],
        [mid, "#f7f7f7"],
        [mid + (1 - mid) * 0.5, "#67a9cf"],
        [1.0, "#2166ac"],
    ]
    if mid <= 0.0:
        scale = [[0.0, "#f7f7f7"], [0.5, "#67a9cf"], [1.0, "#2166ac"]]
    elif mid >= 1.0:
        scale = [[0.0, "#b2182b"], [0.5, "#ef8a62"], [1.0, "#f7f7f7"]]
    ticks = [lo] if abs(lo - neutral) > 1e-6 else []
    ticks += [neutral] + ([hi] if abs(hi - neutral) > 1e-6 else [])
    text = [f"{t:.2f} (neutral)" if t == neutral else f"{t:.2f}" for t in ticks]
    return {
        "colorscale": scale,
        "cmin": lo,
        "cmax": hi,
        "colorbar": {
            "title": {"text": "IG reward r<br>(red: Q less likely)", "side": "right"},
            "thickness": 14,
            "len": 0.8,
            "tickvals": ticks,
            "ticktext": text,
        },
    }
