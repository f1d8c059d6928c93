"""Why the selection entered a child: each sibling's score under the run's own rule, with the
tree's statistics as they stood when a round's selection ran, rebuilt from the event log.

The selection (`drivers.select_leaf`) descends from the root, entering at each node the open
child with the highest score, UCT or PUCT (`SearchSettings.selection`; ties: the lowest id).
At round r its inputs are the visits N and values W left by the backups of rounds 1..r-1
(`ValuesBackedUp` events), the priors P (fixed when the children were added) and which nodes
are closed (terminal, or expanded with every child closed). All of it is rebuilt here from
the final tree and the events, and scored with the rule's own code (`Tree.uct`, `Tree.puct`,
`Tree.prior_term`, `Tree.is_closed`), so the terms shown are the ones the search compared.

Rounds of the greedy descent (`greedy_descent`) enter the policy's top child without comparing
scores: they are listed, marked as such. Beam, vote and the single path never select by a score.
Knows nothing of models, Plotly or Gradio.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

from mcts.search.events import Event, NodeSelected, RoundStarted, ValuesBackedUp
from mcts.search.settings import Method, SearchSettings, Selection
from mcts.search.tree import NO_PARENT, ROOT_ID, Tree

TREE_METHODS = (Method.FAST, Method.CLASSIC, Method.CONSTANT)  # the methods that run `select_leaf`


@dataclass(frozen=True)
class SiblingScore:
    """One child as the selection rule scores it: score = mean_value + explore."""

    node_id: int
    visits: int  # N
    mean_value: float  # W/N, the exploitation term (0 while unvisited)
    explore: float  # UCT: c·√(ln N_parent / N) (inf while unvisited); PUCT: c_puct·P·√N_parent / (1 + N)
    score: float  # what the selection maximises
    closed: bool  # terminal or exhausted: the selection never enters it
    prior: float | None = None  # P as PUCT read it (uniform when the node stores none); None under UCT


@dataclass(frozen=True)
class SelectionStep:
    """In round `round`, the selection went from `parent_id` into its child `entered`."""

    round: int
    parent_id: int
    entered: int
    by_rule: bool  # False: the greedy descent took the policy's top child, no score compared


@dataclass(frozen=True)
class SelectionAt:
    """The siblings of one selection step, scored with the statistics of that moment."""

    step: SelectionStep
    rule: Selection
    constant: float  # c (UCT) or c_puct (PUCT)
    parent_visits: int  # N_parent when the selection ran
    siblings: tuple[SiblingScore, ...]

    @property
    def best(self) -> int | None:
        """The child the rule picks among these: the highest score among the open ones."""
        return rule_choice(self.siblings)


def sibling_scores(tree: Tree, parent_id: int, settings: SearchSettings) -> tuple[SiblingScore, ...]:
    """The children of `parent_id` as the run's rule scores them with `tree`'s statistics."""
    rows = []
    for i in tree[parent_id].children:
        child = tree[i]
        if settings.selection == Selection.PUCT:
            explore, score = tree.prior_term(i, settings.c_puct), tree.puct(i, settings.c_puct)
            siblings = len(tree[parent_id].children)
            prior = child.prior if child.prior is not None else 1.0 / max(siblings, 1)
        else:
            score, prior = tree.uct(i, settings.c), None
            explore = score - child.mean_value if math.isfinite(score) else math.inf
        rows.append(SiblingScore(i, child.visits, child.mean_value, explore, score, tree.is_closed(i), prior))
    return tuple(rows)


def rule_choice(rows: Sequence[SiblingScore]) -> int | None:
    """The child `select_leaf` enters: the highest score among open ones, ties the lowest id."""
    open_rows = [r for r in rows if not r.closed]
    return max(open_rows, key=lambda r: (r.score, -r.node_id)).node_id if open_rows else None


def rank_among_open(rows: Sequence[SiblingScore], node_id: int) -> tuple[int, int] | None:
    """(rank of `node_id` among the open siblings in the rule's order, 1 = entered next; how
    many are open), or None when the node is closed (or not among `rows`)."""
    open_rows = sorted((r for r in rows if not r.closed), key=lambda r: (-r.score, r.node_id))
    ids = [r.node_id for r in open_rows]
    return (ids.index(node_id) + 1, len(ids)) if node_id in ids else None


def selects_by_score(settings: SearchSettings) -> bool:
    return settings.method in TREE_METHODS


def selection_steps(tree: Tree, events: Sequence[Event], settings: SearchSettings) -> list[SelectionStep]:
    """Every (round, parent, child entered) of the run's selection paths, in order."""
    selected = {e.round: e for e in events if isinstance(e, NodeSelected)}
    descent = _descent_rounds(tree, {r: e.node_id for r, e in selected.items()}, settings)
    steps = []
    for round_no in sorted(selected):
        path = [i for i in selected[round_no].path if 0 <= i < len(tree)]
        for parent, child in zip(path, path[1:], strict=False):
            steps.append(SelectionStep(round_no, parent, child, round_no not in descent))
    return steps


def _descent_rounds(tree: Tree, leaves: dict[int, int], settings: SearchSettings) -> set[int]:
    """The rounds the greedy descent drove: from round 1 at the root, each next round at the
    first child the previous one added, until that child is terminal (`drivers.mcts_rounds`)."""
    if not settings.greedy_descent or not selects_by_score(settings):
        return set()
    out: set[int] = set()
    node = ROOT_ID
    for round_no in sorted(leaves):
        if leaves[round_no] != node:
            break
        out.add(round_no)
        children = tree[node].children
        if not children or tree[children[0]].terminal:
            break
        node = children[0]
    return out


def steps_through(
    tree: Tree, events: Sequence[Event], settings: SearchSettings, parent_id: int
) -> list[SelectionStep]:
    """The selection steps that went from `parent_id` into one of its children."""
    return [s for s in selection_steps(tree, events, settings) if s.parent_id == parent_id]


def tree_before_round(tree: Tree, events: Sequence[Event], round_no: int) -> Tree:
    """The tree as round `round_no`'s selection saw it: the nodes added before that round,
    N and W from the backups before it, closed-ness recomputed. Past the last round: the
    statistics after every backup (the final tree's, for an unmodified run)."""
    past = _events_before(events, round_no)
    expanded = {e.node_id for e in past if isinstance(e, NodeSelected)}
    out = Tree(question=tree.question)
    out.nodes.clear()
    keep = {n.id for n in tree.nodes if n.id == ROOT_ID or n.round < round_no}
    for node in tree.nodes:
        if node.id not in keep:
            continue
        clone = copy.copy(node)
        clone.children = [c for c in node.children if c in keep]
        clone.visits, clone.value_sum, clone.exhausted = 0, 0.0, False
        out.nodes.append(clone)
    if [n.id for n in out.nodes] != list(range(len(out.nodes))):
        raise ValueError("node ids of the tree are not in creation order; cannot rebuild a round")
    for event in past:
        if isinstance(event, ValuesBackedUp):
            for i in event.path:
                if 0 <= i < len(out):
                    out[i].visits += 1
                    out[i].value_sum += event.decayed_reward
    # Children have larger ids: one reverse sweep settles closed-ness bottom-up, as
    # `Search.refresh_closed` keeps it (expanded with every child closed; none counts).
    for node in reversed(out.nodes):
        node.exhausted = node.id in expanded and all(out.is_closed(c) for c in node.children)
    return out


def _events_before(events: Sequence[Event], round_no: int) -> list[Event]:
    """The events emitted before round `round_no` started (all of them past the last round)."""
    for i, event in enumerate(events):
        if isinstance(event, RoundStarted) and event.round >= round_no:
            return list(events[:i])
    return list(events)


def selection_at(
    tree: Tree, events: Sequence[Event], settings: SearchSettings, step: SelectionStep
) -> SelectionAt:
    """The siblings of `step` scored as the selection scored them in that round."""
    then = tree_before_round(tree, events, step.round)
    constant = settings.c_puct if settings.selection == Selection.PUCT else settings.c
    return SelectionAt(
        step=step,
        rule=settings.selection,
        constant=constant,
        parent_visits=then[step.parent_id].visits,
        siblings=sibling_scores(then, step.parent_id, settings),
    )


def why_unavailable(
    tree: Tree, events: Sequence[Event], settings: SearchSettings, node_id: int
) -> str | None:
    """One line saying why no selection step can be shown for this node, or None if one can
    (built from ids and the method's name only: safe as Markdown)."""
    if not 0 <= node_id < len(tree):
        return f"No node {node_id} in this tree."
    node = tree[node_id]
    if node.parent == NO_PARENT:
        return "The root is where every selection starts: pick a node below it."
    if not selects_by_score(settings):
        return f"The {settings.method.value} method does not choose children by a selection score."
    if not any(isinstance(e, NodeSelected) for e in events):
        return "This run's events record no selection path (an older or partial trace): nothing to rebuild."
    if not any(isinstance(e, ValuesBackedUp) for e in events):
        return "This run's events record no backups: the visits and values of a round cannot be rebuilt."
    if not steps_through(tree, events, settings, node.parent):
        return f"No round's selection went through node {node.parent} (this node's parent) into a child."
    return None
