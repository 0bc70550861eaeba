"""The HTTP endpoint against hostile and careless clients, over real HTTP: uvicorn on
127.0.0.1 (``agui_replay.server.testing.serve``), one test per case, every wait bounded.

A malformed body of any shape is a 400 with ``{code, message}``; a client that leaves, while it
sends the body or during the stream, is normal (the endpoint returns, nothing is logged); a
body that dribbles in is cut off by ``body_timeout_seconds``; sync agents run on the
endpoint's own threads, ``sync_concurrency`` at a time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from agui_replay.errors import InvalidArgumentError
from agui_replay.server import RunContext, agui_app
from agui_replay.server._asgi import DEFAULT_MAX_DEPTH, DEFAULT_SYNC_CONCURRENCY
from agui_replay.server.testing import serve
from agui_replay.sse import decode_sse

GUARD = 20.0  # the bound of every wait; only reached when the endpoint is broken

VALID = {"threadId": "t", "runId": "r", "messages": [], "state": None}


def greeter(ctx: RunContext[Any]) -> None:
    ctx.say("hello")


class Observed:
    """ASGI wrapper that records whether the app raised, and counts finished requests."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.errors: list[BaseException] = []
        self.finished = 0
        self._changed = threading.Condition()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        except BaseException as error:
            self.errors.append(error)
            raise
        finally:
            with self._changed:
                self.finished += 1
                self._changed.notify_all()

    def wait_finished(self, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.finished >= count, GUARD), (
                f"{self.finished} of {count} request(s) finished"
            )


class Logs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.records]


@contextmanager
def served(app: Any) -> Iterator[tuple[str, Observed, Logs]]:
    """Serve ``app`` on loopback; yields its URL, the observer and what the server logged."""
    observed = Observed(app)
    logs = Logs()
    with serve(observed) as url:
        # uvicorn configured its loggers when it started; listen from now on
        loggers = [logging.getLogger(name) for name in ("uvicorn.error", "uvicorn", "asyncio")]
        for logger in loggers:
            logger.addHandler(logs)
        try:
            yield url, observed, logs
        finally:
            for logger in loggers:
                logger.removeHandler(logs)


def raw(url: str, request: bytes, *, then_close: bool = False) -> bytes:
    """Send ``request`` bytes on a fresh connection; the whole answer (or b"" when closing)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=GUARD) as sock:
        sock.sendall(request)
        if then_close:
            return b""
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def head(length: int) -> bytes:
    return (
        b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: text/event-stream\r\ncontent-length: " + str(length).encode() + b"\r\n\r\n"
    )


# --- a malformed body of any shape is a 400 ------------------------------------------------------

DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_IN_STATE = b'{"threadId":"t","runId":"r","messages":[],"state":' + DEEP_ARRAY + b"}"
OVER_THE_LIMIT = (
    b'{"threadId":"t","runId":"r","messages":[],"state":'
    + b"[" * DEFAULT_MAX_DEPTH
    + b"]" * DEFAULT_MAX_DEPTH
    + b"}"
)

MALFORMED = {
    "deep-array-100k": (DEEP_ARRAY, "nests deeper than 256"),
    "deep-state-100k": (DEEP_IN_STATE, "nests deeper than 256"),
    "deep-state-over-max-depth": (OVER_THE_LIMIT, "nests deeper than 256"),
    "deep-object-1000": (b'{"a":' * 1000 + b"1" + b"}" * 1000, "nests deeper"),
    "array": (b"[]", "a RunAgentInput is a JSON object, got list"),
    "number": (b"5", "got int"),
    "string": (b'"run"', "got str"),
    "null": (b"null", "got NoneType"),
    "true": (b"true", "got bool"),
    "nan": (b'{"threadId":"t","runId":"r","messages":[],"state":NaN}', "NaN is not JSON"),
    "infinity": (b'{"threadId":"t","runId":"r","state":-Infinity}', "-Infinity is not JSON"),
    "huge-int": (b'{"threadId":"t","runId":"r","state":' + b"9" * 5000 + b"}", "not JSON"),
    "bad-utf8": (b'{"threadId":"\xff\xfe"}', "not JSON"),
    "lone-surrogate": (
        b'{"threadId":"t\\ud800","runId":"r","messages":[]}',
        "lone UTF-16 surrogate",
    ),
    "truncated": (b'{"threadId":"t","runId":', "not JSON"),
    "thread-id-int": (b'{"threadId":5,"runId":"r","messages":[]}', "field threadId"),
    "messages-string": (b'{"threadId":"t","runId":"r","messages":"hi"}', "field messages"),
    "messages-of-ints": (b'{"threadId":"t","runId":"r","messages":[5]}', "field messages.0"),
    "message-without-role": (
        b'{"threadId":"t","runId":"r","messages":[{"id":"1","content":"hi"}]}',
        "field messages.0",
    ),
    "tools-object": (b'{"threadId":"t","runId":"r","messages":[],"tools":{}}', "field tools"),
    "huge-key": (
        b'{"threadId":"t","runId":"r","messages":[{"' + b"k" * 100_000 + b'":1}]}',
        "field messages.0",
    ),
    "empty": (b"", "the request body is empty"),
    "whitespace": (b"  \n", "the request body is empty"),
}


@pytest.fixture(scope="module")
def greeter_server() -> Iterator[tuple[str, Observed, Logs]]:
    with served(agui_app(greeter)) as server:
        yield server


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_body_is_a_400_with_code_and_message(
    greeter_server: tuple[str, Observed, Logs], case: str
) -> None:
    url, observed, logs = greeter_server
    body, needle = MALFORMED[case]
    before, logged = len(observed.errors), len(logs.records)
    response = httpx.post(
        url,
        content=body,
        headers={"content-type": "application/json", "accept": "text/event-stream"},
        timeout=GUARD,
    )
    assert response.status_code == 400, response.text[:300]
    answer = response.json()
    assert set(answer) == {"code", "message"}
    assert answer["code"] == "INVALID_INPUT"
    assert needle in answer["message"]
    assert len(answer["message"]) <= 2000
    assert "Traceback" not in response.text
    assert observed.errors[before:] == []
    assert logs.lines()[logged:] == []


def test_a_body_just_within_the_depth_limit_runs(
    greeter_server: tuple[str, Observed, Logs],
) -> None:
    url, _, logs = greeter_server
    logged = len(logs.records)
    depth = 100  # the state manager's own limit is 128: this state is a valid one
    state = "[" * depth + "]" * depth
    body = '{"threadId":"t","runId":"r","messages":[],"state":{"a":' + state + "}}"
    response = httpx.post(url, content=body, timeout=GUARD)
    assert response.status_code == 200
    assert [e["type"] for e in decode_sse(response.content)][-1] == "RUN_FINISHED"
    # a valid surrogate pair is fine: only a lone one is refused
    pair = json.dumps({**VALID, "threadId": "t\U0001f600"}).encode()
    assert b"\\ud83d\\ude00" in pair
    response = httpx.post(url, content=pair, timeout=GUARD)
    assert response.status_code == 200
    assert decode_sse(response.content)[0]["threadId"] == "t\U0001f600"
    assert logs.lines()[logged:] == []


# --- a client that leaves is normal --------------------------------------------------------------


def test_a_client_that_leaves_while_sending_the_body_is_not_an_error() -> None:
    with served(agui_app(greeter)) as (url, observed, logs):
        raw(url, head(1000) + b'{"threadId":', then_close=True)
        observed.wait_finished(1)
        # the server still serves the next client
        assert httpx.post(url, json=VALID, timeout=GUARD).status_code == 200
        observed.wait_finished(2)
    assert observed.errors == []
    assert not any("Exception in ASGI application" in line for line in logs.lines())
    assert logs.lines() == []


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_client_that_leaves_during_the_stream_cancels_the_run_quietly(kind: str) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def async_agent(ctx: RunContext[Any]) -> None:
        ctx.say("first")
        started.set()
        try:
            await asyncio.sleep(GUARD)
        except asyncio.CancelledError:  # the driver cancels the agent's task
            stopped.set()
            raise

    def sync_agent(ctx: RunContext[Any]) -> None:
        ctx.say("first")
        started.set()
        if ctx.cancellation.wait_blocking(GUARD):
            stopped.set()

    agent = async_agent if kind == "async" else sync_agent
    with served(agui_app(agent, keepalive_seconds=None)) as (url, observed, logs):
        with httpx.Client(timeout=GUARD) as client, client.stream("POST", url, json=VALID) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if "TEXT_MESSAGE_END" in line:
                    break  # and leave
        assert started.wait(GUARD)
        assert stopped.wait(GUARD), "the run was not cancelled"
        observed.wait_finished(1)
    assert observed.errors == []
    assert logs.lines() == []


# --- the body has a read timeout -----------------------------------------------------------------


def test_a_body_that_dribbles_in_is_cut_off_with_a_408() -> None:
    with served(agui_app(greeter, body_timeout_seconds=0.2)) as (url, observed, logs):
        answer = raw(url, head(100) + b'{"threadId"')  # 89 bytes never come
        observed.wait_finished(1)
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"connection: close" in headers.lower()
    assert json.loads(body) == {
        "code": "REQUEST_TIMEOUT",
        "message": "the request body did not arrive within 0.2 seconds "
        "(body_timeout_seconds); send it at once",
    }
    assert observed.errors == []
    assert logs.lines() == []


def test_a_body_that_arrives_in_time_runs_under_a_timeout() -> None:
    with served(agui_app(greeter, body_timeout_seconds=5)) as (url, _, logs):
        answer = raw(url, head(len(json.dumps(VALID))) + json.dumps(VALID).encode())
    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert b"RUN_FINISHED" in answer
    assert logs.lines() == []


# --- sync agents have their own threads ----------------------------------------------------------


async def _post_all(url: str, count: int) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(timeout=GUARD, limits=limits) as client:
        return await asyncio.gather(*(client.post(url, json=VALID) for _ in range(count)))


def _texts(responses: list[httpx.Response]) -> list[str]:
    texts = []
    for response in responses:
        events = decode_sse(response.content)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        texts.append("".join(e.get("delta", "") for e in events))
    return texts


def test_twenty_sync_runs_run_at_once_by_default() -> None:
    # Each run waits for all 20 at a barrier: with the default thread pool (6 workers on two
    # cores) the barrier could never fill and every run would end in RUN_ERROR.
    count = 20
    assert count < DEFAULT_SYNC_CONCURRENCY
    barrier = threading.Barrier(count, timeout=GUARD)

    def blocking(ctx: RunContext[Any]) -> None:
        barrier.wait()
        ctx.say(threading.current_thread().name)

    with served(agui_app(blocking)) as (url, observed, logs):
        responses = asyncio.run(_post_all(url, count))
    names = _texts(responses)
    assert len(set(names)) == count
    assert all(name.startswith("agui-sync-agent") for name in names)
    assert observed.errors == []
    assert logs.lines() == []


def test_sync_concurrency_limits_the_threads() -> None:
    # Pairs meet at a barrier of two: a limit of 2 lets every pair through, and the pool never
    # has more than 2 threads, whatever the number of requests.
    barrier = threading.Barrier(2, timeout=GUARD)

    def paired(ctx: RunContext[Any]) -> None:
        barrier.wait()
        ctx.say(threading.current_thread().name)

    with served(agui_app(paired, sync_concurrency=2)) as (url, _, logs):
        responses = asyncio.run(_post_all(url, 6))
    names = _texts(responses)
    assert len(names) == 6
    assert len(set(names)) == 2
    assert logs.lines() == []


def test_async_agents_and_agent_attributes_are_unchanged() -> None:
    class Counter:
        state_type = dict

        def run(self, ctx: RunContext[Any]) -> None:
            ctx.say(f"{type(ctx.state()).__name__} on {threading.current_thread().name}")

    with served(agui_app(Counter())) as (url, _, _logs):
        events = decode_sse(httpx.post(url, json=VALID, timeout=GUARD).content)
    text = "".join(e.get("delta", "") for e in events)
    assert text.startswith("dict on agui-sync-agent")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("body_timeout_seconds", 0),
        ("body_timeout_seconds", "5"),
        ("max_depth", 0),
        ("max_depth", 2.5),
        ("sync_concurrency", 0),
        ("sync_concurrency", True),
        ("keepalive_seconds", -1),
    ],
)
def test_bad_options_are_refused_when_the_app_is_built(option: str, value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=f"{option} must be a positive"):
        agui_app(greeter, **{option: value})
