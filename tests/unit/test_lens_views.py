"""The IG lens's evidence and what-if views: pure drawing of stored numbers, text escaped."""

from __future__ import annotations

import re

from mcts.search.settings import IGVariant
from viz.ig_lens import Anatomy
from viz.occlusion_view import SpanEffect, occlusion_html, occlusion_summary
from viz.whatif_view import rank_among, whatif_markdown

HISTORY = 'Action: ExecuteSPARQL("<b>q</b>")\nObservation: ["Nolan", "Other"]'


def _effects() -> list[SpanEffect]:
    q = HISTORY.index("<b>q</b>")
    nolan = HISTORY.index('"Nolan"')
    other = HISTORY.index('"Other"')
    return [
        SpanEffect(q, q + 8, "SPARQL argument", 0.05),  # removing it raised r: it held r down
        SpanEffect(nolan, nolan + 7, 'value "Nolan"', -0.30),  # removing it lowered r: it raised r
        SpanEffect(other, other + 7, 'value "Other"', 0.0),
    ]


def test_the_history_is_shaded_per_segment_and_its_text_kept_and_escaped() -> None:
    html = occlusion_html(HISTORY, _effects())
    assert "<b>q</b>" not in html and "&lt;b&gt;q&lt;/b&gt;" in html
    spans = re.findall(r"<span style='background:(rgba\([^)]*\))[^']*' title='([^']*)'>", html)
    assert len(spans) == 3
    colours = {title.split(":")[0]: colour for colour, title in spans}
    assert colours["value &quot;Nolan&quot;"].startswith("rgba(22,163,74")  # raised r: green
    assert colours["SPARQL argument"].startswith("rgba(220,38,38")  # held it down: red
    # The strongest effect gets the deepest shade.
    alpha = {k: float(v.rsplit(",", 1)[1].rstrip(")")) for k, v in colours.items()}
    assert alpha["value &quot;Nolan&quot;"] > alpha["SPARQL argument"]
    text = re.sub(r"<[^>]+>", "", html.split("<pre", 1)[1].split(">", 1)[1])
    assert (
        text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", '"')
        .startswith("Action: ExecuteSPARQL")
    )


def test_out_of_range_or_overlapping_spans_are_not_drawn_twice() -> None:
    effects = [
        SpanEffect(0, 6, "a", 0.1),
        SpanEffect(3, 9, "overlaps a", 0.2),
        SpanEffect(5, 10_000, "past the end", 0.3),
    ]
    html = occlusion_html(HISTORY, effects)
    assert html.split("<pre", 1)[1].count("<span style='background:rgba") == 1


def test_the_summary_ranks_segments_by_effect_and_says_when_it_stopped() -> None:
    done = occlusion_summary(_effects(), 1.2, segments=3, complete=True)
    rows = [line for line in done.splitlines() if line.startswith("| value") or line.startswith("| SPARQL")]
    assert rows[0].startswith("| value &quot;Nolan&quot;") and "+0.3000" in rows[0] and "0.9000" in rows[0]
    assert "all 3 segments" in done and "raised it by 0.3000" in done
    stopped = occlusion_summary(_effects()[:1], 1.2, segments=3, complete=False)
    assert "1 of 3 segments (stopped before the rest)" in stopped
    flat = occlusion_summary([SpanEffect(0, 3, "x", 1e-5)], 1.0, segments=1, complete=True)
    assert "does not hang on any one piece" in flat


def _anatomy(a: float, q: float, r: float) -> Anatomy:
    return Anatomy(n=100, m=5, a=a, q=q, q0=5.0, rewards=((IGVariant.PAPER, 5 / 105 * (a - q), r),))


def test_rank_among_siblings_counts_the_strictly_higher_ones() -> None:
    assert rank_among(1.5, [1.2, 1.4]) == 1
    assert rank_among(1.3, [1.2, 1.4]) == 2
    assert rank_among(1.4, [1.4, 1.2]) == 1  # a tie ranks the edited node first


def test_what_if_shows_both_columns_the_rank_and_that_nothing_is_saved() -> None:
    text = whatif_markdown(
        _anatomy(4.8, 2.5, 1.40),
        _anatomy(4.9, 2.9, 1.30),
        variant=IGVariant.PAPER,
        run_r=1.40,
        new_r=1.30,
        siblings=[1.35, 1.20],
        chars=(276, 200),
    )
    assert "| **r** | 1.4000 | **1.3000** |" in text
    assert "rank **2 of 3** by r (as run: 1 of 3)" in text
    assert "moves r by -0.1000" in text and "not saved" in text
    assert "&#x27;" not in text  # the labels are the app's own text, not escaped twice
    alone = whatif_markdown(
        None,
        _anatomy(4.9, 2.9, 1.3),
        variant=IGVariant.PAPER,
        run_r=None,
        new_r=1.3,
        siblings=[],
        chars=(0, 9),
    )
    assert "no scored sibling" in alone and "moves r" not in alone
