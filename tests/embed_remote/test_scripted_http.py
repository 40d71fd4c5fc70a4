"""The scripted server itself: real HTTP/1.1, scripted replies, streaming, request log, clean shutdown."""

from __future__ import annotations

import itertools
import json
import time

import httpx
import pytest

from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer


def test_starts_fast_and_records_requests() -> None:
    started = time.monotonic()
    with ScriptedServer() as server:
        assert time.monotonic() - started < 0.5
        server.expect("POST", "/v1/things", Reply.json({"ok": True}, status=201, headers={"X-Trace": "t1"}))
        with httpx.Client() as client:
            response = client.post(
                f"{server.url}/v1/things?limit=3", json={"name": "x", "n": [1, 2]}, headers={"X-Api": "k"}
            )
        (request,) = server.requests
        server.verify()

    assert response.status_code == 201
    assert response.json() == {"ok": True}
    assert response.headers["x-trace"] == "t1"
    assert response.http_version == "HTTP/1.1"
    assert (request.method, request.path, request.query) == ("POST", "/v1/things", "limit=3")
    assert request.json == {"name": "x", "n": [1, 2]}
    assert request.header("X-API") == "k"


def test_queues_are_fifo_per_route_then_the_handler_answers(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("GET", "/a", Reply.text("first"), Reply.text("second"))
    scripted_server.on("GET", "/a", lambda request: Reply.text(f"handled {request.query}"))
    scripted_server.expect("GET", "/b", Reply.text("b"))
    with httpx.Client(base_url=scripted_server.url) as client:
        bodies = [
            client.get("/a").text,
            client.get("/b").text,
            client.get("/a").text,
            client.get("/a?x=1").text,
        ]
    assert bodies == ["first", "b", "second", "handled x=1"]
    assert [r.path for r in scripted_server.requests_to("GET", "/a")] == ["/a"] * 3
    scripted_server.verify()


def test_verify_reports_unused_and_unexpected(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/used", Reply.text("ok"))
    scripted_server.expect("POST", "/unused", Reply.text("never"))
    with httpx.Client(base_url=scripted_server.url) as client:
        client.post("/used")
        stray = client.delete("/stray")
    assert stray.status_code == 404
    assert "no reply for DELETE /stray" in stray.text
    assert scripted_server.pending() == {("POST", "/unused"): 1}
    with pytest.raises(AssertionError, match=r"(?s)unused scripted replies: POST /unused.*DELETE /stray"):
        scripted_server.verify()


def test_a_raising_handler_is_a_500_and_reported(scripted_server: ScriptedServer) -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise KeyError("input")

    scripted_server.on("POST", "/x", broken)
    with httpx.Client() as client:
        assert client.post(f"{scripted_server.url}/x", json={}).status_code == 500
    with pytest.raises(AssertionError, match="KeyError"):
        scripted_server.verify()


def test_chunked_request_bodies_are_decoded(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("PUT", "/upload", Reply.text("ok"))
    with httpx.Client() as client:
        client.put(f"{scripted_server.url}/upload", content=iter([b"hello ", b"", b"world"]))
    (request,) = scripted_server.requests
    assert request.header("transfer-encoding") == "chunked"
    assert request.body == b"hello world"


async def test_sse_chunks_arrive_incrementally(scripted_server: ScriptedServer) -> None:
    events = [{"choices": [{"delta": {"content": word}}]} for word in ("Hel", "lo", "!")]
    scripted_server.expect("POST", "/v1/chat/completions", Reply.sse([*events, "[DONE]"], chunk_delay_s=0.2))
    arrivals: list[tuple[float, str]] = []
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        async with client.stream("POST", f"{scripted_server.url}/v1/chat/completions", json={}) as response:
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["transfer-encoding"] == "chunked"
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    arrivals.append((time.monotonic() - started, line.removeprefix("data: ")))

    assert [payload for _, payload in arrivals] == [*(json.dumps(e) for e in events), "[DONE]"]
    times = [t for t, _ in arrivals]
    assert times[0] < 0.4  # the first event did not wait for the rest
    assert all(later - earlier >= 0.15 for earlier, later in itertools.pairwise(times))


def test_an_aborted_stream_is_a_protocol_error(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("GET", "/s", Reply.stream([b"part one,", b"part two"], abort=True))
    received: list[bytes] = []

    def read_all(client: httpx.Client) -> None:
        with client.stream("GET", f"{scripted_server.url}/s") as response:
            received.extend(response.iter_raw())

    with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
        read_all(client)
    assert b"".join(received) == b"part one,part two"


def test_a_dropped_reply_closes_without_answering(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", "/x", Reply.dropped())
    with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
        client.post(f"{scripted_server.url}/x", json={"a": 1})
    assert scripted_server.requests[0].json == {"a": 1}  # recorded even though dropped


def test_close_is_prompt_with_pending_delays_and_idle_connections() -> None:
    server = ScriptedServer().start()
    server.on("GET", "/slow", lambda _: Reply.text("late", delay_s=30))
    server.expect("GET", "/fast", Reply.text("ok"))
    with httpx.Client(timeout=0.2) as client:
        assert client.get(f"{server.url}/fast").text == "ok"  # leaves a keep-alive connection open
        with pytest.raises(httpx.ReadTimeout):
            client.get(f"{server.url}/slow")
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 0.5
    server.close()  # idempotent


def test_small_replies_do_not_wait_on_delayed_acks(scripted_server: ScriptedServer) -> None:
    # Headers and body go out in two writes; without TCP_NODELAY the second waits for the
    # client's delayed ACK (~40 ms per request on Linux: 20 requests took 0.88 s, with it 0.02 s).
    scripted_server.on("POST", "/e", lambda _: Reply.json({"embedding": [0.1] * 4}))
    with httpx.Client(base_url=scripted_server.url) as client:
        client.post("/e", json={})  # open the keep-alive connection
        started = time.monotonic()
        for _ in range(20):
            client.post("/e", json={"input": ["x"]})
        assert time.monotonic() - started < 0.5
