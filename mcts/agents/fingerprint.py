"""A fingerprint of the code that decides what a recorded run looks like.

Shipped traces (examples/traces/) and cached example runs are only worth showing while
the policy, the prompts, the history cleaning and the IG scorer are the ones that made
them. `agent_code_fingerprint()` hashes those sources so a test (and a cache key) can
tell when a recording no longer matches the code. Python files are hashed through their
syntax tree without docstrings, so comments, docstrings and formatting do not count; data
files byte for byte.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]

# What a recorded tree depends on: candidates (policy, options, prompts, few-shot demos, adapter),
# the cleaned histories (cleaning) and the rewards (scorer, lm_scoring).
FINGERPRINTED = (
    "mcts/agents/policy_guided.py",
    "mcts/agents/guided_options.py",
    "mcts/agents/guided_state.py",
    "mcts/agents/query_builder.py",
    "mcts/agents/prompts.py",
    "mcts/agents/lm_scoring.py",
    "mcts/agents/scorer.py",
    "mcts/search/cleaning.py",
    # Which entities a question names and how popular they are (the first step's options).
    "kb/name_index.py",
    # The shipped policy adapter (a trained relation retriever and option ranker) and the code applying it.
    "mcts/agents/relation_adapter.py",
    "mcts/agents/option_ranker.py",
    "mcts/agents/case_memory.py",
    "models/relation_retriever/weights.npz",
    "models/relation_retriever/relation_adapter.json",
    "models/relation_retriever/option_ranker.json",
    "models/relation_retriever/cases.jsonl",
    "examples/fewshot_demo.md",
    "examples/fewshot_freebase.md",
    "examples/fewshot_wikidata.md",
)


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """The same tree with every module, class and function docstring removed."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def _file_digest(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".py":
        # ast.dump drops comments and layout, and the docstrings go first: a reformat or a
        # reworded docstring does not stale the recordings.
        data = ast.dump(_without_docstrings(ast.parse(data)), include_attributes=False).encode()
    return hashlib.sha256(data).digest()


def agent_code_fingerprint(root: Path = _ROOT) -> str:
    """12 hex digits; changes when any fingerprinted file changes in substance."""
    digest = hashlib.sha256()
    for rel in FINGERPRINTED:
        path = root / rel
        digest.update(rel.encode())
        digest.update(_file_digest(path) if path.exists() else b"missing")
    return digest.hexdigest()[:12]
