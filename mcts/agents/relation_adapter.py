"""A trained relation retriever: a small low-rank adapter on the frozen sentence embedder.

The guided policy picks relations mostly by the tool's semantic similarity between the
question's relation phrase and each relation (`Priors.similarity` x `GraphPattern.score`),
and SearchGraphPatterns shows only the top patterns by that similarity. Zero-shot MiniLM
puts the gold relation first in about 59% of one-hop questions; this adapter is trained
(listwise, `mcts.training.retriever`) to rank the gold relation first:

    score(q, r) = q . r + (q U) . (r V)

with q, r the frozen, unit-length MiniLM vectors of the phrase and the readable relation
text, and U, V of shape (384, rank). V starts at zero, so an untrained adapter is the
zero-shot ranker; the vectors stay the embedder's, so its vector cache is reused.

Saved as a folder: `relation_adapter.json` (kind, rank, how it was trained, and optionally
`similarity_prior`: the weight of the guided policy's similarity prior chosen with it) and
`weights.npz` (U, V), about 100 KB; numpy is all it needs at run time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADAPTER_KIND = "relation-retriever"
CONFIG_FILE = "relation_adapter.json"
WEIGHTS_FILE = "weights.npz"


@dataclass(frozen=True, eq=False)
class RelationAdapter:
    u: Any  # numpy (dim, rank)
    v: Any  # numpy (dim, rank)
    info: dict[str, Any] = field(default_factory=dict)

    def scores(self, query_vec: Any, relation_vecs: Any) -> Any:
        """One score per relation vector (numpy), cosine plus the learned low-rank term."""
        return relation_vecs @ query_vec + (relation_vecs @ self.v) @ (query_vec @ self.u)

    def save(self, folder: str | Path, **info: Any) -> Path:
        import numpy as np

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / WEIGHTS_FILE, u=self.u.astype(np.float32), v=self.v.astype(np.float32))
        meta = {"kind": ADAPTER_KIND, "rank": int(self.u.shape[1]), **self.info, **info}
        (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> RelationAdapter:
        import numpy as np

        folder = Path(folder)
        info = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
        if info.get("kind") != ADAPTER_KIND:
            raise ValueError(f"{folder}: not a relation-retriever adapter (kind {info.get('kind')!r})")
        with np.load(folder / WEIGHTS_FILE, allow_pickle=False) as data:
            return cls(u=data["u"], v=data["v"], info=info)


def prior_weight(folder: str | Path) -> float | None:
    """The guided policy's similarity-prior weight chosen with this adapter, if any."""
    info = json.loads((Path(folder) / CONFIG_FILE).read_text(encoding="utf-8"))
    weight = info.get("similarity_prior")
    return float(weight) if weight is not None else None


def is_relation_adapter(folder: str | Path) -> bool:
    return (Path(folder) / CONFIG_FILE).is_file()


class AdaptedRanker:
    """A `kb.relation_ranker.Ranker`: the base embedder's vectors, scored by the adapter."""

    def __init__(self, base: Any, adapter: RelationAdapter) -> None:
        self.base = base  # kb.relation_ranker.EmbeddingRanker (its encode and caches)
        self.adapter = adapter

    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        from kb.relation_ranker import readable

        if not relation_texts:
            return []
        rel = self.base.encode([readable(t) for t in relation_texts])
        query = self.base.encode([semantic.strip()], persist=False)[0]
        return [float(x) for x in self.adapter.scores(query, rel)]
