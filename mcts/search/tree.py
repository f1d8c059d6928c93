"""The search tree: one mutable node type with explicit fields, and the selection scores
(the paper's UCT, and PUCT with the policy prior).

Node ids come from the tree (index into `Tree.nodes`), never from a global, so
two searches never share ids. The tree knows nothing of models or tools: it stores
steps and the numbers the search writes into them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from kb.observation import Value
from mcts.search.steps import IGDetail, Step

ROOT_ID = 0
NO_PARENT = -1

Validity = Literal["ok", "tool_error", "parse_error", "empty_result"]


@dataclass
class Node:
    id: int
    parent: int  # NO_PARENT for the root
    depth: int  # root 0; a node at depth d holds the d-th step
    step: Step | None  # None for the root
    round: int = 0  # the search round that created it
    children: list[int] = field(default_factory=list)
    visits: int = 0  # N
    value_sum: float = 0.0  # W
    reward: float | None = None  # r (IG reward, simulated reward or constant)
    ppl_history: float | None = None  # PPL(H')
    ppl_with_question: float | None = None  # PPL(H', Q)
    decay: float = 1.0  # depth decay applied to r when backing up
    terminal: bool = False  # Done or max depth
    answer: tuple[Value, ...] = ()  # executed answer of a terminal branch
    answer_sparql: str = ""  # the SPARQL that produced `answer`
    validity: Validity = "ok"
    policy_score: float | None = None  # the policy's score of this step among its siblings
    prior: float | None = None  # P: softmax of the siblings' policy scores (rules.priors); PUCT reads it
    raw_history: str = ""  # the branch's steps root..node as the agent saw them
    cleaned_history: str = ""  # what the IG scorer read
    truncated: bool = False  # cleaned history cut from the left to fit the scorer's context
    simulation: tuple[Step, ...] = ()  # classic MCTS: simulated continuation (not tree nodes)
    simulated_answer: tuple[Value, ...] = ()  # classic MCTS: executed answer at the simulation's end
    exhausted: bool = False  # expanded, and nothing below it can be expanded any more
    ig_detail: IGDetail | None = None  # the NLLs behind `reward` (trace version 3; None before)

    @property
    def mean_value(self) -> float:
        """W/N; 0 for an unvisited node."""
        return self.value_sum / self.visits if self.visits else 0.0

    @property
    def is_root(self) -> bool:
        return self.parent == NO_PARENT


@dataclass
class Tree:
    question: str
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes.append(Node(id=ROOT_ID, parent=NO_PARENT, depth=0, step=None))

    @property
    def root(self) -> Node:
        return self.nodes[ROOT_ID]

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def add_child(self, parent_id: int, step: Step, **fields_: object) -> Node:
        parent = self.nodes[parent_id]
        node = Node(id=len(self.nodes), parent=parent_id, depth=parent.depth + 1, step=step, **fields_)
        self.nodes.append(node)
        parent.children.append(node.id)
        return node

    def path(self, node_id: int) -> list[int]:
        """Node ids from the root down to `node_id`, inclusive."""
        out = []
        while node_id != NO_PARENT:
            out.append(node_id)
            node_id = self.nodes[node_id].parent
        return out[::-1]

    def steps(self, node_id: int) -> list[Step]:
        """The branch's history: steps of every node on the path (root has none)."""
        return [self.nodes[i].step for i in self.path(node_id) if self.nodes[i].step is not None]

    def uct(self, node_id: int, c: float) -> float:
        """W/N + c * sqrt(ln N_parent / N); +inf for an unvisited node (taken first)."""
        node = self.nodes[node_id]
        if node.visits == 0:
            return math.inf
        parent_visits = self.nodes[node.parent].visits if node.parent != NO_PARENT else node.visits
        explore = math.sqrt(math.log(max(parent_visits, 1)) / node.visits)
        return node.mean_value + c * explore

    def prior_term(self, node_id: int, c_puct: float) -> float:
        """c_puct * P * sqrt(N_parent) / (1 + N): PUCT's exploration term (AlphaZero / mctx).

        A node with no stored prior (a trace written before priors) counts as uniform
        among its siblings.
        """
        node = self.nodes[node_id]
        if node.parent == NO_PARENT:
            return 0.0
        parent = self.nodes[node.parent]
        p = node.prior if node.prior is not None else 1.0 / max(len(parent.children), 1)
        return c_puct * p * math.sqrt(parent.visits) / (1 + node.visits)

    def puct(self, node_id: int, c_puct: float) -> float:
        """W/N + c_puct * P * sqrt(N_parent) / (1 + N); an unvisited node has W/N = 0, so
        unvisited siblings are taken in order of P once the parent has been visited."""
        return self.nodes[node_id].mean_value + self.prior_term(node_id, c_puct)

    def terminals(self) -> list[Node]:
        return [n for n in self.nodes if n.terminal]

    def is_closed(self, node_id: int) -> bool:
        """A node selection never enters again: terminal, or exhausted below."""
        node = self.nodes[node_id]
        return node.terminal or node.exhausted
