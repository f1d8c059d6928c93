"""What a run was made with, for traces and reports: KB spec, model ids, policy kind and adapter.

Plain data only; `mcts.agents.world.build_world` fills it in. Knows nothing else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RunMeta:
    kb_spec: str = ""  # the spec the KB was opened from ("demo", a path, an URL)
    policy_model: str = ""  # resolved model id or endpoint of the policy
    scorer_model: str = ""  # resolved model id of the IG scorer ("constant" for the ablation)
    policy_kind: str = ""  # "guided" or "react" (or a test double's name)
    # The trained policy adapter the run used (a relation-retriever or LoRA folder, as
    # `mcts.agents.models.describe_adapter` names it); "" = the base policy, no adapter.
    policy_adapter: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunMeta:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: str(v) for k, v in data.items() if k in known})
