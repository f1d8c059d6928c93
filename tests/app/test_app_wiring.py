"""The app's logic without a server or a model: typed forms, wiring by name, the run
cache, gold answers, presets, loading a shipped trace, re-score flips."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcts.search.presets import PRESETS
from mcts.search.rescore import RankChange
from mcts.search.settings import Method, SearchSettings
from mcts.search.trace import load_trace
from ui import presets, run_cache
from ui.config import TRACES_DIR
from ui.forms import SETTINGS_FIELDS, CompareInputs, RunInputs, form_values, preset_of
from ui.gold import check, gold_answers, gold_markdown
from ui.rescoring import flipped_nodes
from ui.session import Session

gr = pytest.importorskip("gradio")


def form(**changes) -> RunInputs:
    values = {
        "question": "Who directed Inception?", "kb_spec": "demo", "rounds": 3, "k": 2, "c": 1.0, "alpha": 2.0,
        "beta": 10.0, "expected_depth": 7, "max_depth": 10, "early_stop": 5, "seed": 0, "policy_kind": "guided",
        "policy_model": "", "scorer_model": "", "policy_endpoint": "", "preset": "", "method": "fast",
        "rules": [], "ig_prompt": "p",
    }  # fmt: skip
    return RunInputs(**{**values, **changes})


def test_the_form_builds_settings_over_its_preset_and_refuses_bad_values_in_one_line() -> None:
    s = form(rounds=4.0, k=3.0, early_stop=2).settings("fast")
    assert (s.rounds, s.k, s.early_stop_terminals, s.method) == (4, 3, 2, Method.FAST)
    small = form(preset="small").settings("beam")
    hidden = PRESETS["small"].settings
    assert (small.selection, small.vote_mode, small.method) == (
        hidden.selection,
        hidden.vote_mode,
        Method.BEAM,
    )
    assert small.rounds == 3, "the form's visible values win over the preset's"
    with pytest.raises(ValueError, match="bad setting") as err:
        form(rounds="many").settings("fast")
    assert "\n" not in str(err.value)
    # the form's own check holds every setting to the range its field is drawn with
    with pytest.raises(ValueError, match=r"bad setting: rounds must be between 1 and 30 \(got 1000000\)\."):
        form(rounds=10**6).settings("fast")
    with pytest.raises(ValueError, match=r"bad setting: c must be at least 0 \(got -1\)\."):
        form(c=-1.0).settings("fast")
    with pytest.raises(ValueError, match=r"max_depth must be a number between 1 and 20 \(got inf\)"):
        form(max_depth=float("inf")).settings("fast")
    with pytest.raises(ValueError, match="empty"):
        form(question="  ").checked_question()


def test_form_values_round_trip_through_the_form_and_name_their_preset() -> None:
    for name, preset in PRESETS.items():
        values = form_values(preset.settings)
        assert values["preset"] == name
        rebuilt = form(**{k: values[k] for k in (*SETTINGS_FIELDS, "preset")}).settings(values["method"])
        assert rebuilt == preset.settings
    odd = replace(SearchSettings(), temperature=0.1)  # a knob no preset and no form field has
    assert preset_of(odd) == ""


def test_compare_inputs_share_the_search_form() -> None:
    names = CompareInputs.field_names()
    assert {"question", "kb_spec", *SETTINGS_FIELDS, "preset", "method_a", "method_b"} <= set(names)
    assert "method" not in names


def test_wiring_maps_names_to_components_and_refuses_an_unlisted_output() -> None:
    from ui.wiring import Page

    with gr.Blocks():
        state = gr.State()
        comps = {"status": gr.Markdown(), "plot": gr.Markdown(), "node": gr.Textbox()}
        page = Page(state, comps)

        def handler(session: Session, node: str) -> dict:
            return {"status": f"node {node}"} if node != "bad" else {"nowhere": 1}

        wired = page.wire(handler, inputs={"node": "node"}, outputs=["status"])
    assert wired["inputs"] == [state] and wired["inputs_kwargs"] == {"node": comps["node"]}
    assert wired["outputs"] == [comps["status"]]
    assert wired["fn"](Session(), node="3") == {comps["status"]: "node 3"}
    with pytest.raises(KeyError, match="nowhere"):
        wired["fn"](Session(), node="bad")


def test_a_streamed_handler_gets_its_typed_form() -> None:
    from ui.wiring import Page

    seen = []

    def run(session: Session, f: RunInputs, request=None):
        seen.append(f)
        yield {"status": f.question}

    with gr.Blocks():
        comps = {name: gr.Textbox() for name in RunInputs.field_names()} | {"status": gr.Markdown()}
        wired = Page(gr.State(), comps).wire(run, form=RunInputs, outputs=["status"])
    values = {name: getattr(form(), name) for name in RunInputs.field_names()}
    assert list(wired["fn"](Session(), **values)) == [{comps["status"]: "Who directed Inception?"}]
    assert seen == [form()]


def test_gold_answers_exist_only_for_example_questions_on_their_kb() -> None:
    gold = gold_answers("who  directed inception?", "demo")
    assert gold and gold[0].name == "Christopher Nolan"
    assert gold_answers("Who directed Inception?", "http://example.org/sparql") is None
    assert gold_answers("Who painted the Mona Lisa in 1887?", "demo") is None
    assert "Christopher Nolan" in gold_markdown(check("Who directed Inception?", "demo", None))


def test_the_run_cache_keys_by_everything_and_stays_bounded(tmp_path) -> None:
    trace = load_trace(TRACES_DIR / "fast-inception.json")
    args = {
        "policy_kind": "guided",
        "policy_model": "m",
        "scorer_model": "m",
        "rules": ["a"],
        "ig_prompt": "p",
    }
    key = run_cache.run_key(trace.question, "demo", trace.settings, **args, code="v1")
    assert key == run_cache.run_key(" who DIRECTED  inception? ", "demo", trace.settings, **args, code="v1")
    others = [
        run_cache.run_key(trace.question, "demo-wikidata", trace.settings, **args, code="v1"),
        run_cache.run_key(trace.question, "demo", trace.settings.with_(k=5), **args, code="v1"),
        run_cache.run_key(trace.question, "demo", trace.settings, **{**args, "scorer_model": "x"}, code="v1"),
        run_cache.run_key(trace.question, "demo", trace.settings, **args, code="v2"),
        run_cache.run_key(trace.question, "demo", trace.settings, **args, policy_adapter="lora", code="v1"),
    ]
    assert key not in others and len(set(others)) == len(others)
    assert run_cache.lookup(key, tmp_path) is None
    assert run_cache.store(trace, key, tmp_path) is not None
    found, _path = run_cache.lookup(key, tmp_path)
    assert found.question == trace.question and len(found.nodes) == len(trace.nodes)
    for i in range(5):
        run_cache.store(trace, f"extra{i}", tmp_path, max_entries=3)
    assert len(list(tmp_path.glob("*.json"))) == 3
    (tmp_path / "broken.json").write_text("{not json")
    assert run_cache.lookup("broken", tmp_path) is None and not (tmp_path / "broken.json").exists()
    shipped = replace(trace, meta=replace(trace.meta, policy_adapter="retriever"))
    assert run_cache.trace_key(shipped, code="v1") != run_cache.trace_key(trace, code="v1")
    assert run_cache.cacheable("Who directed Inception?", "demo")
    assert not run_cache.cacheable("Who directed Inception?", "/some/kb.ttl")


def test_without_a_gpu_the_app_opens_with_the_small_preset_and_says_how_long() -> None:
    cpu = presets.machine_defaults(gpu=False)
    assert cpu.settings == PRESETS["small"].settings and cpu.preset == "small"
    assert "No GPU" in cpu.note and "about" in cpu.note
    assert set(cpu.buttons) == {"small", "paper"} and all("about" in label for label in cpu.buttons.values())
    gpu = presets.machine_defaults(gpu=True)
    assert gpu.settings == PRESETS["paper"].settings
    filled = presets.preset_handler("paper")(Session())
    assert filled["preset"] == "paper" and filled["rounds"] == SearchSettings().rounds


def test_loading_a_shipped_trace_fills_the_form_and_the_replay(monkeypatch) -> None:
    from ui import traces

    session = Session()
    out = traces.load_bundled(session, "fast-obama.json")
    trace = load_trace(TRACES_DIR / "fast-obama.json")
    assert out["question"] == trace.question and out["kb_spec"] == "demo"
    assert (out["method"], out["rounds"], out["k"]) == ("fast", trace.settings.rounds, trace.settings.k)
    assert out["status"].startswith("**Loaded a trace:")
    assert "Gold answer" in out["answer"] and "F1" in out["answer"]
    assert out["replay_status"].startswith(f"Round {trace.result.rounds} of")  # the rounds it ran
    assert traces.load_bundled(session, "../secret.json")["status"].startswith("**Problem:**")


def test_a_rescore_flip_marks_the_children_that_changed_place() -> None:
    changes = [RankChange(parent_id=0, before=(1, 2, 3), after=(2, 1, 3)), RankChange(4, (5, 6), (5, 6))]
    assert flipped_nodes(changes) == {1, 2}


def test_the_run_cache_has_its_own_folder_beside_the_model_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("MCTS_KBQA_RUN_CACHE", raising=False)
    monkeypatch.setenv("MCTS_KBQA_CACHE", str(tmp_path))
    assert run_cache.cache_dir() == tmp_path / "runs", "eviction never touches the converted model"
    monkeypatch.setenv("MCTS_KBQA_RUN_CACHE", str(tmp_path / "elsewhere"))
    assert run_cache.cache_dir() == tmp_path / "elsewhere"


def test_preset_buttons_show_the_time_this_machine_measured(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MCTS_KBQA_RUN_CACHE", str(tmp_path))
    small = PRESETS["small"].settings
    assert presets.expected_s("small", "cpu") == (presets.EXPECTED_S[("small", "cpu")], False)
    presets.record_time(small.with_(rounds=small.rounds + 1), 5.0, gpu=False)  # not the preset: not timed
    assert presets.expected_s("small", "cpu")[1] is False
    for wall in (50.0, 70.0, 40.0):
        presets.record_time(small.with_(method=Method.BEAM), wall, gpu=False)
    assert presets.expected_s("small", "cpu") == (50.0, True)
    assert "(timed here)" in presets.machine_defaults(gpu=False).buttons["small"]


@pytest.mark.parametrize(
    ("trace", "has_detail"), [("fast-inception.json", True), ("constant-inception.json", False)]
)
def test_inspecting_a_replayed_node_shows_the_ig_lens_without_a_model(trace: str, has_detail: bool) -> None:
    from ui import traces
    from ui.inspector import inspect_node
    from viz.ig_lens import NO_DETAIL

    session = Session()
    traces.load_bundled(session, trace)
    scored = next(n.id for n in session.tree.nodes if not n.is_root and n.reward is not None)
    detail = inspect_node(session, str(scored))["detail"]
    assert "IG lens: why this reward" in detail
    assert (NO_DETAIL not in detail) is has_detail
    assert ("W/N" in detail) or ("exploration" in detail.lower())
