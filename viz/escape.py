"""The one place that makes outside text safe where it is shown (docs/security.md).

Every string that comes from a trace, a model or a KB (questions, thoughts, actions,
observations, answers, SPARQL, stop reasons, tool names, model ids, validity...) goes
through one of these before it reaches a renderer, field by field, whatever its type
says (a record read from a trace may hold anything the schema let through, and a live
record anything a model wrote). One function per rendering context:

- `md(x)`: inline Markdown (Gradio's Markdown renders raw HTML: `<form>` and
  `<input type=password>` survive its sanitiser) - HTML-escaped, Markdown marks escaped,
  whitespace collapsed to one line;
- `fence(x, lang)`: a fenced code block no backtick run inside can close;
- `html_text(x)`: text inside HTML we write (`gr.HTML` panels), quotes included, so it is
  safe in attribute values too;
- `plotly(x)`: Plotly hover text and labels, a pseudo-HTML of its own (`<b>`, `<br>`,
  `<a href>`);
- `cell(x)`: a `gr.Dataframe` "str" cell, which Gradio shows as text: one line, no escaping
  (an entity would show literally);
- `num(x, spec)`: a number formatted with `spec`, or, if it is not one, its text via `md`.

Knows nothing of Gradio or of the records themselves.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

_MD_MARKS = "\\`*_[]#|~!"  # emphasis, code, links/images, headings, tables, strikethrough
_LANG = re.compile(r"[a-z0-9+-]{0,20}")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def md(value: Any) -> str:
    """`value` as inline Markdown text: no element, no emphasis, one line."""
    text = html.escape(" ".join(_str(value).split()), quote=True)
    for ch in _MD_MARKS:
        text = text.replace(ch, "\\" + ch)
    # html.escape writes ' as &#x27;: its "#" must stay bare or the page shows "&#x27;" as text.
    # No other "&\#" can occur: every "&" of the input became "&amp;".
    return text.replace("&\\#", "&#")


def _backtick_runs(line: str) -> list[str]:
    return re.findall(r"`+", line)


def fence(value: Any, lang: str = "") -> str:
    """`value` as a fenced code block (Markdown shows it verbatim, escaped)."""
    text = _str(value)
    longest = max((len(run) for run in _backtick_runs(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    lang = lang if _LANG.fullmatch(lang) else ""
    return f"{ticks}{lang}\n{text}\n{ticks}\n"


def html_text(value: Any) -> str:
    """`value` as text inside HTML (element content or a quoted attribute value)."""
    return html.escape(_str(value), quote=True)


def plotly(value: Any) -> str:
    """`value` as Plotly hover or label text (its `<b>`/`<br>`/`<a>` tags become text)."""
    return html.escape(_str(value), quote=False)


def cell(value: Any) -> str:
    """`value` as a Dataframe text cell: one line (Gradio escapes str cells itself)."""
    return " ".join(_str(value).split())


def num(value: Any, spec: str = "") -> str:
    """`value` formatted with `spec` if it is a number, else its text, Markdown-safe."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return md(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "–"
    try:
        return format(value, spec)
    except ValueError:
        return md(value)
