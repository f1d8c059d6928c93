"""The IG lens's scorer tools over the app's API (gradio_client), as any visitor can call them.

A shipped trace is loaded into the visitor's session; the evidence (occlusion) and what-if
run the real bundled scorer. Bad input (a 100,000-character edit, an empty one, markup, a
node that does not exist) comes back as one clear line in the lens's own output, and the
app keeps serving.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_support import private_run_cache, served

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow
TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "fast-inception.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        private_run_cache(mp, tmp_path_factory)
        with served() as url:
            yield url


@pytest.fixture(scope="module")
def loaded(server):
    """A client whose session holds the shipped Inception trace."""
    c = gradio_client.Client(
        server, verbose=False, download_files=str(Path("/tmp") / "mcts-kbqa-test-downloads")
    )
    out = c.predict(gradio_client.handle_file(str(TRACE)), api_name="/load_trace")
    assert str(out[0]).startswith("**Loaded a trace:"), out[0]
    return c


def _what_if(c, node, edited: str) -> str:
    return c.predict(node=node, edited=edited, scorer_model="", api_name="/what_if")


@pytest.mark.parametrize(("edited", "expected"), [("x" * 100_000, "too long"), ("", "is empty")])
def test_bad_what_if_input_is_one_clear_line(loaded, edited, expected) -> None:
    text = _what_if(loaded, 3, edited)
    assert text.startswith("**Problem:**") and expected in text, text


@pytest.mark.parametrize("node", [999, "<img src=x onerror=alert(1)>"])
@pytest.mark.parametrize("api_name", ["/what_if", "/find_evidence"])
def test_a_node_that_does_not_exist_is_refused_with_its_reason(loaded, node, api_name) -> None:
    """The node list holds the tree's ids; Gradio refuses any other value before the handler
    (the handler's own line for a stale id is tested in tests/app/test_lens_probe.py)."""
    extra = {"edited": "Action: SearchNodes()"} if api_name == "/what_if" else {}
    with pytest.raises(Exception, match="not in the list of choices|400 Bad Request"):
        loaded.predict(node=node, scorer_model="", api_name=api_name, **extra)
    assert _what_if(loaded, 3, "").startswith("**Problem:**")  # the app keeps serving


def test_what_if_scores_an_edit_with_markup_as_plain_text(loaded) -> None:
    text = _what_if(
        loaded, 3, 'Action: SearchNodes()\nObservation: <script>alert(1)</script> "Christopher Nolan"'
    )
    assert "**Problem:**" not in text, text
    assert "would rank" in text and "<script>" not in text
    assert "not saved" in text


def test_the_evidence_of_a_node_is_found_and_drawn_over_its_history(loaded) -> None:
    status, view = loaded.predict(node=3, scorer_model="", api_name="/find_evidence")
    assert status.startswith("**Evidence that moved the reward:**"), status
    assert "all " in status and "segments" in status
    assert "<pre" in view and "removing it changes r by" in view
    again = loaded.predict(node=3, scorer_model="", api_name="/find_evidence")
    assert again[1] == view  # the session's cached occlusion, drawn the same
