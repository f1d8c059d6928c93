"""Typed agent actions: the five tools the agent may call, and their rendering.

This module is the contract between the policy (which writes actions) and the tool
layer (which runs them). It knows nothing of any store or model. Parsing model text
into an `Action` lives in `kb.action_parser`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

ToolName = Literal["SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes", "Done"]
TOOL_NAMES: tuple[ToolName, ...] = get_args(ToolName)


class ActionParseError(ValueError):
    """Model text that is not one well-formed tool call; the message is one clear line."""


def _quote(text: str) -> str:
    # Double quotes with backslash escapes: the form the parser reads back exactly.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass(frozen=True)
class Action:
    """One tool call.

    `argument` is the single positional argument (entity name, SPARQL text or type
    query; empty for Done). `semantic` is used by SearchGraphPatterns only.
    """

    tool: ToolName
    argument: str = ""
    semantic: str = ""

    def __post_init__(self) -> None:
        if self.tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {self.tool!r}; expected one of {', '.join(TOOL_NAMES)}")

    def render(self) -> str:
        """The canonical text form, e.g. `SearchGraphPatterns("SELECT ?e ...", semantic="born")`."""
        if self.tool == "Done":
            return "Done()"
        if self.tool == "SearchGraphPatterns" and self.semantic:
            return f"{self.tool}({_quote(self.argument)}, semantic={_quote(self.semantic)})"
        return f"{self.tool}({_quote(self.argument)})"
