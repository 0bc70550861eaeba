"""Faults (``agui_replay.faults``) applied by a replaying FakeProvider, seen through the
in-process transports of each HTTP library, and the builders' checks of their arguments."""

from __future__ import annotations

import http.client
import json
from typing import Any

import httpx
import httpx2
import pytest

from agui_replay import faults
from agui_replay.errors import InvalidArgumentError
from agui_replay.providers import FakeProvider

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
CHUNKS = [
    'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
    'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n',
    "data: [DONE]\n\n",
]


def _interaction() -> dict[str, Any]:
    return {
        "request": {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": BODY},
        "response": {
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "chunks": [{"offset": 0.0, "data": c} for c in CHUNKS],
        },
    }


def _fake(*fault: faults.Fault) -> FakeProvider:
    return FakeProvider.from_interactions([_interaction()], faults=fault)


def _post(client: httpx2.Client | httpx.Client) -> Any:
    return client.post("http://fake/v1/chat/completions", json=BODY)


def test_a_cut_serves_the_first_chunks_then_drops_the_connection() -> None:
    fake = _fake(faults.cut(after_chunks=1))
    got: list[bytes] = []
    with (
        httpx2.Client(transport=fake.transport()) as client,
        client.stream("POST", "http://fake/v1/chat/completions", json=BODY) as response,
        pytest.raises(httpx2.RemoteProtocolError),
    ):
        got.extend(response.iter_raw())
    assert got == [CHUNKS[0].encode()]
    assert fake.fired == [faults.cut(after_chunks=1)]


def test_a_status_answers_first_then_the_recording() -> None:
    fake = _fake(faults.status(429, headers={"retry-after": "0"}, times=2))
    with httpx2.Client(transport=fake.transport()) as client:
        first, second, third = _post(client), _post(client), _post(client)
    assert (first.status_code, second.status_code, third.status_code) == (429, 429, 200)
    assert first.headers["retry-after"] == "0"
    assert first.json()["error"]["type"] == "rate_limit_exceeded"  # OpenAI's error shape
    assert third.text == "".join(CHUNKS)
    assert fake.unserved == []
    assert fake.errors == []


def test_malformed_inserts_a_frame_that_is_not_json() -> None:
    fake = _fake(faults.malformed(after_chunks=1))
    with httpx2.Client(transport=fake.transport()) as client:
        frames = _post(client).text.split("\n\n")
    assert frames[0] == CHUNKS[0].strip()
    with pytest.raises(json.JSONDecodeError):
        json.loads(frames[1].removeprefix("data: "))
    assert frames[2] == CHUNKS[1].strip()


def test_a_delay_still_serves_the_recording() -> None:
    fake = _fake(faults.delay(0.01))
    with httpx2.Client(transport=fake.transport()) as client:
        assert _post(client).text == "".join(CHUNKS)


def test_a_timeout_raises_what_the_http_library_raises() -> None:
    fake = _fake(faults.timeout(times=2))
    with httpx2.Client(transport=fake.transport()) as client, pytest.raises(httpx2.ReadTimeout):
        _post(client)
    with httpx.Client(transport=fake.httpx_transport()) as h, pytest.raises(httpx.ReadTimeout):
        _post(h)
    with httpx2.Client(transport=fake.transport()) as client:
        assert _post(client).status_code == 200  # after `times`, the recording


def test_a_timeout_reaches_http_client_as_a_socket_timeout() -> None:
    fake = _fake(faults.timeout())
    with fake.serve() as server:
        # over the loopback server the fault closes the connection unanswered
        conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
        conn.request("POST", "/v1/chat/completions", body=json.dumps(BODY))
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            conn.getresponse()
        conn.close()


def test_a_fault_on_another_request_leaves_this_one_alone() -> None:
    fake = FakeProvider.from_interactions(
        [_interaction()], faults=[faults.cut(after_chunks=0, request=1)], first_request=0
    )
    with httpx2.Client(transport=fake.transport()) as client:
        assert _post(client).text == "".join(CHUNKS)
    assert fake.fired == []


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: faults.cut(after_chunks=-1), "after_chunks=...) takes a whole number >= 0"),
        (lambda: faults.cut(after_chunks=2, request=True), "request=...) takes a whole number"),
        (lambda: faults.status(200), "an HTTP error status from 400 to 599, got 200"),
        (lambda: faults.status(429, times=0), "times=...) takes a whole number >= 1"),
        (lambda: faults.status(429, headers=[("a", "b")]), "takes a mapping"),
        (lambda: faults.delay(float("nan")), "a finite number of seconds >= 0"),
        (lambda: faults.malformed(after_chunks="3"), "after_chunks=...) takes a whole number"),
        (lambda: faults.timeout(times=-2), "times=...) takes a whole number >= 1"),
    ],
)
def test_bad_arguments_say_what_the_builder_takes(build: Any, words: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        build()
    assert words in str(caught.value)
