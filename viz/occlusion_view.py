"""The evidence that moved a reward, drawn: the cleaned history shaded by occlusion.

Each segment of the cleaned history (an action's argument, the semantic phrase, an
observation line or one result value) was removed in turn and the node re-scored
(`mcts.agents.ig_probe`). A segment whose removal lowers r pushed the reward up (green);
one whose removal raises r held it down (red); the stronger the change, the deeper the
shade. Pure functions of stored text and numbers; every outside string is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from viz.escape import html_text, md

_PRE = (
    "white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:12px;"
    "background:#fafafa;border:1px solid #e5e7eb;border-radius:6px;padding:8px;margin:0;"
    "max-height:360px;overflow:auto"
)


@dataclass(frozen=True)
class SpanEffect:
    """One occluded segment: its span in the cleaned history and what removing it did to r."""

    start: int
    end: int
    label: str
    delta_r: float  # r without the segment minus r with it


def pushed(effect: SpanEffect) -> float:
    """How much the segment raised the reward: -Δr (removing it took that much away)."""
    return -effect.delta_r


def _shade(value: float, scale: float) -> str:
    strength = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
    rgb = "22,163,74" if value >= 0 else "220,38,38"  # green: raised r; red: held it down
    return f"rgba({rgb},{0.10 + 0.55 * strength:.2f})"


def occlusion_html(history: str, effects: Sequence[SpanEffect]) -> str:
    """The cleaned history with every occluded segment shaded by how much it moved r;
    hover a segment for its label and Δr. Text outside segments is shown plain."""
    spans = sorted((e for e in effects if 0 <= e.start < e.end <= len(history)), key=lambda e: e.start)
    scale = max((abs(e.delta_r) for e in spans if math.isfinite(e.delta_r)), default=0.0)
    parts, pos = [], 0
    for e in spans:
        if e.start < pos:  # overlapping spans cannot come from the segmenter; drawn once
            continue
        parts.append(html_text(history[pos : e.start]))
        title = html_text(f"{e.label}: removing it changes r by {e.delta_r:+.4f}")
        parts.append(
            f"<span style='background:{_shade(pushed(e), scale)};border-radius:3px' title='{title}'>"
            f"{html_text(history[e.start : e.end])}</span>"
        )
        pos = e.end
    parts.append(html_text(history[pos:]))
    legend = (
        "<div style='font-size:12px;color:#374151;margin:4px 0'>"
        "<span style='background:rgba(22,163,74,.5);padding:1px 6px;border-radius:4px'>raised r</span> "
        "<span style='background:rgba(220,38,38,.5);padding:1px 6px;border-radius:4px'>lowered r</span> "
        "deeper = stronger; hover a piece for its Δr</div>"
    )
    return f"{legend}<pre style='{_PRE}'>{''.join(parts)}</pre>"


def occlusion_summary(
    effects: Sequence[SpanEffect], base_r: float, *, segments: int, complete: bool, limit: int = 8
) -> str:
    """Markdown: the segments that moved r most, and one line saying how the search of
    evidence ended (all segments, or stopped after some)."""
    ranked = sorted(effects, key=lambda e: -abs(e.delta_r))
    done = (
        f"all {segments} segments"
        if complete
        else f"{len(effects)} of {segments} segments (stopped before the rest)"
    )
    lines = [
        f"**Evidence that moved the reward:** r = {base_r:.4f} with the whole history; removed in turn, "
        f"{done}.",
    ]
    if not ranked:
        return lines[0]
    lines += ["", "| segment | r without it | it moved r by |", "|---|---|---|"]
    for e in ranked[:limit]:
        lines.append(f"| {md(e.label)} | {base_r + e.delta_r:.4f} | {pushed(e):+.4f} |")
    top = ranked[0]
    if abs(top.delta_r) < 1e-3:
        lines += ["", "No segment moves r by a thousandth: the reward does not hang on any one piece."]
    else:
        verb = "raised" if pushed(top) > 0 else "lowered"
        lines += ["", f"The piece that moved r most, {md(top.label)}, {verb} it by {abs(top.delta_r):.4f}."]
    return "\n".join(lines)
