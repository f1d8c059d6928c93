"""Studies over stored trees (no new search): every answer rule's F1, and which ranker
(IG variants, the policy prior, random) orders siblings like their true values do.

Choosing an answer and ranking siblings are functions of a finished tree, so both read
the traces `python -m mcts eval --out DIR` saved: a tree is grown once and judged by
every rule and every scorer variant. Intervals are 95% percentile bootstraps over
questions (the unit that was sampled; siblings of one question are not independent),
with a fixed seed.

Knows nothing of argparse; models come in as a `Scorer`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.evaluation.metrics import GoldAnswer, f1_score
from mcts.evaluation.ranking import (
    ParentComparison,
    analyse_tree,
    history_text,
    random_scores,
    scorer_scores,
    stored_rewards,
    summarise_rankings,
)
from mcts.evaluation.runner import read_rows, result_files
from mcts.search.protocols import Scorer
from mcts.search.rules import path_log_prior
from mcts.search.settings import SearchSettings, VoteMode
from mcts.search.trace import load_trace
from mcts.search.tree import Tree
from mcts.search.voting import decide

BOOTSTRAP_SAMPLES = 2000


@dataclass(frozen=True)
class StoredRun:
    """One (question, method) run read back from an eval directory."""

    label: str  # "<dir name>/<method>": the same method under other settings stays apart
    question_id: str
    gold: tuple[GoldAnswer, ...]
    tree: Tree
    settings: SearchSettings
    f1: float  # the F1 the run reported (its own vote mode)


def load_runs(dirs: Iterable[str | Path], methods: Sequence[str] | None = None) -> list[StoredRun]:
    """Every finished run with a trace in the given eval directories."""
    out: list[StoredRun] = []
    for d in map(Path, dirs):
        for row in read_rows(result_files(d)):
            if row.error or (methods and row.method not in methods) or not row.trace:
                continue
            trace = load_trace(d / row.trace)
            gold = tuple(GoldAnswer(name=g.get("name"), ids=tuple(g.get("ids", ()))) for g in row.gold)
            out.append(
                StoredRun(
                    f"{d.name}/{row.method}", row.question_id, gold, trace.to_tree(), trace.settings, row.f1
                )
            )
    return out


def bootstrap_ci(
    per_question: Mapping[str, Sequence[float]], *, seed: int = 0, samples: int = BOOTSTRAP_SAMPLES
) -> tuple[float, float, float] | None:
    """(mean, low, high) of the pooled values, resampling questions with replacement."""
    keys = [k for k, v in per_question.items() if v]
    if not keys:
        return None

    def pooled(ks: Sequence[str]) -> float:
        values = [x for k in ks for x in per_question[k]]
        return sum(values) / len(values)

    rng = random.Random(seed)
    stats = sorted(pooled([rng.choice(keys) for _ in keys]) for _ in range(samples))
    return pooled(keys), stats[int(0.025 * samples)], stats[int(0.975 * samples) - 1]


def _fmt_ci(ci: tuple[float, float, float] | None, scale: float = 100.0, digits: int = 1) -> str:
    if ci is None:
        return "-"
    m, lo, hi = (scale * x for x in ci)
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


# ---- answer rules -------------------------------------------------------------------------

ANSWER_RULES: tuple[VoteMode, ...] = tuple(VoteMode)


def _folder(label: str) -> str:
    """The eval folder of a "<dir name>/<method>" label."""
    return label.rsplit("/", 1)[0]


def rule_f1(run: StoredRun, mode: VoteMode) -> float:
    answer = decide(run.tree, mode, run.settings.temperature)[0]
    return f1_score(answer, run.gold)


def best_found_f1(run: StoredRun) -> float:
    """The best F1 among the answering terminals (what an oracle picking a branch gets)."""
    from mcts.search.rules import answering_terminals

    return max((f1_score(n.answer, run.gold) for n in answering_terminals(run.tree)), default=0.0)


def answer_rules_markdown(runs: Sequence[StoredRun], rules: Sequence[VoteMode] = ANSWER_RULES) -> str:
    """One row per run label: F1 of every answer rule on the same trees, with 95% CIs.

    Within one eval folder only the questions every method finished count, so its rows
    compare like with like; folders are not intersected with each other, since they may
    hold different question sets (the `n` column says how many each row has).
    """
    labels = sorted({r.label for r in runs})
    common: dict[str, set[str]] = {}
    for label in labels:
        folder = _folder(label)
        done = {r.question_id for r in runs if r.label == label}
        common[folder] = common[folder] & done if folder in common else done
    runs = [r for r in runs if r.question_id in common[_folder(r.label)]]
    head = "| runs | n | " + " | ".join(m.value for m in rules) + " | best found (oracle) |"
    lines = [head, "|---|---:|" + "---:|" * (len(rules) + 1)]
    for label in labels:
        mine = [r for r in runs if r.label == label]
        cells = []
        for mode in rules:
            cells.append(_fmt_ci(bootstrap_ci({r.question_id: [rule_f1(r, mode)] for r in mine})))
        cells.append(_fmt_ci(bootstrap_ci({r.question_id: [best_found_f1(r)] for r in mine})))
        lines.append(f"| {label} | {len(mine)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---- sibling ranking ---------------------------------------------------------------------


def prior_scores(tree: Tree, eligible: Callable[[int], bool], temperature: float) -> dict[int, float]:
    """The policy's own order: each node's log P (equal to its policy score up to a shift)."""
    return {n.id: path_log_prior(tree, n.id, temperature) for n in tree.nodes[1:] if eligible(n.id)}


def ranking_study(
    runs: Sequence[StoredRun],
    scorer: Scorer | None,
    variants: Sequence[str],
    *,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[ParentComparison]:
    """Every ranker on every stored tree: IG re-scored per variant, policy prior, stored
    reward, seeded random. True values: mean F1 of the terminals below (ranking.py)."""
    rng = random.Random(seed)
    out: list[ParentComparison] = []
    for i, run in enumerate(runs):
        s = run.settings
        rankers: dict[str, Callable[[Tree, Callable[[int], bool]], Mapping[int, float]]] = {
            "random": lambda t, ok: random_scores(t, ok, rng),
            "prior": lambda t, ok, temp=s.temperature: prior_scores(t, ok, temp),
            "tree_reward": stored_rewards,
        }
        if scorer is not None and hasattr(scorer, "score_variants"):
            for variant in variants:
                rankers[f"ig:{variant}"] = lambda t, ok, v=variant, a=s.alpha, b=s.beta: _all_variants(
                    t, scorer, ok, variants, a, b
                )[v]
        elif scorer is not None:
            for variant in variants:
                rankers[f"ig:{variant}"] = lambda t, ok, v=variant, a=s.alpha, b=s.beta: scorer_scores(
                    t, scorer, ok, alpha=a, beta=b, variant=v
                )
        out += analyse_tree(run.tree, run.gold, rankers, question_id=f"{run.label}:{run.question_id}")
        if progress is not None:
            progress(f"{i + 1}/{len(runs)} {run.label} {run.question_id}")
    return out


_VARIANT_CACHE: dict[int, tuple[Tree, dict[str, dict[int, float]]]] = {}


def _all_variants(
    tree: Tree,
    scorer: Any,
    eligible: Callable[[int], bool],
    variants: Sequence[str],
    alpha: float,
    beta: float,
) -> dict[str, dict[int, float]]:
    """Every variant's reward per eligible sibling, one scorer pass per group, cached per tree."""
    hit = _VARIANT_CACHE.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    out: dict[str, dict[int, float]] = {v: {} for v in variants}
    for parent in tree.nodes:
        kids = [c for c in parent.children if eligible(c)]
        if len(kids) < 2:
            continue
        texts = [history_text(tree, c, cleaned=True) for c in kids]
        rewards = scorer.score_variants(tree.question, texts, alpha=alpha, beta=beta, variants=variants)
        for v in variants:
            out[v].update(zip(kids, rewards[v], strict=True))
    _VARIANT_CACHE.clear()  # one tree at a time: the study walks trees in order
    _VARIANT_CACHE[id(tree)] = (tree, out)
    return out


def ranking_study_markdown(comparisons: Sequence[ParentComparison], *, seed: int = 0) -> str:
    """top-1, Kendall tau and top-1 where true values differ, each with a 95% CI over questions."""
    rankers = sorted({c.ranker for c in comparisons}, key=lambda r: (r == "random", r))
    lines = [
        "| ranker | parents | top-1 | mean Kendall tau (parents) | top-1 where true values differ (parents) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in rankers:
        rows = [c for c in comparisons if c.ranker == name]
        s = summarise_rankings(comparisons, name)
        top1 = bootstrap_ci(_by_question(rows, lambda c: float(c.top1)), seed=seed)
        tau = bootstrap_ci(
            _by_question([c for c in rows if c.tau is not None], lambda c: c.tau or 0.0), seed=seed
        )
        informative = [c for c in rows if len(set(c.true_values)) > 1]
        top1_inf = bootstrap_ci(_by_question(informative, lambda c: float(c.top1)), seed=seed)
        lines.append(
            f"| {name} | {s.parents} | {_fmt_ci(top1)}% | {_fmt_ci(tau, 1.0, 3)} ({s.tau_parents}) "
            f"| {_fmt_ci(top1_inf)}% ({len(informative)}) |"
        )
    random_rows = [c for c in comparisons if c.ranker == "random"]
    if random_rows:  # the seeded order is one draw; its expectation on the same groups is exact

        def expected_top1(c: ParentComparison) -> float:
            return sum(v == max(c.true_values) for v in c.true_values) / len(c.true_values)

        informative = [c for c in random_rows if len(set(c.true_values)) > 1]
        top1 = bootstrap_ci(_by_question(random_rows, expected_top1), seed=seed)
        top1_inf = bootstrap_ci(_by_question(informative, expected_top1), seed=seed)
        lines.append(
            f"| random (expected over all orders) | {len(random_rows)} | {_fmt_ci(top1)}% | 0 "
            f"| {_fmt_ci(top1_inf)}% ({len(informative)}) |"
        )
    return "\n".join(lines)


def _by_question(
    rows: Sequence[ParentComparison], value: Callable[[ParentComparison], float]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for c in rows:
        out.setdefault(c.question_id, []).append(value(c))
    return out


__all__ = [
    "ANSWER_RULES",
    "StoredRun",
    "answer_rules_markdown",
    "bootstrap_ci",
    "load_runs",
    "ranking_study",
    "ranking_study_markdown",
    "rule_f1",
]
