"""`python -m kb tool`: a real subprocess, its output and its exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    env.pop("KB", None)
    return subprocess.run(
        [sys.executable, "-m", "kb", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_help_lists_the_tool_command_without_loading_anything():
    done = run_cli("--help", timeout=30)
    assert done.returncode == 0 and "tool" in done.stdout
    sub = run_cli("tool", "--help", timeout=30)
    assert sub.returncode == 0 and "--kb" in sub.stdout


def test_search_nodes_prints_the_observation(fbqa_dir: Path):
    done = run_cli("tool", "--kb", str(fbqa_dir / "kb.nt.gz"), 'SearchNodes("Taylor Swift")')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == '"Taylor Swift" | Description: American singer-songwriter'


def test_a_tool_error_is_printed_as_an_observation_with_exit_0(tiny_ttl: Path):
    done = run_cli("tool", "--kb", str(tiny_ttl), 'ExecuteSPARQL("DELETE WHERE { ?s ?p ?o }")')
    assert done.returncode == 0
    assert done.stdout.startswith("Error: update operations are not allowed")


def test_json_output_carries_the_structured_fields(tiny_ttl: Path):
    done = run_cli("tool", "--kb", str(tiny_ttl), "--json", 'SearchNodes("London")')
    assert done.returncode == 0, done.stderr
    obs = json.loads(done.stdout)
    assert obs["status"] == "ok" and [e["id"] for e in obs["entities"]][:2] == ["m.t_london", "m.t_london_on"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tool", "--kb", "/no/such/kb.ttl", "Done()"), "bad KB spec: no such file or folder"),
        (("tool", "--kb", "ftp://example.org", "Done()"), "bad KB spec: unsupported"),
        (("tool", "--kb", "demo", "Frobnicate(1)"), "cannot parse the action: unknown tool"),
        (("tool", "--kb", "demo", 'SearchNodes("unterminated'), "cannot parse the action"),
    ],
)
def test_bad_spec_or_unparsable_action_exits_2_with_one_clear_line(args: tuple[str, ...], message: str):
    done = run_cli(*args)
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


def test_the_demo_kb_answers_through_the_cli(demo_kb):
    done = run_cli("tool", "--kb", "demo", 'ExecuteSPARQL("ASK { ?s ?p ?o }")')
    assert (done.returncode, done.stdout.strip()) == (0, "True")
