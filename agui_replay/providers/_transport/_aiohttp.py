"""aiohttp requests to a provider, answered in process through an in-memory connection.

aiohttp sends every request through its connector: ``BaseConnector.connect`` hands back a
``Connection`` around aiohttp's own ``ResponseHandler`` protocol, bound to a socket transport.
During a run the routing gives a provider request a connection whose transport is in memory
instead (:func:`connection`). The request aiohttp writes to it is parsed here and answered by
the router; the planned response goes back to aiohttp's protocol as HTTP/1.1 bytes, each
chunk its own HTTP chunk, so aiohttp's parser (its C one where built) reads the response as
it reads a socket's, ``iter_chunks()`` boundaries included. There is no socket and no server
thread, and aiohttp's connection pool never sees the connection: it closes after one response.

Private to :mod:`agui_replay.providers`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from agui_replay.providers._plan import Failure, Library, Plan
from agui_replay.providers._transport._loopback import _END, _HOP_BY_HOP, _http_chunk, listed_writes

__all__ = ["connection", "install", "parse_request"]

Answer = Callable[[str, str, dict[str, str], bytes], Awaitable[Plan]]
"""``answer(method, target, headers, body) -> Plan``, headers lower-cased."""


def _dechunked(data: bytes) -> bytes | None:
    """The body of a chunked request, or ``None`` while it is incomplete."""
    out: list[bytes] = []
    at = 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(data[at:line_end].split(b";", 1)[0].strip() or b"0", 16)
        at = line_end + 2
        if size == 0:
            return b"".join(out) if data.find(b"\r\n\r\n", at - 2) >= 0 else None
        if len(data) < at + size + 2:
            return None
        out.append(data[at : at + size])
        at += size + 2


def _head(data: bytes) -> tuple[str, str, dict[str, str]]:
    """``(method, target, headers)`` of a request's head (the bytes before its blank line)."""
    lines = data.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    if "://" in target:
        path_at = target.find("/", target.index("://") + 3)
        target = target[path_at:] if path_at >= 0 else "/"
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _body(headers: dict[str, str], data: bytes | bytearray, at: int) -> bytes | None:
    """The body that starts at ``data[at]``, or ``None`` while it is incomplete (a check of a
    length or of the last bytes, so a body written in many pieces is not read again each
    time)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        if not data.endswith(b"0\r\n\r\n"):
            return None
        return _dechunked(bytes(data[at:]))
    length = int(headers.get("content-length") or 0)
    if len(data) - at < length:
        return None
    return bytes(data[at : at + length])


def parse_request(data: bytes) -> tuple[str, str, dict[str, str], bytes] | None:
    """``(method, target, headers, body)`` of the HTTP/1.1 request in ``data``, or ``None``
    while it is incomplete. ``target`` is origin-form (an absolute-form one, as written for a
    proxy, loses its scheme and authority); header names are lower-cased, the last of a name
    wins, as the in-process ``httpx`` transports hand them over.

    >>> parse_request(b"POST http://h:1/v1/x?a=1 HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    ('POST', '/v1/x?a=1', {'content-length': '2'}, b'hi')
    >>> parse_request(b"POST /v1 HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\nh") is None
    True
    """
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    method, target, headers = _head(data[:end])
    body = _body(headers, data, end + 4)
    return None if body is None else (method, target, headers, body)


class _MemoryTransport(asyncio.Transport):
    """The transport under aiohttp's protocol: takes the request, feeds back the response."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: Any, answer: Answer) -> None:
        super().__init__({"peername": ("127.0.0.1", 0), "sockname": ("127.0.0.1", 0)})
        self._loop = loop
        self._protocol = protocol
        self._answer = answer
        self._request = bytearray()
        self._parsed: tuple[str, str, dict[str, str], int] | None = None  # the head, body's start
        self._closing = False
        self._reading = asyncio.Event()
        self._reading.set()
        self._task: asyncio.Task[None] | None = None

    # --- what aiohttp's writer and protocol call
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or self._task is not None:
            return  # one request per connection: aiohttp writes no second one on it
        self._request += data
        if self._parsed is None:
            end = self._request.find(b"\r\n\r\n")
            if end < 0:
                return
            self._parsed = (*_head(bytes(self._request[:end])), end + 4)
            if self._parsed[2].get("expect", "").lower() == "100-continue":
                # aiohttp (expect100=True) sends the body once the server says so
                self._protocol.data_received(b"HTTP/1.1 100 Continue\r\n\r\n")
        method, target, headers, at = self._parsed
        body = _body(headers, self._request, at)
        if body is not None:
            self._task = self._loop.create_task(self._respond(method, target, headers, body))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._reading.set()  # a response waiting for the reader gives up
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def is_reading(self) -> bool:
        return self._reading.is_set()

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return 0, 0

    # --- the response
    async def _feed(self, data: bytes) -> bool:
        """Hand ``data`` to the protocol once its reader wants more; ``False`` once closed."""
        if not self._reading.is_set():
            await self._reading.wait()
        if self._closing:
            return False
        self._protocol.data_received(data)
        return True

    async def _respond(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> None:
        try:
            plan = await self._answer(method, target, headers, body)
            head = [b"HTTP/1.1 %d %s\r\n" % (plan.status, _reason(plan.status))]
            head += [
                f"{k}: {v}\r\n".encode("latin-1")
                for k, v in plan.headers
                if k.lower() not in _HOP_BY_HOP
            ]
            if not plan.streaming:
                # a faults.delay: the whole answer waits
                data = b"".join([chunk async for chunk in plan.apaced()])
                head.append(b"content-length: %d\r\n\r\n" % len(data))
                await self._feed(b"".join(head) + data)
                return
            head.append(b"transfer-encoding: chunked\r\n\r\n")
            await self._stream(plan, b"".join(head))
        except asyncio.CancelledError:
            raise
        except Failure as failure:
            error = _AIOHTTP.error(failure)
            if error is None:
                # a cut: the connection drops before the terminating chunk, as a dying
                # upstream's would; aiohttp reports the incomplete body
                self.close()
            elif not self._closing:
                self._protocol.set_exception(error)
                self.close()
        except Exception as exc:  # the router's error reaches the caller as raised
            if not self._closing:
                self._protocol.set_exception(exc)
                self.close()

    async def _stream(self, plan: Plan, head: bytes) -> None:
        if not isinstance(plan.body, (list, tuple)) or plan.abody is not None:
            # a live upstream or a function turn: each chunk leaves the moment it exists
            if not await self._feed(head):
                return
            async for chunk in plan.apaced():
                if chunk and not await self._feed(_http_chunk(chunk)):
                    return
            await self._feed(_END)
            return
        # Every chunk is known (a replay, a scripted turn): undelayed ones reach the parser
        # together, each its own HTTP chunk, as the loopback server writes them.
        for write in listed_writes(plan, head):
            if isinstance(write, float):
                await asyncio.sleep(write)
            elif write and not await self._feed(write):
                return


class _Aiohttp(Library):
    """aiohttp's read timeout (``SocketTimeoutError`` from aiohttp 3.10, a
    ``ServerTimeoutError``; both ``asyncio.TimeoutError``)."""

    def timeout(self, message: str, request: Any) -> BaseException:
        import aiohttp

        timeout: type[Exception] = getattr(
            aiohttp, "SocketTimeoutError", aiohttp.ServerTimeoutError
        )
        return timeout(message)


_AIOHTTP = _Aiohttp()


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b"Unknown"


@functools.cache
def _connection_class() -> Any:
    from aiohttp.connector import Connection

    class MemoryConnection(Connection):
        # released or closed, it closes: the pool must never hand it to a real request
        def release(self) -> None:
            self.close()

        def close(self) -> None:
            self._notify_release()
            protocol, self._protocol = self._protocol, None
            if protocol is not None:
                protocol.close()

    return MemoryConnection


def connection(connector: Any, request: Any, answer: Answer) -> Any:
    """An aiohttp ``Connection`` for ``request`` whose transport is in memory, answered by
    ``answer``; it never enters ``connector``'s pool."""
    from aiohttp.client_proto import ResponseHandler

    loop = asyncio.get_running_loop()
    protocol = ResponseHandler(loop)
    protocol.connection_made(_MemoryTransport(loop, protocol, answer))
    protocol.force_close()
    return _connection_class()(connector, request.connection_key, protocol, loop)


def install(route: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
    """Patch aiohttp's ``BaseConnector.connect`` (when the agent's stack has loaded aiohttp) to
    hand a routed request an in-memory connection (:func:`connection`) answered by
    ``route(host, port, origin, asynchronous=True)``: no socket, and none of the session's
    proxy settings apply. WebSocket upgrades, and every other host, get aiohttp's own."""
    import sys

    aiohttp = sys.modules.get("aiohttp")
    connector: Any = getattr(aiohttp, "BaseConnector", None)
    if connector is None or not hasattr(connector, "connect"):
        return []
    original = connector.connect

    async def connect(self: Any, req: Any, traces: Any, timeout: Any) -> Any:
        if "upgrade" not in {k.lower() for k in req.headers}:
            url = req.url
            port = url.explicit_port if hasattr(url, "explicit_port") else urlsplit(str(url)).port
            host = url.raw_host
            netloc = f"[{host}]" if host and ":" in host else host
            if port is not None:
                netloc = f"{netloc}:{port}"
            answer = route(host, port, f"{url.scheme}://{netloc}", asynchronous=True)
            if answer is not None:
                return connection(self, req, answer)
        return await original(self, req, traces, timeout)

    connect.__wrapped__ = original  # type: ignore[attr-defined]
    connector.connect = connect
    return [(connector, "connect", original)]
