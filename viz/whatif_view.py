"""What-if, drawn: a node's reward as the run scored it beside the reward of an edited history.

The edit is scored by the same scorer, prompt and IG variant; only the cleaned history
differs. Its rank is where the new r would fall among the node's siblings' stored rewards
(siblings unchanged). Pure: numbers in, Markdown out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mcts.search.settings import IGVariant
from viz.escape import num
from viz.ig_lens import Anatomy


def rank_among(reward: float, siblings: Sequence[float]) -> int:
    """1-based rank of `reward` among the siblings' rewards (highest first; a tie ranks it first)."""
    return 1 + sum(1 for r in siblings if r > reward)


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def whatif_markdown(
    before: Anatomy | None,
    after: Anatomy,
    *,
    variant: IGVariant,
    run_r: float | None,
    new_r: float,
    siblings: Sequence[float],
    chars: tuple[int, int],
) -> str:
    """The table of terms before and after the edit, r and the rank among the siblings."""
    rows = [
        ("a: mean NLL of history + prompt", before and before.a, after.a),
        ("q: mean NLL of the question after it", before and before.q, after.q),
        ("q0: the question after the prompt alone", before and before.q0, after.q0),
        ("m/(n+m): the question's weight", before and before.weight, after.weight),
        (f"x ({variant.value})", before and before.x(variant), after.x(variant)),
    ]
    lines = [
        f"**What if the cleaned history read like this?** ({num(chars[0])} → {num(chars[1])} characters; "
        "scored with the run's scorer, prompt and IG variant)",
        "",
        "| term | as the run scored it | edited |",
        "|---|---|---|",
        *(f"| {name} | {_f(old)} | {_f(new)} |" for name, old, new in rows),  # our own labels
        f"| tokens n / m | {'–' if before is None else f'{before.n} / {before.m}'} | {after.n} / {after.m} |",
        f"| **r** | {_f(run_r, 4)} | **{_f(new_r, 4)}** |",
    ]
    if siblings:
        k = len(siblings) + 1
        new_rank = rank_among(new_r, siblings)
        was = f" (as run: {rank_among(run_r, siblings)} of {k})" if run_r is not None else ""
        lines += [
            "",
            f"Among its {len(siblings)} sibling(s) the edited node would rank **{new_rank} of {k}** by r{was}.",
        ]
    else:
        lines += ["", "It has no scored sibling to rank against."]
    if run_r is not None:
        delta = new_r - run_r
        lines.append(f"The edit moves r by {delta:+.4f}.")
    lines += ["", "*The edit is not saved: the tree, its trace and other visitors see the run as it was.*"]
    return "\n".join(lines)
