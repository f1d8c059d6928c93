"""The fixed split of `dev.jsonl`: which questions train, which choose settings, which test.

The split is data (`examples/splits/fbqa_dev.json`): ids only, so it can be shipped with
the repo while the questions stay in `../shared/data/fbqa`. `make_split` is how the file
was made (stratified by source and hops, seeded); it is kept to show that nothing about
the split looked at answers or results.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mcts.evaluation.facets import FAMILY_RULE, SPLIT_FILE, family_of
from mcts.evaluation.facets import SPLIT_PARTS as PARTS


def make_split(
    records: Sequence[dict[str, Any]], *, train: float = 0.735, choose: float = 0.1, seed: int = 13
) -> dict[str, list[str]]:
    """Ids per part: within each (source, hops) stratum, ids sorted then shuffled with `seed`."""
    strata: dict[tuple[str, int], list[str]] = defaultdict(list)
    for rec in records:
        strata[(str(rec.get("source", "")), int(rec.get("hops") or 0))].append(str(rec["id"]))
    rng = random.Random(seed)
    out: dict[str, list[str]] = {p: [] for p in PARTS}
    for key in sorted(strata):
        ids = sorted(strata[key])
        rng.shuffle(ids)
        n_train, n_choose = round(train * len(ids)), round(choose * len(ids))
        out["train"] += ids[:n_train]
        out["choose"] += ids[n_train : n_train + n_choose]
        out["test"] += ids[n_train + n_choose :]
    return {p: sorted(v) for p, v in out.items()}


def with_families(split: dict[str, Any]) -> dict[str, Any]:
    """The split with the question families of its train part (`mcts.evaluation.facets`), so a
    report can tell a test question whose family is in training from one whose family is not."""
    families = sorted({f for f in map(family_of, split["train"]) if f})
    return {**split, "family_rule": FAMILY_RULE, "train_families": families}


def load_split(path: str | Path = SPLIT_FILE) -> dict[str, list[str]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {p: list(data[p]) for p in PARTS}


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def select(records: Iterable[dict[str, Any]], ids: Iterable[str]) -> list[dict[str, Any]]:
    """The records whose id is in `ids`, in file order."""
    wanted = set(ids)
    return [r for r in records if str(r.get("id")) in wanted]


def id_lists(path: str | Path) -> dict[str, list[str]]:
    """Every part of a split file that is a list of question ids: `train` / `choose` / `test`
    in the dev split; in `demo.json`, each choice's questions (by the choice's name) and
    `held_out`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    lists = {key: value for key, value in data.items() if key != "train_families"}
    lists.update({name: choice.get("questions") for name, choice in data.get("choices", {}).items()})
    return {
        key: [str(v) for v in value]
        for key, value in lists.items()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value)
    }


def write_part(questions: str | Path, part: str, out: str | Path, split: str | Path = SPLIT_FILE) -> int:
    """Write the questions of one part as JSONL (for `python -m mcts eval --questions`)."""
    parts = id_lists(split)
    if part not in parts:
        raise ValueError(f"{split} has no part {part!r}; its parts: {', '.join(parts)}")
    rows = select(read_jsonl(questions), parts[part])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with Path(out).open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(rows)
