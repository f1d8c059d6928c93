"""The search: tree, UCT, strategies, IG rewards, history cleaning, policies, traces, CLI.

Knows nothing of Gradio. Public names are re-exported lazily (PEP 562) so that
`import mcts` stays fast and never pulls in torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Search": "mcts.search.loop",
    "run_search": "mcts.search.loop",
    "SearchResult": "mcts.search.voting",
    "VoteRow": "mcts.search.voting",
    "CostSummary": "mcts.search.cost",
    "RunMeta": "mcts.search.run_meta",
    "Trace": "mcts.search.trace",
    "TraceError": "mcts.search.trace",
    "load_trace": "mcts.search.trace",
    "save_trace": "mcts.search.trace",
    "trace_from_search": "mcts.search.trace",
    "rescore_tree": "mcts.search.rescore",
    "RankChange": "mcts.search.rescore",
    "World": "mcts.agents.world",
    "build_world": "mcts.agents.world",
    "SearchSettings": "mcts.search.settings",
    "Method": "mcts.search.settings",
    "VoteMode": "mcts.search.settings",
    "Tree": "mcts.search.tree",
    "Node": "mcts.search.tree",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcts' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
