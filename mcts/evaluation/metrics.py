"""Answer-set metrics: precision, recall, F1, Hits@1 and exact accuracy against gold.

A prediction is a sequence of `kb.observation.Value` (name + optional id), in the
order the method ranks them. Gold comes from a question record (the JSONL fields of
`examples/questions.jsonl` and `../shared/data/fbqa/dev.jsonl`):

- mid gold     `{"mid": "m.0abc", "name": "..."}`     -> ids ("m.0abc",), name
- name gold    `{"name": "...", "kb_mids": [...]}`    -> ids = kb_mids, name
- literal gold `{"literal": "1961-08-04", "name": ...}` -> no ids, name = the literal

Matching one predicted value against one gold answer:
- both sides have ids -> equal ids (Freebase ids are canonicalised: `ns:m.0abc`,
  `http://rdf.freebase.com/ns/m.0abc` and `/m/0abc` all read `m.0abc`);
- otherwise -> equal normalised names (`normalise_answer`):
  dates become ISO `YYYY-MM-DD` (or `YYYY-MM`): `1961-08-04`, `1961-08-04T00:00:00Z`,
  `4 August 1961`, `August 4, 1961`, `Aug. 4 1961` are the same; numbers become their
  plain decimal form: `1,000` == `1000` == `1000.0` == `1e3`; other text is NFKC
  normalised, casefolded, punctuation dropped, articles (a, an, the) dropped and
  whitespace collapsed.

Set semantics (duplicates count once, after canonicalisation): precision = share of
distinct predictions that match some gold answer; recall = share of gold answers
matched by some prediction. Conventions for empty sets, stated because official
scripts differ: both empty -> P = R = F1 = 1; empty prediction against non-empty gold
-> P = R = F1 = 0 (an abstention earns nothing; the WebQSP script gives P = 1 there);
non-empty prediction against empty gold -> P = R = F1 = 0.
Hits@1 = the first predicted value matches a gold answer; exact = F1 == 1.

Run level: means of P, R, F1, Hits@1, exact, and "F1 of means" (the harmonic mean of
mean P and mean R, which some papers report instead of mean F1).

Nothing here knows about search, models or the knowledge base.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from kb.observation import Value

_FREEBASE_NS = "http://rdf.freebase.com/ns/"
_ARTICLES = frozenset({"a", "an", "the"})
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_ISO_DATE = re.compile(
    r"^([+-]?\d{4})-(\d{2})(?:-(\d{2}))?(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?$"
)  # text is casefolded
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{3,4})$")
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{3,4})$")
_MONTH_YEAR = re.compile(r"^([a-z]+)\.?,?\s+(\d{3,4})$")
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:e[+-]?\d+)?$")


@dataclass(frozen=True)
class GoldAnswer:
    """One gold answer: ids it may be matched by (possibly none) and a name."""

    name: str | None
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnswerScore:
    precision: float
    recall: float
    f1: float
    hits1: bool
    exact: bool
    n_predicted: int  # distinct predictions
    n_gold: int
    n_correct: int  # distinct predictions that match some gold answer


@dataclass(frozen=True)
class RunSummary:
    n: int
    precision: float
    recall: float
    f1: float  # mean of per-question F1
    f1_of_means: float  # harmonic mean of mean P and mean R
    hits1: float
    accuracy: float  # share of questions with F1 == 1


def canonical_id(raw: str | None) -> str | None:
    """`ns:m.0abc`, `<http://rdf.freebase.com/ns/m.0abc>`, `/m/0abc` -> `m.0abc`."""
    if raw is None:
        return None
    text = raw.strip().strip("<>")
    if text.startswith(_FREEBASE_NS):
        text = text[len(_FREEBASE_NS) :]
    elif text.startswith("ns:"):
        text = text[3:]
    elif text.startswith("/") and text.count("/") >= 2:  # old-style /m/0abc
        text = text.lstrip("/").replace("/", ".")
    return text or None


def _iso(year: str, month: int, day: int | None) -> str | None:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    y = int(year)
    return f"{y:04d}-{month:02d}" + (f"-{day:02d}" if day is not None else "")


def _as_date(text: str) -> str | None:
    m = _ISO_DATE.match(text)
    if m:
        return _iso(m.group(1), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
    m = _DAY_MONTH_YEAR.match(text)
    if m and m.group(2) in _MONTHS:
        return _iso(m.group(3), _MONTHS[m.group(2)], int(m.group(1)))
    m = _MONTH_DAY_YEAR.match(text)
    if m and m.group(1) in _MONTHS:
        return _iso(m.group(3), _MONTHS[m.group(1)], int(m.group(2)))
    m = _MONTH_YEAR.match(text)
    if m and m.group(1) in _MONTHS:
        return _iso(m.group(2), _MONTHS[m.group(1)], None)
    return None


def _as_number(text: str) -> str | None:
    if not text or not _NUMBER.match(text) or not any(ch.isdigit() for ch in text):
        return None
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    if value == 0:
        return "0"
    # Plain positional form without exponent or trailing zeros: 1000.0 -> "1000".
    out = format(value.normalize(), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def normalise_answer(text: str) -> str:
    """Canonical comparison form of an answer name (see the module docstring)."""
    base = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    base = base.strip('"').strip()
    date = _as_date(base)
    if date is not None:
        return date
    number = _as_number(base)
    if number is not None:
        return number
    # Apostrophes and dots are dropped outright so "Valentine's" and "D.C." stay one
    # word; other punctuation becomes a space ("Washington, D.C." == "washington dc").
    no_apostrophe = re.sub(r"['\u2019`.]", "", base)
    words = re.sub(r"[^\w\s]|_", " ", no_apostrophe).split()
    kept = [w for w in words if w not in _ARTICLES]
    return " ".join(kept if kept else words)


def gold_from_record(record: Mapping[str, Any]) -> tuple[GoldAnswer, ...]:
    """Gold answers of one question record (fields described in the module docstring)."""
    out: list[GoldAnswer] = []
    for item in record.get("gold_answers") or ():
        if not isinstance(item, Mapping):
            raise ValueError(f"gold_answers item is not an object: {item!r}")
        name = item.get("name")
        if item.get("mid"):
            ids = (canonical_id(str(item["mid"])),)
        elif "literal" in item:
            ids = ()
            name = str(item["literal"]) if item.get("literal") is not None else name
        else:
            ids = tuple(i for i in (canonical_id(str(m)) for m in item.get("kb_mids") or ()) if i)
        out.append(GoldAnswer(name=str(name) if name is not None else None, ids=tuple(i for i in ids if i)))
    return tuple(out)


def _pred_key(value: Value) -> str:
    ident = canonical_id(value.id)
    return f"id:{ident}" if ident else f"name:{normalise_answer(value.name)}"


def matches(value: Value, gold: GoldAnswer) -> bool:
    """Does one predicted value match one gold answer (ids if both have them, else names)?"""
    ident = canonical_id(value.id)
    if ident and gold.ids:
        return ident in gold.ids
    if gold.name is None:
        return False
    return normalise_answer(value.name) == normalise_answer(gold.name)


def dedupe(predicted: Iterable[Value]) -> list[Value]:
    """Distinct predictions in first-seen order (same id, or same normalised name without id)."""
    seen: set[str] = set()
    out: list[Value] = []
    for value in predicted:
        key = _pred_key(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def score_answers(predicted: Sequence[Value], gold: Sequence[GoldAnswer]) -> AnswerScore:
    preds = dedupe(predicted)
    golds = list(dict.fromkeys(gold))  # identical gold entries count once
    if not preds or not golds:
        both_empty = not preds and not golds
        score = 1.0 if both_empty else 0.0
        return AnswerScore(score, score, score, False, both_empty, len(preds), len(golds), 0)
    correct = sum(1 for p in preds if any(matches(p, g) for g in golds))
    found = sum(1 for g in golds if any(matches(p, g) for p in preds))
    precision = correct / len(preds)
    recall = found / len(golds)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    hits1 = any(matches(preds[0], g) for g in golds)
    return AnswerScore(precision, recall, f1, hits1, f1 == 1.0, len(preds), len(golds), correct)


def f1_score(predicted: Sequence[Value], gold: Sequence[GoldAnswer]) -> float:
    return score_answers(predicted, gold).f1


def summarise(scores: Sequence[AnswerScore]) -> RunSummary:
    n = len(scores)
    if n == 0:
        return RunSummary(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    p = sum(s.precision for s in scores) / n
    r = sum(s.recall for s in scores) / n
    return RunSummary(
        n=n,
        precision=p,
        recall=r,
        f1=sum(s.f1 for s in scores) / n,
        f1_of_means=2 * p * r / (p + r) if p + r else 0.0,
        hits1=sum(s.hits1 for s in scores) / n,
        accuracy=sum(s.exact for s in scores) / n,
    )
