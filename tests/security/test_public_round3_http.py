"""Requests that name no event get a 404 from the app (not Gradio's 500), and uploads expire.

queue/join with fn_index 999, -1 or 2**64 and POST /gradio_api/run/predict used to answer
HTTP 500 (a KeyError inside Gradio); the app's upload cache was never cleaned. The app is
the real one, launched on 127.0.0.1 with the launch arguments `app.main` uses; no model runs.
"""

from __future__ import annotations

import json

import pytest

from ui.route_guard import event_problem

gr = pytest.importorskip("gradio")
httpx = pytest.importorskip("httpx")


def test_event_problem_names_only_unknown_events() -> None:
    fns = {0: type("Fn", (), {"api_name": "run"})(), 3: type("Fn", (), {"api_name": None})()}
    join = "/gradio_api/queue/join"
    for index in (999, -1, 2**64, "0", True, 1.5):
        assert event_problem(join, json.dumps({"fn_index": index}).encode(), fns) == "no such event"
    assert event_problem(join, json.dumps({"fn_index": 3}).encode(), fns) is None
    assert event_problem("/gradio_api/run/predict", b"{}", fns) == "no event named 'predict'"
    assert event_problem("/gradio_api/run/run", b"{}", fns) is None
    assert event_problem("/gradio_api/upload", b"not json", fns) is None  # not an event route
    assert event_problem(join, b"not json", fns) is None  # Gradio's own 422


@pytest.fixture(scope="module")
def served() -> object:
    import app

    demo = app.build_app()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs(demo))
    try:
        yield demo
    finally:
        demo.close()


def test_unknown_events_get_a_404_and_known_routes_still_work(served) -> None:
    base = served.local_url.rstrip("/")
    with httpx.Client(timeout=10) as client:
        for index in (999, -1, 2**64):
            reply = client.post(
                f"{base}/gradio_api/queue/join", json={"fn_index": index, "data": [], "session_hash": "s1"}
            )
            assert reply.status_code == 404, (index, reply.status_code, reply.text)
        reply = client.post(f"{base}/gradio_api/run/predict", json={"data": []})
        assert reply.status_code == 404, reply.text
        assert client.get(f"{base}/gradio_api/info").status_code == 200
        stop = next(i for i, fn in served.fns.items() if fn.api_name == "stop")
        reply = client.post(
            f"{base}/gradio_api/queue/join", json={"fn_index": stop, "data": [None], "session_hash": "s2"}
        )
        assert reply.status_code == 200, reply.text


def test_the_upload_cache_is_cleaned(served) -> None:
    import app

    assert served.delete_cache == app.DELETE_CACHE
