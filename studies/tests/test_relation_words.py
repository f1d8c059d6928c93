"""studies/relation_words.py: relation texts written with the KB's own schema words, ranked
zero-shot on the real Freebase subset's gold relation choices (no language model run)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from kb.relation_ranker import default_ranker, readable
from mcts.training.retriever import choices_of
from mcts.training.split import read_jsonl
from mcts.training.trajectories import build_all, read_trajectories
from studies.relation_words import range_types, top1_table, writers

NS = "http://rdf.freebase.com/ns/"
CVT_FILM = "film.actor.film -> film.performance.film"


def _triple(s: str, p: str, o: str) -> str:
    obj = o if o.startswith('"') else f"<{NS}{o}>"
    return f"<{NS}{s}> <{NS}{p}> {obj} .\n"


def test_the_range_is_the_rarest_specific_type_every_object_shares(tmp_path: Path) -> None:
    lines = [
        _triple("m.a", "people.person.nationality", "m.fr"),
        _triple("m.b", "people.person.nationality", "m.de"),
        _triple("m.a", "people.person.height", '"1.8"'),  # a literal: no type to read
        _triple("m.a", "people.person.sibling", "m.b"),
        _triple("m.b", "people.person.sibling", "m.fr"),  # a person and a country: nothing shared
    ]
    for country in ("m.fr", "m.de"):
        lines += [_triple(country, "type.object.type", t)
                  for t in ("location.location", "location.country", "common.topic")]  # fmt: skip
    lines += [_triple(place, "type.object.type", "location.location") for place in ("m.x", "m.y")]
    lines += [_triple("m.b", "type.object.type", "people.person")]
    path = tmp_path / "kb.nt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(lines)

    ranges = range_types(path)
    # location.location is as shared but more common in the KB; common.topic says nothing.
    assert ranges == {"people.person.nationality": "location.country"}


def test_each_writer_keeps_the_path_and_adds_only_schema_words() -> None:
    write = writers({"film.performance.film": "film.film", "people.person.nationality": "location.country"})
    assert write["readable (shipped)"].relation(CVT_FILM) == readable(CVT_FILM)
    assert write["+ range type"].relation(CVT_FILM) == "film actor film, film performance film (film)"
    assert write["property words"].relation(CVT_FILM) == "actor film, performance film"
    assert (
        write["property words + range type"].relation("people.person.nationality")
        == "person nationality (country)"
    )
    # No range known: the text is the writer's body alone.
    assert write["+ range type"].relation("people.person.gender") == readable("people.person.gender")
    # The phrase is the relation phrase unless a row asks with the question.
    asked = {name: w.phrase("films starred", "What films did Rihanna star in?") for name, w in write.items()}
    assert asked["readable (shipped)"] == "films starred"
    assert asked["readable, against the whole question"] == "What films did Rihanna star in?"


@pytest.fixture(scope="module")
def trajectories(fbqa_kb, fbqa_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("traj") / "traj.jsonl"
    build_all(read_jsonl(fbqa_dir / "dev.jsonl")[:6], fbqa_kb, out)
    return read_trajectories(out, valid_only=False)


def test_the_shipped_row_is_the_embedders_own_top1(trajectories: list[dict], fbqa_dir: Path) -> None:
    records = read_jsonl(fbqa_dir / "dev.jsonl")[:6]
    ids = [r["id"] for r in records]
    split = {"train": ids[:4], "choose": ids[4:], "test": []}
    write = writers({})
    table = top1_table(trajectories, records, split, write).splitlines()
    assert len(table) == 2 + len(write)

    choices = [c for t in trajectories if t["id"] in split["train"] for c in choices_of([t])]
    assert choices, "the first questions have relation choices"
    ranker = default_ranker()
    right = 0
    for choice in choices:
        scores = ranker.rank(choice.semantic, list(choice.candidates))
        right += sum(s > scores[choice.gold] + 1e-6 for s in scores) == 0
    assert f"train: all (n={len(choices)})" in table[0]
    assert table[2].split(" | ")[1] == f"{100 * right / len(choices):.1f}"
    # With no range known, a writer that adds the range is the shipped text again.
    assert table[3].split(" | ")[1:] == table[2].split(" | ")[1:]
    assert table[-2].startswith("| readable, against the whole question |")
