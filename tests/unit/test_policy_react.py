"""The ReAct policy: completions parsed into steps, merged, never a crash.

Fast tests feed canned completions (a generation double) and a real unreachable
endpoint; slow tests run the real bundled model end to end on a demo question.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kb.actions import Action
from mcts.agents.policy_react import ReActPolicy, cut_at_stop, merge_candidates, parse_completion
from mcts.agents.prompts import PromptConfig
from mcts.search.steps import Step

Q = "Who directed Inception?"


class CannedReAct(ReActPolicy):
    """Generation double: returns fixed completions instead of running a model."""

    def __init__(self, completions: list[str]) -> None:
        super().__init__(endpoint="http://unused.invalid")
        self.completions = completions

    def _generate_endpoint(self, question, history, n, seed, greedy):
        return self.completions[:n]


def test_completion_is_cut_at_the_next_observation():
    text = 'Thought: find it\nAction: SearchNodes("Inception")\nObservation: "Inception" | made up'
    assert cut_at_stop(text) == 'Thought: find it\nAction: SearchNodes("Inception")'
    cand = parse_completion(text)
    assert cand.thought == "find it"
    assert cand.action == Action("SearchNodes", "Inception")
    assert cand.parse_error == ""


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "I think the answer is Nolan.",
        'Action: SearchNodes("unclosed',
        "Action: Fly(to='moon')",
        "\x00\x01 ???",
    ],
)
def test_garbage_completions_become_parse_error_candidates(garbage):
    cand = parse_completion(garbage)
    assert cand.action is None
    assert cand.parse_error and "\n" not in cand.parse_error
    assert cand.raw_text == cut_at_stop(garbage)


def test_identical_actions_are_merged_with_their_share_as_score():
    texts = [
        'Thought: a\nAction: SearchNodes("Inception")',
        "Thought: b\nAction: SearchNodes('Inception')",
        "Thought: c\nAction: Done()",
        "nonsense",
        'Thought: d\nAction: SearchNodes("Inception")',
    ]
    merged = merge_candidates([parse_completion(t) for t in texts])
    assert [c.key() for c in merged] == ['SearchNodes("Inception")', "Done()", "<unparsable>nonsense"]
    assert merged[0].thought == "a"
    assert [c.policy_score for c in merged] == [0.6, 0.2, 0.2]


def test_propose_returns_at_most_k_merged_candidates_and_counts_calls():
    pol = CannedReAct(
        ['Thought: a\nAction: SearchNodes("Inception")'] * 2 + ["junk", "Thought: z\nAction: Done()"]
    )
    cands = pol.propose(Q, [], 4, rng=random.Random(0))
    assert [c.key() for c in cands] == ['SearchNodes("Inception")', "<unparsable>junk", "Done()"]
    assert pol.usage.calls == 1
    assert len(pol.propose(Q, [], 1, rng=random.Random(0), greedy=True)) == 1


def test_unreachable_endpoint_gives_one_error_candidate():
    pol = ReActPolicy(endpoint="http://127.0.0.1:9/v1", endpoint_model="some-model")
    cands = pol.propose(Q, [], 3, rng=random.Random(0))
    assert len(cands) == 1 and cands[0].action is None
    assert cands[0].parse_error.startswith("policy endpoint http://127.0.0.1:9/v1 failed:")
    assert "\n" not in cands[0].parse_error


class _FakeOpenAI(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible chat endpoint (a server double) that records requests."""

    requests: list[dict] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "tiny-model", "object": "model", "owned_by": "test"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        texts = ['Thought: find it\nAction: SearchNodes("Inception")', "Thought: stop\nAction: Done()", "???"]
        choices = [
            {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": texts[i % 3]}}
            for i in range(body.get("n", 1))
        ]
        usage = {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22}
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": choices, "usage": usage})  # fmt: skip

    def _send(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_endpoint_completions_are_parsed_and_the_request_is_well_formed():
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        pol = ReActPolicy(endpoint=f"http://127.0.0.1:{server.server_port}/v1")
        hist = [Step("find it", Action("SearchNodes", "Inception"), _obs("Inception | film"))]
        cands = pol.propose(Q, hist, 3, rng=random.Random(0))
    finally:
        server.shutdown()
        server.server_close()
    assert [c.key() for c in cands] == ['SearchNodes("Inception")', "Done()", "<unparsable>???"]
    req = _FakeOpenAI.requests[-1]
    assert req["model"] == "tiny-model" and req["n"] == 3 and req["stop"] == ["Observation"]
    roles = [m["role"] for m in req["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert req["messages"][1]["content"] == f"Q: {Q}"
    assert pol.usage.tokens == 12


def _obs(text):
    from kb.observation import Observation

    return Observation(text)


# ----- the real model ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model():
    from mcts.agents.models import load_model

    return load_model(None)


@pytest.mark.slow
def test_real_model_runs_end_to_end_and_is_reproducible(model, demo_kb):
    from kb.tools import Toolbox

    tools = Toolbox(demo_kb)
    # Free generation is the suite's slowest part: one demonstration (a shorter prompt) and
    # two samples of at most 32 tokens, which hold a short thought and one tool call (or a
    # cut one: a parse error candidate), enough to parse, merge and compare.
    prompt = PromptConfig(fewshot="demo", max_demos=1)
    pol = ReActPolicy(model, prompt=prompt, max_new_tokens=32)
    history: list[Step] = []
    for depth in range(2):  # the root and one step on
        cands = pol.propose(Q, history, 2, rng=random.Random(depth))
        assert 1 <= len(cands) <= 2
        assert len({c.key() for c in cands}) == len(cands)
        again = pol.propose(Q, history, 2, rng=random.Random(depth))
        assert [c.key() for c in again] == [c.key() for c in cands]
        first = cands[0]
        from kb.observation import Observation

        obs = tools.run(first.action) if first.action else Observation.error(first.parse_error)
        history.append(Step(first.thought, first.action, obs, first.raw_text))
    assert pol.usage.calls == 4 and pol.usage.tokens > 0


def test_prompt_segments_join_to_the_prompt_and_extend_the_parent():
    from transformers import AutoTokenizer

    from mcts.agents.models import converted_bundled_dir
    from mcts.agents.prompts import PromptConfig, prompt_segments, render_prompt

    folder = converted_bundled_dir()
    if not folder.exists():
        pytest.skip("bundled model not converted yet")
    tok = AutoTokenizer.from_pretrained(str(folder))
    hist = [Step("find it", Action("SearchNodes", "Inception"), _obs('"Inception" | Description: 2010 film'))]
    for config in (PromptConfig(fewshot="demo"), PromptConfig(fewshot="none", use_chat_template=False)):
        parent = prompt_segments(tok, Q, hist[:0], config)
        child = prompt_segments(tok, Q, hist, config)
        assert "".join(child) == render_prompt(tok, Q, hist, config)
        assert child[: len(parent) - 1] == parent[:-1]  # only the generation prompt differs
        assert child[-1].rstrip().endswith("assistant") or child[-1].endswith("2010 film\n")
        assert f"Q: {Q}" in "".join(child)
