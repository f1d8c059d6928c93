"""The final answer of a run: a vote over terminal branches, and the run's result record.

DESIGN.md section 2: the answer is a vote over the execution results of the terminal
branches. Only terminal branches whose SPARQL executed with a non-empty result vote;
an answer set is the sorted tuple of distinct value names.

- `VoteMode.PLURALITY`: the most frequent answer set wins. Ties go to the set whose
  best branch has the higher mean value W/N, then to the set found first (lowest
  node id), so the result is deterministic.
- `VoteMode.VALUE_WEIGHTED`: each branch votes with its mean value W/N; the largest
  total wins; ties by count, then by the lowest node id.

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
from mcts.search.rules import answering_terminals
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


def tally_votes(tree: Tree, mode: VoteMode = VoteMode.PLURALITY) -> tuple[VoteRow, ...]:
    """Vote rows, winner first (see the module docstring for the ordering)."""
    groups: dict[tuple[str, ...], list[Node]] = {}
    for node in voters(tree):
        groups.setdefault(answer_key(node.answer), []).append(node)
    rows = []
    for key, nodes in groups.items():
        nodes = sorted(nodes, key=lambda n: (-n.mean_value, n.id))
        weight = float(len(nodes)) if mode == VoteMode.PLURALITY else sum(n.mean_value for n in nodes)
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
    else:
        rows.sort(key=lambda r: (-r.weight, -r.count, min(r.node_ids)))
    return tuple(rows)


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
            cost=CostSummary.from_dict(data.get("cost", {})),
        )


def decide(tree: Tree, mode: VoteMode) -> tuple[tuple[Value, ...], str, tuple[int, ...], tuple[VoteRow, ...]]:
    """(answer values, sparql, voting node ids, vote rows) for the tree as it stands."""
    rows = tally_votes(tree, mode)
    if not rows:
        return (), "", (), rows
    winner = rows[0]
    best = tree[winner.node_ids[0]]
    return best.answer, best.answer_sparql, winner.node_ids, rows
