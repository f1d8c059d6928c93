"""What the IG reward did to the search over many questions, in words a teacher can use.

One run's truth overlay has few sibling groups; whether IG helps is a question over many
questions. `examples/scorer_study.json` (written by `scripts/scorer_study.py` from the eval
runs whose commands are in docs/results.md) holds, per question set, the F1 of Fast MCTS
with the shipped scorer (the one the app runs by default) and with the scorer the study
chose, of the constant-reward ablation and of the greedy path, and on how many questions
the IG run's answer differs from the constant reward's. This module turns those figures
into the paragraph the app shows beside the twin; it says plainly when IG did not beat the
constant reward, and when the figures were measured with other agent code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcts.agents.fingerprint import agent_code_fingerprint

EVIDENCE_FILE = Path(__file__).resolve().parents[1] / "examples" / "scorer_study.json"


def load_evidence(path: Path = EVIDENCE_FILE) -> dict[str, Any] | None:
    """The study's figures, or None when the file is missing or unreadable (the app then
    says nothing rather than something unmeasured)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("sets") else None


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _set_line(label: str, scorers: dict[str, Any], ig: str) -> tuple[str, int] | None:
    """One set's sentence and the sign of IG minus constant (+1, 0, -1)."""
    mine, const = scorers.get(ig), scorers.get("constant")
    if mine is None or const is None:
        return None
    gap = mine["f1"] - const["f1"]
    sign = (gap > 1e-9) - (gap < -1e-9)
    single = scorers.get("single")
    greedy = f", greedy path {_pct(single['f1'])}" if single else ""
    n = mine["n"]
    unlike = [f"its {what} on {count} of {n}" for what, count in (
        ("tree", mine.get("trees_differ_from_constant")), ("answer", mine.get("differ_from_constant"))
    ) if count is not None]  # fmt: skip
    moved = f"; unlike the constant reward's: {', '.join(unlike)}" if unlike else ""
    return (
        f"- **{label}** ({n} questions): IG {_pct(mine['f1'])} F1, constant reward {_pct(const['f1'])}"
        f"{greedy}{moved}.",
        sign,
    )


def _best_measured(data: dict[str, Any], shipped: str) -> list[str]:
    """Lines on the scorer the study chose when it is not the one the app runs by default."""
    chosen = data.get("chosen")
    if not chosen or chosen == shipped:
        return []
    label = data.get("labels", {}).get(chosen, chosen)
    parts = []
    for s in data["sets"].values():
        mine, const = s["scorers"].get(chosen), s["scorers"].get("constant")
        if mine and const:
            parts.append(f"{s['label']} {_pct(mine['f1'])} (constant reward {_pct(const['f1'])})")
    if not parts:
        return []
    return [
        f"*The scorer with the best F1 on the sets used to choose* was {label}: " + "; ".join(parts) + "."
    ]


def evidence_markdown(data: dict[str, Any] | None = None, fingerprint: str | None = None) -> str:
    """The paragraph beside the twin, on the scorer the app runs by default (the study's
    shipped one); "" when there is no study to quote."""
    data = load_evidence() if data is None else data
    if not data:
        return ""
    ig = data.get("shipped") or data.get("chosen", "")
    label = data.get("labels", {}).get(ig, ig)
    lines, signs = [], []
    for role, title in (("choice", "used to choose the scorer"), ("report", "held out")):
        part = [(s["label"], s["scorers"]) for s in data["sets"].values() if s.get("role") == role]
        said = [x for x in (_set_line(name, scorers, ig) for name, scorers in part) if x]
        if said:
            lines.append(f"*{title.capitalize()}:*")
            lines += [text for text, _ in said]
            signs += [sign for _, sign in said]
    if not lines:
        return ""
    if all(s <= 0 for s in signs):
        verdict = (
            "**Over many questions, this IG reward did not beat the constant reward** on any of these sets: "
            "with this model and preset the policy's prior and the likeliest-branch answer rule decide most "
            "searches, and the IG reward rarely changes where a search ends. Read a green or red ring as what "
            "IG said about one sibling group, not as proof that it steered the answer."
        )
    elif all(s >= 0 for s in signs):
        verdict = "**Over many questions, this IG reward did at least as well as the constant reward** on every set."
    else:
        verdict = (
            "**Over many questions the IG reward helped on some sets and hurt on others**; see each below."
        )
    head = f"#### What IG did over many questions ({label}, `small` preset, seed 0)"
    current = fingerprint if fingerprint is not None else agent_code_fingerprint()
    stale = (
        "\n\n*Measured with other agent code than this app runs (fingerprint "
        f"{data.get('agent_code_fingerprint', '?')}, now {current}): the figures may have moved.*"
        if data.get("agent_code_fingerprint") != current
        else ""
    )
    best = _best_measured(data, ig)
    source = (
        "Figures from `examples/scorer_study.json`, written by `scripts/scorer_study.py` (docs/results.md)."
    )
    return "\n".join([head, "", verdict, "", *lines, *([""] + best if best else []), "", source]) + stale
