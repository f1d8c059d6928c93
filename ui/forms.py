"""What the user typed, as typed objects: one field per named form component.

`ui.events` wires each component to the field of the same name (Gradio's `inputs_kwargs`),
and `ui.wiring` builds the object before the handler runs, so a handler reads
`form.rounds`, never the seventh of nineteen positional parameters. Validation into a
`SearchSettings` happens here, with one clear line on bad input. Knows nothing of Gradio.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from mcts.search.cleaning import CleaningRule
from mcts.search.loop import check_question, one_line
from mcts.search.presets import PRESETS, preset_settings
from mcts.search.settings import MAX_SEED, Method, SearchSettings
from ui.ranges import range_problem

# The settings form's components, in the form's order (a preset or a loaded trace fills them).
SETTINGS_FIELDS = ("rounds", "k", "c", "alpha", "beta", "expected_depth", "max_depth", "early_stop", "seed")
# Each setting's range (inclusive; None: open). The form's fields are drawn with it (ui.layout_search), the
# run's validator refuses a value outside it as the run joins the queue, and `settings()` checks
# it again, so a caller that reaches a handler some other way is held to it too.
SETTING_RANGES: dict[str, tuple[float | None, float | None]] = {
    "rounds": (1, 30),
    "k": (1, 10),
    "c": (0, None),
    "alpha": (0, None),
    "beta": (0, None),
    "expected_depth": (0, 20),
    "max_depth": (1, 20),
    "early_stop": (1, 20),
    "seed": (0, MAX_SEED),  # the range a trace may hold: the app must read back its own runs
}


@dataclass(frozen=True)
class SearchForm:
    """The question, the KB, the settings form and the models: shared by Run and Compare."""

    question: str
    kb_spec: str
    rounds: float
    k: float
    c: float
    alpha: float
    beta: float
    expected_depth: float
    max_depth: float
    early_stop: float
    seed: float
    policy_kind: str
    policy_model: str
    scorer_model: str
    policy_endpoint: str
    preset: str  # the preset the form started from: it sets the knobs the form does not show

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def checked_question(self) -> str:
        """The stripped question; raises ValueError with the sentence to show."""
        problem = check_question(self.question or "")
        if problem is not None:
            raise ValueError(problem[0].upper() + problem[1:] + ".")
        return self.question.strip()

    def settings(self, method: str) -> SearchSettings:
        """SearchSettings from the form over its preset; raises ValueError with one clear line."""
        for name in SETTINGS_FIELDS:
            problem = range_problem(name, getattr(self, name), *SETTING_RANGES[name])
            if problem is not None:
                raise ValueError(f"bad setting: {problem}")
        try:
            base = (
                preset_settings(self.preset, method) if self.preset else SearchSettings(method=Method(method))
            )
            return base.with_(
                rounds=int(self.rounds),
                k=int(self.k),
                c=float(self.c),
                alpha=float(self.alpha),
                beta=float(self.beta),
                expected_depth=int(self.expected_depth),
                max_depth=int(self.max_depth),
                early_stop_terminals=int(self.early_stop),
                seed=int(self.seed),
            )
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int too large for a float
            raise ValueError(f"bad setting: {one_line(exc)}") from exc

    def models(self) -> tuple[str, str, str, str]:
        """(policy kind, policy model, scorer model, policy endpoint), blanks stripped."""
        return (
            self.policy_kind,
            (self.policy_model or "").strip(),
            (self.scorer_model or "").strip(),
            (self.policy_endpoint or "").strip(),
        )


@dataclass(frozen=True)
class RunInputs(SearchForm):
    """The Search tab's Run: one method, and the lab's cleaning rules and IG prompt."""

    method: str
    rules: list[str]
    ig_prompt: str

    def cleaning_rules(self) -> frozenset[CleaningRule]:
        return parse_rules(self.rules)


@dataclass(frozen=True)
class CompareInputs(SearchForm):
    """The Compare tab: two methods on the Search tab's question and settings."""

    method_a: str
    method_b: str


def settings_problem(settings: SearchSettings) -> str | None:
    """Why `settings` (a loaded trace's, the twin's) is outside the form's ranges, or None:
    the same check a run's form meets, so nothing runs with settings the form would refuse."""
    for name, value in form_values(settings, with_preset=False).items():
        if name in SETTING_RANGES:
            problem = range_problem(name, value, *SETTING_RANGES[name])
            if problem is not None:
                return problem
    return None


def parse_rules(values: list[str] | None) -> frozenset[CleaningRule]:
    return frozenset(CleaningRule(v) for v in (values or []))


def preset_of(settings: SearchSettings) -> str:
    """The preset whose hidden knobs `settings` shares ("" if none: the paper's defaults apply)."""
    shown = {f: v for f, v in form_values(settings, with_preset=False).items() if f != "method"}
    for name in PRESETS:
        if preset_settings(name, settings.method).with_(**_as_settings_kwargs(shown)) == settings:
            return name
    return ""


def _as_settings_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    out = dict(values)
    out["early_stop_terminals"] = out.pop("early_stop")
    return out


def form_values(settings: SearchSettings, *, with_preset: bool = True) -> dict[str, Any]:
    """The settings form's values for `settings` (a loaded trace, a preset), by field name."""
    values = {
        "method": settings.method.value,
        "rounds": settings.rounds,
        "k": settings.k,
        "c": settings.c,
        "alpha": settings.alpha,
        "beta": settings.beta,
        "expected_depth": settings.expected_depth,
        "max_depth": settings.max_depth,
        "early_stop": settings.early_stop_terminals,
        "seed": settings.seed,
    }
    if with_preset:
        values["preset"] = preset_of(settings)
    return values
