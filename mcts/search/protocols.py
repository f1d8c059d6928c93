"""The small protocols the search loop gets its world through.

The loop never knows which model, store or prompt sits behind these. A toy world
(see tests) implements them in a few lines; the real ones live in
`mcts.policy_*`, `mcts.agents.scorer` and `kb.tools`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kb.actions import Action
from kb.observation import Observation
from mcts.search.steps import Candidate, IGScore, Step

DEFAULT_IG_PROMPT = "Based on this interaction history, the original question is:"


@dataclass
class Usage:
    """Running counters of one model-driven component (mutable; read as deltas)."""

    calls: int = 0  # policy: generation calls; scorer: IG forward passes
    candidate_passes: int = 0  # guided policy: forward passes that score candidates
    tokens: int = 0  # tokens generated or scored
    seconds: float = 0.0  # wall time spent inside the model


class Policy(Protocol):
    name: str
    usage: Usage

    def propose(
        self,
        question: str,
        history: Sequence[Step],
        k: int,
        *,
        rng: random.Random,
        greedy: bool = False,
    ) -> list[Candidate]:
        """Up to k candidate next steps at the state reached by `history`.

        Identical actions are already merged. A completion that does not parse is a
        Candidate with action None and a parse_error; it never raises for model output.
        """
        ...


class Scorer(Protocol):
    name: str
    usage: Usage

    def score(
        self,
        question: str,
        cleaned_histories: Sequence[str],
        *,
        alpha: float,
        beta: float,
        prompt: str = DEFAULT_IG_PROMPT,
        variant: str = "paper",
    ) -> list[IGScore]:
        """IG score for each cleaned history (siblings are scored in one batch); `variant`
        is a `settings.IGVariant` value (which NLLs the reward reads)."""
        ...


class Tools(Protocol):
    """The agent's tools over one knowledge base (`kb.tools.Toolbox` implements it)."""

    def run(self, action: Action) -> Observation:
        """Never raises for bad input: errors come back as `Observation.error(...)`."""
        ...
