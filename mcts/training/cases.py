"""The case memory's cases (`mcts.agents.case_memory`) from question records with gold paths."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mcts.agents.case_memory import Case
from mcts.training.trajectories import path_patterns


def cases_from_records(records: Iterable[Mapping[str, Any]]) -> list[Case]:
    """One case per record with a question, `topic_entities` and a gold `path` (`dev.jsonl`)."""
    out = []
    for r in records:
        entities = tuple(str(t["mid"]) for t in r.get("topic_entities") or () if t.get("mid"))
        try:
            hops = tuple(path_patterns(r.get("path") or ()))
        except ValueError:  # a path the policy cannot take (mixed directions in one hop)
            continue
        if entities and hops and str(r.get("question") or "").strip():
            out.append(Case(str(r["question"]), entities, hops))
    return out
