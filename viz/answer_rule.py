"""Words a teacher needs beside the numbers: the answer rule of a run, why its answer
differs from the best branch, and one-line glosses of UCT, W/N, the prior P and the vote
table's weight.

The best branch (the gold line, `mcts.search.rules.best_branch`) is the answering
terminal with the highest W/N; the final answer is picked by the run's vote mode
(`mcts.search.voting`). With the small preset (likeliest branch) the two often differ,
which looks like a bug unless the screen says why. Pure text from the tree and the
result record, read by attribute; knows nothing of Gradio or models.
"""

from __future__ import annotations

from typing import Any

from mcts.search.rules import path_log_prior, path_mean_log_prior
from mcts.search.settings import VoteMode
from mcts.search.tree import Tree
from viz.escape import md

# The rule that picks the final answer, in words (one per `VoteMode`).
ANSWER_RULES: dict[VoteMode, str] = {
    VoteMode.PLURALITY: "plurality vote: the answer the most terminal branches returned",
    VoteMode.VALUE_WEIGHTED: "value-weighted vote: the answer whose branches' W/N add up highest",
    VoteMode.VISITS: "robust child: the answer the visit counts N point to",
    VoteMode.LIKELIHOOD: (
        "likeliest branch: the answer of the branch the policy finds most likely "
        "(the sum of its steps' log P), whatever its W/N"
    ),
    VoteMode.LIKELIHOOD_PER_STEP: (
        "likeliest branch per step: the answer of the branch whose steps the policy finds most "
        "likely on average (the mean of its steps' log P, so a short branch has no head start), "
        "whatever its W/N"
    ),
    VoteMode.BEST_VALUE: "best value: the answer of the branch with the highest W/N",
}

# What the vote table's "weight" column holds under each rule.
WEIGHT_GLOSSES: dict[VoteMode, str] = {
    VoteMode.PLURALITY: "the number of terminal branches that returned the answer",
    VoteMode.VALUE_WEIGHTED: "the sum of W/N over the branches that returned the answer",
    VoteMode.VISITS: "the visits N of the answer's top-level node",
    VoteMode.LIKELIHOOD: (
        "the log-probability of the answer's likeliest branch (the sum of log P over its steps); "
        "a probability below 1 has a negative log, so every weight is ≤ 0 and the one nearest 0 wins"
    ),
    VoteMode.LIKELIHOOD_PER_STEP: (
        "the mean log P per step of the answer's likeliest branch; every weight is ≤ 0 and the one "
        "nearest 0 wins"
    ),
    VoteMode.BEST_VALUE: "W/N of the answer's best branch",
}

# Above the node table: its columns in a line.
NODE_TABLE_GLOSS = (
    "<small>**step** the tool and what sets the node apart from its siblings (relation, entity, "
    "COUNT / ORDER BY; ← a relation read backwards) · **action** the whole call · "
    "**N** visits · **W/N** mean value (rewards backed up through the node over its visits) · "
    "**r** IG reward of the step (α/2 = neutral) · **PPL(H')**, **PPL(H',Q)** perplexity of the cleaned "
    "history without and with the question · **UCT** = W/N + c·√(ln N_parent / N), the selection score "
    "(empty: not visited yet, taken first).</small>"
)


def rule_name(mode: VoteMode | str) -> str:
    """The rule's short name ("likeliest branch")."""
    return ANSWER_RULES[VoteMode(mode)].split(":", 1)[0]


def weight_gloss(mode: VoteMode | str) -> str:
    """One line under the answer: the answer rule, and what "weight" means in the vote table."""
    mode = VoteMode(mode)
    return f"*Answer rule:* {rule_name(mode)}. *Vote table, weight:* {WEIGHT_GLOSSES[mode]}."


def why_not_best(result: Any | None, tree: Tree | None, mode: VoteMode | str, temperature: float) -> str:
    """Why the final answer is not the best branch's (W/N or r), or "" when it is."""
    if result is None or tree is None or not result.answer:
        return ""
    chosen = set(getattr(result, "answer_node_ids", ()) or ())
    mode = VoteMode(mode)
    misses = []
    for label, node_id in (("by W/N", result.best_by_value), ("by r", result.best_by_ig)):
        if node_id is None or node_id in chosen or not 0 <= node_id < len(tree):
            continue
        names = {v.name for v in tree[node_id].answer}
        if names == {v.name for v in result.answer}:
            continue  # another branch with the same answer: nothing to explain
        misses.append((label, node_id))
    if not misses:
        return ""
    if len(misses) == 2 and misses[0][1] == misses[1][1]:
        which = f"by W/N and by r (node {misses[0][1]})"
    else:
        which = " and ".join(f"{label} (node {i})" for label, i in misses)
    first = misses[0][1]
    best = tree[first]
    best_answer = md(", ".join(v.name for v in best.answer) or "no answer")
    lines = [
        f"**Why not the best branch?** The best branch {which} answers {best_answer}, but this run picks "
        f"its answer by the **{ANSWER_RULES[mode]}**."
    ]
    winner = min(chosen) if chosen else None
    if mode == VoteMode.LIKELIHOOD and winner is not None and 0 <= winner < len(tree):
        lines.append(
            f"log P of the answer's branch (node {winner}): {path_log_prior(tree, winner, temperature):.2f}; "
            f"of node {first}: {path_log_prior(tree, first, temperature):.2f} (nearer 0 is likelier)."
        )
    elif mode == VoteMode.LIKELIHOOD_PER_STEP and winner is not None and 0 <= winner < len(tree):
        lines.append(
            f"mean log P per step of the answer's branch (node {winner}): "
            f"{path_mean_log_prior(tree, winner, temperature):.2f}; of node {first}: "
            f"{path_mean_log_prior(tree, first, temperature):.2f} (nearer 0 is likelier)."
        )
    elif mode == VoteMode.PLURALITY:
        votes = {tuple(r.answer): r.count for r in getattr(result, "votes", ())}
        mine = next((c for a, c in votes.items() if set(a) == {v.name for v in best.answer}), 0)
        lines.append(f"Its answer got {mine} vote(s); the chosen one got the most.")
    lines.append("The gold line in the tree is the best branch by W/N.")
    return " ".join(lines)
