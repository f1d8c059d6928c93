"""Re-score a finished tree with other cleaning rules or another scorer, without re-running
the policy or the tools (the app uses it to debug cleaning rules by eye).

`rescore_tree` returns a NEW tree: every non-root node's cleaned history is recomputed
from its branch's steps with the given rules (for a classic-MCTS node, the branch plus
its stored simulation: the state its reward was measured at), re-scored in one batch
per sibling group, and its reward and both perplexities replaced. Values are then
recomputed as a fresh backup would give them: W(node) = sum over the node's subtree of
r * decay(depth) (an unscored node contributes 0); visits are kept, since the same
nodes were backed up. A `RankChange` lists each sibling group whose order by reward
(ties: lowest id) differs before and after.

Knows nothing of models, tools or the UI; it reads trees and calls a `Scorer`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass

from mcts.search.cleaning import DEFAULT_RULES, CleaningRule, clean_history
from mcts.search.protocols import DEFAULT_IG_PROMPT, Scorer
from mcts.search.rules import node_reward, recompute_values
from mcts.search.settings import SearchSettings
from mcts.search.tree import Tree


@dataclass(frozen=True)
class RankChange:
    parent_id: int
    before: tuple[int, ...]  # children by reward, best first, before re-scoring
    after: tuple[int, ...]  # the same after


def _ranking(tree: Tree, parent_id: int) -> tuple[int, ...]:
    children = tree[parent_id].children
    return tuple(
        sorted(children, key=lambda c: (-(tree[c].reward if tree[c].reward is not None else -1e9), c))
    )


def rescore_tree(
    tree: Tree,
    scorer: Scorer,
    settings: SearchSettings,
    *,
    cleaning_rules: Collection[CleaningRule] = DEFAULT_RULES,
    ig_prompt: str = DEFAULT_IG_PROMPT,
    stop: Callable[[], bool] | None = None,
) -> tuple[Tree, list[RankChange]]:
    """`stop` (asked before each sibling group): True ends the re-score there; the groups
    not reached keep their old rewards, and the values are backed up from what there is."""
    rules = frozenset(CleaningRule(r) for r in cleaning_rules)
    new = copy.deepcopy(tree)
    before = {n.id: _ranking(tree, n.id) for n in tree.nodes if len(n.children) > 1}
    for parent in new.nodes:
        if not parent.children:
            continue
        if stop is not None and stop():
            break
        group = [new[c] for c in parent.children]
        texts = []
        for node in group:
            state = [*new.steps(node.id), *node.simulation]
            node.cleaned_history = clean_history(state, rules, question=new.question).text
            texts.append(node.cleaned_history)
        scores = scorer.score(
            new.question,
            texts,
            alpha=settings.alpha,
            beta=settings.beta,
            prompt=ig_prompt,
            variant=settings.ig_variant,
        )
        if len(scores) != len(texts):
            raise ValueError(f"scorer returned {len(scores)} scores for {len(texts)} histories")
        for node, ig in zip(group, scores, strict=True):
            # The constant ablation keeps its constant: only the perplexities are new.
            node.reward = node_reward(settings, ig.reward)
            node.ppl_history, node.ppl_with_question = ig.ppl_history, ig.ppl_with_question
            node.truncated = ig.truncated
            node.ig_detail = ig.detail  # the old one explains the old reward
    recompute_values(new, settings)
    changes = [
        RankChange(parent_id=pid, before=order, after=_ranking(new, pid))
        for pid, order in before.items()
        if _ranking(new, pid) != order
    ]
    return new, changes
