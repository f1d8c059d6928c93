"""One client must not lock everyone out of the run queue.

The visitor identity comes from the socket or the operator's proxies, never from a header
the client wrote; a waiting place belongs to a run that is queued (an admit without a run
frees its place within seconds); each address range has its own cap; Stop frees a waiting
place. The gate and the identity helpers are the real ones; a request is a plain object
with the attributes Gradio's `gr.Request` has.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from ui import public
from ui.run_gate import Busy, RunGate
from ui.visitor import ProxyTrust, address_range, client_address, visitor_of


def _request(peer: str, session: str, forwarded: str = "") -> Any:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return SimpleNamespace(headers=headers, client=SimpleNamespace(host=peer), session_hash=session)


def _visitor(peer: str, session: str, forwarded: str = "", trust: ProxyTrust | None = None) -> Any:
    return visitor_of(_request(peer, session, forwarded), trust or ProxyTrust(), session)


def test_a_forwarded_header_is_ignored_without_a_configured_proxy() -> None:
    trust = ProxyTrust.from_env({})
    assert trust.hops == 0
    for spoof in ("1.1.1.1", "8.8.8.8, 9.9.9.9", "garbage", "::1"):
        assert client_address(_request("203.0.113.7", "s", spoof), trust) == "203.0.113.7"


def test_on_spaces_the_hop_the_platform_appended_counts_not_the_first() -> None:
    trust = ProxyTrust.from_env({"SPACE_ID": "user/demo"})
    assert trust.hops == 1
    # The client wrote "6.6.6.6"; the platform's proxy appended the address it saw.
    assert client_address(_request("10.0.0.2", "s", "6.6.6.6, 198.51.100.4"), trust) == "198.51.100.4"
    assert client_address(_request("10.0.0.2", "s", "198.51.100.4"), trust) == "198.51.100.4"
    assert client_address(_request("10.0.0.2", "s"), trust) == "10.0.0.2"  # no header: the socket
    assert client_address(_request("10.0.0.2", "s", "not-an-ip"), trust) == "10.0.0.2"


def test_two_proxies_and_a_peer_allow_list() -> None:
    trust = ProxyTrust.from_env({"TRUSTED_PROXY_HOPS": "2", "TRUSTED_PROXIES": "10.0.0.0/8"})
    assert (
        client_address(_request("10.1.1.1", "s", "6.6.6.6, 198.51.100.4, 10.2.2.2"), trust) == "198.51.100.4"
    )
    assert client_address(_request("10.1.1.1", "s", "198.51.100.4"), trust) == "10.1.1.1"  # too few hops
    # A peer outside the proxies' network is a client talking to the app directly.
    assert client_address(_request("203.0.113.9", "s", "1.2.3.4, 5.6.7.8"), trust) == "203.0.113.9"
    with pytest.raises(ValueError, match="TRUSTED_PROXY_HOPS"):
        ProxyTrust.from_env({"TRUSTED_PROXY_HOPS": "x"})
    with pytest.raises(ValueError, match="TRUSTED_PROXIES"):
        ProxyTrust.from_env({"TRUSTED_PROXY_HOPS": "1", "TRUSTED_PROXIES": "a.b.c.d"})


def test_address_ranges_are_slash_24_and_slash_64() -> None:
    assert address_range("192.0.2.77") == "192.0.2.0/24"
    assert address_range("::ffff:192.0.2.77") == "192.0.2.0/24"
    assert address_range("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert address_range("session:abc") == "session:abc"


def test_eight_spoofed_headers_from_one_client_hold_one_place() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, per_range=4)
    gate.enter(_visitor("203.0.113.7", "s0", "1.0.0.0"))
    for i in range(1, 8):
        with pytest.raises(Busy, match="already have a run"):
            gate.enter(_visitor("203.0.113.7", f"s{i}", f"1.0.0.{i}"))
    assert gate.counts() == (1, 0)
    gate.enter(_visitor("198.51.100.1", "other"))  # anyone else still gets in


def test_eight_admits_without_runs_free_their_places_within_seconds() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, per_range=4, admit_s=0.2)
    for i in range(8):  # eight real addresses in eight ranges, none queues a run
        gate.enter(_visitor(f"198.51.{i}.1", f"s{i}"))
    with pytest.raises(Busy, match="8 runs waiting"):
        gate.enter(_visitor("192.0.2.1", "late"))
    time.sleep(0.3)
    gate.enter(_visitor("192.0.2.1", "late"))
    assert gate.counts() == (1, 0)


def test_a_place_whose_run_is_queued_lives_on_past_the_admit_window() -> None:
    queued = {"waiting-run"}
    gate = RunGate(max_waiting=1, per_visitor=1, admit_s=0.05, queued=lambda: frozenset(queued))
    gate.enter(_visitor("198.51.100.1", "waiting-run"))
    time.sleep(0.1)
    with pytest.raises(Busy, match="1 runs waiting"):
        gate.enter(_visitor("192.0.2.1", "b"))
    queued.clear()  # the tab closed: Gradio dropped its event from the queue
    gate.enter(_visitor("192.0.2.1", "b"))


def test_a_broken_queue_reader_falls_back_to_the_admit_window() -> None:
    def broken() -> frozenset[str]:
        raise AttributeError("_queue")

    gate = RunGate(max_waiting=1, per_visitor=1, admit_s=0.05, queued=broken)
    gate.enter(_visitor("198.51.100.1", "a"))
    time.sleep(0.1)
    gate.enter(_visitor("192.0.2.1", "b"))
    assert gate.queued is None


def test_one_address_range_cannot_take_every_place() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, per_range=4)
    for i in range(4):
        gate.enter(_visitor(f"198.51.100.{i + 1}", f"s{i}"))
    with pytest.raises(Busy, match="network already has 4"):
        gate.enter(_visitor("198.51.100.200", "s5"))
    for i in range(2):  # an IPv6 subscriber's /64 counts as one range too
        gate.enter(_visitor(f"2001:db8:0:1::{i + 1}", f"v{i}"))
    gate.enter(_visitor("192.0.2.1", "elsewhere"))


def test_an_abandoned_admit_does_not_block_the_same_visitors_next_run() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, admit_s=60.0, queued=lambda: frozenset())
    gate.enter(_visitor("198.51.100.1", "closed-tab"))  # admitted, its run never queued
    ticket = gate.claim(_visitor("198.51.100.1", "new-tab"))  # an API /run call of the same visitor
    assert gate.counts() == (0, 1)
    gate.leave(ticket)
    assert gate.counts() == (0, 0)
    gate.enter(_visitor("198.51.100.1", "closed-tab"))
    gate.hold(_visitor("198.51.100.1", "api-tab"))  # a run joining the queue over the API
    assert gate.counts() == (1, 0)


def test_stop_frees_the_waiting_place_and_a_reconnect_gets_in(monkeypatch: pytest.MonkeyPatch) -> None:
    gr = pytest.importorskip("gradio")
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, admit_s=60.0))
    monkeypatch.setattr(public, "TRUST", ProxyTrust())
    from ui import handlers
    from ui.session import Session

    session = Session()
    assert "Starting" in public.admitter()(session, _request("198.51.100.1", "tab-1"))["status"]
    with pytest.raises(gr.Error, match="already have a run"):
        public.admitter()(Session(), _request("198.51.100.1", "tab-2", "9.9.9.9"))  # a spoofed header
    assert "Stopped" in handlers.stop(session, _request("198.51.100.1", "tab-1"))
    assert "Starting" in public.admitter()(Session(), _request("198.51.100.1", "tab-2"))["status"]
    # A running place, freed when its run ends, lets the same visitor in again.
    ticket = public.claim(Session(), _request("198.51.100.1", "tab-2"))
    public.release(ticket)
    assert public.GATE.counts() == (0, 0)
    assert "Starting" in public.admitter()(Session(), _request("198.51.100.1", "tab-3"))["status"]


def test_places_left_behind_are_gone_without_another_admit() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, admit_s=0.1)
    for i in range(3):
        gate.enter(_visitor(f"198.51.{i}.1", f"s{i}"))
    time.sleep(0.2)
    assert gate.counts() == (0, 0)


def test_a_question_that_is_not_valid_unicode_is_refused_in_one_line() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Form:
        question: str = "why \ud800?"
        ig_prompt: str = "p"

    with pytest.raises(ValueError, match="question holds a character that is not valid Unicode"):
        public.enforce(Form(), public.PublicMode.from_env({"PUBLIC_DEMO": "1"}))
    with pytest.raises(ValueError, match="IG prompt holds"):
        public.enforce(Form(question="q", ig_prompt="\udfff"), public.PublicMode.from_env({}))


def test_public_mode_closes_the_rest_routes_around_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off Spaces Gradio opens POST /gradio_api/run/<name>, which runs an event outside the
    queue: past the one model slot and the run gate."""
    pytest.importorskip("gradio")
    import http.client
    import json
    from urllib.parse import urlsplit

    import app

    monkeypatch.setattr(public, "MODE", public.PublicMode.from_env({"PUBLIC_DEMO": "1"}))
    demo = app.build_app()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        url = urlsplit(demo.local_url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request(
            "POST", "/gradio_api/run/stop", json.dumps({"data": [None]}), {"Content-Type": "application/json"}
        )
        assert conn.getresponse().status == 404
    finally:
        demo.close()


def test_a_run_joining_the_queue_takes_its_place_or_is_refused_at_the_door() -> None:
    gate = RunGate(max_waiting=8, per_visitor=1, admit_s=0.05)
    admitted = gate.enter(_visitor("198.51.100.1", "tab"))
    assert gate.hold(_visitor("198.51.100.1", "tab")) == admitted  # the page: admit, then the run joins
    with pytest.raises(Busy, match="already have a run"):
        gate.hold(_visitor("198.51.100.1", "api-caller"))  # a second run joined straight over the API
    time.sleep(0.1)  # no queue reader: a queued place outlives the admit window
    assert gate.counts() == (1, 0)
    assert gate.claim(_visitor("198.51.100.1", "tab")) == admitted


def test_runs_joined_over_the_api_without_the_admit_cannot_fill_the_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live app: six runs joined at once from one client, none through the page's admit."""
    pytest.importorskip("gradio")
    import threading

    import app
    from tests import toy_world
    from tests.doubles import slow_toy_world
    from tests.security.gradio_api import Api
    from ui import handlers

    world, _ = slow_toy_world(0.2)
    monkeypatch.setattr(handlers, "get_world", world)
    monkeypatch.setattr(public, "MODE", public.PublicMode.from_env({"PUBLIC_DEMO": "1"}))
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, per_range=4))
    monkeypatch.setattr(handlers, "_cache_key", lambda *a, **k: None)  # every call searches
    demo = app.build_app()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        api = Api(demo.local_url)
        run = api.fn("run")
        data = api.defaults(run, question=toy_world.QUESTION, rounds=2, **{"k candidates": 2})
        replies: list[dict[str, Any]] = []
        threads = [
            threading.Thread(target=lambda: replies.append(api.call(run, data, timeout=60))) for _ in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        refused = [r for r in replies if r.get("join") == 400 and "already have a run" in str(r.get("error"))]
        assert len(replies) == 6 and len(refused) >= 5, replies
    finally:
        demo.close()


def test_spoofed_headers_over_the_live_api_hold_one_place_and_the_next_run_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's attack on the live app: eight admits (the page's private first step,
    called by index) with eight made-up X-Forwarded-For values and no run; then a run."""
    pytest.importorskip("gradio")
    import app
    from tests import toy_world
    from tests.doubles import slow_toy_world
    from tests.security.gradio_api import Api
    from ui import handlers

    world, _ = slow_toy_world(0.0)
    monkeypatch.setattr(handlers, "get_world", world)
    monkeypatch.setattr(handlers, "_cache_key", lambda *a, **k: None)
    monkeypatch.setattr(public, "MODE", public.PublicMode.from_env({"PUBLIC_DEMO": "1"}))
    monkeypatch.setattr(public, "GATE", RunGate(max_waiting=8, per_visitor=1, per_range=4))
    monkeypatch.setattr(public, "TRUST", ProxyTrust())
    # What ui.public sets at import in public mode (this process imported it in local mode):
    # without it uvicorn takes X-Forwarded-For from a client on the host as its address.
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "")
    demo = app.build_app()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        api = Api(demo.local_url)
        run = api.fn("run")
        admit = run - 1  # the admit chained before the run
        admitted = [api.call(admit, [None], headers={"X-Forwarded-For": f"10.0.0.{i}"}) for i in range(8)]
        assert sum(bool(r.get("success")) for r in admitted) == 1
        assert all("already have a run" in str(r.get("error")) for r in admitted[1:])
        data = api.defaults(run, question=toy_world.QUESTION, rounds=2, **{"k candidates": 2})
        reply = api.call(run, data, timeout=60)  # a new tab of the same visitor, at once
        assert reply.get("success") and any("Finished" in str(t) for t in reply.get("rendered") or [])
    finally:
        demo.close()
