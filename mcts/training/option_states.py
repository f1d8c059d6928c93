"""The guided policy's choices along gold trajectories: the training data of the option ranker.

For each valid trajectory (`mcts.training.trajectories`, rebuilt on the real tools with the
relation retriever the policy will use), every state on the way (the question and the gold
steps so far) is shown to the guided policy: its enumerated options, each option's LM score
and features, and which option is the gold next step. A state is kept when the gold step
is among the options and there are at least two.

Rows go to a JSONL file, one question per line, so a long collection resumes where it
stopped (`resume=True` skips the ids already written). The LM scoring is the slow part:
one packed forward pass per state.

Stacking: a retriever scores the relations of its own training questions far better than
those of new ones (top-1 90% against 50%), so states of train questions are collected with
retrievers trained on the other folds (`fold_of`), and the ranker learns how much a
held-out similarity is worth.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.actions import Action
from mcts.agents.guided_state import squash
from mcts.agents.option_ranker import expanded


@dataclass(frozen=True)
class StateRow:
    """One choice: per option its LM score, kind and expanded features; `gold` the right one."""

    id: str
    step: int
    lm: tuple[float, ...]
    kinds: tuple[str, ...]
    features: tuple[dict[str, float], ...]
    gold: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "step": self.step,
            "lm": list(self.lm),
            "kinds": list(self.kinds),
            "features": list(self.features),
            "gold": self.gold,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StateRow:
        return cls(
            str(data["id"]),
            int(data["step"]),
            tuple(data["lm"]),
            tuple(data["kinds"]),
            tuple(data["features"]),
            int(data["gold"]),
        )


def fold_of(question_id: str, folds: int) -> int:
    """A stable fold for a question id (a hash, not the file order)."""
    return int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % folds


def family_seen_by_fold(train_ids: Iterable[str], folds: int) -> Callable[[str], bool | None]:
    """For a train question held out by its fold (an adapter trained on the other folds):
    does one of those other folds hold a question of its family? None: its id names none."""
    from mcts.evaluation.facets import family_of

    ids = list(train_ids)
    others = [{family_of(i) for i in ids if fold_of(i, folds) != f} - {""} for f in range(folds)]

    def seen(question_id: str) -> bool | None:
        family = family_of(question_id)
        return (family in others[fold_of(question_id, folds)]) if family else None

    return seen


def same_step(a: Action, b: Action) -> bool:
    """Is option action `a` the gold action `b`? (the ranking phrase of a pattern search is
    the policy's own, so only the tool and the query count)."""
    if a.tool != b.tool:
        return False
    if a.tool == "SearchNodes":
        return a.argument.casefold().strip() == b.argument.casefold().strip()
    return squash(a.argument) == squash(b.argument)


def states_of(record: dict[str, Any], tools: Any, recorder: Any, policy: Any) -> tuple[list[StateRow], int]:
    """The kept states of one question's trajectory, and how many states lacked the gold step."""
    from mcts.training.trajectories import build_trajectory

    traj = build_trajectory(record, tools, recorder)
    if not traj.valid:
        return [], 0
    rows: list[StateRow] = []
    missing = 0
    for i, gold_step in enumerate(traj.steps):
        assert gold_step.action is not None
        history = traj.steps[:i]
        opts = policy.options(traj.question, history)
        gold = next((j for j, o in enumerate(opts) if same_step(o.action, gold_step.action)), None)
        if gold is None:
            missing += 1
            continue
        if len(opts) < 2:
            continue
        lm = policy.lm_scores(traj.question, history, opts)
        rows.append(
            StateRow(
                traj.id,
                i,
                tuple(round(x, 5) for x in lm),
                tuple(o.kind for o in opts),
                tuple(expanded(o) for o in opts),
                gold,
            )
        )
    return rows, missing


def collect(
    records: Sequence[dict[str, Any]],
    make_policy: Callable[[dict[str, Any]], tuple[Any, Any, Any]],
    out: str | Path,
    *,
    resume: bool = False,
    progress: Callable[[Iterable[Any]], Iterable[Any]] = lambda it: it,
) -> dict[str, int]:
    """Append the states of each record to `out` (one JSON line per question).

    `make_policy(record)` gives (tools, recorder, policy) for that question: the tools rank
    relations with the retriever its fold allows."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    if resume and out.is_file():  # read_text: the file is appended to below, not held open twice
        done = {
            json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines() if line.strip()
        }
    counts = {"questions": 0, "states": 0, "gold_not_offered": 0, "skipped_done": len(done)}
    with out.open("a" if resume else "w", encoding="utf-8") as fh:
        for record in progress([r for r in records if str(r["id"]) not in done]):
            tools, recorder, policy = make_policy(record)
            rows, missing = states_of(record, tools, recorder, policy)
            counts["questions"] += 1
            counts["states"] += len(rows)
            counts["gold_not_offered"] += missing
            line = {"id": str(record["id"]), "missing": missing, "rows": [r.to_json() for r in rows]}
            fh.write(json.dumps(line) + "\n")
            fh.flush()
    return counts


def read_states(path: str | Path, ids: set[str] | None = None) -> list[StateRow]:
    rows: list[StateRow] = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            data = json.loads(line)
            if ids is None or data["id"] in ids:
                rows += [StateRow.from_json(r) for r in data["rows"]]
    return rows
