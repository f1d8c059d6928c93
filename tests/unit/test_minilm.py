"""`kb.minilm` gives the bits sentence-transformers gives for the packaged MiniLM.

Both encoders run on the same texts: the demo KB's relations as the ranker reads them, in
one call (several batches, padded), odd batch sizes, one text alone, a text past
the 256-token cut, and an empty list. Equal bits keep every SearchGraphPatterns score,
and so every ranking and the guided policy's features, what they were.
"""

from __future__ import annotations

import numpy as np
import pytest

from kb.relation_ranker import load_model, readable
from kb.tools import Toolbox


@pytest.fixture(scope="module")
def relation_texts(demo_kb) -> list[str]:
    """Every predicate of the demo KB as the ranker reads it, and CVT-like pairs of them."""
    fl = Toolbox(demo_kb).flavour
    res = demo_kb.query("SELECT DISTINCT ?p WHERE { ?s ?p ?o }", timeout_s=30.0)
    ids = sorted(fl.relation_id(p.value) for (p,) in res.rows)
    pairs = [f"{a} -> {b}" for a in ids[:12] for b in ids[-6:]]
    return [readable(t) for t in ids + pairs]


@pytest.mark.parametrize("batch_size", [64, 7, 1])
def test_vectors_are_the_same_bits_as_sentence_transformers(
    relation_texts: list[str], batch_size: int
) -> None:
    texts = [*relation_texts, "Where born", "who directed the film " * 80, "é ü 中文"]
    assert len(texts) > 64  # more than one batch
    ours = load_model("minilm").encode(texts, batch_size=batch_size)
    theirs = load_model("sentence-transformers").encode(texts, batch_size=batch_size)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), 384)
    assert np.array_equal(ours, theirs)


def test_one_text_and_no_text() -> None:
    one = load_model("minilm").encode(["people person nationality"])
    assert np.array_equal(one, load_model("sentence-transformers").encode(["people person nationality"]))
    assert abs(float(np.linalg.norm(one[0])) - 1.0) < 1e-6
    assert load_model("minilm").encode([]).shape == (0, 384)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown ranker backend"):
        load_model("word2vec")
