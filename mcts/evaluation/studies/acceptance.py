"""The search's acceptance goals, as data, and whether a measurement meets them.

A measurement is the per-question F1 of the greedy path (`single`), Fast MCTS (`fast`) and
its constant-reward ablation (`constant`) on the questions all three finished in one eval
run, with each question's facets (hops, gold path faithful, family in training;
`mcts.evaluation.facets`). `docs/acceptance.json` holds the measurement of the runs
docs/results.md reports, with a `why` note per goal not met (analysis, written by hand;
rewriting the file from new runs keeps the notes of a name already in it).

Two kinds of goal: on a whole question set, Fast MCTS at least as good as the greedy path
and as the constant reward; and on real Freebase questions (a set whose questions have
families), the goals on the faithful questions (the gold path follows what the question
asks): the single path at 85 F1 on the faithful one-hop questions and 80 on those of
families unseen in training, Fast MCTS 5 points over the single path and 3 over the
constant reward. Knows results files and the measurement file; not how the runs were made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcts.evaluation.report import ReportInputError
from mcts.evaluation.runner import read_rows, result_files

ACCEPTANCE_FILE = Path(__file__).resolve().parents[3] / "docs" / "acceptance.json"
METHODS = ("single", "fast", "constant")
FACETS = ("hops", "faithful", "family_in_train")
TOLERANCE = 1e-9  # means of the same rounded F1s: equal is met


@dataclass(frozen=True)
class Goal:
    """`method`'s mean F1 (points) on the questions whose facets match `where` is at least
    `other`'s plus `margin`, or at least `margin` when there is no `other`."""

    subset: str  # the questions' name: "all", "faithful", "faithful one-hop", ...
    where: tuple[tuple[str, object], ...]  # (facet, value) every question kept has
    method: str
    other: str | None
    margin: float
    real_questions_only: bool  # only on sets whose questions have families (not the demo's)

    @property
    def claim(self) -> str:
        if self.other is None:
            return f"{self.method}>={self.margin:g}"
        return f"{self.method}>={self.other}" + (f"+{self.margin:g}" if self.margin else "")

    @property
    def key(self) -> str:
        """The goal's name in a measurement's `why` notes."""
        return self.claim if not self.where else f"{self.subset}: {self.claim}"


_FAITHFUL = (("faithful", True),)
_ONE_HOP = (*_FAITHFUL, ("hops", 1))
GOALS: tuple[Goal, ...] = (
    Goal("all", (), "fast", "single", 0.0, False),
    Goal("all", (), "fast", "constant", 0.0, False),
    Goal("faithful one-hop", _ONE_HOP, "single", None, 85.0, True),
    Goal(
        "faithful one-hop, family unseen", (*_ONE_HOP, ("family_in_train", False)), "single", None, 80.0, True
    ),
    Goal("faithful", _FAITHFUL, "fast", "single", 5.0, True),
    Goal("faithful", _FAITHFUL, "fast", "constant", 3.0, True),
)


@dataclass(frozen=True)
class Measurement:
    """One question set's per-question F1 and facets, in one question order."""

    name: str
    questions: tuple[str, ...]
    f1: Mapping[str, Sequence[float]]  # method -> F1 per question
    facets: Mapping[str, Sequence[Any]]  # facet -> value per question
    why: Mapping[str, str] = field(default_factory=dict)  # goal key -> why it is not met

    def has_families(self) -> bool:
        return any(v is not None for v in self.facets.get("family_in_train", []))


@dataclass(frozen=True)
class Verdict:
    set_name: str
    goal: Goal
    n: int  # questions the goal is measured on
    measured: float  # the method's mean F1, points
    needed: float  # the bar it has to reach, points
    met: bool
    cause: str  # the `why` note of a goal not met ("" when met)


def measure_run(name: str, run: Path, why: Mapping[str, str] | None = None) -> Measurement:
    """The measurement of one eval run: the questions all of METHODS finished, in `single`'s
    order; `why` carries over the notes of an earlier measurement of the same set."""
    rows = read_rows(result_files(run))  # unsharded and every shard, as `eval --merge` reads them
    if not rows:
        raise ReportInputError(f"{run}: no results*.jsonl")
    f1: dict[str, dict[str, float]] = {m: {} for m in METHODS}
    facets: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.method in f1 and not row.error:
            f1[row.method][row.question_id] = round(float(row.f1), 4)
            facets[row.question_id] = {k: getattr(row, k) for k in FACETS}
    order = tuple(q for q in f1["single"] if all(q in f1[m] for m in METHODS))
    return Measurement(
        name,
        order,
        {m: [f1[m][q] for q in order] for m in METHODS},
        {k: [facets[q][k] for q in order] for k in FACETS},
        dict(why or {}),
    )


def read_measurements(path: Path = ACCEPTANCE_FILE) -> list[Measurement]:
    """Every measured set of a measurement file (keys starting with "_" are notes)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: not a readable measurement file ({exc})") from None
    return [
        Measurement(name, tuple(e["questions"]), e["f1"], e.get("facets", {}), e.get("why", {}))
        for name, e in data.items()
        if not name.startswith("_")
    ]


def measurements_json(measurements: Sequence[Measurement], source: str) -> dict[str, Any]:
    """The measurement file's content: `_source` (the command that wrote it), then each set."""
    data: dict[str, Any] = {"_source": source}
    for m in measurements:
        entry: dict[str, Any] = {
            "questions": list(m.questions),
            "f1": {k: list(v) for k, v in m.f1.items()},
            "facets": {k: list(v) for k, v in m.facets.items()},
        }
        if m.why:
            entry["why"] = dict(m.why)
        data[m.name] = entry
    return data


def summary_line(m: Measurement) -> str:
    """NAME: how many questions, and each method's mean F1 on them."""
    return f"{m.name}: {len(m.questions)} questions, " + ", ".join(
        f"{k} {_mean(v):.1f}" for k, v in m.f1.items()
    )


def _mean(xs: Sequence[float]) -> float:
    return 100 * sum(xs) / len(xs) if xs else 0.0


def judge(m: Measurement, goal: Goal) -> Verdict:
    """The goal's measured value on the set and whether it is met."""
    none = [None] * len(m.questions)  # a facet the measurement lacks matches no value
    picked = [i for i in range(len(m.questions)) if all(m.facets.get(k, none)[i] == v for k, v in goal.where)]
    mine = _mean([m.f1[goal.method][i] for i in picked])
    base = _mean([m.f1[goal.other][i] for i in picked]) if goal.other else 0.0
    needed = base + goal.margin
    met = bool(picked) and mine >= needed - TOLERANCE
    if met:
        cause = ""
    elif not picked:
        cause = "no question of this kind was measured"
    else:
        cause = m.why.get(goal.key, "no cause recorded")
    return Verdict(m.name, goal, len(picked), mine, needed, met, cause)


def judge_all(measurements: Sequence[Measurement], goals: Sequence[Goal] = GOALS) -> list[Verdict]:
    """Every goal on every set it applies to (the faithful goals only on real questions)."""
    return [judge(m, g) for m in measurements for g in goals if not g.real_questions_only or m.has_families()]


def verdicts_markdown(verdicts: Sequence[Verdict]) -> str:
    lines = ["| questions | goal | n | measured | needed | met | cause |", "|---|---|---:|---:|---:|---|---|"]
    for v in verdicts:
        cause = " ".join(v.cause.split()).replace("|", "\\|")
        lines.append(
            f"| {v.set_name} | {v.goal.subset}: {v.goal.claim} | {v.n} | {v.goal.method} {v.measured:.1f} "
            f"| {v.needed:.1f} | {'yes' if v.met else 'no'} | {cause} |"
        )
    return "\n".join(lines)


def verdicts_text(verdicts: Sequence[Verdict]) -> str:
    lines = []
    for v in verdicts:
        line = (
            f"{'met    ' if v.met else 'NOT MET'}  {v.set_name}, {v.goal.subset}: {v.goal.claim} "
            f"({v.n} q): {v.goal.method} {v.measured:.1f}, needed {v.needed:.1f}"
        )
        lines.append(line + (f"\n         cause: {v.cause}" if v.cause else ""))
    return "\n".join(lines)
