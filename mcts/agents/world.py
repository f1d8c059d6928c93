"""The real world a search runs in: KB, tools, policy and scorer, built once per process.

`build_world(kb_spec, policy_kind=..., policy_model=..., scorer_model=..., method=...)`
opens the KB (`kb.spec.open_kb`, cached per spec), wraps it in the agent's `Toolbox`,
loads the models (`mcts.agents.models.load_model`, cached per model id, so a policy and a
scorer naming the same model share one copy of the weights) and builds:

- policy: `GuidedPolicy(model, toolbox)` (default; enumerated tool calls chosen by
  the model's likelihood) or `ReActPolicy(model)` (free generation); with
  `policy_endpoint` the ReAct policy calls an OpenAI-compatible server instead
  (`policy_model` then names the served model; default: the first one it lists);
- scorer: `IGScorer(model)`, or `ConstantScorer(settings.constant_reward)` for the
  constant-reward ablation (no scorer model is loaded then).

`policy_adapter` (`mcts.agents.models.resolve_policy_adapter`): by default the trained
adapter shipped for the bundled model; "none" for the base policy. A relation retriever
(`mcts.agents.relation_adapter`) ranks SearchGraphPatterns' relations, and the guided
policy's relation prior reads that score; a LoRA folder is merged into the policy LM.

`public=True` (the app's public mode): a remote KB refuses internal addresses
(`kb.spec.open_kb(public=True)`) and a policy endpoint other than the operator's
(env `POLICY_ENDPOINT`, see `mcts.agents.policy_react`) is refused.

Worlds are cached per argument tuple, so the CLI, the app and the evaluation reuse
loaded models. Heavy modules are imported inside `build_world` so importing this
module stays cheap. Knows nothing of the search loop or the UI.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method

PolicyKind = Literal["guided", "react"]
POLICY_KINDS: tuple[PolicyKind, ...] = ("guided", "react")


@dataclass(frozen=True)
class World:
    kb: Any  # kb.base.KnowledgeBase
    tools: Any  # kb.tools.Toolbox (implements mcts.search.protocols.Tools)
    policy: Any  # mcts.search.protocols.Policy
    scorer: Any  # mcts.search.protocols.Scorer
    meta: RunMeta


_CACHE: dict[tuple[Any, ...], World] = {}
_LOCK = threading.Lock()


def build_world(
    kb_spec: str | None = None,
    *,
    policy_kind: PolicyKind = "guided",
    policy_model: str | None = None,
    scorer_model: str | None = None,
    policy_endpoint: str | None = None,
    method: Method = Method.FAST,
    constant_reward: float = 1.0,
    public: bool = False,
    policy_adapter: str | None = None,
) -> World:
    """Open the KB and load the models (cached per arguments). Raises KBSpecError /
    ModelLoadError / ValueError with one clear line for bad arguments."""
    if policy_kind not in POLICY_KINDS:
        raise ValueError(f"unknown policy kind {policy_kind!r}; expected one of {', '.join(POLICY_KINDS)}")
    if public and policy_endpoint:
        from mcts.agents.policy_react import is_operator_endpoint

        if not is_operator_endpoint(policy_endpoint):
            raise ValueError(
                "public mode: only the operator's policy endpoint (env POLICY_ENDPOINT) may be used"
            )
    from kb.spec import resolve_spec
    from mcts.agents.models import resolve_model_names

    spec = resolve_spec(kb_spec)
    pol_name, sco_name = resolve_model_names(policy_model, scorer_model)
    from mcts.agents.models import resolve_policy_adapter

    adapter = resolve_policy_adapter(policy_adapter, pol_name, spec)
    constant = Method(method) == Method.CONSTANT
    key = (
        spec,
        policy_kind,
        pol_name,
        sco_name if not constant else None,
        policy_endpoint,
        constant,
        constant_reward,
        public,
        adapter,
    )
    with _LOCK:
        world = _CACHE.get(key)
        if world is None:
            world = _build(
                spec,
                policy_kind,
                pol_name,
                sco_name,
                policy_endpoint,
                constant,
                constant_reward,
                public,
                adapter,
            )
            _CACHE[key] = world
        return world


def _build(
    spec: str,
    policy_kind: PolicyKind,
    pol_name: str,
    sco_name: str,
    endpoint: str | None,
    constant: bool,
    constant_reward: float,
    public: bool = False,
    adapter: str = "",
) -> World:
    from kb.spec import open_kb
    from mcts.agents.models import DEFAULT_MODEL, load_model
    from mcts.agents.scorer import ConstantScorer, IGScorer

    kb = open_kb(spec, public=public)
    tools, lora = _adapted_tools(kb, adapter)
    if policy_kind == "guided":
        from mcts.agents.policy_guided import GuidedPolicy

        policy = GuidedPolicy(
            load_model(pol_name, adapter=lora),
            tools,
            priors=_adapter_priors(adapter),
            option_ranker=_adapter_option_ranker(adapter),
            cases=_adapter_cases(adapter),
        )
        policy_id = pol_name
    else:
        from mcts.agents.policy_react import ReActPolicy
        from mcts.agents.prompts import PromptConfig

        prompt = PromptConfig.for_flavour(tools.flavour.name)  # tools and demos in the KB's terms

        if endpoint:
            # The endpoint serves the policy model: name it only if asked for explicitly
            # (else the policy takes the first model the endpoint lists).
            served = pol_name if pol_name != DEFAULT_MODEL else None
            policy = ReActPolicy(endpoint=endpoint, endpoint_model=served, prompt=prompt)
            policy_id = f"{served or 'served model'} @ {endpoint}"
        else:
            policy = ReActPolicy(model=load_model(pol_name, adapter=lora), prompt=prompt)
            policy_id = pol_name
    if constant:
        scorer: Any = ConstantScorer(constant_reward)
        scorer_id = "constant"
    else:
        scorer = IGScorer(load_model(sco_name))
        scorer_id = sco_name
    from mcts.agents.models import describe_adapter

    meta = RunMeta(
        kb_spec=spec,
        policy_model=policy_id,
        scorer_model=scorer_id,
        policy_kind=policy_kind,
        policy_adapter=describe_adapter(adapter),
    )
    return World(kb=kb, tools=tools, policy=policy, scorer=scorer, meta=meta)


def _adapter_priors(adapter: str) -> Any:
    """The guided policy's priors with the relation-similarity weight a retriever adapter
    was chosen with (`similarity_prior` in its config, measured on the choose questions)."""
    from mcts.agents.guided_options import Priors
    from mcts.agents.relation_adapter import is_relation_adapter, prior_weight

    weight = prior_weight(adapter) if adapter and is_relation_adapter(adapter) else None
    return Priors(similarity=weight) if weight is not None else None


def _adapter_option_ranker(adapter: str) -> Any:
    """The option ranker trained with a retriever adapter (`option_ranker.json`), if any."""
    from mcts.agents.option_ranker import OptionRanker, has_option_ranker

    return OptionRanker.load(adapter) if adapter and has_option_ranker(adapter) else None


def _adapter_cases(adapter: str) -> Any:
    """The case memory saved with the option ranker (`cases.jsonl`), if any; its embedder
    is the relation ranker's MiniLM, loaded on first need."""
    from mcts.agents.case_memory import CaseMemory, has_cases, load_cases

    if not (adapter and has_cases(adapter)):
        return None
    from kb.relation_ranker import default_ranker

    return CaseMemory(load_cases(adapter), default_ranker)


def _adapted_tools(kb: Any, adapter: str) -> tuple[Any, str | None]:
    """The toolbox (ranking relations with a trained retriever adapter, if that is the
    adapter) and the LoRA folder for the policy LM (if that is the adapter)."""
    from kb.tools import Toolbox
    from mcts.agents.relation_adapter import is_relation_adapter

    if adapter and is_relation_adapter(adapter):
        from kb.relation_ranker import default_ranker
        from mcts.agents.relation_adapter import AdaptedRanker, RelationAdapter

        return Toolbox(kb, ranker=AdaptedRanker(default_ranker(), RelationAdapter.load(adapter))), None
    return Toolbox(kb), adapter or None


def clear_worlds() -> None:
    """Forget cached worlds (tests)."""
    with _LOCK:
        _CACHE.clear()
