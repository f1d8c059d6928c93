"""Cost accounting of one search run: model calls, forward passes, tokens, tool calls, time.

`CostSummary` is the plain, frozen record a run reports (the evaluation compares
methods by it). `CostMeter` is the running counter a search keeps: model figures are
read as *deltas* of the policy's and scorer's `Usage` counters since the run started
(models are shared across runs, so absolute counters mean nothing per run); tool
calls and KB time are counted by the search itself around each `Tools.run`.

Two runs sharing one policy or scorer object at the same time would see each other's
model calls in their deltas; the app and the evaluation run one search at a time.
This module knows nothing of trees, models or tools beyond the `Usage` counters.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from mcts.search.protocols import Usage


@dataclass(frozen=True)
class CostSummary:
    policy_calls: int = 0  # policy generation calls (Usage.calls delta of the policy)
    candidate_passes: int = 0  # guided policy: forward passes scoring candidates
    ig_forward_passes: int = 0  # scorer forward passes (Usage.calls delta of the scorer)
    tokens: int = 0  # tokens generated or scored by policy and scorer together
    tool_calls: dict[str, int] = field(default_factory=dict)  # by tool name, e.g. {"ExecuteSPARQL": 3}
    kb_s: float = 0.0  # seconds inside Tools.run
    model_s: float = 0.0  # seconds inside the policy and the scorer (their Usage.seconds)
    wall_s: float = 0.0  # the run's wall time
    propose_calls: int = 0  # Policy.propose calls made by the search (one per expansion/simulation step)
    score_batches: int = 0  # Scorer.score calls made by the search (one per batch of siblings)
    policy_s: float = 0.0  # the policy's share of model_s
    scorer_s: float = 0.0  # the scorer's share of model_s

    @property
    def total_tool_calls(self) -> int:
        return sum(self.tool_calls.values())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tool_calls"] = dict(sorted(self.tool_calls.items()))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostSummary:
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in known}
        values["tool_calls"] = {str(k): int(v) for k, v in dict(values.get("tool_calls", {})).items()}
        return cls(**values)


def _snapshot(usage: Usage | None) -> Usage:
    return replace(usage) if usage is not None else Usage()


class CostMeter:
    """Running counters of one run; `summary()` is a snapshot at any moment."""

    def __init__(self, policy_usage: Usage | None, scorer_usage: Usage | None) -> None:
        self._policy_usage = policy_usage
        self._scorer_usage = scorer_usage
        self._policy_start = _snapshot(policy_usage)
        self._scorer_start = _snapshot(scorer_usage)
        self._tool_calls: Counter[str] = Counter()
        self._kb_s = 0.0
        self._propose_calls = 0
        self._score_batches = 0
        self._t_start: float | None = None
        self._t_end: float | None = None

    def start(self) -> None:
        """Restart the clock and the usage baselines (call when the run begins)."""
        self._policy_start = _snapshot(self._policy_usage)
        self._scorer_start = _snapshot(self._scorer_usage)
        self._t_start = time.perf_counter()

    def stop(self) -> None:
        self._t_end = time.perf_counter()

    def tool_call(self, tool: str, seconds: float) -> None:
        self._tool_calls[tool] += 1
        self._kb_s += seconds

    def propose_call(self) -> None:
        self._propose_calls += 1

    def score_batch(self) -> None:
        self._score_batches += 1

    def summary(self) -> CostSummary:
        policy = _snapshot(self._policy_usage)
        scorer = _snapshot(self._scorer_usage)
        p0, s0 = self._policy_start, self._scorer_start
        if self._t_start is None:
            wall = 0.0
        else:
            wall = (self._t_end if self._t_end is not None else time.perf_counter()) - self._t_start
        return CostSummary(
            policy_calls=policy.calls - p0.calls,
            candidate_passes=(policy.candidate_passes - p0.candidate_passes)
            + (scorer.candidate_passes - s0.candidate_passes),
            ig_forward_passes=scorer.calls - s0.calls,
            tokens=(policy.tokens - p0.tokens) + (scorer.tokens - s0.tokens),
            tool_calls=dict(sorted(self._tool_calls.items())),
            kb_s=self._kb_s,
            model_s=(policy.seconds - p0.seconds) + (scorer.seconds - s0.seconds),
            wall_s=max(0.0, wall),
            propose_calls=self._propose_calls,
            score_batches=self._score_batches,
            policy_s=policy.seconds - p0.seconds,
            scorer_s=scorer.seconds - s0.seconds,
        )
