"""Background traffic and failures on the tape of other hosts (issue 41 items 2 and 3).

- the drop list names the telemetry, version checks and price maps of the frameworks the docs
  cover, by host or by URL (a per-URL entry leaves the rest of its host alone);
- a request belongs to the test's causal chain when it is sent from the test's context or from
  a thread started from there; a timer started elsewhere, and the threads it starts, do not;
- replaying, a request the cassette lacks that is background work is answered locally (204),
  counted, and a miss that looks like telemetry names the ``drop_hosts`` entry;
- a request that failed while recording is stored as that failure and raised again;
- a recorded exchange over 256 KB is warned about, naming its host and size.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import requests

from agui_replay.errors import ReplayMismatchError
from agui_replay.providers import DEFAULT_DROP_HOSTS, HttpTape
from agui_replay.providers._background import Chain, DropRules
from agui_replay.providers._transport._routing import HostTable
from tests.support.project import free_port


def _rules(entries: Any = DEFAULT_DROP_HOSTS) -> DropRules:
    return DropRules(entries, lambda e: HostTable(e, known={}))


@pytest.mark.parametrize(
    ("url", "dropped"),
    [
        ("https://telemetry.crewai.com:4319/v1/traces", True),
        ("https://pypi.org/pypi/crewai/json", True),
        ("https://pypi.org/pypi/litellm/1.0/json", True),  # '*' spans path segments
        ("https://pypi.org/simple/crewai/", False),
        (
            "https://raw.githubusercontent.com/BerriAI/litellm/main/"
            "model_prices_and_context_window.json",
            True,
        ),
        ("https://raw.githubusercontent.com/someone/data/main/cities.json", False),
        ("https://us.i.posthog.com/batch/", True),
        ("https://eu.api.smith.langchain.com/runs/multipart", True),
        ("https://os-api.agno.com/telemetry/runs", True),
        ("https://api.weather.example/v1/traces", False),
    ],
)
def test_the_default_drop_list(url: str, dropped: bool) -> None:
    assert _rules().drops(url) is dropped


def test_a_url_entry_names_its_host_and_a_path_glob() -> None:
    rules = _rules(["api.example.com:8443/metrics/*", "https://other.example/x"])
    assert rules.drops("https://api.example.com:8443/metrics/cpu")
    assert not rules.drops("https://api.example.com:8443/weather")
    assert not rules.drops("https://api.example.com/metrics/cpu")  # another port
    assert rules.drops("https://other.example/x")
    assert not rules.drops("https://other.example/y")


def _in_thread(work: Any) -> Any:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def test_the_causal_chain_follows_the_threads_the_test_starts() -> None:
    ticks: list[bool] = []
    go, done = threading.Event(), threading.Event()
    chain = Chain(thread_starts=True)

    def timer() -> None:  # started before the chain opened: a framework's exporter
        go.wait(5)
        ticks.append(chain.background())
        # the threads a background thread starts are background too (a Timer chain)
        ticks.append(_in_thread(chain.background))
        done.set()

    threading.Thread(target=timer, daemon=True).start()
    chain.open()
    try:
        assert not chain.background()
        assert _in_thread(chain.background) is False
        assert _in_thread(lambda: _in_thread(chain.background)) is False  # and on from there

        async def task() -> bool:
            return chain.background()

        assert asyncio.run(task()) is False
        go.set()
        assert done.wait(5)
        assert ticks == [True, True]
    finally:
        chain.close()
    assert chain.background()
    assert threading.Thread.start.__name__ == "start"  # the patch is gone with the chain


def test_a_chain_without_thread_starts_keeps_threads_out() -> None:
    chain = Chain(thread_starts=False)
    chain.open()
    try:
        assert not chain.background()
        assert _in_thread(chain.background) is True  # a timer an import started
    finally:
        chain.close()


class _StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    big = b"x" * (300 * 1024)

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = self.big if self.path == "/big" else b'{"sky": "sunny"}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


@pytest.fixture
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _recorded(work: Any, *, background: Any = None) -> tuple[HttpTape, list[dict[str, Any]]]:
    tape = HttpTape("record", chained=False)
    try:
        with tape.installed():
            work()
            if background is not None:
                threading.Thread(target=background).start()  # the chain hands its mark on
    finally:
        tape.close()
    return tape, tape.exchanges


def test_background_requests_are_marked_and_replayed_misses_answered_locally(
    stand_in: str,
) -> None:
    telemetry = stand_in.replace("127.0.0.1", "localhost")  # another host, one server
    pre_existing = threading.Event()
    sent = threading.Event()

    def exporter() -> None:
        pre_existing.wait(5)
        requests.post(f"{telemetry}/v1/traces", json={"tick": 1}, timeout=5)
        sent.set()

    threading.Thread(target=exporter, daemon=True).start()

    def test_body() -> None:
        assert httpx.get(f"{stand_in}/weather").json() == {"sky": "sunny"}
        pre_existing.set()
        assert sent.wait(5)

    _, exchanges = _recorded(test_body)
    assert [e.get("background", False) for e in exchanges] == [False, True]

    outside = ThreadPoolExecutor(1)  # its thread started before the replay: not the test's
    outside.submit(lambda: None).result()
    tape = HttpTape("replay", recorded=exchanges, chained=False)
    with tape.installed():
        assert httpx.get(f"{stand_in}/weather").json() == {"sky": "sunny"}
        # the recorded tick is replayed; one more has no answer left, and its host was only
        # reached by background work while recording
        answer = requests.post(f"{telemetry}/v1/traces", json={"tick": 2}, timeout=5)
        assert (answer.status_code, answer.content) == (200, b"{}")
        answer = requests.post(f"{telemetry}/v1/traces", json={"tick": 3}, timeout=5)
        assert (answer.status_code, answer.content) == (204, b"")
        # a host never recorded, from a thread outside the test: background work too
        unknown = f"http://127.0.0.1:{free_port()}/v1/metrics"
        assert outside.submit(lambda: httpx.post(unknown, json={}).status_code).result() == 204
        # the same from the test itself fails, and says which drop_hosts entry fixes it
        with pytest.raises(ReplayMismatchError):
            httpx.post(unknown, json={})
    tape.close()
    outside.shutdown()
    assert tape.background == [
        f"POST {telemetry}/v1/traces",
        f"POST {unknown}",
    ]
    assert len(tape.errors) == 1
    assert "matches no recorded HTTP exchange" in tape.errors[0]
    assert f"drop_hosts=['127.0.0.1:{unknown.split(':')[2].split('/')[0]}']" in tape.errors[0]


def test_a_foreground_miss_on_a_foreground_host_still_fails(stand_in: str) -> None:
    _, exchanges = _recorded(lambda: httpx.get(f"{stand_in}/weather?city=Paris"))
    tape = HttpTape("replay", recorded=exchanges, chained=False)
    with tape.installed(), pytest.raises(ReplayMismatchError):
        httpx.get(f"{stand_in}/weather?city=Rome")
    tape.close()
    assert tape.background == []
    assert "closest recorded one is #0" in tape.errors[0]
    assert "drop_hosts" not in tape.errors[0]


def test_failed_requests_are_stored_and_replayed_as_those_failures() -> None:
    refused = f"http://127.0.0.1:{free_port()}/data.csv"
    slow = f"http://127.0.0.1:{free_port()}/slow"
    seen: list[str] = []

    def attempts(*, timeout_too: bool) -> None:
        try:
            requests.get(refused, timeout=5)
        except requests.ConnectionError:
            seen.append("refused")
        if timeout_too:
            try:
                httpx.get(slow, timeout=0.3)
            except httpx.TimeoutException:
                seen.append("timeout")

    _, exchanges = _recorded(lambda: attempts(timeout_too=False))
    assert seen == ["refused"]
    [failed] = exchanges
    assert failed["response"]["failure"] == "unreachable"
    assert "Connection refused" in failed["response"]["message"]
    assert "status" not in failed["response"]

    # a timeout while recording is stored as this (the tape's own upstream timeout expired)
    timed_out = {
        "request": {"method": "GET", "url": slow, "headers": {}, "body": None},
        "response": {"failure": "timeout", "message": "ReadTimeout: timed out"},
    }
    seen.clear()
    tape = HttpTape("replay", recorded=[failed, timed_out], chained=False)
    with tape.installed():
        attempts(timeout_too=True)
    tape.close()
    assert seen == ["refused", "timeout"]
    assert tape.errors == []
    assert tape.unused == []


def test_an_exchange_over_256_kb_is_warned_about(
    stand_in: str, caplog: pytest.LogCaptureFixture
) -> None:
    def fetch() -> None:
        assert len(httpx.get(f"{stand_in}/big").content) == 300 * 1024
        httpx.get(f"{stand_in}/weather")

    with caplog.at_level(logging.WARNING, logger="agui_replay.tape"):
        tape, _ = _recorded(fetch)
    host = stand_in.split("//")[1]
    assert tape.large == [f"{host} (300 KB)"]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"GET {stand_in}/big is 300 KB" in warning
    assert "drop_hosts=['127.0.0.1:" in warning


def test_a_start_patched_over_ours_never_recurses_into_it() -> None:
    # Another library wraps Thread.start while a chain hands its mark on; the chain closes (ours
    # cannot be undone under theirs), a second chain opens: starting a thread must still work,
    # and the new thread still belongs to the open chain.
    from agui_replay.providers._background import Chain

    original = threading.Thread.start
    first = Chain(thread_starts=True)
    first.open()
    ours = threading.Thread.start

    def theirs(thread: threading.Thread) -> None:
        ours(thread)

    threading.Thread.start = theirs  # type: ignore[method-assign]
    try:
        first.close()
        second = Chain(thread_starts=True)
        second.open()
        seen: list[bool] = []
        worker = threading.Thread(target=lambda: seen.append(second.background()))
        worker.start()
        worker.join(5)
        second.close()
        assert seen == [False]
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]
