"""A tool's requests in flight at the same time: stored in one order whichever thread sent
first, matched by content, and replayed ending in the order they ended while recording."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import httpx2
import pytest

from agui_replay.errors import CassetteError
from agui_replay.providers import FakeProvider, Recorder
from agui_replay.providers._transport import _tape
from agui_replay.providers._transport._routing import intercepting
from agui_replay.providers._transport._tape import HttpTape, TapeRouter

API = "http://api.weather.test"


def _exchange(path: str, data: str, **chunk: Any) -> dict[str, Any]:
    return {
        "request": {"method": "GET", "url": API + path, "headers": {}},
        "response": {
            "status": 200,
            "headers": {"content-type": "text/plain", "content-length": str(len(data))},
            "chunks": [{"offset": 0.0, "data": data, **chunk}],
        },
    }


@contextlib.contextmanager
def _taped(tape: HttpTape) -> Iterator[HttpTape]:
    # closed afterwards, as a session closes its tape: an open tape's causal chain keeps
    # Thread.start patched for the tests that run after it
    try:
        with intercepting(TapeRouter(tape)):
            yield tape
    finally:
        tape.close()


RECORDED = [_exchange("/a", "A"), _exchange("/b", "B", after_responses=[0])]
"""``/b`` ended after ``/a`` while both were in flight."""


def test_threads_end_in_the_recorded_order_whichever_asked_first() -> None:
    ended: list[str] = []

    def get(path: str, wait: float) -> None:
        time.sleep(wait)
        ended.append(httpx.get(API + path).text)

    with _taped(HttpTape("replay", recorded=RECORDED)) as tape:
        threads = [
            threading.Thread(target=get, args=("/b", 0.0)),  # asks first, ends second
            threading.Thread(target=get, args=("/a", 0.2)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert ended == ["A", "B"]
    assert tape.unused == []


def test_gathered_tasks_end_in_the_recorded_order() -> None:
    async def main() -> list[str]:
        ended: list[str] = []
        async with httpx.AsyncClient() as client:

            async def get(path: str, wait: float) -> None:
                await asyncio.sleep(wait)
                ended.append((await client.get(API + path)).text)

            await asyncio.gather(get("/b", 0.0), get("/a", 0.1))
        return ended

    with _taped(HttpTape("replay", recorded=RECORDED)):
        assert asyncio.run(main()) == ["A", "B"]


def test_requests_in_flight_at_once_are_matched_by_content() -> None:
    recorded = [_exchange("/w?city=Oslo", "rain"), _exchange("/w?city=Paris", "sunny")]
    with _taped(HttpTape("replay", recorded=recorded)):
        assert httpx.get(API + "/w?city=Paris").text == "sunny"
        assert httpx.get(API + "/w?city=Oslo").text == "rain"


def test_a_response_waits_a_while_for_one_never_asked_then_is_served(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_tape, "_RELEASE_WAIT", 0.2)
    with _taped(HttpTape("replay", recorded=RECORDED)), caplog.at_level(logging.WARNING):
        assert httpx.get(API + "/b").text == "B"
    assert "waited 0 s for the responses of http[0]" in caplog.text


@pytest.mark.parametrize("value", ["0", [5], [True], {"a": 1}])
def test_a_broken_after_responses_is_a_cassette_error(value: Any) -> None:
    recorded = [_exchange("/a", "A", after_responses=value)]
    where = r"c\.json: http\[0\]\.response\.chunks\[0\]\.after_responses"
    with (
        _taped(HttpTape("replay", recorded=recorded, where="c.json")),
        pytest.raises(CassetteError, match=where),
    ):
        httpx.get(API + "/a")


# --- recording ------------------------------------------------------------------------------


class _Timed(BaseHTTPRequestHandler):
    """``GET /<seconds>`` answers its path after that many seconds."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        time.sleep(float(self.path.strip("/")))
        body = self.path.encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def timed_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Timed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _record(base: str, paths: list[str]) -> list[dict[str, Any]]:
    """The exchanges stored when threads ask for ``paths`` in that order, a moment apart."""
    tape = HttpTape("record")

    def get(path: str) -> None:
        httpx.get(base + path)

    with _taped(tape):
        threads = [threading.Thread(target=get, args=(p,)) for p in paths]
        for thread in threads:
            thread.start()
            time.sleep(0.02)
        for thread in threads:
            thread.join()
    tape.close()
    return tape.exchanges


def _stored(exchanges: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (e["request"]["url"].rsplit("/", 1)[1], e["response"]["chunks"][-1].get("after_responses"))
        for e in exchanges
    ]


def test_concurrent_exchanges_are_stored_in_one_order_with_their_end_order(
    timed_api: str,
) -> None:
    slow_first = _record(timed_api, ["/0.3", "/0.05"])
    fast_first = _record(timed_api, ["/0.05", "/0.3"])
    # sorted by request; the slow one names the fast one, which ended while it was in flight
    assert _stored(slow_first) == _stored(fast_first) == [("0.05", None), ("0.3", [0])]


def test_exchanges_one_after_another_keep_their_order_and_name_no_other(
    timed_api: str,
) -> None:
    tape = HttpTape("record")
    with _taped(tape):
        for path in ("/0.02", "/0.01"):
            httpx.get(timed_api + path)
    tape.close()
    assert _stored(tape.exchanges) == [("0.02", None), ("0.01", None)]


# --- model providers ------------------------------------------------------------------------


def _interaction(content: str) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    answer = {"choices": [{"message": {"role": "assistant", "content": content.upper()}}]}
    return {
        "request": {"method": "POST", "path": "/v1/chat/completions", "body": body},
        "response": {"status": 200, "headers": {}, "body": answer},
    }


def _ask(fake: FakeProvider, content: str) -> Any:
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    with httpx.Client(transport=fake.httpx_transport()) as client:
        return client.post("http://fake/v1/chat/completions", json=body)


def test_provider_requests_are_matched_by_content_among_the_unanswered_by_default() -> None:
    fake = FakeProvider.from_interactions([_interaction("title"), _interaction("main")])
    assert json.loads(_ask(fake, "main").text)["choices"][0]["message"]["content"] == "MAIN"
    assert json.loads(_ask(fake, "title").text)["choices"][0]["message"]["content"] == "TITLE"
    fake.check()


def test_match_order_still_asks_for_the_recorded_order() -> None:
    fake = FakeProvider.from_interactions(
        [_interaction("title"), _interaction("main")], match="order"
    )
    assert _ask(fake, "main").status_code == 500
    assert "match='order'" in str(fake.errors[0])


def _record_provider(first: str, second: str) -> list[str]:
    """The order a recorder stores two requests a moment apart, ``"slow"`` answered late."""

    def model(request: Any) -> Iterator[str]:
        said = request.messages[-1]["content"]
        time.sleep(0.3 if said == "slow" else 0.05)
        yield said.upper()

    recorder = Recorder()
    client = httpx2.Client(transport=recorder.transport(FakeProvider(function=model).transport()))

    def ask(content: str) -> None:
        body = {"model": "m", "messages": [{"role": "user", "content": content}], "stream": True}
        with client.stream("POST", "http://fake/v1/chat/completions", json=body) as response:
            response.read()

    threads = [threading.Thread(target=ask, args=(c,)) for c in (first, second)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    client.close()
    return [i.request.body["messages"][0]["content"] for i in recorder.stored_since(0)]


def test_concurrent_provider_requests_are_stored_in_one_order() -> None:
    assert _record_provider("slow", "fast") == _record_provider("fast", "slow") == ["fast", "slow"]
