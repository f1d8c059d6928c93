"""A cleaned history cut into pieces of evidence, and the history with one piece removed.

The IG lens's occlusion view removes each piece in turn and re-scores the node
(`mcts.agents.ig_probe`). A piece is what a reader would call one item of evidence:

- each action's arguments, the query and the `semantic="..."` phrase of a
  SearchGraphPatterns call separately (kinds "argument" and "semantic");
- each observation line (kind "observation"), except a result list `[...]`, whose values
  are pieces of their own (kind "value"), with its "(N distinct results ...)" note;
- any other line (a thought, text no rule recognises): its text after the label.

Spans are character offsets [start, end) into the text as given (Python string indices,
so a character outside the BMP counts once). Pieces never overlap, come in text order and
hold no labels ("Action: ", "Observation: ", `semantic=`) or separators. Past
`max_segments`, neighbours are merged into pieces of kind "group", first within one action
or observation, each label naming what it holds.

`without_segment` removes a piece with the separator that goes with it, so the text
stays well-formed: `SearchGraphPatterns("q", semantic="s")` loses `, semantic="s"`, a list
`["a", "b"]` loses `"a", `, an observation line its newline, and an observation left
empty its "Observation: " line. Knows nothing of models or scoring.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
import re
from dataclasses import dataclass

DEFAULT_MAX_SEGMENTS = 40
_LABELS = ("Action: ", "Observation: ", "Thought: ")
_CALL = re.compile(r"(SearchNodes|SearchGraphPatterns|ExecuteSPARQL|SearchTypes|Done)\((.*)\)\s*$")
_SEMANTIC = "semantic="
_SNIPPET = 36  # characters of text quoted in a label
_PLURAL = {"action": "arguments", "observation": "observations", "thought": "thoughts", "line": "other lines"}


@dataclass(frozen=True)
class HistorySegment:
    start: int  # character span [start, end) in the cleaned history
    end: int
    kind: str  # "argument" | "semantic" | "observation" | "value" | "group"
    label: str  # short human text, e.g. 'semantic phrase "born in"', 'value "London"'


@dataclass(frozen=True)
class _Atom:
    """One smallest piece, with where it sits (for grouping, labels and tidy removal)."""

    segment: HistorySegment
    role: str  # "arg" (inside a call's parentheses), "value" (inside a list), "line"
    container: int  # which action line, observation or other line holds it
    run: int  # pieces removable together: one call's arguments, one list, one observation's lines
    index: int  # 1-based position among its container's pieces of the same role
    box: tuple[int, int] = (0, 0)  # a value's list: offsets of its "[" and its "]"


@dataclass(frozen=True)
class _Container:
    what: str  # "action" | "observation" | "thought" | "line"
    step: int


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def _scan_quoted(text: str, i: int) -> int:
    """Index just past the double-quoted string starting at text[i] (backslash escapes), or -1."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == '"':
            return j + 1
        else:
            j += 1
    return -1


def _unquote(text: str) -> str:
    """The string a quoted literal holds (its text as written when it does not parse)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip('"')
    return value if isinstance(value, str) else text


def _value_label(item: str) -> str:
    """'value "London"' for a name or a typed literal (its type left out), else the item as written."""
    if item.startswith('"'):
        end = _scan_quoted(item, 0)
        if end > 0:
            return f'value "{_snippet(_unquote(item[:end]))}"'
    return f"value {_snippet(item)}"


# ---------------------------------------------------------------- parsing one line


def _call_arguments(line: str, at: int) -> list[tuple[int, int, bool]] | None:
    """(start, end, is_semantic) of each quoted argument of the call `line[at:]`, or None."""
    match = _CALL.match(line, at)
    if match is None:
        return None
    i, stop = match.start(2), match.end(2)
    out: list[tuple[int, int, bool]] = []
    while i < stop:
        semantic = line.startswith(_SEMANTIC, i)
        i += len(_SEMANTIC) if semantic else 0
        if i >= stop or line[i] != '"':
            return None
        end = _scan_quoted(line, i)
        if end < 0 or end > stop:
            return None
        out.append((i, end, semantic))
        i = end
        if line.startswith(", ", i):
            i += 2
        elif i != stop:
            return None
    return out


def _list_items(line: str, at: int) -> tuple[list[tuple[int, int]], int] | None:
    """Spans of the items of the list `[...]` starting at line[at], and the index past `]`.

    Items split at top-level ", " outside quotes and parentheses; a `...` item (the
    tool's truncation mark) is no value. None when the list does not close.
    """
    items: list[tuple[int, int]] = []
    i, depth, start = at + 1, 0, at + 1
    while i < len(line):
        ch = line[i]
        if ch == '"':
            i = _scan_quoted(line, i)
            if i < 0:
                return None
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")}" or (ch == "]" and depth > 0):
            depth -= 1
        elif depth == 0 and (ch == "]" or line.startswith(", ", i)):
            text = line[start:i].strip()
            if text and text != "...":
                lead = len(line[start:i]) - len(line[start:i].lstrip())
                items.append((start + lead, start + lead + len(text)))
            if ch == "]":
                return items, i + 1
            i += 2
            start = i
            continue
        i += 1
    return None


# ---------------------------------------------------------------- the atoms of a history


class _Parser:
    """Walks the lines of a history once, collecting atoms and their containers."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.atoms: list[_Atom] = []
        self.containers: list[_Container] = []
        self.runs = 0
        self.actions = 0
        self.observation: int | None = None  # container of the observation being read
        self.observation_run = 0  # the run its lines share
        self.observation_lines = 0  # its non-blank lines read so far

    def new_run(self) -> int:
        self.runs += 1
        return self.runs

    def container(self, what: str, step: int) -> int:
        self.containers.append(_Container(what, step))
        return len(self.containers) - 1

    def add(
        self,
        span: tuple[int, int],
        kind: str,
        label: str,
        role: str,
        run: int,
        index: int,
        box: tuple[int, int] = (0, 0),
    ) -> None:
        where = len(self.containers) - 1 if self.observation is None else self.observation
        self.atoms.append(_Atom(HistorySegment(span[0], span[1], kind, label), role, where, run, index, box))

    def parse(self) -> list[_Atom]:
        pos = 0
        for line in self.text.split("\n"):
            self.line(line, pos)
            pos += len(line) + 1
        return self.atoms

    def line(self, line: str, pos: int) -> None:
        if line.startswith("Action: "):
            self.actions += 1
            self.observation = None
            self.action(line, pos, len("Action: "))
        elif line.startswith("Observation: "):
            self.observation = self.container("observation", max(self.actions, 1))
            self.observation_run = self.new_run()
            self.observation_lines = 0
            self.body(line, pos, len("Observation: "))
        elif line.startswith("Thought: "):
            self.observation = None
            self.free(line, pos, len("Thought: "), "thought", self.actions + 1)
        elif self.observation is not None:
            self.body(line, pos, 0)
        else:
            self.free(line, pos, 0, "line", max(self.actions, 1))

    def free(self, line: str, pos: int, at: int, what: str, step: int) -> None:
        """A line no tool wrote (a thought, other text): its text after the label is one piece."""
        start, end = _strip_span(line, at, len(line))
        if start < end:
            self.container(what, step)
            label = f"thought of step {step}" if what == "thought" else f'text "{_snippet(line[start:end])}"'
            self.add((pos + start, pos + end), "observation", label, "line", self.new_run(), 1)

    def action(self, line: str, pos: int, at: int) -> None:
        step = self.actions
        self.container("action", step)
        args = _call_arguments(line, at)
        if args is None:  # free text on an Action line (an unparsed completion): one piece
            start, end = _strip_span(line, at, len(line))
            if start < end:
                self.add(
                    (pos + start, pos + end),
                    "argument",
                    f"action text of step {step}",
                    "line",
                    self.new_run(),
                    1,
                )
            return
        tool = line[at : line.index("(", at)]
        run = self.new_run()
        for n, (start, end, semantic) in enumerate(args, 1):
            value = _snippet(_unquote(line[start:end]))
            if semantic:
                kind, label = "semantic", f'semantic phrase "{value}" (step {step})'
            elif tool in ("SearchGraphPatterns", "ExecuteSPARQL"):
                kind, label = "argument", f"SPARQL argument of step {step}"
            else:
                kind, label = "argument", f'{tool} argument "{value}" (step {step})'
            self.add((pos + start, pos + end), kind, label, "arg", run, n)

    def body(self, line: str, pos: int, at: int) -> None:
        """One line of an observation: a result list (its values, its note) or one line piece."""
        start, end = _strip_span(line, at, len(line))
        if start == end:
            return
        self.observation_lines += 1
        lines = self.observation_lines
        parsed = _list_items(line, start) if line[start] == "[" else None
        if parsed is None or not parsed[0]:
            self.add((pos + start, pos + end), "observation", "", "line", self.observation_run, lines)
            return
        items, after = parsed
        run = self.new_run()  # one list: its values go with their commas
        box = (pos + start, pos + after - 1)
        for n, (a, b) in enumerate(items, 1):
            self.add((pos + a, pos + b), "value", _value_label(line[a:b]), "value", run, n, box)
        a, b = _strip_span(line, after, len(line))
        if a < b:
            self.add((pos + a, pos + b), "observation", "", "note", self.new_run(), lines)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) without leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _observation_name(containers: tuple[_Container, ...], which: int) -> str:
    if sum(1 for c in containers if c.what == "observation") == 1:
        return "the observation"
    return f"the observation of step {containers[which].step}"


@functools.lru_cache(maxsize=8)
def _parse(text: str) -> tuple[tuple[_Atom, ...], tuple[_Container, ...]]:
    """The atoms of a history, labels filled in (cached: occlusion reads one text many times)."""
    parser = _Parser(text)
    atoms = parser.parse()
    containers = tuple(parser.containers)
    out = []
    for atom in atoms:
        seg = atom.segment
        if not seg.label:  # observation lines and notes name their observation
            where = _observation_name(containers, atom.container)
            if atom.role == "note":
                label = f"result count of {where}"
            else:
                label = f'line {atom.index} of {where}: "{_snippet(text[seg.start : seg.end])}"'
            atom = _Atom(
                HistorySegment(seg.start, seg.end, seg.kind, label),
                atom.role,
                atom.container,
                atom.run,
                atom.index,
            )
        out.append(atom)
    return tuple(out), containers


# ---------------------------------------------------------------- grouping


def _split(items: list, parts: int) -> list[list]:
    """`items` in `parts` contiguous runs of near-equal length (the longer ones first)."""
    size, extra = divmod(len(items), parts)
    out, i = [], 0
    for p in range(parts):
        n = size + (1 if p < extra else 0)
        out.append(items[i : i + n])
        i += n
    return [o for o in out if o]


def _allot(counts: list[int], total: int) -> list[int]:
    """Pieces per container: one each, the rest to whichever has the largest pieces."""
    shares = [1] * len(counts)
    heap = [(-c, i) for i, c in enumerate(counts) if c > 1]
    heapq.heapify(heap)
    left = total - len(counts)
    while left > 0 and heap:
        _, i = heapq.heappop(heap)
        shares[i] += 1
        left -= 1
        if shares[i] < counts[i]:
            heapq.heappush(heap, (-math.ceil(counts[i] / shares[i]), i))
    return shares


def _range(name: str, first: int, last: int) -> str:
    return f"{name} {first}" if first == last else f"{name}s {first}-{last}"


def _group_label(chunk: list[_Atom], containers: tuple[_Container, ...]) -> str:
    where = {a.container for a in chunk}
    if len(where) > 1:
        kinds = list(dict.fromkeys(_PLURAL[containers[c].what] for c in sorted(where)))
        steps = sorted({containers[c].step for c in where})
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        what = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"
        return f"{what} of {span}"
    container = next(iter(where))
    if containers[container].what != "observation":  # one action line: its arguments
        return f"arguments of step {containers[container].step}"
    parts = []
    values = [a.index for a in chunk if a.role == "value"]
    lines = [a.index for a in chunk if a.role == "line"]
    if values:
        parts.append(_range("value", values[0], values[-1]))
    if lines:
        parts.append(_range("line", lines[0], lines[-1]))
    if any(a.role == "note" for a in chunk):
        parts.append("the result count")
    return f"{' and '.join(parts)} of {_observation_name(containers, container)}"


def _merge(chunk: list[_Atom], containers: tuple[_Container, ...]) -> HistorySegment:
    if len(chunk) == 1:
        return chunk[0].segment
    return HistorySegment(
        chunk[0].segment.start, chunk[-1].segment.end, "group", _group_label(chunk, containers)
    )


def history_segments(cleaned_history: str, max_segments: int = DEFAULT_MAX_SEGMENTS) -> list[HistorySegment]:
    """The pieces of evidence of a cleaned history, in text order, at most `max_segments`."""
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    atoms, containers = _parse(cleaned_history)
    if len(atoms) <= max_segments:
        return [a.segment for a in atoms]
    blocks: list[list[_Atom]] = []
    for atom in atoms:  # the atoms of one container are neighbours
        if blocks and blocks[-1][0].container == atom.container:
            blocks[-1].append(atom)
        else:
            blocks.append([atom])
    if len(blocks) <= max_segments:  # merge only inside actions and observations
        shares = _allot([len(b) for b in blocks], max_segments)
        chunks = [c for b, g in zip(blocks, shares, strict=True) for c in _split(b, g)]
    else:  # more containers than pieces: whole neighbouring containers merge
        chunks = [[a for b in part for a in b] for part in _split(blocks, max_segments)]
    return [_merge(c, containers) for c in chunks]


# ---------------------------------------------------------------- removing a piece


def _units(atoms: list[_Atom]) -> list[list[_Atom]]:
    """Neighbouring atoms of one run (one call's arguments, one list, one observation's lines)."""
    units: list[list[_Atom]] = []
    for atom in atoms:
        if units and units[-1][-1].run == atom.run:
            units[-1].append(atom)
        else:
            units.append([atom])
    return units


def _remove_from_line(text: str, start: int, end: int) -> str:
    """`text` without [start, end); a line left with nothing but its label goes whole."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    head = text[line_start:start].strip()
    if text[end:line_end].strip() or (head and f"{head} " not in _LABELS):
        return text[:start] + text[end:]  # other text stays on the line
    if head == "Observation:" and line_end < len(text) and not text.startswith(_LABELS, line_end + 1):
        return text[:start] + text[line_end + 1 :]  # the observation's next line moves up
    if line_end < len(text):
        return text[:line_start] + text[line_end + 1 :]
    return text[: max(line_start - 1, 0)]


def _remove(text: str, unit: list[_Atom]) -> str:
    start, end = unit[0].segment.start, unit[-1].segment.end
    role = unit[0].role
    if role in ("line", "note"):
        if role == "note" and text[start - 1 : start] == " ":
            start -= 1
        return _remove_from_line(text, start, end)
    if role == "value":
        open_, close = unit[0].box
        rest = (text[open_ + 1 : start] + text[end:close]).replace(",", " ").split()
        if rest in ([], ["..."]):
            # The list is empty now: it goes, and its line with it when nothing else is left.
            return _remove_from_line(text, open_, close + 1 + (text[close + 1 : close + 2] == " "))
    if role == "arg" and text.endswith(_SEMANTIC, 0, start):
        start -= len(_SEMANTIC)
    if text.endswith(", ", 0, start):
        start -= 2
    elif text.startswith(", ", end):
        end += 2
    return text[:start] + text[end:]


def without_segment(history: str, segment: HistorySegment) -> str:
    """`history` without the piece(s) inside `segment`, and the separators that go with them."""
    if not 0 <= segment.start < segment.end <= len(history):
        raise ValueError(
            f"segment [{segment.start}, {segment.end}) is not inside a history of {len(history)} characters"
        )
    atoms, _ = _parse(history)
    inside = [a for a in atoms if segment.start <= a.segment.start and a.segment.end <= segment.end]
    if not inside:
        raise ValueError(
            f"no piece of this history lies in [{segment.start}, {segment.end}): a segment of another text?"
        )
    text = history
    for unit in reversed(_units(inside)):  # back to front: earlier offsets stay valid
        text = _remove(text, unit)
    return text
