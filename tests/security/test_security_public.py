"""Public mode on the server side: the fields it ignores, its limits and the run queue.

Public mode must ignore, server-side, what a client sends for the model, policy endpoint
and KB fields (a hidden field is still an input a script can fill), and every limit has
a public value. `Form` has the field names of the app's `ui.forms.RunInputs`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from ui.public import (
    LIMITS,
    PUBLIC_LIMITS,
    Busy,
    PublicMode,
    RunGate,
    enforce,
    escape,
    over_time,
    prune_traces,
    session_folder,
)

SPACES = {"SPACE_ID": "someone/mcts-kbqa"}


@dataclass(frozen=True)
class Form:
    question: str = "Where was Barack Obama born?"
    kb_spec: str = "demo"
    policy_kind: str = "guided"
    policy_model: str = ""
    scorer_model: str = ""
    policy_endpoint: str = ""
    ig_prompt: str = "Based on this interaction history, the original question is:"


def _form(**overrides) -> Form:
    return Form(**overrides)


def test_public_mode_is_on_on_spaces_unless_the_operator_turns_it_off():
    assert PublicMode.from_env({"PUBLIC_DEMO": "1"}).enabled
    assert PublicMode.from_env(SPACES).enabled
    assert not PublicMode.from_env({**SPACES, "PUBLIC_DEMO": "0"}).enabled
    assert not PublicMode.from_env({}).enabled
    assert PublicMode.from_env(SPACES).limits == PUBLIC_LIMITS
    assert PublicMode.from_env({}).limits == LIMITS


def test_every_limit_has_a_public_value():
    for f in fields(PUBLIC_LIMITS):
        assert getattr(PUBLIC_LIMITS, f.name) is not None, f.name


def test_visitor_model_endpoint_and_kb_fields_are_ignored_server_side():
    mode = PublicMode.from_env({**SPACES, "POLICY_ENDPOINT": "https://operator.example/v1"})
    sent = _form(
        policy_model="/etc", scorer_model="someone/huge-model", policy_endpoint="http://169.254.169.254/v1"
    )
    used = enforce(sent, mode)
    assert (used.policy_model, used.scorer_model) == ("", "")
    assert used.policy_endpoint == "https://operator.example/v1"
    for spec in ("/tmp/gradio/upload.ttl", "http://127.0.0.1:8080/sparql", "examples/demo_kb.ttl"):
        with pytest.raises(ValueError, match="knowledge bases only"):
            enforce(_form(kb_spec=spec), mode)
    assert enforce(_form(kb_spec="demo-wikidata"), mode).kb_spec == "demo-wikidata"


def test_the_operator_allow_list_adds_kbs():
    mode = PublicMode.from_env({**SPACES, "PUBLIC_KBS": "https://qlever.example/api/freebase"})
    assert enforce(_form(kb_spec="https://qlever.example/api/freebase"), mode).kb_spec.startswith("https://")


def test_local_mode_keeps_every_field():
    form = _form(policy_model="my/model", kb_spec="/data/kb.nt")
    assert enforce(form, PublicMode.from_env({})) == form


def test_huge_question_and_ig_prompt_are_refused():
    mode = PublicMode.from_env(SPACES)
    with pytest.raises(ValueError, match="question is too long"):
        enforce(_form(question="x" * 1_000_000), mode)
    with pytest.raises(ValueError, match="IG prompt is too long"):
        enforce(_form(ig_prompt="x" * 1_000_000), mode)


def test_text_from_traces_is_escaped():
    assert escape('<img src="http://evil/x.png">') == "&lt;img src=&quot;http://evil/x.png&quot;&gt;"


def test_the_gate_says_how_many_are_ahead_and_bounds_each_visitor():
    gate = RunGate(max_waiting=2, per_visitor=1)
    a = gate.enter("1.1.1.1")
    gate.start(a)
    with pytest.raises(Busy, match="already have a run"):
        gate.enter("1.1.1.1")
    b = gate.enter("2.2.2.2")
    c = gate.enter("3.3.3.3")
    assert (gate.ahead(b), gate.ahead(c)) == (1, 2)
    with pytest.raises(Busy, match="busy"):
        gate.enter("4.4.4.4")
    gate.leave(a)
    gate.start(b)
    assert gate.ahead(c) == 1
    gate.leave(c)  # gave up while waiting
    gate.leave(b)
    assert gate.ahead(gate.enter("1.1.1.1")) == 0


def test_a_place_never_started_expires():
    gate = RunGate(max_waiting=1, per_visitor=1, admit_s=0.0)
    gate.enter("1.1.1.1")  # the tab was closed before its run started
    time.sleep(0.01)
    assert gate.ahead(gate.enter("1.1.1.1")) == 0


def test_a_run_past_the_public_wall_clock_limit_is_over_time():
    assert over_time(time.perf_counter() - PUBLIC_LIMITS.run_wall_s - 1, PUBLIC_LIMITS)
    assert not over_time(time.perf_counter(), PUBLIC_LIMITS)
    assert not over_time(0.0, LIMITS)  # local: no limit


def test_trace_folders_are_per_session_and_bounded(tmp_path: Path):
    one, two = session_folder(tmp_path, "session-a"), session_folder(tmp_path, "session-b")
    assert one != two and "session-a" not in str(one)
    for i in range(6):
        folder = one if i % 2 else two
        folder.mkdir(exist_ok=True)
        path = folder / f"t{i}.json"
        path.write_text("{}")
        os.utime(path, (time.time() - 100 + i, time.time() - 100 + i))
    assert prune_traces(tmp_path, keep=2) == 4
    assert sorted(p.name for p in tmp_path.glob("*/*.json")) == ["t4.json", "t5.json"]
