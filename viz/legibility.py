"""What keeps a tree of 40-200 nodes readable: colours that show this tree's spread of
rewards (labels that never overlap are `viz.label_fit`).

Pure functions of reward values; `viz.figure` calls them.
Knows nothing of Plotly objects (it returns plain dicts), models or the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PLOT_WIDTH_PX = 1000  # the width markers are sized for; Plotly autosizes to the page

__all__ = ["PLOT_WIDTH_PX", "reward_axis"]


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
