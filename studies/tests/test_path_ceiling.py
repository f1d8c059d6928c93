"""studies/path_ceiling.py and studies/mention_recall.py: what a relation-path agent can score
at best, and how often its first step can find the topic entity (no model run)."""

from __future__ import annotations

import json
from pathlib import Path

from studies.mention_recall import main as mention_recall
from studies.path_ceiling import gold_ties
from studies.path_ceiling import main as path_ceiling

CONJUNCTION = """PREFIX ns: <http://rdf.freebase.com/ns/>
SELECT DISTINCT ?x WHERE {
FILTER (?x != ns:m.0d060g)
ns:m.0d060g ns:location.statistical_region.religions ?y .
?y ns:location.religion_percentage.religion ?x .
?x ns:religion.religion.texts ns:m.01dfl .
?x ns:religion.religion.founding_figures ?c .
?c ns:people.person.nationality ns:m.0f8l9c .
ns:m.0ccd3x ns:film.film.subjects ?x .
}"""


def test_gold_ties_read_each_tie_of_the_answer_to_another_entity_in_pattern_terms() -> None:
    ties = gold_ties(CONJUNCTION, "m.0d060g")
    assert ("m.01dfl", "in", ("religion.religion.texts",)) in ties  # ?x p E: E's incoming edge
    assert ("m.0ccd3x", "out", ("film.film.subjects",)) in ties  # E p ?x
    # through one node: ?x p1 ?c . ?c p2 E is E's incoming CVT pattern, head first
    assert ("m.0f8l9c", "in", ("religion.religion.founding_figures", "people.person.nationality")) in ties
    # the path from the topic entity is no tie, nor its node ?y
    assert all(e != "m.0d060g" for e, _, _ in ties) and len(ties) == 3


def test_the_ceiling_is_the_mean_f1_of_the_gold_paths_answers(fbqa_dir: Path, capsys) -> None:
    assert path_ceiling(["--questions", str(fbqa_dir / "dev.jsonl"), "--part", "test"]) == 0
    rows = {line.split(" | ")[0].strip("| "): line for line in capsys.readouterr().out.splitlines()}
    split = json.loads((Path(__file__).resolve().parents[2] / "examples/splits/fbqa_dev.json").read_text())
    test_ids = set(split["test"])
    with (fbqa_dir / "dev.jsonl").open(encoding="utf-8") as fh:
        records = [r for r in map(json.loads, fh) if r["id"] in test_ids]
    mean = 100 * sum(r["f1_kb_vs_gold"] or 0.0 for r in records) / len(records)
    assert rows["all"].split(" | ")[1:3] == [str(len(records)), f"{mean:.2f}"]
    assert "faithful one-hop" in rows


def test_near_spellings_only_add_mentions(fbqa_dir: Path, capsys) -> None:
    args = ["--kb", str(fbqa_dir / "kb.nt.gz"), "--questions", str(fbqa_dir / "dev.jsonl"), "--list"]
    assert mention_recall(args) == 0
    out = capsys.readouterr().out
    for line in out.splitlines():
        if line.startswith(("| train", "| choose", "| test")):
            _, n, exact, near = (int(c) if c.strip().isdigit() else c for c in line.strip("| ").split(" | "))
            assert 0 < exact <= near <= n
    assert "choose, topic: What language do Chilean people speak" in out
