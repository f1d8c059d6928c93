"""studies/adapter_ablations.py: each variant of the shipped adapter holds the parts it names,
and the loaders read a variant as they read the real adapter (a missing file is a missing part)."""

from __future__ import annotations

from pathlib import Path

from mcts.agents.case_memory import has_cases
from mcts.agents.guided_options import Priors
from mcts.agents.models import BUNDLED_POLICY_ADAPTER
from mcts.agents.option_ranker import has_option_ranker
from mcts.agents.relation_adapter import RelationAdapter, prior_weight
from mcts.agents.world import _adapter_priors
from studies.adapter_ablations import VARIANTS, write_variants


def test_each_variant_keeps_the_parts_it_names_and_loads(tmp_path: Path):
    folders = {p.name: p for p in write_variants(BUNDLED_POLICY_ADAPTER, tmp_path)}
    assert list(folders) == list(VARIANTS)
    shipped = prior_weight(BUNDLED_POLICY_ADAPTER)
    # else the base-weight variants test nothing
    assert shipped is not None and shipped != Priors().similarity
    for name, folder in folders.items():
        RelationAdapter.load(folder)  # the retriever is in every variant
        assert has_option_ranker(folder) == (name not in ("retriever-only", "retriever-only-base-weight"))
        assert has_cases(folder) == (name in ("full", "full-base-weight"))
        weight = _adapter_priors(str(folder))
        if name.endswith("base-weight"):
            assert prior_weight(folder) is None and weight is None  # the guided policy's own weight
        else:
            assert weight is not None and weight.similarity == shipped
