"""Turn a model's text into a typed `kb.actions.Action`, or a one-line ActionParseError.

Accepted input (ReAct style, as the policy model writes it):

    Thought: the film's director is needed.
    Action: SearchGraphPatterns('SELECT ?e WHERE { ?e ns:type.object.name "X"@en }', semantic="directed by")
    Observation: (hallucinated by the model; ignored)

- an optional `Thought: ...` part and an optional `Action:` label; backticks around the call;
- string arguments in '...', "...", '''...''' or \"\"\"...\"\"\", with backslash escapes
  (\\\\, \\', \\", \\n, \\t, \\r; any other backslash is kept as written, so SPARQL regex
  escapes survive), raw newlines allowed inside;
- keyword arguments (`sparql=`, `semantic=`, `name=`, `query=`...) and a trailing comma;
- anything after the closing parenthesis is ignored.

A single- or double-quoted string ends only at a quote followed by `,` or `)`, so an
unescaped apostrophe inside ("Lou's") does not cut the argument short. `Done` takes no
arguments; any given are ignored. This is a hand-written scanner: model text is never
evaluated. It knows nothing of knowledge bases or models.
"""

from __future__ import annotations

import re

from kb.actions import TOOL_NAMES, Action, ActionParseError, ToolName

_TOOL_BY_LOWER = {name.lower(): name for name in TOOL_NAMES}
# Keyword names accepted for each tool's arguments: (main argument, semantic).
_MAIN_KEYWORDS: dict[ToolName, frozenset[str]] = {
    "SearchNodes": frozenset({"name", "query", "text", "entity", "entity_name"}),
    "SearchGraphPatterns": frozenset({"sparql", "query"}),
    "ExecuteSPARQL": frozenset({"sparql", "query"}),
    "SearchTypes": frozenset({"query", "name", "text", "type"}),
    "Done": frozenset(),
}
_SEMANTIC_KEYWORDS = frozenset({"semantic", "semantics"})
_SIMPLE_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}

_DIRECT_CALL = re.compile(r"\s*`*\s*(" + "|".join(TOOL_NAMES) + r")\s*\(")
_ACTION_LABEL_LINE = re.compile(r"^[ \t*#>-]*Action\s*\d*\s*:", re.IGNORECASE | re.MULTILINE)
_ACTION_LABEL_ANY = re.compile(r"Action\s*\d*\s*:", re.IGNORECASE)
_ANY_TOOL_CALL = re.compile(r"\b(" + "|".join(TOOL_NAMES) + r")\s*\(", re.IGNORECASE)
_THOUGHT_LABEL = re.compile(r"^\s*Thought\s*\d*\s*:\s*", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NON_SPACE = re.compile(r"\S")
# The longest policy output parsed (characters): a step is a thought and one call whose
# query is at most kb.sparql.MAX_QUERY_CHARS; anything longer is not a step.
MAX_ACTION_CHARS = 20_000


def _locate(text: str) -> tuple[int, int]:
    """(end of the thought part, start of the call) in `text`."""
    if _DIRECT_CALL.match(text):
        return 0, 0
    label = _ACTION_LABEL_LINE.search(text) or _ACTION_LABEL_ANY.search(text)
    if label:
        return label.start(), label.end()
    call = _ANY_TOOL_CALL.search(text)
    if call:
        return call.start(), call.start()
    return 0, 0


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def string(self) -> str:
        """Read one quoted string starting at the current position."""
        text, start = self.text, self.pos
        quote = text[start]
        triple = text.startswith(quote * 3, start)
        self.pos += 3 if triple else 1
        out: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\\" and self.pos + 1 < len(text):
                nxt = text[self.pos + 1]
                out.append(_SIMPLE_ESCAPES.get(nxt, "\\" + nxt))
                self.pos += 2
                continue
            if triple and text.startswith(quote * 3, self.pos):
                self.pos += 3
                return "".join(out)
            if not triple and ch == quote and self._closes_here():
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise ActionParseError(f"unterminated string starting at {text[start : start + 30]!r}")

    def _closes_here(self) -> bool:
        # A lone quote closes the string only where an argument may end. A search, not
        # a slice of the rest: slicing made text with many quotes quadratic.
        after = _NON_SPACE.search(self.text, self.pos + 1)
        return after is None or after.group() in (",", ")")


def _parse_args(scan: _Scanner, tool: str) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    keywords: dict[str, str] = {}
    while True:
        scan.skip_ws()
        ch = scan.peek()
        if ch == ")":
            scan.pos += 1
            return positional, keywords
        if not ch:
            raise ActionParseError(f"{tool}( is never closed with ')'")
        keyword = None
        ident = _IDENT.match(scan.text, scan.pos)
        if ident:
            keyword = ident.group()
            scan.pos = ident.end()
            scan.skip_ws()
            if scan.peek() != "=":
                raise ActionParseError(f"{tool}: argument {keyword!r} must be a quoted string")
            scan.pos += 1
            scan.skip_ws()
            ch = scan.peek()
        if ch not in ("'", '"'):
            found = scan.text[scan.pos : scan.pos + 20]
            raise ActionParseError(f"{tool}: expected a quoted string argument, found {found!r}")
        value = scan.string()
        if keyword is None:
            if keywords:
                raise ActionParseError(f"{tool}: positional argument after a keyword argument")
            positional.append(value)
        elif keyword in keywords:
            raise ActionParseError(f"{tool}: argument {keyword!r} given twice")
        else:
            keywords[keyword] = value
        scan.skip_ws()
        if scan.peek() == ",":
            scan.pos += 1
        elif not scan.peek():
            raise ActionParseError(f"{tool}( is never closed with ')'")
        elif scan.peek() != ")":
            found = scan.text[scan.pos : scan.pos + 20]
            raise ActionParseError(f"{tool}: expected ',' or ')' after an argument, found {found!r}")


def _build(tool: ToolName, positional: list[str], keywords: dict[str, str]) -> Action:
    if tool == "Done":
        return Action("Done")
    takes_semantic = tool == "SearchGraphPatterns"
    main: str | None = positional[0] if positional else None
    semantic: str | None = positional[1] if len(positional) > 1 else None
    if len(positional) > (2 if takes_semantic else 1):
        raise ActionParseError(f"{tool}: too many arguments ({len(positional)})")
    for key, value in keywords.items():
        if key in _MAIN_KEYWORDS[tool]:
            if main is not None:
                raise ActionParseError(f"{tool}: argument {key!r} given twice")
            main = value
        elif takes_semantic and key in _SEMANTIC_KEYWORDS:
            if semantic is not None:
                raise ActionParseError(f"{tool}: argument {key!r} given twice")
            semantic = value
        else:
            raise ActionParseError(f"{tool}: unknown argument {key!r}")
    if main is None:
        raise ActionParseError(f"{tool}: missing its argument")
    return Action(tool, main, semantic or "")


def parse_action(text: str) -> Action:
    """Parse the first tool call in `text`. Raises ActionParseError (one line)."""
    if not text or not text.strip():
        raise ActionParseError("empty action")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionParseError(
            f"action text too long ({len(text):,} characters; at most {MAX_ACTION_CHARS:,})"
        )
    _, start = _locate(text)
    scan = _Scanner(text)
    scan.pos = start
    while scan.peek() and (scan.peek() in "`*" or scan.peek().isspace()):  # markdown around the call
        scan.pos += 1
    ident = _IDENT.match(text, scan.pos)
    if not ident:
        raise ActionParseError(f"expected a tool call, found {text[scan.pos : scan.pos + 30]!r}")
    tool = _TOOL_BY_LOWER.get(ident.group().lower())
    if tool is None and text[ident.end() :].lstrip().startswith(":"):
        raise ActionParseError(f"no tool call found; expected 'Action: <Tool>(...)' after {ident.group()}:")
    if tool is None:
        raise ActionParseError(f"unknown tool {ident.group()!r}; expected one of {', '.join(TOOL_NAMES)}")
    scan.pos = ident.end()
    scan.skip_ws()
    if scan.peek() != "(":
        if tool == "Done":
            return Action("Done")
        raise ActionParseError(f"expected '(' after {tool}")
    scan.pos += 1
    positional, keywords = _parse_args(scan, tool)
    return _build(tool, positional, keywords)


def parse_thought_action(text: str) -> tuple[str, Action]:
    """Split a ReAct completion `Thought: ...\\nAction: ...` into (thought, action).

    The thought is "" when missing. Raises ActionParseError when the action part does
    not parse.
    """
    if len(text or "") > MAX_ACTION_CHARS:
        raise ActionParseError(
            f"action text too long ({len(text):,} characters; at most {MAX_ACTION_CHARS:,})"
        )
    thought_end, _ = _locate(text or "")
    thought = _THOUGHT_LABEL.sub("", (text or "")[:thought_end], count=1).strip()
    return thought, parse_action(text)
