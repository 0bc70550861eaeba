"""``httpx2`` (what openai 3.x / anthropic 2.x use) and ``httpx``: in-process transports, and
the patch that hands their clients' routed requests to them.

A transport hands the request to an app (a fake provider, the session's provider, the tape)
and streams its planned chunks back, one ``iter_bytes`` item per chunk, without any socket.
During a run :func:`install` patches both libraries' connection-level transports
(``HTTPTransport.handle_request``, ``AsyncHTTPTransport.handle_async_request``), so every
client, however and whenever it was built, sends a routed request through one of them.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import httpx2

from agui_replay.providers._plan import (
    PASSTHROUGH,
    Failure,
    Library,
    Plan,
    StreamCut,
    url_target,
)
from agui_replay.providers._transport._loopback import App, AsyncApp

__all__ = [
    "AsyncApp",
    "Httpx2AsyncTransport",
    "Httpx2Transport",
    "HttpxAsyncTransport",
    "HttpxTransport",
    "SyncApp",
    "install",
]

SyncApp = App

_CUT_MESSAGE = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)


class _Httpx(Library):
    """``httpx``'s or ``httpx2``'s exceptions (the same names in both)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def timeout(self, message: str, request: Any) -> BaseException:
        return self.lib.ReadTimeout(message, request=request)  # type: ignore[no-any-return]

    def unreachable(self, message: str, request: Any) -> BaseException:
        return self.lib.ConnectError(message, request=request)  # type: ignore[no-any-return]

    def cut(self, request: Any) -> BaseException | None:
        return self.lib.RemoteProtocolError(_CUT_MESSAGE, request=request)  # type: ignore[no-any-return]


_HTTPX2, _HTTPX = _Httpx(httpx2), _Httpx(httpx)


def _sync_chunks(plan: Plan, cut: Callable[[], BaseException | None]) -> Iterator[bytes]:
    try:
        yield from plan.paced()
    except StreamCut:
        raise cut() from None  # type: ignore[misc]


async def _async_chunks(
    plan: Plan, cut: Callable[[], BaseException | None]
) -> AsyncIterator[bytes]:
    try:
        async for chunk in plan.apaced():
            yield chunk
    except StreamCut:
        raise cut() from None  # type: ignore[misc]


def _answer(library: Library, app: App, request: Any, body: bytes) -> Plan:
    headers = {k.lower(): v for k, v in request.headers.items()}
    try:
        return app(request.method, url_target(request.url), headers, body)
    except Failure as failure:
        raise (library.error(failure, request) or failure) from failure


async def _aanswer(library: Library, app: AsyncApp, request: Any, body: bytes) -> Plan:
    headers = {k.lower(): v for k, v in request.headers.items()}
    try:
        return await app(request.method, url_target(request.url), headers, body)
    except Failure as failure:
        raise (library.error(failure, request) or failure) from failure


def _transports(lib: Any, library: Library) -> tuple[Any, Any]:
    """The sync and async in-process transports of ``lib`` (``httpx`` or ``httpx2``: the same
    API, but a transport must subclass its own library's types, which do not mix)."""

    class SyncStream(lib.SyncByteStream):  # type: ignore[misc]  # lib is a module passed in
        def __init__(self, chunks: Iterator[bytes]) -> None:
            self._chunks = chunks

        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks

    class AsyncStream(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, chunks: AsyncIterator[bytes]) -> None:
            self._chunks = chunks

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for c in self._chunks:
                yield c

    class Transport(lib.BaseTransport):  # type: ignore[misc]
        def __init__(self, app: SyncApp) -> None:
            self._app = app

        def handle_request(self, request: Any) -> Any:
            plan = _answer(library, self._app, request, request.read())
            stream = SyncStream(_sync_chunks(plan, functools.partial(library.cut, request)))
            return lib.Response(plan.status, headers=plan.headers, stream=stream, request=request)

    class AsyncTransport(lib.AsyncBaseTransport):  # type: ignore[misc]
        def __init__(self, app: AsyncApp) -> None:
            self._app = app

        async def handle_async_request(self, request: Any) -> Any:
            plan = await _aanswer(library, self._app, request, await request.aread())
            stream = AsyncStream(_async_chunks(plan, functools.partial(library.cut, request)))
            return lib.Response(plan.status, headers=plan.headers, stream=stream, request=request)

    return Transport, AsyncTransport


Httpx2Transport: Callable[[SyncApp], httpx2.BaseTransport]
Httpx2AsyncTransport: Callable[[AsyncApp], httpx2.AsyncBaseTransport]
Httpx2Transport, Httpx2AsyncTransport = _transports(httpx2, _HTTPX2)
"""``httpx2.Client(transport=Httpx2Transport(app))``, and its async form."""
HttpxTransport: Callable[[SyncApp], httpx.BaseTransport]
HttpxAsyncTransport: Callable[[AsyncApp], httpx.AsyncBaseTransport]
HttpxTransport, HttpxAsyncTransport = _transports(httpx, _HTTPX)
"""``httpx.Client(transport=HttpxTransport(app))``, and its async form."""


# --- the patches -------------------------------------------------------------------------------

Route = Callable[..., Any]
"""``route(host, port, origin, asynchronous=...) -> app | None`` (``_routing.answer_for``)."""


def _routed(route: Route, request: Any, asynchronous: bool) -> Any:
    if request.extensions.get(PASSTHROUGH):  # the recorder's and the tape's own requests
        return None
    url = request.url
    origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
    return route(url.host, url.port, origin, asynchronous=asynchronous)


def install(route: Route) -> list[tuple[Any, str, Any]]:
    """Patch both libraries' transports to answer routed requests in process; returns what
    was replaced, as ``(owner, attribute, original)``."""
    saved: list[tuple[Any, str, Any]] = []
    pairs = (
        (httpx2, Httpx2Transport, Httpx2AsyncTransport),
        (httpx, HttpxTransport, HttpxAsyncTransport),
    )
    for lib, sync_cls, async_cls in pairs:
        original = lib.HTTPTransport.handle_request
        original_async = lib.AsyncHTTPTransport.handle_async_request
        saved += [
            (lib.HTTPTransport, "handle_request", original),
            (lib.AsyncHTTPTransport, "handle_async_request", original_async),
        ]
        lib.HTTPTransport.handle_request = _sync_patch(route, original, sync_cls)
        lib.AsyncHTTPTransport.handle_async_request = _async_patch(route, original_async, async_cls)
    return saved


def _sync_patch(route: Route, original: Any, transport: Any) -> Any:
    def handle_request(self: Any, request: Any) -> Any:
        app = _routed(route, request, False)
        if app is None:
            return original(self, request)
        return transport(app).handle_request(request)

    handle_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_request


def _async_patch(route: Route, original: Any, transport: Any) -> Any:
    async def handle_async_request(self: Any, request: Any) -> Any:
        app = _routed(route, request, True)
        if app is None:
            return await original(self, request)
        return await transport(app).handle_async_request(request)

    handle_async_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_async_request
