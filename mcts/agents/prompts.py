"""The agent's prompt: tool description, few-shot demonstrations, question and history.

Both policies read the same prompt. It is built as chat messages (system: tools and
demonstrations; user: `Q: ...`; then one assistant turn `Thought/Action` and one user
turn `Observation` per step) and rendered with the model's chat template when it has
one, else as plain text in the same order. The prompt always ends where the next
`Thought:` begins, so a candidate step is the continuation `Thought: ...\\nAction: ...`.

The tool description and the demonstrations follow the KB's vocabulary (`PromptConfig.
vocabulary`: Freebase ids and relation names, or Wikidata items, claims and statements).
The demonstrations are data (`examples/fewshot_freebase.md`, `examples/fewshot_demo.md`,
`examples/fewshot_wikidata.md`, written for this project): blocks separated by a line
`---`, each starting at a line that begins `Q: `. Long observations are cut (older
steps more than the latest one) to keep the prompt within a small model's budget; the
cut is marked with `...`.

This module knows nothing of tools being run, scoring or search; it reads `Step`s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from mcts.search.steps import Step

FewshotName = Literal["freebase", "demo", "wikidata", "none"]
FEWSHOT_NAMES: tuple[FewshotName, ...] = ("freebase", "demo", "wikidata", "none")
Vocabulary = Literal["freebase", "wikidata"]  # a `kb.flavour.Flavour` name
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

_TOOL_LINES = """\
You answer a question over a knowledge base in the shape of {shape} by calling tools, one call per step.
Each step is one line `Thought: ...` (what you do and why) and one line `Action: ...` (a single tool call).
The knowledge base then replies with `Observation: ...`.

Tools:
- SearchNodes("name"): entities whose name matches, each with a short description to tell homonyms apart.
- SearchGraphPatterns("SELECT ?e WHERE {{ ... }}", semantic="..."): the relations around the entities bound to ?e,
  the ones closest in meaning to `semantic` first, each with a sample value. {path_note}
- ExecuteSPARQL("SELECT ..."): runs a SPARQL query and shows its results by name. {naming} the answer variable is ?x.
- SearchTypes("text"): entity types whose name matches the text.
- Done(): stop; the answer is the result of the last ExecuteSPARQL.
"""

TOOL_DESCRIPTIONS: dict[Vocabulary, str] = {
    "freebase": _TOOL_LINES.format(
        shape="Freebase",
        path_note="`p1 -> p2` passes through an\n  unnamed intermediate node (CVT) and counts as one relation.",
        naming="Write entities as ns:m.xxx\n  and relations as ns:domain.type.property;",
    ),
    "wikidata": _TOOL_LINES.format(
        shape="Wikidata",
        path_note="`p:Pn -> pq:Pm` goes through a\n  statement to its qualifier (e.g. a start time) and counts as one relation.",
        naming="Write items as wd:Qn, direct\n  claims as wdt:Pn, statements as p:Pn with ps:Pn (value) and pq:Pn (qualifier);",
    ),
}
TOOL_DESCRIPTION = TOOL_DESCRIPTIONS["freebase"]

# Characters of an observation kept in the prompt. One limit for every step, so the
# prompt of a step extends its parent's prompt exactly (a scorer reuses that prefix).
OBSERVATION_CHARS = 800


@dataclass(frozen=True)
class PromptConfig:
    fewshot: FewshotName = "freebase"
    max_demos: int = 2  # demonstrations shown (the guided policy uses 1 to keep the prompt short)
    use_chat_template: bool = True  # only where the tokenizer has one
    vocabulary: Vocabulary = "freebase"  # which tool description the prompt starts with

    @classmethod
    def for_flavour(cls, flavour_name: str, *, max_demos: int = 2) -> PromptConfig:
        """The tool description and demonstrations written for a KB flavour's vocabulary."""
        vocabulary: Vocabulary = "wikidata" if flavour_name == "wikidata" else "freebase"
        return cls(fewshot=vocabulary, max_demos=max_demos, vocabulary=vocabulary)


@lru_cache(maxsize=8)
def load_demos(name: FewshotName) -> tuple[str, ...]:
    """The demonstration blocks of one few-shot file (text from each `Q:` line on)."""
    if name == "none":
        return ()
    path = EXAMPLES_DIR / f"fewshot_{name}.md"
    text = path.read_text(encoding="utf-8")
    blocks: list[str] = []
    for raw in text.split("\n---\n"):
        # A block starts at a line beginning "Q: " (a file's header may mention `Q:` in prose).
        start = re.search(r"^Q: ", raw, re.M)
        if start is not None:
            blocks.append(raw[start.start() :].strip())
    if not blocks:
        raise ValueError(f"{path} holds no demonstration (a block starting with 'Q:')")
    return tuple(blocks)


def system_text(config: PromptConfig) -> str:
    tools = TOOL_DESCRIPTIONS[config.vocabulary]
    demos = load_demos(config.fewshot)[: config.max_demos]
    if not demos:
        return tools
    shown = "\n\n".join(f"Example {i}:\n{d}" for i, d in enumerate(demos, 1))
    return f"{tools}\n{shown}\n"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 3)].rstrip() + "..."


def step_turns(step: Step) -> tuple[str, str]:
    """(assistant text, observation text) of one step in the prompt."""
    action = step.action.render() if step.action is not None else step.raw_text.strip()
    return (
        f"Thought: {step.thought}\nAction: {action}",
        f"Observation: {clip(step.observation.text, OBSERVATION_CHARS)}",
    )


def messages(question: str, history: Sequence[Step], config: PromptConfig) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": system_text(config)}, {"role": "user", "content": f"Q: {question}"}]
    for step in history:
        said, seen = step_turns(step)
        msgs.append({"role": "assistant", "content": said})
        msgs.append({"role": "user", "content": seen})
    return msgs


def render_prompt(tokenizer: Any, question: str, history: Sequence[Step], config: PromptConfig) -> str:
    """The prompt text; the model continues it with `Thought: ...\\nAction: ...`."""
    return "".join(prompt_segments(tokenizer, question, history, config))


def prompt_segments(
    tokenizer: Any, question: str, history: Sequence[Step], config: PromptConfig
) -> list[str]:
    """The prompt cut after each message (their texts join to `render_prompt`).

    A scorer tokenises segments separately, so the prompt of a step starts with exactly
    the tokens of its parent's prompt and the parent's key/value cache can be reused.
    """
    msgs = messages(question, history, config)
    if not (config.use_chat_template and getattr(tokenizer, "chat_template", None)):
        return [m["content"].rstrip() + "\n" for m in msgs]
    segments: list[str] = []
    done = ""
    for i in range(1, len(msgs) + 1):
        text = tokenizer.apply_chat_template(msgs[:i], tokenize=False, add_generation_prompt=i == len(msgs))
        if not text.startswith(done):  # a template that rewrites earlier turns: no segments
            return [tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)]
        segments.append(text[len(done) :])
        done = text
    return segments


def candidate_text(thought: str, action_text: str) -> str:
    """A step as the model writes it (what the guided policy scores)."""
    return f"Thought: {thought}\nAction: {action_text}"
