"""Gold answers of the example questions, and how a run scored against them.

The example files (examples/questions*.jsonl) carry each question's gold answers; when
the question on screen is one of them (same text, same demo KB) the answer panel shows
the gold answer and the run's F1 (`mcts.evaluation.metrics`, the evaluation's scoring),
so a wrong turn of the search is visible at once. Knows nothing of Gradio.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mcts.evaluation.metrics import GoldAnswer, gold_from_record, score_answers
from mcts.search.voting import SearchResult
from ui.config import EXAMPLES_FILE, WIKIDATA_EXAMPLES_FILE, example_records
from viz.escape import md

# Which demo KB each example file's questions are asked of.
EXAMPLE_FILES: dict[str, Path] = {"demo": EXAMPLES_FILE, "demo-wikidata": WIKIDATA_EXAMPLES_FILE}


@dataclass(frozen=True)
class GoldCheck:
    gold: tuple[GoldAnswer, ...]
    f1: float | None  # None while there is no answer yet
    correct: int  # distinct predictions that match a gold answer
    predicted: int


def _key(question: str) -> str:
    return " ".join(question.split()).casefold()


@lru_cache(maxsize=4)
def _gold_table(kb_spec: str, path: Path) -> dict[str, tuple[GoldAnswer, ...]]:
    table: dict[str, tuple[GoldAnswer, ...]] = {}
    for record in example_records(path):
        try:
            gold = gold_from_record(record)
        except (ValueError, AttributeError, TypeError):
            continue  # a broken record costs only that question
        if isinstance(record.get("question"), str) and gold:
            table.setdefault(_key(record["question"]), gold)
    return table


def gold_answers(question: str, kb_spec: str) -> tuple[GoldAnswer, ...] | None:
    """The gold answers of an example question on its demo KB; None for any other question."""
    path = EXAMPLE_FILES.get((kb_spec or "demo").strip())
    if path is None or not question:
        return None
    return _gold_table((kb_spec or "demo").strip(), path).get(_key(question))


def check(question: str, kb_spec: str, result: SearchResult | None) -> GoldCheck | None:
    gold = gold_answers(question, kb_spec)
    if gold is None:
        return None
    if result is None:
        return GoldCheck(gold, None, 0, 0)
    score = score_answers(result.answer, gold)
    return GoldCheck(gold, score.f1, score.n_correct, score.n_predicted)


def gold_markdown(found: GoldCheck | None) -> str:
    """One block for the answer panel: the gold answer and the run's F1 against it."""
    if found is None:
        return ""
    names = md(", ".join(g.name or "?" for g in found.gold))  # names from an example file or a KB
    if found.f1 is None:
        return f"**Gold answer** (example file): {names}"
    if found.predicted == 0:
        return f"**Gold answer** (example file): {names} · this run gave **no answer** (F1 0.00)"
    verdict = "right" if found.f1 == 1.0 else ("partly right" if found.f1 > 0 else "wrong")
    return (
        f"**Gold answer** (example file): {names} · this run is **{verdict}**: "
        f"F1 {found.f1:.2f} ({found.correct} of {found.predicted} predicted values match)"
    )
