"""studies/relation_alternatives.py: which relations around a faithful one-hop question's topic
entity answer it besides the gold one, on the real Freebase subset (no model run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb.tools import Toolbox
from studies.relation_alternatives import alternatives_of, f1
from studies.relation_alternatives import main as relation_alternatives

RIHANNA_FILM = "cwq:WebQTrn-686_9aa8fc6555abf1204189368908dcccb2"  # film.actor.film -> film.performance.film
WHITMAN_INFLUENCE = "cwq:WebQTrn-3358_5a1c66f408118c6342c4a0eb350b58de"  # influence_node.influenced_by


def record(fbqa_dir: Path, qid: str) -> dict:
    with (fbqa_dir / "dev.jsonl").open(encoding="utf-8") as fh:
        return next(r for r in map(json.loads, fh) if r["id"] == qid)


@pytest.fixture(scope="module")
def tools(fbqa_kb) -> Toolbox:
    return Toolbox(fbqa_kb, timeout_s=60)


def test_f1_of_answer_sets() -> None:
    assert f1({"a", "b"}, {"a", "b"}) == 1.0
    assert f1({"a"}, {"b"}) == 0.0
    assert f1({"a", "b"}, {"a"}) == pytest.approx(2 / 3)


def test_every_relation_around_an_entity_comes_with_its_direction(tools: Toolbox) -> None:
    around = tools.relations_around("m.085gk")  # Walt Whitman: influenced by, and influenced
    influence = {p.direction for p in around if p.predicates == ("influence.influence_node.influenced_by",)}
    assert influence == {"out", "in"}
    assert all(p.sample.name for p in around)


def test_the_same_relation_stated_from_the_other_end_answers_exactly(fbqa_dir: Path, tools: Toolbox) -> None:
    # From Rihanna: film.actor.film -> film.performance.film out, and the film's own
    # film.film.starring -> film.performance.actor into her: the same films.
    found = alternatives_of(record(fbqa_dir, RIHANNA_FILM), tools, "train", True)
    assert found is not None and not found.gold_in
    assert found.exact_other and found.exact_other_reversed and found.best_other_f1 == 1.0


def test_the_gold_predicate_the_other_way_round_is_counted_and_answers_something_else(
    fbqa_dir: Path, tools: Toolbox
) -> None:
    # "Who influenced Whitman" against "whom Whitman influenced": one text, two directions.
    found = alternatives_of(record(fbqa_dir, WHITMAN_INFLUENCE), tools, "train", True)
    assert found is not None and found.gold_reversed_shown
    assert not found.exact_other and found.best_other_f1 < 1.0


def test_the_table_has_a_row_per_part_and_counts_only_faithful_one_hop_questions(
    fbqa_dir: Path, capsys
) -> None:
    kb = str(fbqa_dir / "kb.nt.gz")
    assert relation_alternatives(["--kb", kb, "--questions", str(fbqa_dir / "dev.jsonl")]) == 0
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ") for line in capsys.readouterr().out.splitlines()
    }
    with (fbqa_dir / "dev.jsonl").open(encoding="utf-8") as fh:
        faithful_one_hop = sum(
            1 for r in map(json.loads, fh) if r["hops"] == 1 and r.get("path_matches_gold_relations") is True
        )
    counted = sum(int(rows[part][1]) for part in ("train", "choose", "test"))
    assert counted == faithful_one_hop
    for part in ("train", "choose", "test"):
        seen, unseen = (int(rows[f"{part}, family {w}"][1]) for w in ("seen", "unseen"))
        assert seen + unseen == int(rows[part][1])
