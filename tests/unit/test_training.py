"""Trajectories from gold queries, the split, the relation retriever and its use in a world."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mcts.agents.models import BUNDLED_POLICY_ADAPTER, describe_adapter, resolve_policy_adapter
from mcts.agents.relation_adapter import AdaptedRanker, RelationAdapter, is_relation_adapter
from mcts.training.split import SPLIT_FILE, load_split, make_split, read_jsonl
from mcts.training.trajectories import path_patterns, read_trajectories


def test_path_hops_map_to_pattern_directions_and_cvt_order():
    assert path_patterns(["people.person.place_of_birth"]) == [("out", ("people.person.place_of_birth",))]
    assert path_patterns(["^music.genre.artists"]) == [("in", ("music.genre.artists",))]
    assert path_patterns(["film.actor.film -> film.performance.film"]) == [
        ("out", ("film.actor.film", "film.performance.film"))
    ]
    # Backward CVT pair: the pattern lists the predicates in edge order, head first.
    assert path_patterns(["^film.performance.actor -> ^film.film.starring"]) == [
        ("in", ("film.film.starring", "film.performance.actor"))
    ]


def test_shipped_split_is_disjoint_and_reproducible(fbqa_dir: Path):
    split = load_split()
    parts = [set(split[p]) for p in ("train", "choose", "test")]
    assert [len(p) for p in parts] == [300, 40, 68]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    records = read_jsonl(fbqa_dir / "dev.jsonl")
    assert set().union(*parts) == {r["id"] for r in records}
    assert make_split(records) == split  # the file is what make_split gives, nothing hand-picked
    assert json.loads(SPLIT_FILE.read_text())["made_by"].startswith("mcts.training.split.make_split")


def test_split_writes_any_id_list_of_a_split_file_and_names_the_parts_it_has(tmp_path: Path):
    from mcts.evaluation.facets import DEMO_SPLIT_FILE
    from mcts.training.split import id_lists, write_part

    questions = Path(__file__).resolve().parents[2] / "examples" / "questions.jsonl"
    parts = id_lists(DEMO_SPLIT_FILE)
    assert parts and sum(map(len, parts.values())) == len(read_jsonl(questions))
    for name, ids in parts.items():
        out = tmp_path / f"{name}.jsonl"
        assert write_part(questions, name, out, DEMO_SPLIT_FILE) == len(ids)
        assert [r["id"] for r in read_jsonl(out)] == ids
    with pytest.raises(ValueError, match="its parts: " + ", ".join(parts)):
        write_part(questions, "test", tmp_path / "x.jsonl", DEMO_SPLIT_FILE)


@pytest.fixture(scope="module")
def dev_trajectories(fbqa_kb, fbqa_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    from mcts.training.trajectories import build_all

    records = read_jsonl(fbqa_dir / "dev.jsonl")[:8]
    out = tmp_path_factory.mktemp("traj") / "traj.jsonl"
    report = build_all(records, fbqa_kb, out)
    assert report.total == 8 and report.valid + sum(report.reasons.values()) == 8
    return read_trajectories(out, valid_only=False)


def test_valid_trajectories_run_real_tools_and_end_at_the_gold_answers(dev_trajectories, fbqa_kb):
    from kb.actions import Action
    from kb.tools import Toolbox

    valid = [t for t in dev_trajectories if t["valid"]]
    assert len(valid) >= 4
    tools = Toolbox(fbqa_kb)
    for t in valid:
        tools_used = [s["action"]["tool"] for s in t["steps"]]
        assert tools_used[:2] == ["SearchNodes", "SearchGraphPatterns"] and tools_used[-1] == "Done"
        assert tools_used.count("ExecuteSPARQL") == t["hops"]
        last_query = [s for s in t["steps"] if s["action"]["tool"] == "ExecuteSPARQL"][-1]
        # The observation is what the real tool returns for that query.
        assert (
            tools.run(Action("ExecuteSPARQL", last_query["action"]["argument"])).text
            == last_query["observation"]
        )
        assert t["text"].startswith(f"Q: {t['question']}") and "Observation:" in t["text"]
        roles = [m["role"] for m in t["messages"]]
        assert roles[:2] == ["system", "user"] and roles.count("assistant") == len(t["steps"])
        assert all(c["gold"] in c["candidates"] for c in t["choices"])


def test_untrained_adapter_ranks_exactly_like_the_zero_shot_embedder():
    from kb.relation_ranker import default_ranker

    base = default_ranker()
    texts = [
        "people.person.place_of_birth",
        "music.genre.artists",
        "film.actor.film -> film.performance.film",
    ]
    untrained = RelationAdapter(u=np.ones((384, 4), np.float32), v=np.zeros((384, 4), np.float32))
    got = AdaptedRanker(base, untrained).rank("born city", texts)
    assert got == pytest.approx(base.rank("born city", texts), abs=1e-6)


def test_retriever_training_saves_adapter_curve_and_resumes(dev_trajectories, tmp_path: Path):
    from mcts.training.retriever import RetrieverConfig, train_retriever

    ids = [t["id"] for t in dev_trajectories]
    train, choose = set(ids[:6]), set(ids[6:])
    config = RetrieverConfig(epochs=2, rank=4)
    first = train_retriever(dev_trajectories, train, choose, tmp_path, config, progress=False)
    assert first["train_choices"] > 0 and (tmp_path / "loss.png").stat().st_size > 0
    again = train_retriever(
        dev_trajectories,
        train,
        choose,
        tmp_path,
        RetrieverConfig(epochs=4, rank=4),
        resume=True,
        progress=False,
    )
    history = json.loads((tmp_path / "history.json").read_text())
    assert len(history["train_loss"]) == 4  # two epochs from the checkpoint, two more
    assert again["config"]["epochs"] == 4
    adapter = RelationAdapter.load(tmp_path)
    assert adapter.u.shape == (384, 4) and is_relation_adapter(tmp_path)


def test_a_blended_retriever_saves_its_learned_term_scaled_and_its_settings_are_read_back(
    dev_trajectories, tmp_path: Path
):
    import numpy as np

    from mcts.training.retriever import RetrieverConfig, retriever_config, train_retriever

    ids = [t["id"] for t in dev_trajectories]
    train, choose = set(ids[:6]), set(ids[6:])
    full, half = tmp_path / "full", tmp_path / "half"
    train_retriever(dev_trajectories, train, choose, full, RetrieverConfig(epochs=2, rank=4), progress=False)
    config = RetrieverConfig(epochs=2, rank=4, learned_term_scale=0.5)
    train_retriever(dev_trajectories, train, choose, half, config, progress=False)
    a, b = RelationAdapter.load(full), RelationAdapter.load(half)
    assert np.abs(a.u).max() > 0
    np.testing.assert_allclose(b.u, a.u * 0.5, rtol=1e-6)  # same epochs, same seed: only U scaled
    np.testing.assert_array_equal(b.v, a.v)
    assert b.info["learned_term_scale"] == 0.5 and "learned_term_scale" not in a.info
    assert retriever_config(half) == config  # the option pipeline trains its fold retrievers so
    assert retriever_config(full) == RetrieverConfig(epochs=2, rank=4)


def test_shipped_adapter_is_default_for_the_bundled_model_only_and_switchable_off():
    assert is_relation_adapter(BUNDLED_POLICY_ADAPTER)
    assert sum(f.stat().st_size for f in BUNDLED_POLICY_ADAPTER.iterdir()) < 20_000_000
    assert resolve_policy_adapter(None, "smollm2-135m") == ""  # the demo KB: base policy (measured better)
    assert resolve_policy_adapter(None, "smollm2-135m", "fbqa") == str(BUNDLED_POLICY_ADAPTER)
    assert resolve_policy_adapter(None, "smollm2-135m", "demo-wikidata") == ""
    assert resolve_policy_adapter("none", "smollm2-135m") == ""
    assert resolve_policy_adapter(None, "meta-llama/Llama-3.1-8B-Instruct") == ""
    assert (
        describe_adapter(str(BUNDLED_POLICY_ADAPTER))
        == "relation_retriever (relation retriever + option ranker + case memory)"
    )
    assert describe_adapter("") == ""


def test_trained_adapter_ranks_gold_relation_first_more_often_on_choose_questions():
    info = json.loads((BUNDLED_POLICY_ADAPTER / "relation_adapter.json").read_text())["trained"]
    assert info["trained"]["choose_top1"] > info["zero_shot"]["choose_top1"]


def test_world_ranks_relations_with_the_adapter_and_traces_name_it(tiny_ttl: Path):
    from kb.spec import open_kb
    from mcts.agents.world import _adapted_tools
    from mcts.search.run_meta import RunMeta

    kb = open_kb(str(tiny_ttl))
    tools, lora = _adapted_tools(kb, str(BUNDLED_POLICY_ADAPTER))
    assert isinstance(tools.ranker, AdaptedRanker) and lora is None
    base_tools, _ = _adapted_tools(kb, "")
    assert not isinstance(base_tools.ranker, AdaptedRanker)
    meta = RunMeta(policy_model="smollm2-135m", policy_adapter=describe_adapter(str(BUNDLED_POLICY_ADAPTER)))
    assert RunMeta.from_dict(meta.to_dict()).policy_adapter == describe_adapter(str(BUNDLED_POLICY_ADAPTER))
    assert RunMeta.from_dict({"policy_model": "x"}).policy_adapter == ""  # traces from before: base policy


def test_guided_policy_uses_the_similarity_weight_chosen_with_the_adapter(tmp_path: Path):
    from mcts.agents.relation_adapter import prior_weight
    from mcts.agents.world import _adapter_priors

    folder = tmp_path / "adapter"
    shutil.copytree(BUNDLED_POLICY_ADAPTER, folder)
    config = folder / "relation_adapter.json"
    info = {k: v for k, v in json.loads(config.read_text()).items() if not k.startswith("similarity_prior")}
    config.write_text(json.dumps(info))
    assert prior_weight(folder) is None and _adapter_priors(str(folder)) is None  # the policy's own priors
    config.write_text(json.dumps({**info, "similarity_prior": 8.0}))
    assert _adapter_priors(str(folder)).similarity == 8.0
    assert _adapter_priors("") is None  # the base policy keeps its own priors
