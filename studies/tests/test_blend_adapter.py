"""studies/blend_adapter.py: a policy adapter whose retriever's learned term is scaled, between
the zero-shot embedder (0) and the adapter as trained (1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcts.agents.relation_adapter import AdaptedRanker, RelationAdapter
from studies.blend_adapter import blend
from studies.blend_adapter import main as blend_adapter

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "relation_retriever"
PHRASE = "movie actor played in"
RELATIONS = ["film.actor.film -> film.performance.film", "music.artist.genre", "people.person.nationality"]


@pytest.fixture(scope="module")
def base():
    from kb.relation_ranker import default_ranker

    return default_ranker()


def scores(base, folder: Path) -> list[float]:
    return AdaptedRanker(base, RelationAdapter.load(folder)).rank(PHRASE, RELATIONS)


def test_scale_zero_is_the_zero_shot_embedder_and_one_the_adapter(base, tmp_path: Path) -> None:
    blend(SHIPPED, tmp_path / "zero", 0.0)
    blend(SHIPPED, tmp_path / "one", 1.0)
    assert scores(base, tmp_path / "zero") == pytest.approx(base.rank(PHRASE, RELATIONS), abs=1e-5)
    assert scores(base, tmp_path / "one") == pytest.approx(scores(base, SHIPPED), abs=1e-6)


def test_half_lies_between_and_the_rest_of_the_folder_is_copied(base, tmp_path: Path) -> None:
    blend(SHIPPED, tmp_path / "half", 0.5)
    zero, full = base.rank(PHRASE, RELATIONS), scores(base, SHIPPED)
    half = scores(base, tmp_path / "half")
    assert half == pytest.approx([(z + f) / 2 for z, f in zip(zero, full, strict=True)], abs=1e-5)
    assert RelationAdapter.load(tmp_path / "half").info["learned_term_scale"] == 0.5
    for name in ("option_ranker.json", "cases.jsonl"):
        assert (tmp_path / "half" / name).read_bytes() == (SHIPPED / name).read_bytes()


def test_a_bad_source_target_or_scale_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert blend_adapter([str(tmp_path), str(tmp_path / "x")]) == 2
    assert "no relation retriever" in capsys.readouterr().err
    assert blend_adapter([str(SHIPPED), str(tmp_path)]) == 2  # exists
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        blend_adapter([str(SHIPPED), str(tmp_path / "y"), "--scale", "2"])
