"""Inputs a visitor sends over the API outside the run event: the replay round (a validation
error naming the round, never Gradio's generic error) and the settings fields as the
page's form events read them (a huge integer is a bad setting, not an OverflowError)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import served
from ui import form_notice, handlers, replay, traces
from ui.forms import CompareInputs, RunInputs
from ui.session import Session

gradio_client = pytest.importorskip("gradio_client")
ValidationError = pytest.importorskip("gradio_client.exceptions").ValidationError
TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "fast-obama.json"


def test_the_replay_round_is_checked_against_the_tree_on_screen() -> None:
    session = Session()

    def refusal(value: Any) -> str | None:
        answers = replay.validate_round(session, value)
        assert answers[0]["is_valid"]
        return None if answers[1]["is_valid"] else answers[1]["message"]

    assert refusal(0) is None and refusal(1) is None  # no tree yet: the slider's 0..1
    assert refusal(2) == "round must be between 0 and 1 (got 2)."
    traces.load(session, str(TRACE))
    last = replay.replay_range(session)[1]
    assert last > 1 and refusal(last) is None and refusal(1.5) is None
    for value, message in (
        ("abc", f"round must be a number between 0 and {last} (got a value of type str)."),
        (None, f"round must be a number between 0 and {last} (got no value)."),
        (float("nan"), f"round must be a number between 0 and {last} (got nan)."),
        (True, f"round must be a number between 0 and {last} (got a value of type bool)."),
        (-5, f"round must be between 0 and {last} (got -5)."),
        (last + 1, f"round must be between 0 and {last} (got {last + 1})."),
        (10**400, f"round must be between 0 and {last} (got a number of 401 digits)."),
    ):
        assert refusal(value) == message


def _form(cls: type, **overrides: Any) -> Any:
    values: dict[str, Any] = dict(
        question="q", kb_spec="demo", method="fast", method_a="fast", method_b="classic", rounds=2, k=2, c=1.0,
        alpha=2.0, beta=10.0, expected_depth=7, max_depth=4, early_stop=5, seed=0, rules=[],
    )  # fmt: skip
    values.update(overrides)
    return cls(**{f.name: values.get(f.name, "") for f in fields(cls)})


def test_a_huge_setting_is_a_bad_setting_for_the_form_events() -> None:
    info = handlers.compare_info(_form(CompareInputs, c=10**400), ("fast", "classic"))
    assert "bad setting" in info
    defaults = form_notice.FormDefaults(
        settings=_form(RunInputs).settings("fast"), preset="", rules=(), ig_prompt="", policy_kind=""
    )
    assert any(
        line.startswith("c ") for line in form_notice.differences(_form(RunInputs, c=10**400), defaults)
    )


def test_replay_over_the_api_refuses_a_bad_round_with_its_name(tmp_path: Path) -> None:
    with served() as url:
        client = gradio_client.Client(url, verbose=False, download_files=str(tmp_path / "dl"))
        client.predict("fast-obama.json", api_name="/load_example_trace")
        _, status = client.predict(2, api_name="/replay")
        assert status.startswith("Round 2 of ")
        for value in ("abc", None, -5, 1e308, 10**400):
            with pytest.raises(ValidationError, match="round must be"):
                client.predict(value, api_name="/replay")
        _, status = client.predict(1, api_name="/replay")  # and the app keeps serving this browser session
        assert status.startswith("Round 1 of ")
