"""What kind of question a result is about, so accuracy can be broken down honestly.

The facets beside the hop count, each read from the question record, its id or a split file:

- **faithful**: the record's `path_matches_gold_relations`. On the Freebase subset many
  two-hop gold queries follow relations the subset happens to hold, not what the question
  asks; an F1 on those measures coincidences, so tables show faithful questions apart.
- **family**: CWQ builds several questions from one WebQuestionsSP seed (`WebQTrn-N` /
  `WebQTest-N` inside the id); WebQuestions test question N is the seed `WebQTest-N`.
  A trained policy can remember a family member from training, so a figure on questions
  whose family is in training ("does it remember?") and one on questions whose family is
  not ("does it generalise?") are different claims.
- **part**: which part of the fixed split (`examples/splits/fbqa_dev.json`) the question
  belongs to, so a report can refuse to pool parts.
- **held out**: whether the question was used for no choice: a dev test question is; a train
  or choose question is not, nor a demo question any choice was made on.
- **chosen here**: what was chosen on a demo question (`examples/splits/demo.json` names each
  choice and its questions), so a demo report shows each slice apart.

Knows nothing of search, models or the CLI.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

SPLIT_FILE = Path(__file__).resolve().parents[2] / "examples" / "splits" / "fbqa_dev.json"
DEMO_SPLIT_FILE = SPLIT_FILE.with_name("demo.json")
SPLIT_PARTS = ("train", "choose", "test")

_SEED = re.compile(r"WebQ(?:Trn|Test)-\d+")
_WEBQUESTIONS_TEST = re.compile(r"webquestions:(\d+)")
FAMILY_RULE = "the WebQTrn-N / WebQTest-N part of the id; webquestions:N is WebQTest-N; other ids have none"


def family_of(question_id: str) -> str:
    """The WebQuestionsSP seed a question was built from, or "" when its id names none."""
    seed = _SEED.search(question_id)
    if seed:
        return seed.group(0)
    webq = _WEBQUESTIONS_TEST.fullmatch(question_id)
    return f"WebQTest-{webq.group(1)}" if webq else ""


@dataclass(frozen=True)
class SplitInfo:
    """The parts of the fixed split and the families its train part holds."""

    part_of: dict[str, str]  # question id -> train / choose / test
    train_families: frozenset[str]
    held_out: dict[str, bool] = field(default_factory=dict)  # question id -> used for no choice
    chosen_here: dict[str, str] = field(default_factory=dict)  # question id -> what was chosen on it

    def facets(self, question_id: str, record: dict[str, Any]) -> Facets:
        family = family_of(question_id)
        faithful = record.get("path_matches_gold_relations")
        return Facets(
            faithful=faithful if isinstance(faithful, bool) else None,
            family=family,
            family_in_train=(family in self.train_families) if family else None,
            part=self.part_of.get(question_id, ""),
            held_out=self.held_out.get(question_id),
            chosen_here=self.chosen_here.get(question_id, ""),
        )


@dataclass(frozen=True)
class Facets:
    faithful: bool | None = None  # None: the record does not say
    family: str = ""
    family_in_train: bool | None = None  # None: the question belongs to no family
    part: str = ""  # "" when the id is not in the split
    held_out: bool | None = None  # None: no split says whether a choice was made on it
    chosen_here: str = ""  # a demo question: what was chosen on it ("" for none)


def split_info_from(data: dict[str, Any], demo: dict[str, Any] | None = None) -> SplitInfo:
    """`data`: the dev split (train / choose / test ids). `demo`: `{"choices": {name: {"what":
    the choice in words, "questions": ids}}, "held_out": ids}`."""
    part_of = {str(qid): part for part in SPLIT_PARTS for qid in data.get(part, [])}
    families = data.get("train_families")
    if families is None:  # derive it: the rule is the same one the file was written with
        families = [family_of(q) for q in data.get("train", [])]
    held_out = {qid: part == "test" for qid, part in part_of.items()}
    chosen_here: dict[str, str] = {}
    demo = demo or {}
    held_out.update({str(qid): True for qid in demo.get("held_out", [])})
    for choice in demo.get("choices", {}).values():
        for qid in choice["questions"]:
            held_out[str(qid)] = False
            chosen_here[str(qid)] = str(choice["what"])
    return SplitInfo(
        part_of=part_of,
        train_families=frozenset(f for f in families if f),
        held_out=held_out,
        chosen_here=chosen_here,
    )


def _read_object(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the split file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a split file is a JSON object of id lists")
    return data


@lru_cache(maxsize=4)
def load_split_info(path: str | Path = SPLIT_FILE, demo: str | Path | None = DEMO_SPLIT_FILE) -> SplitInfo:
    """The shipped split (or another file of its shape), with the demo questions' tuning slice."""
    return split_info_from(_read_object(path), _read_object(demo) if demo else None)
