"""Traces: save -> load gives an identical tree, events and result; bad files give one clear line."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from mcts.search.cleaning import CleaningRule
from mcts.search.loop import Search
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.rescore import rescore_tree
from mcts.search.run_meta import RunMeta
from mcts.search.serialize import node_to_dict
from mcts.search.settings import Method, SearchSettings
from mcts.search.trace import (
    TRACE_SCHEMA_VERSION,
    TraceError,
    load_trace,
    save_trace,
    trace_from_json,
    trace_from_search,
    trace_to_json,
)
from mcts.search.tree import Node
from tests.toy_world import QUESTION, ToyScorer, ig_from_reward, toy_world

META = RunMeta(kb_spec="toy", policy_model="toy", scorer_model="toy-ig", policy_kind="toy")


def _finished(method: Method, **changes) -> Search:
    p, s, t = toy_world()
    search = Search(
        QUESTION, SearchSettings(method=method, **changes), policy=p, scorer=s, tools=t, meta=META
    )
    for _ in search.run():
        pass
    return search


@pytest.mark.parametrize("method", list(Method))
def test_saved_trace_loads_back_into_an_identical_tree(tmp_path, method):
    search = _finished(method, rounds=3)
    path = save_trace(trace_from_search(search), tmp_path / "run" / "trace.json")
    loaded = load_trace(path)
    tree = loaded.to_tree()
    assert len(tree) == len(search.tree)
    for original, copy in zip(search.tree.nodes, tree.nodes, strict=True):
        for f in fields(Node):
            assert getattr(copy, f.name) == getattr(original, f.name), (original.id, f.name)
        assert node_to_dict(copy) == node_to_dict(original)  # also observation.meta
    assert loaded.events == tuple(search.events_log)
    assert loaded.result == search.result
    assert loaded.settings == search.settings and loaded.meta == META
    assert loaded.question == QUESTION and loaded.schema_version == TRACE_SCHEMA_VERSION
    assert "drop_thoughts" in loaded.cleaning_rules


def test_classic_trace_keeps_simulations(tmp_path):
    search = _finished(Method.CLASSIC, rounds=2)
    tree = load_trace(save_trace(trace_from_search(search), tmp_path / "t.json")).to_tree()
    assert any(n.simulation for n in tree.nodes)
    assert [n.simulation for n in tree.nodes] == [n.simulation for n in search.tree.nodes]


def test_save_is_atomic_and_overwrites(tmp_path):
    search = _finished(Method.SINGLE)
    target = tmp_path / "t.json"
    target.write_text("old")
    save_trace(trace_from_search(search), target)
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary file left
    assert json.loads(target.read_text())["schema_version"] == TRACE_SCHEMA_VERSION


def test_trace_of_a_running_search_has_no_result_yet():
    p, s, t = toy_world()
    search = Search(QUESTION, SearchSettings(), policy=p, scorer=s, tools=t)
    gen = search.run()
    for _ in range(5):
        next(gen)
    trace = trace_from_json(trace_to_json(trace_from_search(search)))
    assert trace.result is None and len(trace.to_tree()) == len(search.tree)
    gen.close()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not an object"),
        ('{"schema_version": 99}', "unsupported trace schema_version 99"),
        ('{"schema_version": 1, "settings": {}, "nodes": []}', "missing the field 'question'"),
        (
            '{"schema_version": 1, "question": "q", "settings": {"rounds": 0}, "nodes": []}',
            "rounds must be >= 1",
        ),
        ('{"schema_version": 1, "question": "q", "settings": {}, "nodes": []}', "at least the root"),
        (
            '{"schema_version": 1, "question": "q", "settings": {}, "nodes": [], "events": [{"kind": "boom"}]}',
            "unknown event kind 'boom'",
        ),
    ],
)
def test_bad_trace_files_raise_one_clear_line(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    assert fragment in message and "\n" not in message


def test_missing_trace_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="trace file not found"):
        load_trace(tmp_path / "nope.json")


def test_tampered_tree_links_are_rejected(tmp_path):
    search = _finished(Method.SINGLE)
    data = json.loads(trace_to_json(trace_from_search(search)))
    data["nodes"][0]["children"] = []
    with pytest.raises(TraceError, match="not listed among the children"):
        trace_from_json(json.dumps(data))


# ---- re-scoring a loaded trace (mcts.search.rescore) -------------------------------------------


class _InvertedScorer(ToyScorer):
    """Prefers what the toy scorer dislikes: flips sibling orders."""

    def score(self, question, cleaned_histories, *, alpha, beta, prompt=DEFAULT_IG_PROMPT, variant="paper"):
        out = super().score(question, cleaned_histories, alpha=alpha, beta=beta, prompt=prompt)
        return [ig_from_reward(2.0 - s.reward, alpha, beta) for s in out]


def test_rescoring_with_the_same_scorer_and_rules_changes_nothing():
    search = _finished(Method.FAST, rounds=4)
    new, changes = rescore_tree(search.tree, ToyScorer(), search.settings)
    assert changes == []
    for a, b in zip(search.tree.nodes, new.nodes, strict=True):
        assert b.reward == a.reward and b.visits == a.visits
        assert b.value_sum == pytest.approx(a.value_sum)
        assert b.cleaned_history == a.cleaned_history


def test_rescoring_with_another_scorer_reorders_siblings_and_recomputes_values():
    search = _finished(Method.FAST, rounds=4)
    before = node_to_dict(search.tree.root)
    scorer = _InvertedScorer()
    new, changes = rescore_tree(search.tree, scorer, search.settings)
    assert node_to_dict(search.tree.root) == before  # the original tree is untouched
    assert changes and changes[0].parent_id == 0
    assert changes[0].after == tuple(reversed(changes[0].before))  # all rewards distinct at the root
    for node in new.nodes[1:]:
        old = search.tree[node.id]
        assert node.reward == pytest.approx(2.0 - old.reward)
    # W is the sum of decayed rewards over the subtree.
    for node in new.nodes:
        subtree = [node.id]
        for i in subtree:
            subtree.extend(new[i].children)
        expected = sum(new[i].reward * new[i].decay for i in subtree if not new[i].is_root)
        assert node.value_sum == pytest.approx(expected)
    # One scorer batch per sibling group; no policy or tool call.
    assert len(scorer.batches) == sum(1 for n in new.nodes if n.children)


def test_rescoring_with_other_rules_changes_the_cleaned_histories():
    search = _finished(Method.FAST, rounds=2)
    keep_all = {CleaningRule.KEEP_STRUCTURED_ARGUMENTS}  # every removal rule off
    new, _ = rescore_tree(search.tree, ToyScorer(), search.settings, cleaning_rules=keep_all)
    assert all(n.cleaned_history == n.raw_history for n in new.nodes[1:])
    assert all("Thought:" not in n.cleaned_history for n in search.tree.nodes[1:])


def test_rescoring_a_classic_tree_scores_the_simulated_end_state():
    search = _finished(Method.CLASSIC, rounds=2)
    new, _ = rescore_tree(search.tree, ToyScorer(), search.settings)
    for a, b in zip(search.tree.nodes, new.nodes, strict=True):
        assert b.cleaned_history == a.cleaned_history and b.reward == a.reward


# Two traces of schema version 1 (before priors), as the project first shipped them.
V1_TRACES = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name", ["trace_v1_fast_obama.json", "trace_v1_constant_inception.json"])
def test_version_1_traces_load_with_priors_replay_and_rescore(name):
    from viz.replay import tree_at_round

    raw = json.loads((V1_TRACES / name).read_text())
    assert raw["schema_version"] == 1
    trace = load_trace(V1_TRACES / name)
    assert trace.schema_version == TRACE_SCHEMA_VERSION == 3
    tree = trace.to_tree()
    for parent in tree.nodes:
        if parent.children:
            assert sum(tree[c].prior for c in parent.children) == pytest.approx(1.0)
    assert tree_at_round(tree, trace.events, 1).tree.root.children
    new, _ = rescore_tree(tree, ToyScorer(), trace.settings)
    assert len(new) == len(tree)
    again = trace_from_json(trace_to_json(trace))  # written back as the current version, same priors
    assert [n.prior for n in again.to_tree().nodes] == [n.prior for n in tree.nodes]


def test_version_2_trace_loads_without_ig_details_and_replays():
    """Version 2 (priors, before IG details): every node loads with ig_detail None."""
    from viz.replay import tree_at_round

    name = "trace_v2_fast_inception.json"
    assert json.loads((V1_TRACES / name).read_text())["schema_version"] == 2
    trace = load_trace(V1_TRACES / name)
    tree = trace.to_tree()
    assert trace.schema_version == TRACE_SCHEMA_VERSION
    assert all(n.ig_detail is None for n in tree.nodes)
    assert any(n.reward is not None for n in tree.nodes)
    assert tree_at_round(tree, trace.events, 1).tree.root.children
    assert "ig_detail" not in (V1_TRACES / name).read_text()


def test_ig_details_round_trip_and_follow_replay(tmp_path):
    from mcts.search.steps import IGDetail
    from viz.replay import tree_at_round

    search = _finished(Method.FAST, rounds=2)
    scored = [n for n in search.tree.nodes if n.reward is not None]
    for i, node in enumerate(scored):
        node.ig_detail = IGDetail(
            history_tokens=10 + i,
            question_nlls=(0.5, 1.25 + i),
            question_pieces=("Who", " directed <b>it</b>?"),
            base_question_nlls=(2.0, 3.0),
        )
    loaded = load_trace(save_trace(trace_from_search(search), tmp_path / "t.json")).to_tree()
    assert [n.ig_detail for n in loaded.nodes] == [n.ig_detail for n in search.tree.nodes]
    frame = tree_at_round(loaded, search.events_log, 1).tree
    for node in frame.nodes:  # a node not scored yet at round 1 shows no detail
        assert (node.ig_detail is None) == (node.reward is None), node.id
