"""`python -m mcts run|replay` on the toy world (the real world: tests/unit/test_search_real.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mcts.agents.world
from mcts.agents.world import World
from mcts.cli.main import main
from mcts.search.run_meta import RunMeta
from tests.toy_world import QUESTION, toy_world

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy(monkeypatch):
    calls = []

    def fake_build_world(kb_spec=None, **kwargs):
        calls.append((kb_spec, kwargs))
        policy, scorer, tools = toy_world()
        return World(
            kb=None, tools=tools, policy=policy, scorer=scorer, meta=RunMeta(kb_spec="toy", policy_kind="toy")
        )

    monkeypatch.setattr(mcts.agents.world, "build_world", fake_build_world)
    return calls


def test_help_is_fast_and_lists_the_commands():
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcts", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0 and "run" in out.stdout and "replay" in out.stdout
    assert "torch" not in out.stderr and "transformers" not in out.stderr  # nothing heavy imported


def test_run_prints_rounds_answer_votes_and_cost(toy, capsys, tmp_path):
    trace = tmp_path / "t.json"
    code = main(["run", "--kb", "toy", "-q", QUESTION, "--rounds", "3", "--trace", str(trace)])
    out = capsys.readouterr().out
    assert code == 0
    assert "policy model:" in out.splitlines()[0]
    assert [line for line in out.splitlines() if line.startswith("round ")][0].startswith("round 1: 5 nodes")
    assert "answer: " in out and "votes:" in out and "cost: 3 policy calls" in out
    assert trace.exists()
    assert toy[0][0] == "toy" and toy[0][1]["policy_kind"] == "guided"


def test_run_json_prints_one_object_with_the_documented_keys(toy, capsys):
    code = main(["run", "-q", QUESTION, "--method", "vote", "--seed", "3", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)  # the whole stdout is one JSON object
    for key in ("answer", "sparql", "nodes", "rounds", "stop_reason", "terminals"):
        assert key in data
    assert set(data["cost"]) >= {"policy_calls", "ig_forward_passes", "tool_calls", "wall_s"}
    assert data["method"] == "vote" and data["cost"]["ig_forward_passes"] == 0
    assert isinstance(data["answer"], list) and data["answer"]


def test_settings_flags_reach_the_search(toy, capsys):
    main(["run", "-q", QUESTION, "--rounds", "1", "--k", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["rounds"] == 1 and data["nodes"] == 3  # root + k children


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run", "-q", "  "], "invalid question: the question is empty"),
        (["run", "-q", QUESTION, "--rounds", "0"], "rounds must be >= 1"),
        (["run", "-q", QUESTION, "--rules", "drop_thoughts,nope"], "unknown cleaning rule(s) nope"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(toy, capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and fragment in err and "\n" not in err


def test_replay_prints_the_tree_with_statistics(toy, capsys, tmp_path):
    trace = tmp_path / "t.json"
    main(["run", "-q", QUESTION, "--rounds", "2", "--trace", str(trace)])
    capsys.readouterr()
    assert main(["replay", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"question: {QUESTION}"
    node_lines = [line for line in lines if line.lstrip().startswith("#")]
    assert node_lines[0].startswith("#0 root  N=")
    assert node_lines[1].startswith("  #") and "UCT=" in node_lines[1] and "PPL(H')=20.00" in node_lines[1]
    assert len(node_lines) == json.loads(trace.read_text())["result"]["nodes"]


def test_replay_of_a_bad_file_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["replay", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: not valid JSON")


def test_a_kb_spec_that_does_not_exist_is_a_clear_error(capsys):
    code = main(["run", "--kb", "/no/such/file.nt", "-q", QUESTION])
    assert code == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("script", "target"),
    [("mcts-kbqa", "mcts.cli.main:main"), ("mcts-kb", "kb.__main__:main"), ("mcts-kbqa-app", "app:main")],
)
def test_the_console_scripts_are_installed_and_answer_help(script: str, target: str) -> None:
    from importlib.metadata import entry_points

    assert {e.name: e.value for e in entry_points(group="console_scripts")}.get(script) == target
    done = subprocess.run(
        [str(Path(sys.executable).parent / script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr[-2000:]
