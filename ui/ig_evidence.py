"""What the IG reward did to the search over many questions, in words a teacher can use.

One run's truth overlay has few sibling groups; whether IG helps is a question over many
questions. `examples/scorer_study.json` (written by `python -m mcts study scorers` from the eval
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
    differs = (("tree", mine.get("trees_differ_from_constant")), ("answer", mine.get("differ_from_constant")))
    unlike = [f"its {what} on {count} of {n}" for what, count in differs if count is not None]
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


def _pooled(sets: list[dict[str, Any]], scorer: str) -> tuple[float, int, int, int | None] | None:
    """(F1 over every question of `sets`, questions, answers unlike the constant reward's, trees
    unlike it: None unless every set compared them) for a scorer measured on every set; None
    otherwise."""
    cells = [s["scorers"].get(scorer) for s in sets]
    if not cells or any(c is None for c in cells):
        return None
    n = sum(c["n"] for c in cells)
    f1 = sum(c["f1"] * c["n"] for c in cells) / n
    return (
        f1,
        n,
        sum(c.get("differ_from_constant") or 0 for c in cells),
        None
        if any(c.get("trees_differ_from_constant") is None for c in cells)
        else sum(c["trees_differ_from_constant"] for c in cells),
    )


def _verdict(sets: list[dict[str, Any]], ig: str, signs: list[int]) -> str:
    """The sentence a teacher can read out: IG against the constant reward over every question."""
    mine, const = _pooled(sets, ig), _pooled(sets, "constant")
    if mine is None or const is None:
        return "**What IG did over many questions**, set by set:"
    f1, n, answers, trees = mine
    gap = 100 * (f1 - const[0])
    moved = (
        f"its tree differed from the constant reward's on {trees} of them, its answer on only {answers}"
        if trees is not None  # a study without the trees compared must not read as "no tree moved"
        else f"unlike the constant reward's: its answer on only {answers} of them"
    )
    over = (
        f"over all {n} questions of these sets IG scored {_pct(f1)} F1 and the constant reward "
        f"{_pct(const[0])}; {moved}"
    )
    mixed = (
        " (ahead on some sets, behind on others)"
        if any(s > 0 for s in signs) and any(s < 0 for s in signs)
        else ""
    )
    if gap <= 0.05:
        return (
            f"**Over many questions, this IG reward did not beat the constant reward**{mixed}: {over}. "
            "With this model and preset the policy's prior and the likeliest-branch answer rule decide most "
            "searches: IG moves where a search looks far more often than where it ends. Read a green or red ring "
            "as what IG said about one sibling group, not as proof that it steered the answer."
        )
    return f"**Over many questions, this IG reward did better than the constant reward**{mixed}: {over}."


def evidence_markdown(data: dict[str, Any] | None = None, fingerprint: str | None = None) -> str:
    """The paragraph beside the twin, on the scorer the app runs by default (the study's
    shipped one); "" when there is no study to quote."""
    data = load_evidence() if data is None else data
    if not data:
        return ""
    ig = data.get("shipped") or data.get("chosen", "")
    label = data.get("labels", {}).get(ig, ig)
    lines: list[str] = []
    signs: list[int] = []
    measured: list[dict[str, Any]] = []
    for role, title in (("choice", "Used to choose the scorer"), ("report", "Held out from that choice")):
        part = [s for s in data["sets"].values() if s.get("role") == role]
        said = [(s, x) for s in part if (x := _set_line(s["label"], s["scorers"], ig))]
        if said:
            lines += [f"*{title}:*", ""] + [text for _, (text, _) in said] + [""]
            signs += [sign for _, (_, sign) in said]
            measured += [s for s, _ in said]
    if not lines:
        return ""
    head = f"#### What IG did over many questions ({label}, `small` preset, seed 0)"
    current = fingerprint if fingerprint is not None else agent_code_fingerprint()
    stale = (
        "\n\n*Measured with other agent code than this app runs (fingerprint "
        f"{data.get('agent_code_fingerprint', '?')}, now {current}): the figures may have moved.*"
        if data.get("agent_code_fingerprint") != current
        else ""
    )
    best = _best_measured(data, ig)
    source = "Figures from `examples/scorer_study.json`, written by `python -m mcts study scorers` (docs/results.md)."
    body = [head, "", _verdict(measured, ig, signs), "", *lines, *(best + [""] if best else []), source]
    return "\n".join(body) + stale
