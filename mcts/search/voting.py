"""The final answer of a run: a vote over terminal branches, and the run's result record.

The paper's answer is a vote over the execution results of the terminal branches
(docs/method.md#one-search-round). Only terminal branches whose SPARQL executed with a
non-empty result vote; an answer set is the sorted tuple of distinct value names.

- `VoteMode.PLURALITY`: the most frequent answer set wins. Ties go to the set whose
  best branch has the higher mean value W/N, then to the set found first (lowest
  node id), so the result is deterministic.
- `VoteMode.VALUE_WEIGHTED`: each branch votes with its mean value W/N; the largest
  total wins; ties by count, then by the lowest node id.
- `VoteMode.VISITS` (robust child): the set whose branch the visit counts point to: its
  branches compared by the visits N of their nodes from the root down (the top-level
  node first, then the next), the most visited wins; weight = visits of the top-level
  node. Ties by count, then by the lowest node id.
- `VoteMode.LIKELIHOOD`: the set holding the branch the policy finds most likely: sum of
  log P over the branch (`rules.path_log_prior`); weight = that log-probability. Weights
  within `LIKELIHOOD_TIE` of the best tie (run-to-run noise in the policy's scores); ties
  by count, then by the lowest node id.
- `VoteMode.LIKELIHOOD_PER_STEP`: the same with the mean log P per step
  (`rules.path_mean_log_prior`), so a branch that stops after fewer steps is not preferred
  for paying fewer log P terms.
- `VoteMode.BEST_VALUE`: the best branch's set (`rules.best_branch`): highest W/N.

Every rule is a function of a finished tree, so the evaluation scores all of them on
the same runs. When the winner ties the runner-up on the mode's main figure, the result
says how the tie was broken (`SearchResult.tie_break`, one line; "" without a tie).

The winner's values and SPARQL are those of its best branch (highest W/N, then lowest
id). Also reported: the best terminal by mean value and by IG reward, so a UI or the
evaluation can show where the vote loses (paper: best-of-top-5 76.29 vs vote 70.15).
Knows nothing of models or tools: it reads the tree only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kb.observation import Value
from mcts.search.cost import CostSummary
from mcts.search.events import StopReason
from mcts.search.rules import answering_terminals, path_log_prior, path_mean_log_prior
from mcts.search.rules import (
    best_terminal_by_ig as best_terminal_by_ig,  # re-exported: callers read them here
)
from mcts.search.rules import best_terminal_by_value as best_terminal_by_value
from mcts.search.serialize import values_from_list, values_to_list
from mcts.search.settings import VoteMode
from mcts.search.tree import Node, Tree


@dataclass(frozen=True)
class VoteRow:
    answer: tuple[str, ...]  # distinct value names, sorted
    count: int  # branches voting for it
    weight: float  # the ranking figure: count (plurality) or sum of W/N (value-weighted)
    node_ids: tuple[int, ...]  # the branches voting for it, best (highest W/N) first
    best_mean_value: float = 0.0  # the highest W/N among those branches (the plurality tie-break)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": list(self.answer),
            "count": self.count,
            "weight": self.weight,
            "node_ids": list(self.node_ids),
            "best_mean_value": self.best_mean_value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VoteRow:
        return cls(
            answer=tuple(data["answer"]),
            count=int(data["count"]),
            weight=float(data["weight"]),
            node_ids=tuple(int(i) for i in data["node_ids"]),
            best_mean_value=float(data.get("best_mean_value", 0.0)),
        )


def answer_key(values: tuple[Value, ...]) -> tuple[str, ...]:
    return tuple(sorted({v.name for v in values}))


def voters(tree: Tree) -> list[Node]:
    """Terminal branches with a non-empty executed result, in node order."""
    return answering_terminals(tree)


def _visit_key(tree: Tree, node: Node) -> tuple[int, ...]:
    """Visits of the branch's nodes below the root, top first (compared lexicographically)."""
    return tuple(tree[i].visits for i in tree.path(node.id)[1:])


# The likelihood rules: a branch's log-probability under the policy, by mode.
_LIKELIHOODS = {VoteMode.LIKELIHOOD: path_log_prior, VoteMode.LIKELIHOOD_PER_STEP: path_mean_log_prior}
# Log-probabilities this close are a tie: the policy's scores of one option differ by about
# 1e-6 between runs (cached and fresh forward passes), and two branches taking the same
# steps must not be told apart by that noise.
LIKELIHOOD_TIE = 1e-4

# Per mode: the main figure (higher wins) and what breaks a tie on it, in words.
_TIE_BREAKS = {
    VoteMode.PLURALITY: ("votes", "the higher W/N of its best branch, then the lower node id"),
    VoteMode.VALUE_WEIGHTED: ("summed W/N", "more votes, then the lower node id"),
    VoteMode.VISITS: ("visits along the branch", "more votes, then the lower node id"),
    VoteMode.LIKELIHOOD: ("policy path log-probability", "more votes, then the lower node id"),
    VoteMode.LIKELIHOOD_PER_STEP: ("policy log-probability per step", "more votes, then the lower node id"),
    VoteMode.BEST_VALUE: ("best branch W/N", "more votes, then the lower node id"),
}


def _main_key(row: VoteRow, mode: VoteMode, visit_keys: dict[tuple[str, ...], tuple[int, ...]]) -> object:
    if mode == VoteMode.PLURALITY:
        return row.count
    if mode == VoteMode.VISITS:
        return visit_keys[row.answer]
    if mode == VoteMode.BEST_VALUE:
        return row.best_mean_value
    return row.weight


def _ranked(
    tree: Tree, mode: VoteMode, temperature: float
) -> tuple[list[VoteRow], dict[tuple[str, ...], tuple[int, ...]]]:
    groups: dict[tuple[str, ...], list[Node]] = {}
    for node in voters(tree):
        groups.setdefault(answer_key(node.answer), []).append(node)
    rows = []
    visit_keys: dict[tuple[str, ...], tuple[int, ...]] = {}
    for key, nodes in groups.items():
        nodes = sorted(nodes, key=lambda n: (-n.mean_value, n.id))
        visit_keys[key] = max(_visit_key(tree, n) for n in nodes)
        if mode == VoteMode.PLURALITY:
            weight = float(len(nodes))
        elif mode == VoteMode.VALUE_WEIGHTED:
            weight = sum(n.mean_value for n in nodes)
        elif mode == VoteMode.VISITS:
            weight = float(visit_keys[key][0])
        elif mode in _LIKELIHOODS:
            weight = max(_LIKELIHOODS[mode](tree, n.id, temperature) for n in nodes)
        else:
            weight = nodes[0].mean_value
        rows.append(
            VoteRow(
                answer=key,
                count=len(nodes),
                weight=weight,
                node_ids=tuple(n.id for n in nodes),
                best_mean_value=nodes[0].mean_value,
            )
        )
    if mode == VoteMode.PLURALITY:
        rows.sort(key=lambda r: (-r.count, -r.best_mean_value, min(r.node_ids)))
    elif mode == VoteMode.VISITS:
        rows.sort(key=lambda r: (tuple(-v for v in visit_keys[r.answer]), -r.count, min(r.node_ids)))
    elif mode == VoteMode.BEST_VALUE:
        rows.sort(key=lambda r: (-r.best_mean_value, -r.count, min(r.node_ids)))
    else:
        rows.sort(key=lambda r: (-r.weight, -r.count, min(r.node_ids)))
        if mode in _LIKELIHOODS and rows:
            tied = [r for r in rows if _same_weight(r.weight, rows[0].weight)]
            tied.sort(key=lambda r: (-r.count, min(r.node_ids)))
            rows = tied + rows[len(tied) :]
    return rows, visit_keys


def _same_weight(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= LIKELIHOOD_TIE


def tally_votes(
    tree: Tree, mode: VoteMode = VoteMode.PLURALITY, temperature: float = 0.7
) -> tuple[VoteRow, ...]:
    """Vote rows, winner first (see the module docstring for each mode's order).

    `temperature` is the policy's sampling temperature (the likelihood rule's priors).
    """
    return tuple(_ranked(tree, mode, temperature)[0])


def tie_break(tree: Tree, mode: VoteMode = VoteMode.PLURALITY, temperature: float = 0.7) -> str:
    """How a tie on the mode's main figure was broken, in one line ("" when there was none)."""
    mode = VoteMode(mode)
    rows, visit_keys = _ranked(tree, mode, temperature)
    if len(rows) < 2:
        return ""
    top = _main_key(rows[0], mode, visit_keys)
    if mode in _LIKELIHOODS:
        tied = [r for r in rows if _same_weight(r.weight, rows[0].weight)]
    else:
        tied = [r for r in rows if _main_key(r, mode, visit_keys) == top]
    if len(tied) < 2:
        return ""
    figure, rule = _TIE_BREAKS[mode]
    return f"{len(tied)} answer sets tied on {figure}; broken by {rule}"


@dataclass(frozen=True)
class SearchResult:
    question: str
    answer: tuple[Value, ...]  # the winning branch's executed values; () when no branch answered
    sparql: str  # the SPARQL that produced them
    answer_node_ids: tuple[int, ...]  # the branches that voted for the answer, best first
    votes: tuple[VoteRow, ...]
    best_by_value: int | None
    best_by_ig: int | None
    stop_reason: StopReason
    detail: str
    rounds: int
    nodes: int
    cost: CostSummary
    terminals: int = 0  # terminal branches (answering or not)
    vote_mode: str = VoteMode.PLURALITY.value  # the rule that chose `answer`
    tie_break: str = ""  # how a tie for first place was broken, one line; "" when none

    @property
    def answer_names(self) -> tuple[str, ...]:
        return answer_key(self.answer)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": values_to_list(self.answer),
            "sparql": self.sparql,
            "answer_node_ids": list(self.answer_node_ids),
            "votes": [r.to_dict() for r in self.votes],
            "best_by_value": self.best_by_value,
            "best_by_ig": self.best_by_ig,
            "stop_reason": self.stop_reason,
            "detail": self.detail,
            "rounds": self.rounds,
            "nodes": self.nodes,
            "terminals": self.terminals,
            "vote_mode": self.vote_mode,
            "tie_break": self.tie_break,
            "cost": self.cost.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        return cls(
            question=str(data["question"]),
            answer=values_from_list(data.get("answer", [])),
            sparql=str(data.get("sparql", "")),
            answer_node_ids=tuple(int(i) for i in data.get("answer_node_ids", [])),
            votes=tuple(VoteRow.from_dict(r) for r in data.get("votes", [])),
            best_by_value=data.get("best_by_value"),
            best_by_ig=data.get("best_by_ig"),
            stop_reason=data["stop_reason"],
            detail=str(data.get("detail", "")),
            rounds=int(data.get("rounds", 0)),
            nodes=int(data.get("nodes", 0)),
            terminals=int(data.get("terminals", 0)),
            vote_mode=str(data.get("vote_mode", VoteMode.PLURALITY.value)),
            tie_break=str(data.get("tie_break", "")),
            cost=CostSummary.from_dict(data.get("cost", {})),
        )


def decide(
    tree: Tree, mode: VoteMode, temperature: float = 0.7
) -> tuple[tuple[Value, ...], str, tuple[int, ...], tuple[VoteRow, ...]]:
    """(answer values, sparql, voting node ids, vote rows) for the tree as it stands."""
    rows = tally_votes(tree, VoteMode(mode), temperature)
    if not rows:
        return (), "", (), rows
    winner = rows[0]
    likelihood = _LIKELIHOODS.get(VoteMode(mode))
    if likelihood is not None:  # the winner's values come from its likeliest branch
        best = max(
            (tree[i] for i in winner.node_ids), key=lambda n: (likelihood(tree, n.id, temperature), -n.id)
        )
    else:
        best = tree[winner.node_ids[0]]
    return best.answer, best.answer_sparql, winner.node_ids, rows
