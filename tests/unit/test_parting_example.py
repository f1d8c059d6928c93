"""The pointer to a shipped example where IG and the constant reward searched differently is
computed from the recorded traces, so its words always match them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mcts.search.trace import load_trace
from ui.parting_example import parting_markdown, partings

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def test_the_shipped_pairs_include_one_where_the_searches_differ() -> None:
    found = partings(TRACES)
    assert found, "no shipped IG/constant pair searches differently: the class has no example to see"
    p = found[0]
    assert p.ig_visits != p.constant_visits
    line = parting_markdown(TRACES)
    assert p.question in line and f"{p.ig_visits} time(s)" in line


def _pair_dir(tmp_path: Path, files: list[str]) -> Path:
    manifest = json.loads((TRACES / "manifest.json").read_text())
    manifest["traces"] = [e for e in manifest["traces"] if e["file"] in files]
    for name in files:
        shutil.copy(TRACES / name, tmp_path / name)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def test_a_twin_that_visits_the_same_nodes_is_not_offered(tmp_path: Path) -> None:
    folder = _pair_dir(tmp_path, ["fast-inception.json", "constant-inception.json"])
    a = load_trace(folder / "fast-inception.json").to_tree()
    b = load_trace(folder / "constant-inception.json").to_tree()
    assert [n.visits for n in a.nodes] == [n.visits for n in b.nodes]  # the shipped Inception twins agree
    assert partings(folder) == [] and parting_markdown(folder) == ""


def test_a_missing_or_broken_manifest_offers_nothing(tmp_path: Path) -> None:
    assert parting_markdown(tmp_path) == ""
    (tmp_path / "manifest.json").write_text("{not json")
    assert parting_markdown(tmp_path) == ""
