"""The IG lens study's tables, from its node records (`lens.py`): Markdown with n.

(a) `spread_markdown`: the sibling spread of the paper's x split into its terms. For each
    node against its siblings' means (w = m/(n+m); bars over the siblings), exactly
    x - w̄(ā - q̄) = w̄·Δa - w̄·Δq + Δw·(a - q)  (the split `viz.ig_lens.separation` shows);
    each term's share of the summed absolute terms, and the mean Kendall tau between the
    order by x and the order by a, by -q and by w within sibling groups.
(b) `restatement_markdown`: r against the number of restated words per node: Spearman over
    all nodes, and the mean within-group Kendall tau (groups whose counts differ); and the
    count against each term within groups (which term restated words move).
(c) `ranking_markdown`: sibling ranking against true values on groups whose true values
    differ: top-1, best-in-top-3 and mean Kendall tau with a 95% bootstrap interval over
    questions, per ranker; `difference_lines`: paired differences with their intervals.
(d) the same rankers on opaque ids, where the records have them.

Rows are broken down by hops when the questions have them. Pure functions of records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcts.evaluation.ranking import compare_parent, kendall_tau_b
from mcts.evaluation.studies.lens import NodeRecord
from mcts.evaluation.study import bootstrap_ci

Group = list[NodeRecord]
Score = Callable[[NodeRecord], float]


def groups(records: Sequence[NodeRecord]) -> list[Group]:
    """Sibling groups (same run, question and parent) of >= 2 records, in file order."""
    out: dict[tuple[str, str, int], Group] = {}
    for r in records:
        out.setdefault((r.run, r.question_id, r.parent), []).append(r)
    return [g for g in out.values() if len(g) >= 2]


def slices(records: Sequence[NodeRecord]) -> list[tuple[str, list[NodeRecord]]]:
    """("all", everything) and one slice per hop count, where that splits the records."""
    out = [("all", list(records))]
    hops = sorted({r.hops for r in records if r.hops is not None})
    if len(hops) > 1 or len(hops) == 1 and any(r.hops is None for r in records):
        out += [(f"{h}-hop", [r for r in records if r.hops == h]) for h in hops]
    return out


def _fmt(ci: tuple[float, float, float] | None, digits: int = 3) -> str:
    return "-" if ci is None else f"{ci[0]:.{digits}f} [{ci[1]:.{digits}f}, {ci[2]:.{digits}f}]"


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


# ---- (a) the spread of x ------------------------------------------------------------------


def split_terms(group: Group, config: str) -> list[tuple[float, float, float]]:
    """Per node (w̄·Δa, -w̄·Δq, Δw·(a - q)) against the other siblings' means."""
    out = []
    for r in group:
        own = r.terms[config]
        others = [o.terms[config] for o in group if o is not r]
        k = len(others)
        w_bar = sum(o.weight for o in others) / k
        a_bar = sum(o.a for o in others) / k
        q_bar = sum(o.q for o in others) / k
        out.append(
            (w_bar * (own.a - a_bar), -w_bar * (own.q - q_bar), (own.weight - w_bar) * (own.a - own.q))
        )
    return out


def spread_markdown(records: Sequence[NodeRecord], configs: Sequence[str] = ("paper", "mask")) -> str:
    lines = [
        "| cleaning | slice | groups | nodes | share a | share q | share m/(n+m) "
        "| tau(x, a) | tau(x, -q) | tau(x, m/(n+m)) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config in configs:
        for name, part in slices(records):
            gs = [g for g in groups(part) if all(config in r.terms for r in g)]
            if not gs:
                continue
            sums = [0.0, 0.0, 0.0]
            taus: list[list[float]] = [[], [], []]
            for g in gs:
                for t in split_terms(g, config):
                    sums = [s + abs(x) for s, x in zip(sums, t, strict=True)]
                xs = [r.terms[config].x for r in g]
                for i, f in enumerate((lambda t: t.a, lambda t: -t.q, lambda t: t.weight)):
                    tau = kendall_tau_b(xs, [f(r.terms[config]) for r in g])
                    if tau is not None:
                        taus[i].append(tau)
            total = sum(sums) or 1.0
            shares = " | ".join(f"{100 * s / total:.0f}%" for s in sums)
            tau_cells = " | ".join(f"{_num(_mean(t))} ({len(t)})" for t in taus)
            nodes = sum(len(g) for g in gs)
            lines.append(f"| {config} | {name} | {len(gs)} | {nodes} | {shares} | {tau_cells} |")
    return "\n".join(lines)


# ---- (b) r against restatement --------------------------------------------------------------


def _ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # ties share their mean rank
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the (tie-averaged) ranks; None when undefined."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else None


def _within(gs: Sequence[Group], config: str, term: Callable[[Any], float]) -> list[float]:
    """Kendall tau of restated words against `term` of the terms, per group where defined."""
    out = []
    for g in gs:
        tau = kendall_tau_b([float(r.restated[config]) for r in g], [term(r.terms[config]) for r in g])
        if tau is not None:
            out.append(tau)
    return out


def restatement_markdown(records: Sequence[NodeRecord], configs: Sequence[str], *, seed: int = 0) -> str:
    """r against restated words, and which term the words move (a, q or the weight)."""
    lines = [
        "| cleaning | slice | nodes | mean restated words | Spearman(r, count) "
        "| within-group tau(r, count) [95% CI] (groups) | tau(count, a) | tau(count, -q) | tau(count, m/(n+m)) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config in configs:
        for name, part in slices([r for r in records if config in r.terms]):
            if not part:
                continue
            counts = [float(r.restated[config]) for r in part]
            rho = spearman([r.terms[config].r_paper for r in part], counts)
            by_q: dict[str, list[float]] = {}
            for g in groups(part):
                tau = kendall_tau_b([r.terms[config].r_paper for r in g], [r.restated[config] for r in g])
                if tau is not None:
                    by_q.setdefault(g[0].question_id, []).append(tau)
            ci = bootstrap_ci(by_q, seed=seed)
            n_groups = sum(map(len, by_q.values()))
            terms = [
                _within(groups(part), config, f) for f in (lambda t: t.a, lambda t: -t.q, lambda t: t.weight)
            ]
            lines.append(
                f"| {config} | {name} | {len(part)} | {_num(_mean(counts))} | {_num(rho, 3)} "
                f"| {_fmt(ci)} ({n_groups}) | " + " | ".join(_num(_mean(t)) for t in terms) + " |"
            )
    return "\n".join(lines)


# ---- (c), (d) sibling ranking against truth -----------------------------------------------------


def rankers(suffix: str = "") -> dict[str, Score]:
    """Ranker label -> score of a record; `suffix` "_opaque" reads the opaque-id scores."""
    out: dict[str, Score] = {
        "IG paper, 4 rules": lambda r: r.terms["paper" + suffix].r_paper,
        "IG paper, 4 rules + mask": lambda r: r.terms["mask" + suffix].r_paper,
        "IG question, 4 rules": lambda r: r.terms["paper" + suffix].r_question,
        "IG question, 4 rules + mask": lambda r: r.terms["mask" + suffix].r_question,
        "policy prior": lambda r: r.prior,
    }
    if suffix:  # opaque ids are measured under the paper's rules only (`lens.CONFIGS`)
        out = {k: v for k, v in out.items() if "mask" not in k}
    return out


def judged_groups(records: Sequence[NodeRecord]) -> list[Group]:
    """Groups whose children with a true value number >= 2 and do not all share it."""
    out = []
    for g in groups(records):
        kids = [r for r in g if r.true_value is not None]
        if len(kids) >= 2 and len({r.true_value for r in kids}) > 1:
            out.append(kids)
    return out


@dataclass(frozen=True)
class Judged:
    question_id: str
    top1: float
    top3: float
    tau: float | None


def judge(g: Group, score: Score | None) -> Judged:
    """One group under one ranker; `score` None: a random order's expectation, exactly."""
    values = [float(r.true_value or 0.0) for r in g]
    if score is None:
        k, b = len(g), sum(v == max(values) for v in values)
        miss3 = math.comb(k - b, 3) / math.comb(k, 3) if k >= 3 else 0.0
        return Judged(g[0].question_id, b / k, 1.0 - miss3, 0.0)
    top1, top3, tau = compare_parent([r.node for r in g], [score(r) for r in g], values)
    return Judged(g[0].question_id, float(top1), float(top3), tau)


def _ci(
    rows: Sequence[Judged], value: Callable[[Judged], float | None], seed: int
) -> tuple[float, float, float] | None:
    by_q: dict[str, list[float]] = {}
    for j in rows:
        v = value(j)
        if v is not None:
            by_q.setdefault(j.question_id, []).append(v)
    return bootstrap_ci(by_q, seed=seed)


def ranking_markdown(records: Sequence[NodeRecord], suffix: str = "", *, seed: int = 0) -> str:
    """One row per ranker: top-1, best in top-3 and mean tau [95% CI] over every judged
    group, then the mean tau of each hop slice (groups in brackets)."""
    judged = [r for r in records if "paper" + suffix in r.terms]
    parts = [(name, judged_groups(part)) for name, part in slices(judged)]
    if not parts[0][1]:
        return "No sibling group whose true values differ."
    gs = parts[0][1]
    n_q = len({g[0].question_id for g in gs})
    hop_heads = "".join(f" tau {name} (groups) |" for name, _ in parts[1:])
    lines = [
        f"| ranker ({len(gs)} groups, {n_q} questions) | top-1 | best in top-3 | mean Kendall tau [95% CI] |{hop_heads}",
        "|---|---:|---:|---:|" + "---:|" * (len(parts) - 1),
    ]
    named: dict[str, Score | None] = {**rankers(suffix), "random order (expected)": None}
    for label, score in named.items():
        rows = [judge(g, score) for g in gs]
        top1 = sum(j.top1 for j in rows) / len(rows)
        top3 = sum(j.top3 for j in rows) / len(rows)
        cells = [f"{100 * top1:.0f}%", f"{100 * top3:.0f}%", _fmt(_ci(rows, lambda j: j.tau, seed))]
        for _, hop_groups in parts[1:]:
            taus = [t for g in hop_groups if (t := judge(g, score).tau) is not None]
            cells.append(f"{_num(_mean(taus))} ({len(hop_groups)})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tau_difference(
    records: Sequence[NodeRecord], better: Score, base: Score, *, seed: int = 0
) -> tuple[float, float, float] | None:
    """Mean paired tau difference (better - base) over judged groups, 95% CI over questions."""
    by_q: dict[str, list[float]] = {}
    for g in judged_groups(records):
        a, b = judge(g, better).tau, judge(g, base).tau
        if a is not None and b is not None:
            by_q.setdefault(g[0].question_id, []).append(a - b)
    return bootstrap_ci(by_q, seed=seed)


def verdict(what: str, ci: tuple[float, float, float] | None) -> str:
    """One plain line: does the paired difference's interval leave out zero?"""
    if ci is None:
        return f"- {what}: no judged sibling group to compare on."
    mean, lo, hi = ci
    if lo > 0 or hi < 0:
        way = "better" if mean > 0 else "worse"
        return f"- {what}: tau {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]: it matters, {way} (the interval leaves out 0)."
    return (
        f"- {what}: tau {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]: no measurable difference (the interval holds 0)."
    )


def _part_a(records: Sequence[NodeRecord], seed: int) -> list[str]:
    head = "**(a) Where the sibling spread of the paper's x comes from** (x - w̄(ā - q̄) = w̄·Δa - w̄·Δq + Δw·(a - q))"
    return [head, "", spread_markdown(records)]


def _part_b(records: Sequence[NodeRecord], seed: int) -> list[str]:
    configs = [
        "paper",
        "mask",
        *(["paper_opaque"] if any("paper_opaque" in x.terms for x in records) else []),
    ]
    head = "**(b) The paper's r against the restated words left in the cleaned history**"
    return [head, "", restatement_markdown(records, configs, seed=seed)]


def _part_c(records: Sequence[NodeRecord], seed: int) -> list[str]:
    r = rankers()
    mask = tau_difference(records, r["IG paper, 4 rules + mask"], r["IG paper, 4 rules"], seed=seed)
    question = tau_difference(records, r["IG question, 4 rules"], r["IG paper, 4 rules"], seed=seed)
    return [
        "**(c) Sibling ranking against true values** (groups whose true values differ)",
        "",
        ranking_markdown(records, seed=seed),
        "",
        verdict("mask vs the paper's rules (IG paper)", mask),
        verdict("question variant vs paper (4 rules)", question),
    ]


def _part_d(records: Sequence[NodeRecord], seed: int) -> list[str]:
    has_opaque = [x for x in records if "paper_opaque" in x.terms]
    if not has_opaque:
        return []
    named = [x for x in records if "paper_opaque" in x.restated]
    counts = {c: _mean([float(x.restated[c]) for x in named]) for c in ("paper", "paper_opaque", "mask")}
    base, opaque = rankers()["IG paper, 4 rules"], rankers("_opaque")["IG paper, 4 rules"]
    return [
        "**(d) The same trees with opaque ids** (`m.demo_inception` -> `m.0` + 5 hex digits)",
        "",
        f"Restated words per node ({len(named)} nodes): {_num(counts['paper'])} with the demo's "
        f"name-bearing ids, {_num(counts['paper_opaque'])} with opaque ids, "
        f"{_num(counts['mask'])} with the mask.",
        "",
        ranking_markdown(has_opaque, "_opaque", seed=seed),
        "",
        verdict(
            "opaque vs name-bearing ids (IG paper, 4 rules)",
            tau_difference(has_opaque, opaque, base, seed=seed),
        ),
    ]


PARTS = {"a": _part_a, "b": _part_b, "c": _part_c, "d": _part_d}


def study_markdown(records: Sequence[NodeRecord], *, parts: str = "abcd", seed: int = 0) -> str:
    """The chosen parts (letters of `PARTS`), headed, with their verdict lines."""
    runs = sorted({x.run for x in records})
    out = [
        f"Trees: {len({(x.run, x.question_id) for x in records})} ({', '.join(runs)}); "
        f"sibling groups: {len(groups(records))}; nodes: {len(records)}."
    ]
    for letter in parts:
        lines = PARTS[letter](records, seed)
        if lines:
            out += ["", *lines]
    return "\n".join(out)
