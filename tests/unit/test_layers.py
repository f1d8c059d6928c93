"""The import rules each package docstring states: no back-edge between layers, no cycle.

Every import counts, module-level, inside functions and under TYPE_CHECKING alike: a lazy
import still ties two modules together, and two modules that need each other are one room
or a missing protocol (STYLE.md 12).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kb", "mcts", "viz", "ui")

# layer -> the project layers it may import (besides itself). Third-party rules below.
ALLOWED = {
    "kb": set(),
    "mcts.search": {"kb"},
    "mcts.agents": {"kb", "mcts.search"},
    "mcts.evaluation": {"kb", "mcts.search", "mcts.agents"},
    "mcts.training": {"kb", "mcts.search", "mcts.agents", "mcts.evaluation"},
    "mcts.cli": {"kb", "mcts", "mcts.search", "mcts.agents", "mcts.evaluation", "mcts.training"},
    "mcts": {"mcts.search", "mcts.agents", "mcts.evaluation", "mcts.cli", "mcts.training"},
    "viz": {"kb", "mcts.search"},
    "ui": {"kb", "mcts.search", "mcts.agents", "mcts.evaluation", "viz"},
    "app": {"ui", "viz", "kb", "mcts.search", "mcts.agents", "mcts.evaluation"},
}
# Third-party modules a layer must never import (heavy or UI): searched by top-level name.
FORBIDDEN_THIRD_PARTY = {
    "kb": {"gradio", "torch", "transformers"},
    "mcts.search": {"gradio", "torch", "transformers", "sentence_transformers"},
    "mcts.agents": {"gradio"},
    "mcts.evaluation": {"gradio"},
    "mcts.training": {"gradio"},
    "viz": {"gradio", "torch", "transformers"},
}

# The relation ranker's encoder: runs the packaged MiniLM with transformers itself (lazily,
# on first use) rather than through sentence-transformers, which imports both anyway.
MODEL_RUNNERS = {("kb.minilm", "torch"), ("kb.minilm", "transformers")}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for pkg in PACKAGES:
        files += sorted((ROOT / pkg).rglob("*.py"))
    return files


def _imports(path: Path) -> set[str]:
    """Every module this file imports, absolute names (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # `from mcts.agents import models` imports the submodule mcts.agents.models
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _layer(module: str) -> str | None:
    if module == "app":
        return "app"
    parts = module.split(".")
    if (
        parts[0] == "mcts"
        and len(parts) > 1
        and parts[1] in {"search", "agents", "evaluation", "cli", "training"}
    ):
        return f"mcts.{parts[1]}"
    if parts[0] in PACKAGES:
        return parts[0]
    return None


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _project_files()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(path) if m in modules and m != name}
    return graph


def test_no_layer_imports_a_layer_above_it() -> None:
    back_edges = []
    for path in _project_files():
        name = _module_name(path)
        layer = _layer(name)
        assert layer is not None, name
        for imported in _imports(path):
            top = imported.split(".")[0]
            target = _layer(imported)
            if target is not None and target != layer and target not in ALLOWED[layer]:
                back_edges.append(f"{name} -> {imported}")
            if top in FORBIDDEN_THIRD_PARTY.get(layer, set()) and (name, top) not in MODEL_RUNNERS:
                back_edges.append(f"{name} -> {imported} (third party)")
    assert back_edges == []


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(graph[node]):
            # A package's __init__ re-exporting its own submodules is not a design cycle.
            if nxt.startswith(node + "."):
                continue
            if colour[nxt] == GREY:
                return [*stack[stack.index(nxt) :], nxt]
            if colour[nxt] == WHITE and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        colour[node] = BLACK
        return None

    for start in sorted(graph):
        if colour[start] == WHITE and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_cycle_between_project_modules() -> None:
    assert _find_cycle(_graph()) is None


@pytest.mark.parametrize(
    "graph, has_cycle",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"a"}}, True),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
        ({"p": {"p.x"}, "p.x": set()}, False),
    ],
)
def test_cycle_finder_finds_cycles_and_only_cycles(graph: dict[str, set[str]], has_cycle: bool) -> None:
    assert (_find_cycle(graph) is not None) == has_cycle


def test_layer_checker_sees_a_back_edge(tmp_path: Path) -> None:
    """The checker is not vacuous: a search module importing the agents layer is flagged."""
    bad = ROOT / "mcts" / "search" / "_layers_probe.py"
    bad.write_text("from mcts.agents import world\n")
    try:
        with pytest.raises(AssertionError):
            test_no_layer_imports_a_layer_above_it()
    finally:
        bad.unlink()
