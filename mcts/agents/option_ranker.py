"""A trained linear ranker over the guided policy's options: the hand-set priors, re-weighed.

The guided policy scores an option as `lm + prior`, where `prior` is a weighted sum of
named features (`Option.features`, weights in `Priors`). The ranker keeps that form and
learns the weights from trajectories (`mcts.training.option_ranker`):

    score = (w_lm + w_(lm, kind)) * lm + sum_f w_f * x_f + b_kind + sum_f w_(f, kind) * x_f
                                                    (f in PER_KIND: similarity, popularity, ...)

`b_kind` lets the data say how often each kind of step is the right one (Done against one
more hop, say), and the per-kind similarity weight how much the relation similarity should
count for a first hop, an extension or a constraint; the per-kind LM weight how far the
small LM's reading is worth trusting for each kind of choice (which entity a question is
about, say, against which relation: measured, the LM alone picks the entity well and the
relation badly). With `w_lm = 1`, the `Priors` values
and every other weight 0 it is the hand-set policy exactly (`OptionRanker.from_priors`).

Saved as `option_ranker.json` in a policy-adapter folder, beside the relation retriever it
was trained with; plain JSON, nothing else needed at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mcts.agents.guided_options import Option, Priors

RANKER_FILE = "option_ranker.json"
LM = "lm"
# Features that also get one weight per option kind: a similarity, a popularity or a
# pattern's shape mean different things for a first hop, an extension or a constraint.
PER_KIND = ("similarity", "popularity", "inverse", "cvt")


def kind_key(kind: str) -> str:
    return f"kind:{kind}"


def per_kind_key(name: str, kind: str) -> str:
    return f"{name}:{kind}"


def expanded(option: Option) -> dict[str, float]:
    """The option's features as the ranker reads them: its own, its kind, per-kind copies."""
    out = dict(option.features)
    out[kind_key(option.kind)] = 1.0
    for name in PER_KIND:
        if name in out:
            out[per_kind_key(name, option.kind)] = out[name]
    return out


@dataclass(frozen=True)
class OptionRanker:
    weights: Mapping[str, float]  # feature name -> weight; LM is the weight of the LM score
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))

    @classmethod
    def from_priors(cls, priors: Priors) -> OptionRanker:
        """The hand-set policy as a ranker: LM weight 1, the priors, nothing else."""
        return cls({LM: 1.0, **{f.name: float(getattr(priors, f.name)) for f in fields(Priors)}})

    def score(self, lm: float, option: Option) -> float:
        w = self.weights
        lm_weight = w.get(LM, 1.0) + w.get(per_kind_key(LM, option.kind), 0.0)
        return lm_weight * lm + sum(w.get(name, 0.0) * x for name, x in expanded(option).items())

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / RANKER_FILE
        body = {"weights": dict(sorted(self.weights.items())), "info": dict(self.info)}
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> OptionRanker:
        data = json.loads((Path(folder) / RANKER_FILE).read_text(encoding="utf-8"))
        weights = data.get("weights")
        if not isinstance(weights, dict) or not all(isinstance(v, int | float) for v in weights.values()):
            raise ValueError(f"{folder}/{RANKER_FILE}: 'weights' must map feature names to numbers")
        return cls({str(k): float(v) for k, v in weights.items()}, data.get("info") or {})


def has_option_ranker(folder: str | Path) -> bool:
    return (Path(folder) / RANKER_FILE).is_file()
