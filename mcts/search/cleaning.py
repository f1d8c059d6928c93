"""History cleaning for the IG reward: the four rules of docs/method.md#the-ig-reward, as data.

The IG reward asks how much more natural the question reads after the history. A
history that restates the question (in thoughts, or in the entity name given to
SearchNodes) would make that trivially true, so the history is cleaned first.

Text layout. The raw history is the steps' ReAct turns joined by newlines
(`Step.render`):

    Thought: <thought>
    Action: <Tool>(<arguments>)
    Observation: <text>
    Thought: ...

Cleaning removes pieces of that text and keeps the rest verbatim, so a cleaned
history with every rule on looks like:

    Action: SearchNodes()
    Action: SearchGraphPatterns("SELECT ?e WHERE { ... }", semantic="born in")
    Observation: <only the current (last) step's observation>

`clean_history` returns both the cleaned text and the raw text cut into segments,
each tagged with the rule that removed it (None = kept), so the UI can highlight what
each rule removed. Concatenating all segments gives the raw history exactly.

Choices the rules leave open, decided here:
- SearchTypes keeps its argument (no rule names it).
- A step whose completion did not parse (action None) shows the raw completion on its
  Action line; that free text may restate the question like a thought does, so the
  thought rule removes it. Its observation (the parse error) follows the usual rule.

This module knows nothing of models or scoring.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from mcts.search.steps import Step


class CleaningRule(StrEnum):
    DROP_THOUGHTS = "drop_thoughts"
    MASK_SEARCH_NODES = "mask_search_nodes_argument"
    # On: SPARQL and SearchGraphPatterns arguments stay in full. Off: they are dropped too.
    KEEP_STRUCTURED_ARGUMENTS = "keep_structured_arguments"
    LAST_OBSERVATION_ONLY = "last_observation_only"


@dataclass(frozen=True)
class RuleInfo:
    label: str
    explanation: str


RULE_INFO: dict[CleaningRule, RuleInfo] = {
    CleaningRule.DROP_THOUGHTS: RuleInfo(
        "Drop thoughts",
        "Remove every Thought line: thoughts often restate the question.",
    ),
    CleaningRule.MASK_SEARCH_NODES: RuleInfo(
        "Mask SearchNodes arguments",
        "Keep only the tool name of SearchNodes calls: the entity name is copied from the question.",
    ),
    CleaningRule.KEEP_STRUCTURED_ARGUMENTS: RuleInfo(
        "Keep structured arguments",
        "Keep SPARQL and SearchGraphPatterns arguments in full; switched off, they are removed too.",
    ),
    CleaningRule.LAST_OBSERVATION_ONLY: RuleInfo(
        "Last observation only",
        "Keep only the current step's observation; earlier observations are removed.",
    ),
}

DEFAULT_RULES: frozenset[CleaningRule] = frozenset(CleaningRule)
# Tools whose arguments are structured queries rather than text copied from the question.
_STRUCTURED_TOOLS = frozenset({"SearchGraphPatterns", "ExecuteSPARQL"})


@dataclass(frozen=True)
class Segment:
    text: str
    removed_by: CleaningRule | None  # None: kept in the cleaned history


@dataclass(frozen=True)
class CleanedHistory:
    text: str  # the cleaned history: the kept segments concatenated
    segments: tuple[Segment, ...]  # all segments concatenated = the raw history

    @property
    def raw(self) -> str:
        return "".join(s.text for s in self.segments)

    def removed_by(self, rule: CleaningRule) -> list[str]:
        """The pieces of raw text this rule removed (for the UI and tests)."""
        return [s.text for s in self.segments if s.removed_by is rule]


def raw_history(steps: Sequence[Step]) -> str:
    """The uncleaned history: each step's ReAct turn, joined by newlines."""
    return "\n".join(step.render() for step in steps)


def _action_segments(step: Step, rules: Collection[CleaningRule]) -> list[Segment]:
    """Segments of the text after "Action: " for one step."""
    if step.action is None:
        text = step.raw_text.strip()
        removed = CleaningRule.DROP_THOUGHTS if CleaningRule.DROP_THOUGHTS in rules else None
        return [Segment(text, removed)]
    rendered = step.action.render()
    head = f"{step.action.tool}("
    if not (rendered.startswith(head) and rendered.endswith(")")):
        return [Segment(rendered, None)]  # defensive: an unexpected rendering is kept whole
    inner = rendered[len(head) : -1]
    removed: CleaningRule | None = None
    if step.action.tool == "SearchNodes" and CleaningRule.MASK_SEARCH_NODES in rules:
        removed = CleaningRule.MASK_SEARCH_NODES
    elif step.action.tool in _STRUCTURED_TOOLS and CleaningRule.KEEP_STRUCTURED_ARGUMENTS not in rules:
        removed = CleaningRule.KEEP_STRUCTURED_ARGUMENTS
    return [Segment(head, None), Segment(inner, removed), Segment(")", None)]


def clean_history(steps: Sequence[Step], rules: Collection[CleaningRule] = DEFAULT_RULES) -> CleanedHistory:
    """Apply the switched-on rules to the history root -> current node.

    The last step is the current one (its observation survives LAST_OBSERVATION_ONLY).
    """
    rules = frozenset(CleaningRule(r) for r in rules)
    pieces: list[Segment] = []
    last = len(steps) - 1
    for i, step in enumerate(steps):
        newline = "\n" if i < last else ""  # the separator between steps belongs to the step
        thought_rule = CleaningRule.DROP_THOUGHTS if CleaningRule.DROP_THOUGHTS in rules else None
        pieces.append(Segment(f"Thought: {step.thought}\n", thought_rule))
        pieces.append(Segment("Action: ", None))
        pieces.extend(_action_segments(step, rules))
        pieces.append(Segment("\n", None))
        obs_rule = (
            CleaningRule.LAST_OBSERVATION_ONLY
            if i < last and CleaningRule.LAST_OBSERVATION_ONLY in rules
            else None
        )
        pieces.append(Segment(f"Observation: {step.observation.text}{newline}", obs_rule))
    segments = _merge(pieces)
    return CleanedHistory(
        text="".join(s.text for s in segments if s.removed_by is None),
        segments=segments,
    )


def _merge(pieces: list[Segment]) -> tuple[Segment, ...]:
    """Join neighbours with the same tag and drop empty pieces."""
    out: list[Segment] = []
    for seg in pieces:
        if not seg.text:
            continue
        if out and out[-1].removed_by is seg.removed_by:
            out[-1] = Segment(out[-1].text + seg.text, seg.removed_by)
        else:
            out.append(seg)
    return tuple(out)
