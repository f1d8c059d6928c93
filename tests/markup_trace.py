"""A shipped trace with markup in every free-text field, for the HTML-injection tests.

Every string the schema lets a visitor choose (question, thoughts, actions, observations,
value names, SPARQL, details, model ids, histories, event texts...) gets `MARK`
prepended: a form with a password field and a bold element, each tagged `data-inj`, so a
test can look for any element it did not put on the page. Strings the schema pins to a
fixed set (event kinds, enums, tool names, validity, stop reason) stay as they are: a
trace with markup there is refused by the loader (tests/unit/test_trace_schema.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRACES = Path(__file__).resolve().parents[1] / "examples" / "traces"
MARK = '<form data-inj="1"><input type="password" data-inj="1"></form><b data-inj="1">x</b>'
# Keys whose string values are a fixed set (Literal or enum in the writer's records).
PINNED = {
    "kind", "method", "vote_mode", "selection", "ig_variant", "stop_reason", "validity", "status",
    "tool", "direction", "cleaning_rules", "created_at", "reason",
}  # fmt: skip


def _mark(value: Any, key: str = "") -> Any:
    if isinstance(value, str):
        return value if key in PINNED else MARK + value
    if isinstance(value, list):
        return [_mark(v, key) for v in value]
    if isinstance(value, dict):
        return {k: _mark(v, k) for k, v in value.items()}
    return value


def markup_trace(name: str = "fast-obama.json") -> dict[str, Any]:
    data = _mark(json.loads((TRACES / name).read_text()))
    data["settings"] = json.loads((TRACES / name).read_text())["settings"]  # enums and numbers only
    return data


def write_markup_trace(folder: Path, name: str = "fast-obama.json") -> Path:
    path = folder / f"markup-{name}"
    path.write_text(json.dumps(markup_trace(name)))
    return path
