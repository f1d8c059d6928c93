"""Models and knowledge bases for the app: built once per process, shared read-only.

`get_world` builds (or reuses, `mcts.agents.world.build_world` caches) the KB, policy
and scorer of a run and probes a remote endpoint so a dead URL fails here, clearly.
`get_scorer` gives the IG scorer alone for re-scoring. Each session's tree is its own;
only these read-only parts are shared. Knows nothing of Gradio components.
"""

from __future__ import annotations

import threading
from typing import Any

from mcts.search.loop import one_line
from mcts.search.settings import Method
from ui import public
from ui.forms import SearchForm

MAX_KB_SPEC_CHARS = 500
_LOCK = threading.Lock()
_WARM: set[tuple[Any, ...]] = set()  # world arguments already loaded in this process
_SCORERS: dict[str, Any] = {}


def world_key(form: SearchForm, method: Method) -> tuple[Any, ...]:
    """What makes two runs share a world: KB, models, and whether the scorer is constant."""
    return ((form.kb_spec or "demo").strip(), *form.models(), method == Method.CONSTANT)


def is_warm(form: SearchForm, method: Method) -> bool:
    return world_key(form, method) in _WARM


def get_world(form: SearchForm, method: Method) -> Any:
    """The world of a run; raises ValueError (or the loader's error) with one clear line."""
    from mcts.agents.world import build_world

    spec = (form.kb_spec or "").strip() or "demo"
    if len(spec) > MAX_KB_SPEC_CHARS:
        raise ValueError(f"the KB spec has {len(spec):,} characters; give a short path or URL")
    policy_kind, policy_model, scorer_model, endpoint = form.models()
    world = build_world(
        spec,
        policy_kind=policy_kind,  # type: ignore[arg-type]
        policy_model=policy_model or None,
        scorer_model=scorer_model or None,
        policy_endpoint=endpoint or None,
        method=method,
        public=public.MODE.enabled,  # no internal endpoint addresses, only the operator's policy server
    )
    if spec.startswith(("http://", "https://")):
        try:
            world.kb.query("ASK { ?s ?p ?o }", timeout_s=5.0)
        except Exception as exc:
            raise ValueError(f"cannot reach the SPARQL endpoint {spec}: {one_line(exc)}") from exc
    with _LOCK:
        _WARM.add(world_key(form, method))
    return world


def scorer_loaded(scorer_model: str) -> bool:
    """Whether `get_scorer` would answer without loading a model."""
    from mcts.agents.models import resolve_model_names

    _, name = resolve_model_names(None, (scorer_model or "").strip() or None)
    with _LOCK:
        return name in _SCORERS


def get_scorer(scorer_model: str) -> tuple[Any, str]:
    """(IG scorer, its model name) for re-scoring: no KB and no policy needed, so a trace
    recorded against a KB this machine does not have can still be re-scored."""
    from mcts.agents.models import load_model, resolve_model_names
    from mcts.agents.scorer import IGScorer

    _, name = resolve_model_names(None, (scorer_model or "").strip() or None)
    with _LOCK:
        scorer = _SCORERS.get(name)
    if scorer is None:
        scorer = IGScorer(load_model(name))
        with _LOCK:
            scorer = _SCORERS.setdefault(name, scorer)
    return scorer, name
