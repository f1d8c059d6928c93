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
class IGDetail:
    """What an IG reward was computed from, kept so the inspector can say why (viz.ig_lens).

    With n target tokens of history+prompt at mean NLL a, and m question tokens at mean
    NLL q after them: log PPL(H') = a, log PPL(H', Q) = (n*a + m*q) / (n + m), so
    x = log PPL(H') - log PPL(H', Q) = m / (n + m) * (a - q). All from the scoring pass
    itself, except `base_question_nlls` (one cached pass per question, no history).
    """

    history_tokens: int  # n: target tokens of the prefix (history + prompt, chat-wrapped)
    question_nlls: tuple[float, ...]  # NLL of each question token after H' + prompt; m = len
    question_pieces: tuple[str, ...]  # each question token as text (they join to the question)
    base_question_nlls: tuple[float, ...]  # NLL of each question token after the prompt alone

    def __post_init__(self) -> None:
        m = len(self.question_nlls)
        if self.history_tokens < 1 or m == 0:
            raise ValueError("an IG detail needs >= 1 history target and >= 1 question token")
        if len(self.question_pieces) != m or len(self.base_question_nlls) != m:
            raise ValueError(
                f"an IG detail needs one piece and one baseline NLL per question token ({m}), got "
                f"{len(self.question_pieces)} and {len(self.base_question_nlls)}"
            )

    @property
    def question_tokens(self) -> int:
        return len(self.question_nlls)


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
    detail: IGDetail | None = None  # the NLLs behind the reward (None: constant or other scorers)
