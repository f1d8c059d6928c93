"""Search settings: one frozen dataclass with the paper's defaults.

Every constant of the method lives here, so the CLI and the app expose the same
knobs. Sources: "Fast MCTS with IG rewards for KBQA" (the paper) unless noted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import Enum, StrEnum
from typing import Any


class Method(StrEnum):
    FAST = "fast"  # Fast MCTS: IG reward of each new child, no simulation
    CLASSIC = "classic"  # classic MCTS: simulate to Done, score the end state by IG
    CONSTANT = "constant"  # ablation: Fast MCTS with a constant reward (paper: CWQ 70.15 -> 57.99)
    BEAM = "beam"  # level-by-level beam search by IG score (paper CWQ 60.82)
    VOTE = "vote"  # N independent sampled paths, vote over results
    SINGLE = "single"  # one greedy path (paper CWQ 37.47)


class VoteMode(StrEnum):
    """How the final answer is chosen from a finished tree (mcts.search.voting)."""

    PLURALITY = "plurality"  # paper: most frequent answer set; ties by the branch's mean value
    VALUE_WEIGHTED = "value_weighted"  # each branch votes with its mean value W/N
    VISITS = "visits"  # each answer set scores the visits N of its branches (robust child)
    LIKELIHOOD = "likelihood"  # the branch the policy finds most likely (sum of log P along its path)
    # The same per step: a branch that stops early pays fewer log P terms under the sum
    LIKELIHOOD_PER_STEP = "likelihood_per_step"
    BEST_VALUE = "best_value"  # the best branch: the answering terminal with the highest W/N


class Selection(StrEnum):
    UCT = "uct"  # paper: W/N + c * sqrt(ln N_parent / N), unvisited first
    PUCT = "puct"  # AlphaZero / mctx: W/N + c_puct * P * sqrt(N_parent) / (1 + N)


class IGVariant(StrEnum):
    """Which per-token NLLs the IG reward reads (mcts.agents.scorer.ig_input); all go
    through alpha * sigmoid(beta * x)."""

    PAPER = "paper"  # x = log PPL(H') - log PPL(H', Q): means over history+prompt vs everything
    QUESTION = "question"  # x = mean NLL(Q | prompt) - mean NLL(Q | H' + prompt)
    QUESTION_CLIPPED = "question_clipped"  # as question, each token's gain clipped to +-1 nat


MAX_SEED = 2**32 - 1  # what every seeding API (torch, numpy, random) takes; traces keep it


@dataclass(frozen=True)
class SearchSettings:
    method: Method = Method.FAST
    rounds: int = 12  # paper: at most 12 rounds per question
    k: int = 5  # paper: 5 candidates per expansion
    c: float = 1.0  # UCT exploration constant; not given by the paper, 1.0 is our default
    alpha: float = 2.0  # paper: IG reward scale
    beta: float = 10.0  # paper: IG reward sharpness
    expected_depth: int = 7  # paper: decay starts after depth 7
    decay_rate: float = 0.1  # paper: 0.1 per level beyond the expected depth
    max_depth: int = 10  # a branch is terminal at Done or here
    early_stop_terminals: int = 5  # paper: stop once 5 non-empty terminal branches exist
    beam_width: int = 3  # beam baseline: keep top b per level
    vote_samples: int = 5  # vote baseline: N = 5 sampled paths
    temperature: float = 0.7  # policy sampling temperature
    constant_reward: float = 1.0  # constant-reward ablation: alpha * sigmoid(0)
    vote_mode: VoteMode = VoteMode.PLURALITY
    seed: int = 0
    selection: Selection = Selection.UCT  # paper: UCT
    c_puct: float = 1.0  # PUCT exploration constant (ours; used when selection is puct)
    ig_variant: IGVariant = IGVariant.PAPER  # paper: the mean-over-everything ratio
    greedy_first: bool = False  # expansion: the policy's top candidate always among the k
    # Tree search: the first rounds expand along the policy's greedy path (its top candidate
    # kept at each step), so the tree always holds the greedy path's answer.
    greedy_descent: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", Method(self.method))
        object.__setattr__(self, "vote_mode", VoteMode(self.vote_mode))
        object.__setattr__(self, "selection", Selection(self.selection))
        object.__setattr__(self, "ig_variant", IGVariant(self.ig_variant))
        positive = ("rounds", "k", "max_depth", "early_stop_terminals", "beam_width", "vote_samples")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("c", "c_puct", "alpha", "beta", "decay_rate", "temperature"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        if self.expected_depth < 0:
            raise ValueError(f"expected_depth must be >= 0, got {self.expected_depth}")
        if not 0 <= int(self.seed) <= MAX_SEED:
            raise ValueError(f"seed must be in 0..{MAX_SEED}, got {self.seed}")

    def with_(self, **changes: Any) -> SearchSettings:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.value if isinstance(value, Enum) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
