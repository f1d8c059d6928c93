"""Replay a recorded run round by round: the tree as it stood at the end of round i.

A pure function of the final `Tree` and the run's event log (both in a trace). Node
ids grow with time, so the nodes created by round i are a prefix of the final tree;
their rewards, PPLs and visit statistics are rebuilt from the `NodeScored` and
`ValuesBackedUp` events emitted up to the end of that round. No model is needed,
which is what lets a CPU-only Space show recorded GPU runs.

Knows nothing of models, Plotly or Gradio.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from mcts.search.events import Event, NodeScored, NodeSelected, RoundStarted, ValuesBackedUp
from mcts.search.rules import best_branch
from mcts.search.tree import Tree


@dataclass(frozen=True)
class ReplayFrame:
    tree: Tree
    round: int  # rounds completed in this frame
    selected_path: tuple[int, ...]  # the last selection path up to here
    best_node_id: int | None  # the best branch of this frame's tree (mcts.search.rules.best_branch)


def replay_rounds(events: Sequence[Event]) -> int:
    """How many rounds the log covers (RoundStarted events, at least 0)."""
    return sum(1 for e in events if isinstance(e, RoundStarted))


def _cut(events: Sequence[Event], round_no: int) -> int:
    """Index just past the events of round `round_no` (all events for the last round)."""
    started = 0
    for i, event in enumerate(events):
        if isinstance(event, RoundStarted):
            started += 1
            if started > round_no:
                return i
    return len(events)


def tree_at_round(final: Tree, events: Sequence[Event], round_no: int) -> ReplayFrame:
    """The tree after `round_no` rounds (0 = the bare question; past the end = final)."""
    total = replay_rounds(events)
    if round_no >= total:
        tree = copy.deepcopy(final)
        return ReplayFrame(tree, total, _last_selected(events), best_branch(tree))
    end = _cut(events, max(round_no, 0))
    shown = events[:end]
    keep = {n.id for n in final.nodes if n.round <= round_no}
    keep.add(0)
    tree = Tree(question=final.question)
    tree.nodes.clear()
    for node in final.nodes:
        if node.id not in keep:
            continue
        clone = copy.copy(node)
        clone.children = [c for c in node.children if c in keep]
        clone.visits, clone.value_sum = 0, 0.0
        clone.reward = clone.ppl_history = clone.ppl_with_question = None
        clone.ig_detail = None  # shown again once its NodeScored event is replayed
        tree.nodes.append(clone)
    index = {n.id: i for i, n in enumerate(tree.nodes)}
    if [n.id for n in tree.nodes] != list(range(len(tree.nodes))):
        raise ValueError("node ids of the recorded tree are not in creation order; cannot replay")
    for event in shown:
        if isinstance(event, NodeScored) and event.node_id in index:
            node = tree.nodes[event.node_id]
            node.reward = event.reward
            node.ppl_history, node.ppl_with_question = event.ppl_history, event.ppl_with_question
            node.ig_detail = final[event.node_id].ig_detail
        elif isinstance(event, ValuesBackedUp):
            for i in event.path:
                if i in index:
                    tree.nodes[i].visits += 1
                    tree.nodes[i].value_sum += event.decayed_reward
    return ReplayFrame(tree, round_no, _last_selected(shown), best_branch(tree))


def _last_selected(events: Sequence[Event]) -> tuple[int, ...]:
    for event in reversed(events):
        if isinstance(event, NodeSelected):
            return tuple(event.path)
    return ()
