"""The settings form's number fields: a slider and a number box whose range is checked by
the run event's validator (`ui.public.run_validator`) rather than by Gradio's input
processing.

Gradio processes a validated event's inputs before it calls the validator, as the run
joins the queue, and answers a processing error there with a bare HTTP 400 (an API client
sees "400 Bad Request" and nothing else). These fields let any value through their
processing (numbers rounded to the field's precision) and name the problem instead
(`problem`); the validator answers it as Gradio's validation error for that field, which
gradio_client raises as `ValidationError` with the field's name and the page shows on
the field. The browser draws them as Gradio's own Slider and Number. The replay slider is
a SettingSlider too, its round checked by the replay event's validator
(`ui.replay.validate_round`, against the rounds of the tree on screen).
"""

from __future__ import annotations

import math
from typing import Any

import gradio as gr


def range_problem(name: str, value: Any, minimum: float | None, maximum: float | None) -> str | None:
    """Why `value` cannot be field `name` (bounds inclusive, None = open), or None if it can."""
    if minimum is not None and maximum is not None:
        allowed = f"between {minimum:g} and {maximum:g}"
    elif minimum is not None:
        allowed = f"at least {minimum:g}"
    elif maximum is not None:
        allowed = f"at most {maximum:g}"
    else:
        allowed = ""
    if not _is_number(value):
        if isinstance(value, float):
            got = _shown(value)
        else:
            got = "no value" if value is None else f"a value of type {type(value).__name__}"
        return f"{name} must be a {'number ' + allowed if allowed else 'finite number'} (got {got})."
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        return f"{name} must be {allowed} (got {_shown(value)})."
    return None


def _is_number(value: Any) -> bool:
    """An int or a finite float (an int of any size: `math.isfinite` would overflow on it)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _shown(value: int | float) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    digits = str(value)
    return digits if len(digits) <= 20 else f"a number of {len(digits.lstrip('-'))} digits"


def _lenient(payload: Any, precision: int | None) -> Any:
    if _is_number(payload):
        return gr.Number.round_to_precision(payload, precision)
    return payload  # not a number: `problem` names it and the validator refuses the run


class SettingSlider(gr.Slider):
    """gr.Slider whose range the run validator checks (`problem`)."""

    is_template = True  # Gradio: drawn as the parent class, a Slider

    def preprocess(self, payload: Any) -> Any:
        return _lenient(payload, self.precision)

    def problem(self, name: str, value: Any) -> str | None:
        return range_problem(name, value, self.minimum, self.maximum)


class SettingNumber(gr.Number):
    """gr.Number whose range the run validator checks (`problem`); empty is refused too."""

    is_template = True  # Gradio: drawn as the parent class, a Number

    def preprocess(self, payload: Any) -> Any:
        return _lenient(payload, self.precision)

    def problem(self, name: str, value: Any) -> str | None:
        return range_problem(name, value, self.minimum, self.maximum)
