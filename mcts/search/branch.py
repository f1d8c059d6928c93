"""What a branch's steps say: its executed answer and each step's validity.

Pure functions over `Step`s; shared by the search, classic-MCTS simulation and tests.
Knows nothing of trees, models or tools.
"""

from __future__ import annotations

from collections.abc import Sequence

from kb.observation import Value
from mcts.search.steps import Step
from mcts.search.tree import Validity


def branch_answer(steps: Sequence[Step]) -> tuple[tuple[Value, ...], str]:
    """Values and SPARQL of the last ExecuteSPARQL on the branch that returned something.

    A terminal branch's answer (docs/method.md#one-search-round: the answer is chosen
    among execution results); `((), "")` when no query on the branch returned values.
    """
    for step in reversed(steps):
        action, obs = step.action, step.observation
        if action is not None and action.tool == "ExecuteSPARQL" and not obs.is_error and obs.values:
            return obs.values, obs.sparql or action.argument
    return (), ""


def validity_of(step: Step) -> Validity:
    """parse_error (no action), tool_error (error observation), empty_result (an
    ExecuteSPARQL with no values), else ok."""
    if step.action is None:
        return "parse_error"
    if step.observation.is_error:
        return "tool_error"
    if step.action.tool == "ExecuteSPARQL" and not step.observation.values:
        return "empty_result"
    return "ok"
