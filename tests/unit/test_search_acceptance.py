"""The search's acceptance claims, checked on the recorded measurement (no model run here).

`tests/measured_search_vs_greedy.json` holds the per-question F1 of the runs the README
section "Search that beats the greedy path" reports (commands there): the greedy single
path, and Fast MCTS and its constant-reward ablation under the `small` preset (PUCT with
the policy prior, the likeliest branch's answer), on the 40 demo questions (the preset was
tuned on the first 16) and on the 68 dev test questions with the trained policy (written by
`scripts/measured_acceptance.py` from those eval runs). A claim the measurement does not meet is an
xfail whose reason names the figure and its cause.

Two kinds of claim: on a whole question set, Fast MCTS at least as good as the greedy path
and as the constant reward; and, where the measurement records the questions' facets, the
goals on the faithful questions (the gold path follows what the question asks): the single
path at 85 F1 on the faithful one-hop questions and 80 on those of families unseen in
training, Fast MCTS 5 points over the single path and 3 over the constant reward.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

MEASURED = json.loads(
    (Path(__file__).resolve().parents[1] / "measured_search_vs_greedy.json").read_text(encoding="utf-8")
)


def _mean(xs: list[float]) -> float:
    return 100 * sum(xs) / len(xs)


def _claim(split: str, better: str, worse: str):
    f1 = MEASURED[split]["f1"]
    a, b = _mean(f1[better]), _mean(f1[worse])
    n = len(MEASURED[split]["questions"])
    marks = ()
    if a < b:
        reason = MEASURED[split].get("why", {}).get(f"{better}>={worse}", "not met")
        marks = pytest.mark.xfail(
            strict=True, reason=f"{split} ({n} q): {better} F1 {a:.1f} < {worse} {b:.1f}: {reason}"
        )
    return pytest.param(split, better, worse, marks=marks, id=f"{split}-{better}-vs-{worse}")


@pytest.mark.parametrize(
    ("split", "better", "worse"),
    [
        _claim(s, b, w)
        for s in MEASURED
        if not s.startswith("_")
        for b, w in (("fast", "single"), ("fast", "constant"))
    ],
)
def test_fast_mcts_small_preset_reaches_the_reference_f1(split: str, better: str, worse: str) -> None:
    f1 = MEASURED[split]["f1"]
    assert _mean(f1[better]) >= _mean(f1[worse])


def _goal(split: str, label: str, keep, method: str, other: str | None, margin: float):
    entry = MEASURED[split]
    picked = [
        i for i, _ in enumerate(entry["questions"]) if keep({k: v[i] for k, v in entry["facets"].items()})
    ]
    mine = _mean([entry["f1"][method][i] for i in picked]) if picked else 0.0
    bar = (_mean([entry["f1"][other][i] for i in picked]) if picked else 0.0) + margin if other else margin
    claim = f"{method}>={other}+{margin:g}" if other else f"{method}>={margin:g}"
    marks = ()
    if mine < bar:
        reason = entry.get("why", {}).get(f"{label}: {claim}", "not met")
        marks = pytest.mark.xfail(
            strict=True,
            reason=f"{split}, {label} ({len(picked)} q): {method} {mine:.1f} < {bar:.1f}: {reason}",
        )
    return pytest.param(split, keep, method, other, margin, marks=marks, id=f"{split}-{label}-{claim}")


def _faithful(f: dict) -> bool:
    return f.get("faithful") is True


def _faithful_one_hop(f: dict) -> bool:
    return _faithful(f) and f.get("hops") == 1


def _faithful_one_hop_unseen(f: dict) -> bool:
    return _faithful_one_hop(f) and f.get("family_in_train") is False


def _real_freebase(split: str) -> bool:
    """The goals are about real questions: a set whose questions have families (CWQ and
    WebQuestions ids), not the hand-written demo questions."""
    return any(v is not None for v in MEASURED[split].get("facets", {}).get("family_in_train", []))


GOALS = (
    ("faithful one-hop", _faithful_one_hop, "single", None, 85.0),
    ("faithful one-hop, family unseen", _faithful_one_hop_unseen, "single", None, 80.0),
    ("faithful", _faithful, "fast", "single", 5.0),
    ("faithful", _faithful, "fast", "constant", 3.0),
)


@pytest.mark.parametrize(
    ("split", "keep", "method", "other", "margin"),
    [
        _goal(s, label, keep, method, other, margin)
        for s in MEASURED
        if not s.startswith("_") and _real_freebase(s)
        for label, keep, method, other, margin in GOALS
    ],
)
def test_goals_on_the_faithful_questions(
    split: str, keep, method: str, other: str | None, margin: float
) -> None:
    entry = MEASURED[split]
    picked = [
        i for i, _ in enumerate(entry["questions"]) if keep({k: v[i] for k, v in entry["facets"].items()})
    ]
    assert picked, "no question of this kind was measured"
    mine = _mean([entry["f1"][method][i] for i in picked])
    bar = _mean([entry["f1"][other][i] for i in picked]) + margin if other else margin
    assert mine >= bar
