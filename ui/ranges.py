"""Whether a typed value fits a field's range, in one sentence naming the field. Knows nothing
of Gradio: the form fields (`ui.fields`), the form's own check (`ui.forms`) and the replay
slider's check (`ui.replay`) share it."""

from __future__ import annotations

import math
from typing import Any


def range_problem(name: str, value: Any, minimum: float | None, maximum: float | None) -> str | None:
    """Why `value` cannot be field `name` (bounds inclusive, None = open), or None if it can."""
    if minimum is not None and maximum is not None:
        allowed = f"between {_bound(minimum)} and {_bound(maximum)}"
    elif minimum is not None:
        allowed = f"at least {_bound(minimum)}"
    elif maximum is not None:
        allowed = f"at most {_bound(maximum)}"
    else:
        allowed = ""
    if not is_number(value):
        if isinstance(value, float):
            got = _shown(value)
        else:
            got = "no value" if value is None else f"a value of type {type(value).__name__}"
        return f"{name} must be a {'number ' + allowed if allowed else 'finite number'} (got {got})."
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        return f"{name} must be {allowed} (got {_shown(value)})."
    return None


def is_number(value: Any) -> bool:
    """An int or a finite float (an int of any size: `math.isfinite` would overflow on it)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _bound(limit: float) -> str:
    """A limit as a visitor can compare it: whole numbers in full (a seed's 4294967295, not
    4.29497e+09, which reads as if a smaller seed were refused), fractions short."""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


def _shown(value: int | float) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    digits = str(value)
    return digits if len(digits) <= 20 else f"a number of {len(digits.lstrip('-'))} digits"
