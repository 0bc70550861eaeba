"""Faults (``agui_replay.faults``) applied by a replaying FakeProvider, seen through the
in-process transports of each HTTP library, and the builders' checks of their arguments."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from agui_replay import faults
from agui_replay.errors import InvalidArgumentError, ReplayMismatchError
from agui_replay.providers import FakeProvider
from agui_replay.providers._plan import Request
from agui_replay.providers._transport._routing import intercepting
from agui_replay.providers._transport._tape import HttpTape, TapeRouter

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
        (lambda: faults.cut(1, host="http://127.0.0.1:8765/x"), "write host='127.0.0.1:8765'"),
        (lambda: faults.delay(1, host="api.test:port"), "has a port that is not a number"),
        (lambda: faults.timeout(host=""), "takes the host of a recorded request"),
        (lambda: faults.status(503, host=8765), "HOST or HOST:PORT"),
    ],
)
def test_bad_arguments_say_what_the_builder_takes(build: Any, words: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        build()
    assert words in str(caught.value)


def test_host_is_kept_lower_case_and_shown_where_the_fault_is_named() -> None:
    fault = faults.malformed(after_chunks=2, host="API.Weather.test:8443", request=1)
    assert fault.host == "api.weather.test:8443"
    assert repr(fault) == (
        "Fault(kind='malformed', request=1, host='api.weather.test:8443', after_chunks=2)"
    )
    assert fault.describe() == (
        "faults.malformed(after_chunks=2, host='api.weather.test:8443', request=1)"
    )
    assert (
        faults.timeout(host="[::1]:8000").describe()
        == "faults.timeout(host='[::1]:8000', request=0)"
    )
    assert faults.cut(3).host is None


# --- faults with host=: a tool's recorded requests, replayed by the tape ---------------------


def _exchange(url: str, *chunks: str, content_type: str = "text/plain", **response: Any) -> Any:
    return {
        "request": {"method": "GET", "url": url, "headers": {}},
        "response": {
            "status": 200,
            "headers": {"content-type": content_type},
            "chunks": [{"offset": 0.0, "data": c} for c in chunks],
            **response,
        },
    }


@contextlib.contextmanager
def _taped(exchanges: list[Any], *fault: faults.Fault) -> Iterator[HttpTape]:
    tape = HttpTape("replay", recorded=exchanges, faults=fault, where="c.json")
    try:
        with intercepting(TapeRouter(tape)):
            yield tape
    finally:
        tape.close()  # its causal chain closes with it, as a session's does


def _raw(url: str) -> list[bytes]:
    with httpx.stream("GET", url) as response:
        return list(response.iter_raw())


def test_a_host_status_answers_first_and_leaves_the_exchange_for_the_retry() -> None:
    fault = faults.status(503, headers={"Retry-After": "0"}, host="api.weather.test")
    with _taped([_exchange("http://api.weather.test/w", "sunny")], fault) as tape:
        first = httpx.get("http://api.weather.test/w")
        assert first.status_code == 503
        assert first.headers["retry-after"] == "0"
        assert first.json()["error"]["code"] == 503
        assert "faults.status(503, host='api.weather.test', request=0)" in first.text
        assert tape.unused == ["GET http://api.weather.test/w"]
        assert httpx.get("http://api.weather.test/w").text == "sunny"
    assert tape.unused == []
    assert tape.fired == [fault]


def test_a_host_fault_counts_the_requests_to_its_host_only() -> None:
    exchanges = [
        _exchange("http://api.weather.test/a", "A"),
        _exchange("https://other.test/b", "B"),
        _exchange("http://api.weather.test/c", "C1", "C2"),
    ]
    fault = faults.cut(after_chunks=1, host="api.weather.test:80", request=1)
    with _taped(exchanges, fault) as tape:
        assert _raw("http://api.weather.test/a") == [b"A"]
        assert _raw("https://other.test/b") == [b"B"]
        got: list[bytes] = []
        with pytest.raises(httpx.RemoteProtocolError):
            got.extend(_raw("http://api.weather.test/c"))
    assert tape.fired == [fault]


def test_malformed_on_an_event_stream_is_an_sse_event_and_delay_still_serves() -> None:
    stream = _exchange(
        "http://sse.test/events",
        "data: 1\n\n",
        "data: 2\n\n",
        content_type="text/event-stream",
    )
    # the second chunk arrived once the host's first request was sent: a paced stream
    stream["response"]["chunks"][1]["after"] = 1
    malformed = faults.malformed(after_chunks=1, host="sse.test")
    delay = faults.delay(0.01, host="sse.test")
    with _taped([stream], malformed, delay) as tape:
        assert b"".join(_raw("http://sse.test/events")) == (
            b'data: 1\n\ndata: {"truncated": \n\ndata: 2\n\n'
        )
    assert tape.fired == [malformed, delay]


def test_a_host_timeout_raises_the_librarys_read_timeout() -> None:
    fault = faults.timeout(times=2, host="api.weather.test")
    with _taped([_exchange("http://api.weather.test/w", "sunny")], fault):
        with pytest.raises(httpx.ReadTimeout, match="agui_replay fault: read timed out"):
            httpx.get("http://api.weather.test/w")
        with pytest.raises(httpx2.ReadTimeout):
            httpx2.get("http://api.weather.test/w")
        assert httpx.get("http://api.weather.test/w").text == "sunny"


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ("b.test:443", None),  # the scheme's port
        ("B.test", None),  # any port
        ("b.test:80", "recorded no request to b.test:80; it recorded requests to b.test"),
        ("[::1]:8000", "recorded no request to [::1]:8000"),
    ],
)
def test_which_recorded_requests_a_host_names(host: str, problem: str | None) -> None:
    fault = faults.cut(0, host=host)
    tape = HttpTape(
        "replay", recorded=[_exchange("https://b.test/y", "y")], faults=[fault], chained=False
    )
    if problem is None:
        tape.check_faults()
        # placed on the recorded request: replaying it serves the cut response
        plan = tape.answer(Request("GET", "/y", {}, b"", origin="https://b.test"))
        assert (plan.cut, list(plan.body)) == (True, [])
        assert tape.fired == [fault]
        return
    with pytest.raises(ReplayMismatchError, match=re.escape(problem)):
        tape.check_faults()
    assert len(tape.errors) == 1
    assert problem in tape.errors[0]


def test_a_stored_chunk_without_its_data_is_named_by_its_index() -> None:
    # The tape reads a stored response's chunks straight to bytes; a broken one is still
    # named with its place, as for any stored response.
    from agui_replay.errors import ProviderError
    from agui_replay.providers._interaction import chunk_bytes

    good = [{"offset": 0.1 * n, "data": f"part {n};"} for n in range(6)]
    assert chunk_bytes(good) == [f"part {n};".encode() for n in range(6)]
    binary = {"offset": 0.7, "data": "AAE=", "encoding": "base64"}
    assert chunk_bytes([*good, binary])[-1] == b"\x00\x01"
    with pytest.raises(ProviderError, match=r"response\.chunks\[5\]: .*data"):
        chunk_bytes([*good[:5], {"offset": 0.5}])


def _failing(failure: Exception) -> Any:
    def app(method: str, target: str, headers: Any, body: bytes) -> Any:
        raise failure

    return app


def test_each_transport_raises_its_own_librarys_form_of_a_failure() -> None:
    """The tape raises one neutral signal; the transport that carried the request turns it
    into its library's exception (no call stack is read)."""
    from agui_replay.providers._plan import TimedOut, Unreachable
    from agui_replay.providers._transport import _httpx, _routing
    from agui_replay.providers._transport._urllib import MemorySocket

    for lib, transport in ((httpx, _httpx.HttpxTransport), (httpx2, _httpx.Httpx2Transport)):
        client: Any = lib.Client(transport=transport(_failing(TimedOut("slow"))))
        with pytest.raises(lib.ReadTimeout, match="slow"):
            client.get("http://a.test/")
        client = lib.Client(transport=transport(_failing(Unreachable("refused"))))
        with pytest.raises(lib.ConnectError, match="refused"):
            client.get("http://a.test/")
    sock = MemorySocket(_failing(TimedOut("slow")))
    sock.sendall(b"GET / HTTP/1.1\r\nhost: a.test\r\n\r\n")
    with pytest.raises(TimeoutError, match="slow"):
        sock.makefile("rb")
    assert all(callable(t.install) for t in _routing._transports())
