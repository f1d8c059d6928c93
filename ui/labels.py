"""What a run is called on screen: the method's label and the preset it ran with.

One home for the method names of the dropdowns and the status lines, so the form and
the status line say the same thing. Knows nothing of Gradio.
"""

from __future__ import annotations

from mcts.search.settings import Method, SearchSettings
from ui.forms import preset_of

METHOD_CHOICES: list[tuple[str, str]] = [
    ("Fast MCTS (IG reward, no simulation)", Method.FAST.value),
    ("Classic MCTS (simulate, score the end)", Method.CLASSIC.value),
    ("Constant reward (ablation)", Method.CONSTANT.value),
    ("Beam search by IG", Method.BEAM.value),
    ("N-sample vote", Method.VOTE.value),
    ("Single greedy path", Method.SINGLE.value),
]
METHOD_LABELS: dict[str, str] = {value: label for label, value in METHOD_CHOICES}


def method_label(method: Method | str) -> str:
    value = Method(method).value
    return METHOD_LABELS.get(value, value)


def preset_label(settings: SearchSettings) -> str:
    """The preset of `settings`: "small preset", "small preset, edited" (its hidden knobs,
    other visible ones) or "custom settings"."""
    from mcts.search.presets import preset_settings

    name = preset_of(settings)
    if not name:
        return "custom settings"
    exact = preset_settings(name, settings.method) == settings
    return f"{name} preset" if exact else f"{name} preset, edited"


def run_label(settings: SearchSettings) -> str:
    """The method and preset of a run, for its status line: "Fast MCTS (...) · small preset"."""
    return f"{method_label(settings.method)} · {preset_label(settings)}"
