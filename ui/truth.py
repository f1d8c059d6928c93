"""The truth overlay: where the run's rewards ranked siblings right or wrong, from gold.

For a run whose gold answers are known (an example question, or a loaded trace of one),
every terminal's executed answer is scored against gold and the F1 values are backed up
as means (`mcts.evaluation.ranking`, the offline IG ranking analysis, reused as is): a
node's true value. Each sibling group with >= 2 children that have a true value is then
compared with the order of the rewards r the search wrote, and with a seeded random order.

Read-only: the tree is never changed, and nothing here is reachable from the search
(gold is for the teacher, not for the agent). Knows nothing of Gradio.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcts.evaluation.metrics import GoldAnswer
from mcts.evaluation.ranking import (
    PAPER_CWQ,
    TOP_K,
    ParentComparison,
    RankingSummary,
    compare_tree,
    random_scores,
    stored_rewards,
    summarise_rankings,
    terminal_outcomes,
    true_values,
)
from mcts.search.tree import Tree
from ui.gold import gold_answers

RANKER = "tree_reward"  # the rewards r the search wrote (IG in Fast MCTS)


@dataclass(frozen=True)
class GroupVerdict:
    """One sibling group: the child the rewards put first, and whether it is truly best."""

    parent_id: int
    top_child: int
    right: bool
    best_children: tuple[int, ...]  # the children with the highest true value
    size: int
    best_value: float = 0.0  # the highest true value among the children

    @property
    def even(self) -> bool:
        """Every child has the same true value: no pick is right or wrong here."""
        return len(self.best_children) == self.size


@dataclass(frozen=True)
class TruthOverlay:
    values: Mapping[int, float]  # node id -> true value (mean terminal F1 below it)
    outcomes: Mapping[int, float]  # terminal node id -> its answer's F1
    groups: tuple[GroupVerdict, ...]
    reward: RankingSummary
    random: RankingSummary
    chance_top1: float  # expected top-1 hits of a uniformly random order (exact)
    chance_top3: float  # expected best-in-top-3 hits of a uniformly random order
    random_seed: int
    constant_reward: bool  # every compared reward equal: there is no order to check

    # The rings: right or wrong only where the children's true values differ.
    @property
    def right(self) -> frozenset[int]:
        return frozenset(g.top_child for g in self.groups if g.right and not g.even)

    @property
    def wrong(self) -> frozenset[int]:
        return frozenset(g.top_child for g in self.groups if not g.right)

    @property
    def nowhere(self) -> frozenset[int]:
        """Top children of groups where no branch reaches the answer (every true value 0)."""
        return frozenset(g.top_child for g in self.groups if g.even and g.best_value <= 0)

    @property
    def even_groups(self) -> frozenset[int]:
        """Top children of groups where every branch is as good (one true value above 0)."""
        return frozenset(g.top_child for g in self.groups if g.even and g.best_value > 0)


def _top_child(c: ParentComparison) -> int:
    # The ranking analysis's order: highest score first, ties to the lower node id.
    order = sorted(range(len(c.children)), key=lambda i: (-c.scores[i], c.children[i]))
    return c.children[order[0]]


def _chance(size: int, best: int, top_k: int) -> float:
    """P(a uniformly random order keeps one of `best` tied-best children in its first top_k)."""
    k = min(top_k, size)
    return 1.0 - math.comb(size - best, k) / math.comb(size, k)


def overlay(
    tree: Tree, gold: Sequence[GoldAnswer], *, seed: int = 0, constant_reward: bool = False
) -> TruthOverlay:
    """True values and the reward order's verdict per sibling group; `tree` is only read.
    `constant_reward`: the run gave every node the same reward (the ablation), so its
    "order" is creation order and the words say so."""
    outcomes = terminal_outcomes(tree, gold)
    values = true_values(tree, outcomes)

    def eligible(node_id: int) -> bool:
        return node_id in values

    rewards = stored_rewards(tree, eligible)
    by_reward = compare_tree(tree, rewards, values, ranker=RANKER)
    by_random = compare_tree(
        tree, random_scores(tree, eligible, random.Random(seed)), values, ranker="random"
    )
    groups = []
    chance1 = chance3 = 0.0
    for c in by_reward:
        best = max(c.true_values)
        tied = tuple(k for k, v in zip(c.children, c.true_values, strict=True) if v == best)
        groups.append(GroupVerdict(c.parent_id, _top_child(c), c.top1, tied, len(c.children), best))
        chance1 += len(tied) / len(c.children)
        chance3 += _chance(len(c.children), len(tied), TOP_K)
    return TruthOverlay(
        values=values,
        outcomes=dict(outcomes),
        groups=tuple(groups),
        reward=summarise_rankings(by_reward, RANKER),
        random=summarise_rankings(by_random, "random"),
        chance_top1=chance1,
        chance_top3=chance3,
        random_seed=seed,
        constant_reward=constant_reward,
    )


def overlay_for(
    tree: Tree | None, kb_spec: str, *, seed: int = 0, constant_reward: bool = False
) -> TruthOverlay | None:
    """The overlay of a tree whose question is an example question of `kb_spec`; else None."""
    if tree is None:
        return None
    gold = gold_answers(tree.question, kb_spec)
    return overlay(tree, gold, seed=seed, constant_reward=constant_reward) if gold else None


# ---- words a teacher can use ---------------------------------------------------------


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _tau(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}"


def summary_markdown(truth: TruthOverlay | None, method_label: str = "The IG reward r") -> str:
    """The run's top-1, best-in-top-3 and Kendall tau beside random and the paper, in words."""
    if truth is None:
        return (
            "*The truth overlay needs gold answers: run (or load a trace of) one of the example "
            "questions on its demo KB.*"
        )
    n = len(truth.groups)
    if n == 0:
        terminals = len(truth.outcomes)
        return (
            f"*No sibling group to check yet: {terminals} terminal answer(s) scored against gold, but no "
            "node has two children with a terminal below them.*"
        )
    hits = sum(g.right for g in truth.groups)
    r, rnd = truth.reward, truth.random
    informative = [g for g in truth.groups if not g.even]
    inf_hits = sum(g.right for g in informative)
    lines = []
    if truth.constant_reward:
        lines.append(
            f"**The rewards of this run are constant**, so they do not order siblings: the first-created "
            f"child counts as their top, and it was truly best in **{hits} of {n}** sibling groups "
            f"(a random order would pick ~{truth.chance_top1:.1f})."
        )
    else:
        lines.append(
            f"**{method_label} picked the truly best child in {hits} of {n} sibling group(s)**; a random "
            f"order would pick ~{truth.chance_top1:.1f}."
        )
    if len(informative) < n:
        lines.append(_even_sentence(truth, inf_hits, len(informative)))
    lines += [
        "",
        "| order of siblings | groups | top-1 truly best | best in top-3 | Kendall tau |",
        "|---|---:|---:|---:|---:|",
        f"| this run's r | {n} | {_pct(r.top1)} | {_pct(r.top3)} | {_tau(r.mean_tau)} |",
        f"| random order (seed {truth.random_seed}) | {rnd.parents} | {_pct(rnd.top1)} | {_pct(rnd.top3)} "
        f"| {_tau(rnd.mean_tau)} |",
        f"| random order, expected | {n} | {_pct(truth.chance_top1 / n)} | {_pct(truth.chance_top3 / n)} | +0.00 |",
        f"| the paper (CWQ, Llama-3.1-8B) | – | {_pct(PAPER_CWQ['top1'])} | {_pct(PAPER_CWQ['top3'])} "
        f"| {_tau(PAPER_CWQ['tau'])} |",
        "",
        "*True value* of a node: the mean F1 against gold of the terminal answers below it. In the tree, "
        "a **green ring** marks a sibling group's top child by r that is truly best, a **red ring** one "
        "that is not, and a **grey ring** a group whose children all have the same true value (there is "
        "nothing to pick). Gold is never shown to the search: it only colours this view. One run has few "
        "groups, so these figures move a lot from question to question.",
    ]
    return "\n".join(lines)


def _even_sentence(truth: TruthOverlay, hits: int, informative: int) -> str:
    """The groups where every child has one true value, in words: nothing to pick there."""
    nowhere = sum(1 for g in truth.groups if g.even and g.best_value <= 0)
    even = sum(1 for g in truth.groups if g.even and g.best_value > 0)
    parts = []
    if nowhere:
        parts.append(f"in {nowhere} of them **no branch here reaches the answer** (every true value is 0)")
    if even:
        parts.append(f"in {even} **every branch here is as good** (one true value above 0)")
    head = " and ".join(parts)
    head = head[0].upper() + head[1:]
    if informative == 0:
        return (
            f"{head}: no group of this run has children that differ, so it shows nothing about the ranking."
        )
    return (
        f"{head}: any pick is right there (grey rings). Where the children differ it picked the best "
        f"in **{hits} of {informative}**."
    )
