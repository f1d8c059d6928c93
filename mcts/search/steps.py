"""Plain data that crosses the search/model boundary: steps, candidates, IG scores.

A `Step` is one agent turn (thought, tool call, observation). The search stores
steps in tree nodes; policies propose them; history cleaning and the IG scorer read
them. Nothing here runs a model or a tool.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb.actions import Action
from kb.observation import Observation


@dataclass(frozen=True)
class Step:
    thought: str
    action: Action | None  # None when the model's text did not parse
    observation: Observation
    raw_text: str = ""  # the policy's raw completion, kept for debugging parse errors

    @property
    def is_done(self) -> bool:
        return self.action is not None and self.action.tool == "Done"

    def render(self) -> str:
        """The ReAct turn as the agent and the raw history show it."""
        action = self.action.render() if self.action is not None else self.raw_text.strip()
        return f"Thought: {self.thought}\nAction: {action}\nObservation: {self.observation.text}"


@dataclass(frozen=True)
class Candidate:
    """A proposed next step before it is executed. `action` None = unparsable completion."""

    thought: str
    action: Action | None
    raw_text: str = ""
    policy_score: float | None = None  # guided policy: length-normalised log-likelihood
    parse_error: str = ""

    def key(self) -> str:
        """Identity used to merge identical actions among siblings (docs/method.md#one-search-round)."""
        return self.action.render() if self.action is not None else f"<unparsable>{self.raw_text.strip()}"


@dataclass(frozen=True)
class IGScore:
    """The IG reward of one cleaned history (docs/method.md#the-ig-reward).

    ppl_history = PPL(H' + prompt); ppl_with_question = PPL(H' + prompt + Q);
    reward = alpha * sigmoid(beta * log(ppl_history / ppl_with_question)).
    """

    ppl_history: float
    ppl_with_question: float
    reward: float
    tokens: int = 0  # tokens in the scored sequence
    truncated: bool = False  # history was cut from the left to fit the context
