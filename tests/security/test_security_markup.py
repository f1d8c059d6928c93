"""No string of a trace, a model or a KB reaches a page as markup.

Fast checks of the rendered strings: a real trace with markup in every free-text field
(tests/markup_trace.py) is loaded and every panel, hover card and table is rendered; and
records built directly (as a live run or a future reader could hand them over) carry
markup even in the fields the schema pins (stop reason, validity, cost figures, tool
names). The page itself in Chromium is tests/app/test_browser_markup.py.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcts.search.cost import CostSummary
from mcts.search.trace import load_trace
from tests.markup_trace import MARK, write_markup_trace
from viz import (
    answer_markdown,
    build_figure,
    cost_markdown,
    history_html,
    hover_text,
    node_detail_markdown,
    node_table,
    vote_rows,
)
from viz.escape import cell, fence, html_text, md, num, plotly

# Any tag we put there, opened (escaped text shows as &lt;form, which is fine).
INJECTED = re.compile(r"<\s*(form|input|b)\b[^>]*data-inj", re.I)


# A fenced code block shows its text verbatim (Markdown escapes it): not markup.
FENCED = re.compile(r"^(`{3,})[^\n]*\n.*?\n\1$", re.M | re.S)


def _no_markup(text: str, where: str) -> None:
    text = FENCED.sub("", text)
    assert not INJECTED.search(text), f"{where}: {text[:200]}"
    assert "<form" not in text and "<input" not in text, where


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_trace(write_markup_trace(tmp_path_factory.mktemp("markup")))


def test_the_markup_trace_loads_and_carries_markup(trace) -> None:
    assert trace.question.startswith(MARK)
    assert trace.result is not None and trace.result.answer[0].name.startswith(MARK)


def test_every_panel_of_a_markup_trace_renders_it_as_text(trace) -> None:
    tree = trace.to_tree()
    c = trace.settings.c
    _no_markup(answer_markdown(trace.result, tree), "answer")
    _no_markup(cost_markdown(trace.result.cost), "cost")
    for node in tree.nodes:
        _no_markup(node_detail_markdown(tree, node.id, c=c), f"detail of node {node.id}")
        _no_markup(history_html(tree, node.id, frozenset()), f"history of node {node.id}")
        _no_markup(hover_text(tree, node, c), f"hover of node {node.id}")
    for row in [*node_table(tree, c), *vote_rows(trace.result)]:
        for value in row:  # str cells are shown as text by Gradio; they must stay plain strings
            assert value is None or isinstance(value, int | float | str)
    figure = build_figure(tree, c=c, title=MARK).to_plotly_json()
    _no_markup(str(figure["layout"]["title"]), "plot title")
    checked = 0
    for item in figure["data"]:
        for key in ("text", "hovertext", "name"):
            texts = item.get(key)
            for text in [texts] if isinstance(texts, str) else texts or []:
                _no_markup(str(text), f"plot {key}")
                checked += 1
    assert checked >= len(tree.nodes)  # every node's hover text was among them


def test_the_app_status_lines_of_a_markup_trace(trace, tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    from ui import traces
    from ui.session import Session

    out = traces.load(Session(), str(write_markup_trace(tmp_path)))
    assert "Loaded a trace" in out["status"]
    panels = ("status", "answer", "cost", "detail", "history", "replay_status")  # Markdown and HTML
    # Each panel must be a string to be checked: a handler that returned none would pass.
    assert all(isinstance(out.get(key), str) for key in panels), {k: type(out.get(k)) for k in panels}
    for key in panels:
        _no_markup(out[key], key)
    # The trace's markup did reach the panels, escaped: the check above saw hostile text.
    assert "&lt;form" in out["status"] and "&lt;form" in out["answer"]


def test_pinned_fields_holding_markup_are_escaped_too(trace) -> None:
    """Records handed over directly, past the schema: stop reason, cost figures, tool
    names, validity (each reached the page as markup before)."""
    tree = trace.to_tree()
    hostile = "<form data-inj=1><input type=password data-inj=1></form>"
    cost = CostSummary(policy_calls=hostile, tokens=hostile, model_s=hostile, tool_calls={hostile: 1})  # type: ignore[arg-type]
    result = replace(trace.result, stop_reason=hostile, detail=hostile, tie_break=hostile, cost=cost)  # type: ignore[arg-type]
    _no_markup(answer_markdown(result, tree), "answer")
    _no_markup(cost_markdown(cost), "cost")
    tree.nodes[1].validity = hostile  # type: ignore[assignment]
    _no_markup(node_detail_markdown(tree, 1, c=1.0), "detail")
    _no_markup(hover_text(tree, tree.nodes[1], 1.0), "hover")


def test_the_escape_helpers_one_per_context() -> None:
    assert md("<b>x</b> *y* [l](u)\n#") == "&lt;b&gt;x&lt;/b&gt; \\*y\\* \\[l\\](u) \\#"
    assert html_text("<a href='x'>") == "&lt;a href=&#x27;x&#x27;&gt;"
    assert plotly("<br><a href=x>") == "&lt;br&gt;&lt;a href=x&gt;"
    assert cell("a\n<b>") == "a <b>"  # Gradio shows str cells as text
    assert fence("x ```` y", "sparql\n<b>").startswith("`````\n")  # a bad language name is dropped
    assert (num(1234, ","), num("<b>"), num(float("nan"), ".1f")) == ("1,234", "&lt;b&gt;", "–")
