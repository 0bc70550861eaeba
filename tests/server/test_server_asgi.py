"""The ASGI endpoint, in process (httpx ASGITransport) and over real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from agui_replay.errors import AgentError
from agui_replay.server import RunContext, agui_app, run_agent_sync
from agui_replay.server._asgi import accepts_event_stream
from agui_replay.server.testing import fold, serve
from agui_replay.sse import SSEDecoder, decode_sse

GUARD = 20.0  # only reached when streaming or cancellation is broken

BODY = {"threadId": "t", "runId": "r", "messages": [], "state": None}


def greeter(ctx: RunContext[dict[str, Any]]) -> None:
    with ctx.assistant_message() as message:
        for word in ["Hello", ", ", "world"]:
            message.delta(word)


def post(app: Any, *, content: Any = None, json_body: Any = None, **headers: str) -> httpx.Response:
    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as client:
            return await client.post("/", content=content, json=json_body, headers=headers)

    return asyncio.run(main())


def test_a_run_streams_as_server_sent_events() -> None:
    response = post(agui_app(greeter), json_body=BODY, accept="text/event-stream")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    events = decode_sse(response.content)
    # The same events the driver produces, frame for frame.
    expected = [e.model_dump(by_alias=True, mode="json") for e in run_agent_sync(greeter, BODY)]
    assert events == expected
    assert response.content.startswith(
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    )
    assert fold(events).messages == [
        {"id": "r-msg-1", "role": "assistant", "content": "Hello, world"}
    ]


def test_a_failed_run_is_still_a_200_with_run_error_in_the_stream() -> None:
    def broken(ctx: RunContext[dict[str, Any]]) -> None:
        raise AgentError("the weather service is down")

    response = post(agui_app(broken), json_body=BODY)
    assert response.status_code == 200
    events = decode_sse(response.content)
    assert events[-1] == {
        "type": "RUN_ERROR",
        "message": "the weather service is down",
        "code": "AGENT_ERROR",
    }

    @dataclass
    class Clicks:
        clicks: int = 0

    response = post(
        agui_app(greeter, state_type=Clicks), json_body={**BODY, "state": {"clicks": "three"}}
    )
    assert response.status_code == 200
    assert [e["type"] for e in decode_sse(response.content)] == ["RUN_STARTED", "RUN_ERROR"]
    assert decode_sse(response.content)[-1]["code"] == "SERIALIZATION"


def refusal(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"code", "message"}
    assert body["code"] == code
    message: str = body["message"]
    return message


def test_other_methods_are_405() -> None:
    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=agui_app(greeter))
        async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as client:
            return [await client.request(method, "/") for method in ("GET", "PUT", "DELETE")]

    for response in asyncio.run(main()):
        assert "POST" in refusal(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers["allow"] == "POST"


@pytest.mark.parametrize(
    "accept", ["application/xml", "text/event-stream;q=0", "text/event-stream;q=0, */*"]
)
def test_an_accept_header_without_event_streams_is_406(accept: str) -> None:
    message = refusal(post(agui_app(greeter), json_body=BODY, accept=accept), 406, "NOT_ACCEPTABLE")
    assert "text/event-stream" in message


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "",
        "*/*",
        "text/*",
        "application/json, text/event-stream",
        "text/event-stream; charset=utf-8",
        "application/xml;q=1, text/*;q=0.1",
    ],
)
def test_accept_headers_that_admit_event_streams(accept: str | None) -> None:
    assert accepts_event_stream(accept)


def test_a_non_json_body_is_415_and_json_like_types_pass() -> None:
    app = agui_app(greeter)
    body = json.dumps(BODY).encode()
    message = refusal(
        post(app, content=body, **{"content-type": "application/x-www-form-urlencoded"}),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
    )
    assert "x-www-form-urlencoded" in message
    for content_type in ("application/json; charset=utf-8", "application/vnd.acme.run+json"):
        assert post(app, content=body, **{"content-type": content_type}).status_code == 200
    # No content type at all is read as JSON.
    assert post(app, content=body).status_code == 200


def test_a_body_over_the_limit_is_413_declared_or_streamed() -> None:
    app = agui_app(greeter, max_body_bytes=200)
    big = {**BODY, "forwardedProps": {"pad": "x" * 500}}
    message = refusal(post(app, json_body=big), 413, "INVALID_BODY")
    assert "200 bytes" in message

    async def chunks() -> AsyncIterator[bytes]:
        payload = json.dumps(big).encode()
        for start in range(0, len(payload), 64):
            yield payload[start : start + 64]

    # Sent chunked, without a content-length to refuse up front.
    refusal(
        post(app, content=chunks(), **{"content-type": "application/json"}), 413, "INVALID_BODY"
    )
    assert post(app, json_body=BODY).status_code == 200


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"threadId": "t", "runId": "r"}', "messages"),
        (b'{"threadId": "t", "runId": 7, "messages": []}', "runId"),
    ],
)
def test_a_body_that_is_not_a_run_agent_input_is_400(content: bytes, needle: str) -> None:
    response = post(agui_app(greeter), content=content, **{"content-type": "application/json"})
    assert needle in refusal(response, 400, "INVALID_INPUT")


# -- real HTTP ------------------------------------------------------------------------------------


def test_events_stream_over_real_http_as_they_are_emitted() -> None:
    gate = threading.Event()

    async def agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.say("first")
        # Only a client that already received the first message can open this.
        await asyncio.to_thread(gate.wait, GUARD)
        ctx.say("second" if gate.is_set() else "the client never saw the first message")

    with serve(agui_app(agent)) as url, httpx.Client(timeout=GUARD) as client:
        decoder = SSEDecoder()
        events: list[dict[str, Any]] = []
        with client.stream("POST", url, json=BODY, headers={"accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            for chunk in r.iter_bytes():
                events.extend(decoder.feed(chunk))
                if any(e["type"] == "TEXT_MESSAGE_END" for e in events):
                    gate.set()
        events.extend(decoder.close())
    assert events[-1]["type"] == "RUN_FINISHED"
    assert [m["content"] for m in fold(events).messages] == ["first", "second"]


@pytest.mark.parametrize("flavour", ["async", "sync"])
def test_a_client_that_disconnects_cancels_the_run(flavour: str) -> None:
    cancelled = threading.Event()

    async def async_agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.say("working on it")
        try:
            # A disconnect trips the token and cancels this task: either way out is fine.
            await ctx.until_cancelled(asyncio.sleep(GUARD))
        finally:
            if ctx.cancelled:
                cancelled.set()

    def sync_agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.say("working on it")
        try:
            with ctx.assistant_message() as message:
                for _ in range(int(GUARD * 100)):
                    message.delta(".")
                    cancelled.wait(0.01)
        finally:
            if ctx.cancelled:
                cancelled.set()

    agent = async_agent if flavour == "async" else sync_agent
    with serve(agui_app(agent)) as url, httpx.Client(timeout=GUARD) as client:
        with client.stream("POST", url, json=BODY) as response:
            decoder = SSEDecoder()
            for chunk in response.iter_bytes():
                if any(e["type"] == "TEXT_MESSAGE_END" for e in decoder.feed(chunk)):
                    break  # leaving the block closes the connection mid-stream
        assert cancelled.wait(GUARD), "the agent never saw the run cancelled"


def test_a_silent_agent_gets_keep_alive_comments_between_events() -> None:
    gate = threading.Event()

    async def slow(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.say("looking it up")
        # A long tool call: the agent stays silent until the client has seen a comment.
        await asyncio.to_thread(gate.wait, GUARD)
        ctx.say("done" if gate.is_set() else "no keep-alive ever arrived")

    app = agui_app(slow, keepalive_seconds=0.01)
    with serve(app) as url, httpx.Client(timeout=GUARD) as client:
        raw = b""
        with client.stream("POST", url, json=BODY) as response:
            assert response.status_code == 200
            for chunk in response.iter_bytes():
                raw += chunk
                if b"TEXT_MESSAGE_END" in raw and b"\n: keep-alive\n\n" in raw:
                    gate.set()
    assert gate.is_set()
    # The comment came after the first message and before the second one started.
    first_end = raw.index(b"TEXT_MESSAGE_END")
    comment = raw.index(b": keep-alive\n\n", first_end)
    assert comment < raw.index(b"done")
    # Decoders skip comments: the events are those of the same agent served without them.
    quiet = agui_app(slow, keepalive_seconds=None)
    gate.set()
    with serve(quiet) as url, httpx.Client(timeout=GUARD) as client:
        plain = client.post(url, json=BODY).content
    assert b"keep-alive" not in plain
    assert decode_sse(raw) == decode_sse(plain)
    assert [m["content"] for m in fold(decode_sse(raw)).messages] == ["looking it up", "done"]


def test_keepalive_seconds_must_be_positive_or_none() -> None:
    with pytest.raises(ValueError, match="keepalive_seconds"):
        agui_app(greeter, keepalive_seconds=0)
