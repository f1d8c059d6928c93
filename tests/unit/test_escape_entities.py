"""`viz.escape.md` keeps the entities it writes whole, and never lets input form one."""

from __future__ import annotations

import html

from viz.escape import md


def test_an_apostrophe_stays_an_entity_the_page_decodes() -> None:
    assert md("the question's weight") == "the question&#x27;s weight"
    assert html.unescape(md("it's")) == "it's"


def test_input_cannot_smuggle_an_entity_or_a_heading_mark() -> None:
    out = md("&#x3c;script&#x3e; #1 &\\#x27;")
    assert "&#x3c;" not in out and "<" not in out
    assert "\\#1" in out  # a user's "#" is still escaped for Markdown
    assert html.unescape(out.replace("\\", "")).startswith("&#x3c;script")  # shown as typed
