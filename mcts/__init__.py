"""The search: tree, UCT, strategies, IG rewards, history cleaning, policies, traces, CLI.

Knows nothing of Gradio. Public names are re-exported lazily (PEP 562) so that
`import mcts` stays fast and never pulls in torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Search": "mcts.search",
    "run_search": "mcts.search",
    "SearchResult": "mcts.voting",
    "VoteRow": "mcts.voting",
    "CostSummary": "mcts.cost",
    "RunMeta": "mcts.run_meta",
    "Trace": "mcts.trace",
    "TraceError": "mcts.trace",
    "load_trace": "mcts.trace",
    "save_trace": "mcts.trace",
    "trace_from_search": "mcts.trace",
    "rescore_tree": "mcts.rescore",
    "RankChange": "mcts.rescore",
    "World": "mcts.world",
    "build_world": "mcts.world",
    "SearchSettings": "mcts.settings",
    "Method": "mcts.settings",
    "VoteMode": "mcts.settings",
    "Tree": "mcts.tree",
    "Node": "mcts.tree",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcts' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
