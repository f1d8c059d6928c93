"""The server's OPENAI_API_KEY goes only to the policy endpoint the operator configured,
never to a visitor-supplied one as a Bearer header.

The endpoint is the hostile server on 127.0.0.1 (an OpenAI-compatible stub that records
each request's Authorization header); the policy is the real ReActPolicy and openai client.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from mcts.agents.policy_react import ReActPolicy
from mcts.agents.world import build_world, clear_worlds
from mcts.search.settings import Method
from tests.hostile_server import HostileServer, hostile_server

SERVER_KEY = "sk-server-own-secret"


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileServer]:
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-server")
    monkeypatch.delenv("POLICY_ENDPOINT", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with hostile_server() as running:
        yield running


def _propose(policy: ReActPolicy) -> None:
    candidates = policy.propose("Who?", [], 1, rng=random.Random(0), greedy=True)
    assert candidates and candidates[0].action is not None  # the stub answered Done()


def test_a_visitor_supplied_endpoint_never_receives_the_server_key(server: HostileServer) -> None:
    _propose(ReActPolicy(endpoint=server.url("/v1"), endpoint_model="stub"))
    assert server.requests, "the stub endpoint was called"
    assert all(SERVER_KEY not in auth for _, auth in server.requests)
    assert all(auth == "Bearer EMPTY" for _, auth in server.requests)


def test_the_operator_configured_endpoint_gets_the_key(server: HostileServer, monkeypatch) -> None:
    monkeypatch.setenv("POLICY_ENDPOINT", server.url("/v1/"))
    _propose(ReActPolicy(endpoint=server.url("/v1"), endpoint_model="stub"))
    assert server.requests[-1][1] == f"Bearer {SERVER_KEY}"


def test_a_world_built_with_a_visitor_endpoint_sends_no_key(server: HostileServer) -> None:
    clear_worlds()
    world = build_world(
        "demo", policy_kind="react", policy_endpoint=server.url("/v1"), method=Method.CONSTANT
    )
    _propose(world.policy)
    assert all(SERVER_KEY not in auth for _, auth in server.requests)
    clear_worlds()


def test_public_mode_refuses_any_policy_endpoint_but_the_operators(server: HostileServer) -> None:
    with pytest.raises(ValueError, match="public mode"):
        build_world(
            "demo",
            policy_kind="react",
            policy_endpoint=server.url("/v1"),
            method=Method.CONSTANT,
            public=True,
        )
    assert server.requests == []


def test_a_deeply_nested_reply_from_the_policy_endpoint_is_one_error_candidate(server: HostileServer) -> None:
    policy = ReActPolicy(endpoint=server.url("/deep/v1"), endpoint_model="stub")
    candidates = policy.propose("Who?", [], 1, rng=random.Random(0), greedy=True)
    assert len(candidates) == 1 and candidates[0].action is None
    assert "failed" in (candidates[0].parse_error or "")
