"""The case memory: training questions as evidence for the guided policy's entity and relation choices."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from kb.observation import GraphPattern, Value
from mcts.agents.case_memory import CASES_FILE, Case, CaseMemory, has_cases, load_cases, save_cases
from mcts.agents.models import BUNDLED_POLICY_ADAPTER
from mcts.agents.query_builder import pattern_edges
from mcts.training.cases import cases_from_records
from mcts.training.split import read_jsonl


class _WordEmbedder:
    """Test double: unit bag-of-words vectors over a fixed vocabulary (cosine = word overlap)."""

    VOCAB = ("movie", "film", "swift", "taylor", "language", "spoken", "country", "character")

    def encode(self, texts, persist=False):
        rows = [[float(w in t.casefold()) for w in self.VOCAB] for t in texts]
        vectors = np.array(rows) + 1e-9
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _pattern(direction: str, predicates: tuple[str, ...]) -> GraphPattern:
    return GraphPattern(direction, predicates, Value("x", "m.x"))  # type: ignore[arg-type]


FILM = ("out", ("film.actor.film", "film.performance.film"))
SPOKEN = ("in", ("location.country.languages_spoken",))


def test_an_option_gets_the_similarity_of_the_closest_case_that_took_the_same_step():
    cases = [
        Case("What movie was Taylor Swift in?", ("m.swift",), (FILM,)),
        Case("What language is spoken in that country?", ("m.english",), (SPOKEN,)),
    ]
    memory = CaseMemory(cases, _WordEmbedder)
    film, spoken = _pattern(*FILM), _pattern(*SPOKEN)
    question = "Which movie with a character named Once-ler was Taylor Swift in?"
    fit = memory.fit(
        question, ["m.swift", "m.english", "m.none"], [("m.swift", film), ("m.english", film)], [film, spoken]
    )
    assert fit.entity["m.swift"] > 0.5 and fit.entity["m.english"] == pytest.approx(0.0, abs=1e-6)
    assert fit.entity["m.none"] == 0.0  # no case names it
    # The first hop counts with the same anchor only; any hop with any anchor.
    assert fit.relation[("m.swift", film)] == pytest.approx(fit.entity["m.swift"])
    assert fit.relation[("m.english", film)] == 0.0
    assert fit.relation_any[film] == pytest.approx(fit.entity["m.swift"])
    # A question is no evidence for itself.
    assert memory.fit(cases[0].question, ["m.swift"], [], []).entity["m.swift"] == 0.0
    assert CaseMemory([], _WordEmbedder).fit(question, ["m.swift"], [], [film]).relation_any == {}


def test_a_chain_gets_the_cases_that_stopped_there_or_went_on_and_an_extension_the_cases_that_took_it():
    one = Case("What movie was Taylor Swift in?", ("m.swift",), (FILM,))
    two = Case("What language is spoken in the country of a Taylor Swift film?", ("m.swift",), (FILM, SPOKEN))
    memory = CaseMemory([one, two], _WordEmbedder)
    spoken, other = _pattern(*SPOKEN), _pattern("out", ("film.film.country",))
    question = "Which language is spoken in the country of the film Taylor Swift was in?"
    sims = memory.similarities(question)
    chain = pattern_edges(*FILM)
    fit = memory.fit(question, [], [], [], ("m.swift", chain), [spoken, other])
    assert (fit.stop, fit.further) == (pytest.approx(sims[0]), pytest.approx(sims[1]))
    assert sims[1] > sims[0] > 0.3
    assert (fit.stop_any, fit.further_any) == (pytest.approx(sims[0]), pytest.approx(sims[1]))
    assert fit.extension == {spoken: pytest.approx(sims[1]), other: 0.0}
    # Another anchor: only the chain-alone features; a chain no case took: nothing.
    elsewhere = memory.fit(question, [], [], [], ("m.other", chain), [spoken])
    assert (elsewhere.stop, elsewhere.further, elsewhere.extension[spoken]) == (0.0, 0.0, 0.0)
    assert elsewhere.further_any == pytest.approx(sims[1])
    after_two = memory.fit(question, [], [], [], ("m.swift", chain + pattern_edges(*SPOKEN)), [])
    assert (after_two.stop, after_two.further) == (pytest.approx(sims[1]), 0.0)
    assert memory.fit(question, [], [], []).further == 0.0  # no current chain query


def test_cases_come_from_records_with_a_path_and_topic_entities_and_survive_a_round_trip(tmp_path: Path):
    records = [
        {
            "question": "q1",
            "topic_entities": [{"mid": "m.1"}],
            "path": ["film.actor.film -> film.performance.film"],
        },
        {
            "question": "q2",
            "topic_entities": [{"mid": "m.2"}],
            "path": ["^location.country.languages_spoken", "a.b"],
        },
        {"question": "no path", "topic_entities": [{"mid": "m.3"}], "path": []},
        {"question": "no topic", "topic_entities": [], "path": ["a.b"]},
        {"question": "mixed", "topic_entities": [{"mid": "m.4"}], "path": ["^a.b -> c.d"]},
    ]
    cases = cases_from_records(records)
    assert [c.question for c in cases] == ["q1", "q2"]
    assert cases[0].hops == (FILM,) and cases[1].hops == (SPOKEN, ("out", ("a.b",)))
    assert not has_cases(tmp_path)
    save_cases(cases, tmp_path)
    assert has_cases(tmp_path) and load_cases(tmp_path) == cases


def test_real_options_carry_case_features_from_the_train_questions(fbqa_kb, fbqa_dir: Path):
    """The real embedder and real options on the Freebase subset: a question whose family is
    in the memory gets case evidence for its topic entity and its gold first relation."""
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox
    from mcts.agents.models import load_model
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.training.trajectories import RecordingRanker, build_trajectory

    records = [r for r in read_jsonl(fbqa_dir / "dev.jsonl") if r.get("path")]
    record = records[0]  # "What movie was Taylor Swift in that had a character named Once-ler?"
    family = [r for r in records[1:] if r["topic_entities"] == record["topic_entities"]]
    assert family, "the subset's questions come in families"
    recorder = RecordingRanker(default_ranker())
    tools = Toolbox(fbqa_kb, ranker=recorder)
    memory = CaseMemory(cases_from_records(family), default_ranker)
    policy = GuidedPolicy(load_model(None), tools, learned_features=True, cases=memory)
    traj = build_trajectory(record, tools, recorder)
    assert traj.valid
    first = dict(policy.options(traj.question, [])[0].features)
    hops = [o for o in policy.options(traj.question, traj.steps[:2]) if o.kind == "hop"]
    gold = next(o for o in hops if o.action.argument == traj.steps[2].action.argument)
    assert first.get("case_entity", 0.0) > 0.3
    assert dict(gold.features).get("case_relation", 0.0) > 0.3
    # Without the memory (the hand-set policy, or an adapter without cases) there is no such feature.
    plain = GuidedPolicy(load_model(None), tools, learned_features=True)
    assert all("case_entity" not in dict(o.features) for o in plain.options(traj.question, []))


def test_a_real_two_hop_question_is_told_to_go_on_where_its_family_went_on(fbqa_kb, fbqa_dir: Path):
    """Real tools, embedder and options: after the first hop of "what time zone is
    pennsylvania in right now?", looking one hop further carries the similarity of its
    family's two-hop question, stopping carries none, and the gold extension is the case's."""
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox
    from mcts.agents.models import load_model
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.training.trajectories import RecordingRanker, build_trajectory

    records = [r for r in read_jsonl(fbqa_dir / "dev.jsonl") if r.get("path")]
    record = next(r for r in records if r["question"] == "what time zone is pennsylvania in right now?")
    family = [r for r in records if r is not record and r["topic_entities"] == record["topic_entities"]]
    assert any(r["path"] == record["path"] for r in family) and len(record["path"]) == 2
    recorder = RecordingRanker(default_ranker())
    tools = Toolbox(fbqa_kb, ranker=recorder)
    memory = CaseMemory(cases_from_records(family), default_ranker)
    policy = GuidedPolicy(load_model(None), tools, learned_features=True, cases=memory)
    traj = build_trajectory(record, tools, recorder)
    assert traj.valid and [s.action.tool for s in traj.steps][2:5] == [
        "ExecuteSPARQL", "SearchGraphPatterns", "ExecuteSPARQL"
    ]  # fmt: skip
    after_first = {o.kind: dict(o.features) for o in policy.options(traj.question, traj.steps[:3])}
    assert after_first["answer_patterns"].get("case_further", 0.0) > 0.5
    assert after_first["done"].get("case_stop", 0.0) == 0.0
    extensions = policy.options(traj.question, traj.steps[:4])
    gold = next(o for o in extensions if o.action.argument == traj.steps[4].action.argument)
    assert dict(gold.features).get("case_relation", 0.0) > 0.5
    assert all(dict(o.features).get("case_relation", 0.0) == 0.0 for o in extensions if o is not gold)


def test_world_reads_the_case_memory_saved_with_the_adapter(tmp_path: Path):
    from mcts.agents.world import _adapter_cases

    folder = tmp_path / "adapter"
    shutil.copytree(BUNDLED_POLICY_ADAPTER, folder)
    (folder / CASES_FILE).unlink(missing_ok=True)
    assert _adapter_cases(str(folder)) is None and _adapter_cases("") is None
    save_cases([Case("q", ("m.1",), (FILM,))], folder)
    assert [c.question for c in _adapter_cases(str(folder)).cases] == ["q"]
