"""The example picker's groups: every example question of a demo KB, by the kind of question.

The kind comes from each record's own fields (examples/questions*.jsonl): `hops`, the
compositionality type in `meta`, and the note, which says when a question tests a
homonym, goes through a CVT (Freebase) or a statement qualifier (Wikidata). Each question
lands in exactly one group; groups keep the file's order of questions. Knows nothing of Gradio.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ui.config import example_records

# The groups in the order the picker shows them.
KINDS: tuple[str, ...] = (
    "One hop",
    "Multi-hop",
    "Through a CVT",
    "Through a qualifier",
    "Two constraints",
    "Comparisons (before, after)",
    "Superlatives (the most, the first)",
    "Counting",
    "Homonyms (two entities share a name)",
)
_BY_TYPE = {
    "simple": "One hop",
    "conjunction": "Two constraints",
    "comparative": "Comparisons (before, after)",
    "superlative": "Superlatives (the most, the first)",
    "count": "Counting",
}


@dataclass(frozen=True)
class ExampleGroup:
    kind: str
    questions: tuple[str, ...]


def example_kind(record: dict[str, Any]) -> str:
    """The picker's group of one example record."""
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    note = str(meta.get("note", "")).lower()
    hops = record.get("hops")
    if isinstance(hops, int) and hops >= 2:
        return "Multi-hop"
    if note.startswith("homonym"):
        return "Homonyms (two entities share a name)"
    kind = str(meta.get("compositionality_type", "simple"))
    if kind == "composition":
        return "Through a qualifier" if "qualifier" in note else "Through a CVT"
    return _BY_TYPE.get(kind, "One hop")


def example_groups(path: Path) -> list[ExampleGroup]:
    """Every question of an example file, grouped by kind in `KINDS` order (empty groups left out)."""
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for record in example_records(path):
        text = record.get("question")
        if isinstance(text, str) and text.strip():
            found[example_kind(record)].append(text.strip())
    return [ExampleGroup(kind, tuple(qs)) for kind, qs in found.items() if qs]
