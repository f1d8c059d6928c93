"""App start-up configuration: flags over env over defaults; example files read defensively."""

from __future__ import annotations

import json

from ui.config import AppConfig, bundled_trace_path, bundled_traces, load_example_questions, parse_config


def test_defaults_are_local_and_offline() -> None:
    cfg = parse_config([], env={})
    assert (cfg.host, cfg.port, cfg.kb, cfg.policy_model, cfg.scorer_model) == (
        "127.0.0.1",
        7860,
        "demo",
        "",
        "",
    )


def test_flags_beat_env_and_env_beats_gradio_variables() -> None:
    env = {
        "HOST": "0.0.0.0",
        "PORT": "9000",
        "KB": "http://x/sparql",
        "SCORER_MODEL": "big",
        "GRADIO_SERVER_PORT": "1",
    }
    cfg = parse_config([], env=env)
    assert (cfg.host, cfg.port, cfg.kb, cfg.scorer_model) == ("0.0.0.0", 9000, "http://x/sparql", "big")
    assert parse_config(["--port", "8001", "--kb", "demo"], env=env).port == 8001
    spaces = parse_config([], env={"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "7861"})
    assert (spaces.host, spaces.port) == ("0.0.0.0", 7861)
    assert AppConfig().queue_size > 0


def test_example_questions_skip_broken_lines_and_missing_files(tmp_path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        "\n".join(
            [json.dumps({"question": "Who directed Inception?"}), "{broken", json.dumps({"q": 1}), "[]"]
        )
    )
    assert load_example_questions(path) == ["Who directed Inception?"]
    assert load_example_questions(tmp_path / "absent.jsonl") == []


def test_only_shipped_traces_can_be_opened_by_name(tmp_path) -> None:
    (tmp_path / "a.json").write_text("{}")
    assert bundled_traces(tmp_path) == ["a.json"]
    assert bundled_trace_path("a.json", tmp_path) == tmp_path / "a.json"
    assert bundled_trace_path("../../etc/passwd", tmp_path) is None
    assert bundled_trace_path("", tmp_path) is None


def test_every_shipped_trace_loads_replays_and_draws() -> None:
    from mcts.search.trace import load_trace
    from ui.config import TRACES_DIR
    from viz import build_figure, replay_rounds, tree_at_round

    names = bundled_traces()
    assert len(names) >= 2, "examples/traces/ ships recorded runs for the trace viewer"
    for name in names:
        trace = load_trace(TRACES_DIR / name)
        tree = trace.to_tree()
        assert len(tree) > 1 and trace.result is not None
        rounds = replay_rounds(trace.events)
        frame = tree_at_round(tree, trace.events, rounds)
        assert [n.visits for n in frame.tree.nodes] == [n.visits for n in tree.nodes]
        fig = build_figure(tree)
        assert sum(len(t.customdata) for t in fig.data if t.customdata is not None) == len(tree)


def test_the_page_offers_both_demo_kbs_with_their_own_example_questions() -> None:
    import gradio as gr

    from app import build_app
    from ui.config import EXAMPLES_FILE, WIKIDATA_EXAMPLES_FILE

    assert load_example_questions(WIKIDATA_EXAMPLES_FILE)  # the Wikidata demo has examples
    demo = build_app()
    kb_boxes = [c for c in demo.blocks.values() if isinstance(c, gr.Dropdown) and c.label == "Knowledge base"]
    assert kb_boxes, "the knowledge-base selector is missing"
    choices = {value for _, value in kb_boxes[0].choices}
    assert {"demo", "demo-wikidata"} <= choices
    # The picker shows every question of both files (its KB column is hidden: a click still fills it).
    example_sets = [c for c in demo.blocks.values() if isinstance(c, gr.Dataset)]
    shown = {row[0] for ds in example_sets for row in ds.samples}
    for path in (EXAMPLES_FILE, WIKIDATA_EXAMPLES_FILE):
        assert set(load_example_questions(path, limit=100)) <= shown, path.name
