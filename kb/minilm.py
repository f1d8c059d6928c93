"""all-MiniLM-L6-v2 sentence vectors from `transformers` alone, without sentence-transformers.

The relation ranker needs one thing from the packaged model: unit vectors of short
texts. `sentence_transformers` gives them, but importing it pulls in scikit-learn and
most of `transformers`' training stack: seconds of a demo question's first
SearchGraphPatterns call, for a 6-layer encoder that loads in a fraction of that.
`MiniLMEncoder` runs the same three steps the packaged pipeline (`modules.json`)
names, with the same tokenizer, weights and batching: the BERT encoder, the mean of
the token vectors under the attention mask, L2 normalisation. Texts are encoded
longest first in batches, as sentence-transformers orders them, so a text meets the
same neighbours and padding and gets the same floats.

It knows nothing of relations or ranking: texts in, vectors out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAX_TOKENS = 256  # the packaged pipeline's max_seq_length (sentence_bert_config.json)
DIMENSIONS = 384


class MiniLMEncoder:
    """Tokenizer + BertModel read from the packaged folder; `encode` as sentence-transformers."""

    def __init__(self, folder: Path) -> None:
        import torch
        from transformers import BertModel, BertTokenizerFast

        self._torch = torch
        self.tokenizer = BertTokenizerFast.from_pretrained(str(folder))
        self.model = BertModel.from_pretrained(str(folder), dtype=torch.float32).eval()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        """Unit vectors (numpy float32, one row per text, in the order given)."""
        import numpy as np

        torch = self._torch
        if not texts:
            return np.zeros((0, DIMENSIONS), np.float32)
        # Longest first (by characters, a stable sort), as sentence-transformers batches.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: list[Any] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = [texts[i] for i in order[start : start + batch_size]]
                features = self.tokenizer(
                    batch,
                    padding=True,
                    truncation="longest_first",
                    max_length=MAX_TOKENS,
                    return_tensors="pt",
                )
                tokens = self.model(**features, return_dict=True).last_hidden_state
                mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                summed = (tokens * mask).sum(dim=1, dtype=tokens.dtype)
                mean = summed / torch.clamp(mask.sum(dim=1, dtype=tokens.dtype), min=1e-9)
                out.append(torch.nn.functional.normalize(mean, p=2, dim=-1).numpy())
        vectors = np.concatenate(out)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result.astype(np.float32)
