"""Choose the IG scorer by what it does to the search, and report the choice.

The scorer chosen is the IG scorer with the highest F1 pooled over the choice sets (every
question weighs the same) among those that changed at least one answer from the constant
reward's (one that changed none is the constant reward in effect); ties go to the shipped
default, then by name. Two tables: the choice sets, and the report sets (chosen scorer,
shipped scorer, constant reward, greedy path), each with F1, how many answers differ from
the constant reward's, on how many the tree differs from it, the mean spread of the reward
between siblings in the saved trees (how far the reward can tell siblings apart) and
seconds per question. `evidence` is every cell as the study file the app quotes
(`examples/scorer_study.json`, read by `ui.ig_evidence`), with the agent-code fingerprint
it was measured with. The cells themselves come from `scorer_cells`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcts.agents.fingerprint import agent_code_fingerprint
from mcts.evaluation.studies.scorer_cells import CHOICE_SETS, REPORT_SETS, SETS, SHIPPED, Cell, Cells

MODELS = {"smollm": "SmolLM2-135M (bundled)", "gemma": "Gemma 3 270M (optional)"}
VARIANTS = {
    "paper": "paper IG",
    "question": "IG on the question",
    "question_clipped": "IG on the question, clipped",
}
BASELINES = {"constant": "constant reward (ablation)", "single": "greedy path (no search)"}


def scorer_label(scorer: str) -> str:
    if scorer in BASELINES:
        return BASELINES[scorer]
    model, _, variant = scorer.partition("-")
    return f"{MODELS.get(model, model)}, {VARIANTS.get(variant, variant)}"


def pooled(cells: Cells, scorer: str, sets: Mapping[str, str]) -> float | None:
    """F1 over the union of the sets' questions; None unless the scorer ran on every one."""
    mine = [cells.get(s, {}).get(scorer) for s in sets]
    if any(c is None for c in mine):
        return None
    total = sum(c.n for c in mine if c is not None)
    return sum(c.f1 * c.n for c in mine if c is not None) / total


def ig_scorers(cells: Cells) -> list[str]:
    return sorted({s for by in cells.values() for s in by if s not in BASELINES})


def steers(cells: Cells, scorer: str) -> bool:
    """Whether the scorer changed any answer of the choice sets from the constant reward's; one
    that changed none is the constant reward in effect, whatever its F1."""
    return any((c := cells.get(s, {}).get(scorer)) is not None and c.differ for s in CHOICE_SETS)


def chosen_scorer(cells: Cells) -> str | None:
    scored = [(pooled(cells, s, CHOICE_SETS), s) for s in ig_scorers(cells) if steers(cells, s)]
    ranked = [(f1, s) for f1, s in scored if f1 is not None]
    if not ranked:
        return None
    return min(ranked, key=lambda t: (-round(t[0], 6), t[1] != SHIPPED, t[1]))[1]


def _cell_text(cell: Cell | None) -> list[str]:
    if cell is None:
        return ["-", "-", "-", "-", "-"]
    differ = "-" if cell.differ is None else f"{cell.differ} of {cell.n}"
    moved = "-" if cell.trees_differ is None else f"{cell.trees_differ} of {cell.n}"
    spread = "-" if cell.spread is None else f"{cell.spread:.3f}"
    return [f"{100 * cell.f1:.2f}", differ, moved, spread, f"{cell.seconds:.1f}"]


def table(cells: Cells, sets: Mapping[str, str], scorers: list[str], mark: str | None) -> str:
    """One markdown table: a row per scorer, five columns per set present, pooled F1 after."""
    present = {k: v for k, v in sets.items() if k in cells}
    head = ["scorer"]
    for key, label in present.items():
        n = max(c.n for c in cells[key].values())
        head += [f"{label}: F1 (n={n})", f"{label}: answer ≠ constant", f"{label}: tree ≠ constant"]
        head += [f"{label}: r spread", f"{label}: s/q"]
    if len(present) > 1:
        head.append("pooled F1")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for scorer in scorers:
        label = f"**{scorer_label(scorer)}** (chosen)" if scorer == mark else scorer_label(scorer)
        row = [f"{label} `{scorer}`"]
        for key in present:
            row += _cell_text(cells[key].get(scorer))
        if len(present) > 1:
            both = pooled(cells, scorer, present)
            row.append("-" if both is None else f"{100 * both:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def tables(cells: Cells, chosen: str | None) -> str:
    """The choice-set table, then (after a blank line, so they stay two tables) the report-set one."""
    choice = ig_scorers(cells) + [s for s in BASELINES if any(s in cells.get(k, {}) for k in CHOICE_SETS)]
    out = table(cells, CHOICE_SETS, choice, chosen)
    report = [
        s
        for s in dict.fromkeys((chosen, SHIPPED, "constant", "single"))
        if s and any(s in cells.get(k, {}) for k in REPORT_SETS)
    ]
    if report:
        out += "\n\n" + table(cells, REPORT_SETS, report, chosen)
    return out


def evidence(cells: Cells, chosen: str | None, written_by: str) -> dict[str, Any]:
    """Every cell, per set (the app quotes the chosen scorer, the shipped one and the baselines)."""
    keep = list(dict.fromkeys([chosen or SHIPPED, SHIPPED, *ig_scorers(cells), "constant", "single"]))
    sets = {}
    for key, label in SETS.items():
        if key not in cells:
            continue
        sets[key] = {
            "label": label,
            "role": "choice" if key in CHOICE_SETS else "report",
            "scorers": {
                s: {
                    "f1": round(c.f1, 4),
                    "n": c.n,
                    "differ_from_constant": c.differ,
                    "sibling_spread": None if c.spread is None else round(c.spread, 4),
                    "trees_differ_from_constant": c.trees_differ,
                    "seconds": round(c.seconds, 1),
                }
                for s in keep
                if (c := cells[key].get(s)) is not None
            },
        }
    return {
        "chosen": chosen,
        "shipped": SHIPPED,
        "labels": {s: scorer_label(s) for s in keep},
        "sets": sets,
        "agent_code_fingerprint": agent_code_fingerprint(),
        "written_by": written_by,
    }
