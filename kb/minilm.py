"""all-MiniLM-L6-v2 sentence vectors from transformers' BertModel, without sentence-transformers.

The relation ranker needs one thing from the packaged model: unit vectors of short
texts. `sentence_transformers` gives them, but importing it pulls in scikit-learn and
its own training stack on top of `transformers`: seconds of a demo question's first
SearchGraphPatterns call, for a 6-layer encoder. `MiniLMEncoder` runs the steps
sentence-transformers runs for the packaged pipeline (`modules.json`), with the same
tokenizer, weights, batching and float operations, so the vectors are the same bits:

- texts sorted longest first by characters (`numpy.argsort` of minus the length, its
  default sort), in batches, padded to the batch's longest, truncated at 256 tokens;
- `BertModel`'s last hidden state, its mean over the attention mask;
- L2 normalisation twice: the pipeline's Normalize module, then `encode`'s
  `normalize_embeddings` (the second pass moves the last bit of some components).

tests/unit/test_minilm.py checks the bits against sentence-transformers. The one module
of `kb` that imports torch and transformers (lazily, when the ranker first loads); it
knows nothing of relations or ranking: texts in, vectors out.
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
        from safetensors.torch import load_file
        from transformers import BertConfig, BertModel, BertTokenizerFast
        from transformers.initialization import no_init_weights

        self._torch = torch
        self.tokenizer = BertTokenizerFast.from_pretrained(str(folder))
        # Built from the config and the weights file directly: `from_pretrained` spends most
        # of a second on checkpoint-conversion rules a plain BERT checkpoint never needs,
        # and random initialisation would be overwritten at once.
        with no_init_weights():
            model = BertModel(BertConfig.from_json_file(str(folder / "config.json")))
        keys = model.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
        if keys.missing_keys:  # a weights file that does not fill the model: never run it half-random
            raise OSError(f"{folder}: model.safetensors lacks {', '.join(keys.missing_keys[:3])}")
        self.model = model.eval()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> Any:
        """Unit vectors (numpy float32, one row per text, in the order given)."""
        import numpy as np

        torch = self._torch
        if not texts:
            return np.zeros((0, DIMENSIONS), np.float32)
        order = np.argsort([-len(t) for t in texts])
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
                once = torch.nn.functional.normalize(mean, p=2, dim=-1)
                out.extend(torch.nn.functional.normalize(once, p=2, dim=1))
        rows = [out[i] for i in np.argsort(order)]
        return np.stack([r.numpy() for r in rows]).astype(np.float32)
