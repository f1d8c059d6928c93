"""Knowledge bases and the agent's tools. Knows nothing of search, models or Gradio.

Heavy dependencies (pyoxigraph, sentence-transformers) are imported where used so
that `import kb` stays fast.
"""

from kb.actions import TOOL_NAMES, Action, ActionParseError, ToolName
from kb.observation import EntityHit, GraphPattern, Observation, Value

__all__ = [
    "TOOL_NAMES",
    "Action",
    "ActionParseError",
    "EntityHit",
    "GraphPattern",
    "Observation",
    "ToolName",
    "Value",
]
