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

from typing import Any

import gradio as gr

from ui.ranges import is_number, range_problem


def _lenient(payload: Any, precision: int | None) -> Any:
    if is_number(payload):
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
