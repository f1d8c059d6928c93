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

A fifth rule, off by default (`DEFAULT_RULES` are the paper's four): MASK_RESTATEMENTS
replaces every word or id fragment of an action argument that restates a content word of
the question (`mcts.search.restatement`) by `MASK`, inside the SearchGraphPatterns query
and semantic phrase, the ExecuteSPARQL query and the SearchTypes argument; the masked
piece is a segment tagged with the rule whose `replacement` the cleaned history holds:

    Action: SearchGraphPatterns("SELECT ?e WHERE { ?e ns:type.object.name \"_\"@en }", semantic="Who _")

Choices the rules leave open, decided here:
- SearchTypes keeps its argument (no rule but the mask names it).
- A step whose completion did not parse (action None) shows the raw completion on its
  Action line; that free text may restate the question like a thought does, so the
  thought rule removes it. Its observation (the parse error) follows the usual rule.

This module knows nothing of models or scoring.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from mcts.search.restatement import content_stems, find_restatements
from mcts.search.steps import Step


class CleaningRule(StrEnum):
    DROP_THOUGHTS = "drop_thoughts"
    MASK_SEARCH_NODES = "mask_search_nodes_argument"
    # On: SPARQL and SearchGraphPatterns arguments stay in full. Off: they are dropped too.
    KEEP_STRUCTURED_ARGUMENTS = "keep_structured_arguments"
    LAST_OBSERVATION_ONLY = "last_observation_only"
    # Off by default: not one of the paper's rules.
    MASK_RESTATEMENTS = "mask_restatements"


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
    CleaningRule.MASK_RESTATEMENTS: RuleInfo(
        "Mask restated words",
        "In queries, semantic phrases and type searches, blank out every word or id part "
        "that repeats a word of the question (off in the paper).",
    ),
}

# The paper's four rules; MASK_RESTATEMENTS is an option on top of them.
DEFAULT_RULES: frozenset[CleaningRule] = frozenset(
    {
        CleaningRule.DROP_THOUGHTS,
        CleaningRule.MASK_SEARCH_NODES,
        CleaningRule.KEEP_STRUCTURED_ARGUMENTS,
        CleaningRule.LAST_OBSERVATION_ONLY,
    }
)
# Tools whose arguments are structured queries rather than text copied from the question.
_STRUCTURED_TOOLS = frozenset({"SearchGraphPatterns", "ExecuteSPARQL"})
# Tools whose arguments MASK_RESTATEMENTS reads (SearchNodes has its own rule; Done has none).
_MASKED_TOOLS = frozenset({"SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes"})
# One `_` per masked word: a single token with no content for the scorer, already an id
# separator (so `ns:m.demo_inception` becomes `ns:m.demo__`, still id-shaped), and legal
# inside a SPARQL variable name (`?director` -> `?_`), so the masked query keeps its shape.
MASK = "_"


@dataclass(frozen=True)
class Segment:
    text: str  # the raw text
    removed_by: CleaningRule | None  # None: kept in the cleaned history
    replacement: str = ""  # what the cleaned history holds instead ("" unless masked)


@dataclass(frozen=True)
class CleanedHistory:
    text: str  # the cleaned history: kept segments and masked ones' replacements concatenated
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


def _masked(text: str, stems: frozenset[str]) -> list[Segment]:
    """`text` cut around its restatements, each a segment masked by MASK_RESTATEMENTS."""
    out, pos = [], 0
    for found in find_restatements(stems, text):
        out += [Segment(text[pos : found.start], None)]
        out += [Segment(found.text, CleaningRule.MASK_RESTATEMENTS, MASK)]
        pos = found.end
    return [*out, Segment(text[pos:], None)]


def _action_segments(
    step: Step, rules: Collection[CleaningRule], stems: frozenset[str] | None
) -> list[Segment]:
    """Segments of the text after "Action: " for one step (`stems`: the question's
    content stems when MASK_RESTATEMENTS is on, else None)."""
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
    if removed is None and stems is not None and step.action.tool in _MASKED_TOOLS:
        # Only the quoted arguments: the keyword `semantic=` between them is not one.
        # The query alone renders as `Tool("<query>")`: its quoted form is where `inner` splits.
        first = replace(step.action, semantic="").render()[len(head) : -1]
        keyword, semantic = ", semantic=", inner[len(first) :]
        masked = [*_masked(first, stems)]
        if semantic.startswith(keyword):
            masked += [Segment(keyword, None), *_masked(semantic[len(keyword) :], stems)]
        return [Segment(head, None), *masked, Segment(")", None)]
    return [Segment(head, None), Segment(inner, removed), Segment(")", None)]


def clean_history(
    steps: Sequence[Step], rules: Collection[CleaningRule] = DEFAULT_RULES, *, question: str | None = None
) -> CleanedHistory:
    """Apply the switched-on rules to the history root -> current node.

    The last step is the current one (its observation survives LAST_OBSERVATION_ONLY).
    MASK_RESTATEMENTS needs the `question` (ValueError without it); the other rules ignore it.
    """
    rules = frozenset(CleaningRule(r) for r in rules)
    stems = None
    if CleaningRule.MASK_RESTATEMENTS in rules:
        if question is None:
            raise ValueError("the mask_restatements cleaning rule needs the question: pass question=")
        stems = content_stems(question)
    pieces: list[Segment] = []
    last = len(steps) - 1
    for i, step in enumerate(steps):
        newline = "\n" if i < last else ""  # the separator between steps belongs to the step
        thought_rule = CleaningRule.DROP_THOUGHTS if CleaningRule.DROP_THOUGHTS in rules else None
        pieces.append(Segment(f"Thought: {step.thought}\n", thought_rule))
        pieces.append(Segment("Action: ", None))
        pieces.extend(_action_segments(step, rules, stems))
        pieces.append(Segment("\n", None))
        obs_rule = (
            CleaningRule.LAST_OBSERVATION_ONLY
            if i < last and CleaningRule.LAST_OBSERVATION_ONLY in rules
            else None
        )
        pieces.append(Segment(f"Observation: {step.observation.text}{newline}", obs_rule))
    segments = _merge(pieces)
    return CleanedHistory(
        text="".join(s.text if s.removed_by is None else s.replacement for s in segments),
        segments=segments,
    )


def _merge(pieces: list[Segment]) -> tuple[Segment, ...]:
    """Join neighbours with the same tag and drop empty pieces (replacements join too)."""
    out: list[Segment] = []
    for seg in pieces:
        if not seg.text:
            continue
        if out and out[-1].removed_by is seg.removed_by:
            last = out[-1]
            out[-1] = Segment(last.text + seg.text, seg.removed_by, last.replacement + seg.replacement)
        else:
            out.append(seg)
    return tuple(out)
