"""The rules of the method, each written once: reward, decayed backup, principal path,
best branch, and the policy prior of PUCT.

The search loop, re-scoring, the figure and the UI call these; none of them restates a
rule. Selection scores (UCT, PUCT) live on `Tree` (`tree.uct`, `tree.puct`), beside
the statistics they read.

- Reward (docs/method.md#the-ig-reward): the scorer's IG reward, or the constant of the
  constant-reward ablation whatever scorer is plugged in.
- Decayed backup: r' = r * decay(depth of the scored node), decay(d) =
  max(0, 1 - rate * max(0, d - expected_depth)); N += 1 and W += r' on root..node.
- Principal path: from the root, the child with the highest W/N (ties: lowest id).
- Best branch, the one "best branch (W/N)" of every screen: the answering terminal
  (non-empty executed result) with the highest W/N (ties: lowest id); while no branch
  has answered, the end of the principal path.
- Prior P (PUCT): softmax of the siblings' policy scores at the sampling temperature.

Knows nothing of models, tools or the UI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mcts.search.settings import Method, SearchSettings
from mcts.search.tree import ROOT_ID, Node, Tree


def node_reward(settings: SearchSettings, ig_reward: float) -> float:
    """The reward a scored node gets: the IG reward, or the constant in the ablation."""
    return settings.constant_reward if settings.method == Method.CONSTANT else float(ig_reward)


def depth_decay(depth: int, expected_depth: int = 7, rate: float = 0.1) -> float:
    """decay(d) = max(0, 1 - rate * max(0, d - expected_depth)); paper: depth 9 -> 0.8."""
    return max(0.0, 1.0 - rate * max(0, depth - expected_depth))


def decayed_reward(node: Node, settings: SearchSettings) -> float:
    """Sets `node.decay` and returns r * decay(depth); an unscored node gives 0."""
    node.decay = depth_decay(node.depth, settings.expected_depth, settings.decay_rate)
    return (node.reward if node.reward is not None else 0.0) * node.decay


def back_up(tree: Tree, node_id: int, settings: SearchSettings) -> tuple[list[int], float]:
    """N += 1, W += r * decay(depth) on every node root..node; returns (path, r')."""
    decayed = decayed_reward(tree[node_id], settings)
    path = tree.path(node_id)
    for i in path:
        tree[i].visits += 1
        tree[i].value_sum += decayed
    return path, decayed


def recompute_values(tree: Tree, settings: SearchSettings) -> None:
    """W of every node as a fresh backup of the current rewards would give it.

    Each node was backed up exactly once, so W(node) = sum over its subtree of
    r * decay(depth); visits are kept. Children have larger ids than their parent,
    so one reverse sweep sums the subtrees.
    """
    for node in reversed(tree.nodes):
        own = 0.0 if node.is_root else decayed_reward(node, settings)
        node.value_sum = own + sum(tree[c].value_sum for c in node.children)


def principal_path(tree: Tree) -> list[int]:
    """Root down, always the child with the highest W/N (ties: lowest id)."""
    path = [ROOT_ID]
    while tree[path[-1]].children:
        path.append(min(tree[path[-1]].children, key=lambda c: (-tree[c].mean_value, c)))
    return path


def principal_leaf(tree: Tree) -> int:
    return principal_path(tree)[-1]


def answering_terminals(tree: Tree) -> list[Node]:
    """Terminal branches with a non-empty executed result, in node order (the voters)."""
    return [n for n in tree.nodes if n.terminal and n.answer]


def best_terminal_by_value(tree: Tree) -> int | None:
    """The answering terminal with the highest W/N (None if no answering terminal was scored)."""
    scored = [n for n in answering_terminals(tree) if n.reward is not None]
    return min(scored, key=lambda n: (-n.mean_value, n.id)).id if scored else None


def best_terminal_by_ig(tree: Tree) -> int | None:
    """The answering terminal with the highest reward r (None if none was scored)."""
    scored = [n for n in answering_terminals(tree) if n.reward is not None]
    return min(scored, key=lambda n: (-(n.reward or 0.0), n.id)).id if scored else None


def best_branch(tree: Tree) -> int:
    """The best branch (W/N): see the module docstring. Always a node id."""
    best = best_terminal_by_value(tree)
    return best if best is not None else principal_leaf(tree)


def best_branch_path(tree: Tree) -> list[int]:
    """Root .. the best branch, the gold line of every tree figure."""
    return tree.path(best_branch(tree))


def priors(policy_scores: Sequence[float | None], temperature: float) -> list[float]:
    """P of each sibling: softmax of the policy scores at the sampling temperature.

    A sibling without a score gets the lowest score among them; with no scores at all
    (or temperature 0 and ties) the prior is uniform. Temperature 0 puts all mass on
    the top-scored siblings (split evenly between ties).
    """
    if not policy_scores:
        return []
    known = [s for s in policy_scores if s is not None and math.isfinite(s)]
    if not known:
        return [1.0 / len(policy_scores)] * len(policy_scores)
    floor = min(known)
    scores = [s if s is not None and math.isfinite(s) else floor for s in policy_scores]
    top = max(scores)
    if temperature <= 0:
        winners = [1.0 if s == top else 0.0 for s in scores]
        return [w / sum(winners) for w in winners]
    weights = [math.exp((s - top) / temperature) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def path_log_prior(tree: Tree, node_id: int, temperature: float) -> float:
    """Sum of log P over the branch root..node: the log-probability that the policy,
    sampling at `temperature`, draws this branch. A node without a stored prior (a trace
    written before priors) gets it from its siblings' policy scores."""
    total = 0.0
    for i in tree.path(node_id)[1:]:
        node = tree[i]
        p = node.prior
        if p is None:
            siblings = tree[node.parent].children
            p = priors([tree[c].policy_score for c in siblings], temperature)[siblings.index(i)]
        total += math.log(p) if p > 0 else -math.inf
    return total


def path_mean_log_prior(tree: Tree, node_id: int, temperature: float) -> float:
    """`path_log_prior` over the number of steps: the branch's geometric-mean step
    probability in log, which does not favour a branch for being short."""
    return path_log_prior(tree, node_id, temperature) / max(tree[node_id].depth, 1)


def set_priors(tree: Tree, parent_id: int, temperature: float) -> None:
    """Write P on every child of `parent_id` from the siblings' policy scores."""
    children = [tree[c] for c in tree[parent_id].children]
    for child, p in zip(children, priors([c.policy_score for c in children], temperature), strict=True):
        child.prior = p
