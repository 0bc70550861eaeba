"""In-process transports for ``httpx2`` (what openai 3.x / anthropic 2.x use) and ``httpx``.

They hand the request to an app (a fake provider) and stream its planned chunks back, one
``iter_bytes`` item per chunk, without any socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import httpx2

from agui_replay.providers._formats._wire import Plan, StreamCut, url_target
from agui_replay.providers._transport._loopback import App, AsyncApp

__all__ = [
    "AsyncApp",
    "Httpx2AsyncTransport",
    "Httpx2Transport",
    "HttpxAsyncTransport",
    "HttpxTransport",
    "SyncApp",
]

SyncApp = App

_CUT_MESSAGE = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)


def _sync_chunks(plan: Plan, cut_error: Callable[[], Exception]) -> Iterator[bytes]:
    try:
        yield from plan.paced()
    except StreamCut:
        raise cut_error() from None


async def _async_chunks(plan: Plan, cut_error: Callable[[], Exception]) -> AsyncIterator[bytes]:
    try:
        async for chunk in plan.apaced():
            yield chunk
    except StreamCut:
        raise cut_error() from None


# --- httpx2 -----------------------------------------------------------------------------------


class _H2SyncStream(httpx2.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


class _H2AsyncStream(httpx2.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for c in self._chunks:
            yield c


class Httpx2Transport(httpx2.BaseTransport):
    """``httpx2.Client(transport=fake.transport())``."""

    def __init__(self, app: SyncApp) -> None:
        self._app = app

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        plan = self._app(request.method, url_target(request.url), headers, body)

        def cut() -> Exception:
            return httpx2.RemoteProtocolError(_CUT_MESSAGE, request=request)

        return httpx2.Response(
            plan.status,
            headers=plan.headers,
            stream=_H2SyncStream(_sync_chunks(plan, cut)),
            request=request,
        )


class Httpx2AsyncTransport(httpx2.AsyncBaseTransport):
    """``httpx2.AsyncClient(transport=fake.async_transport())``."""

    def __init__(self, app: AsyncApp) -> None:
        self._app = app

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        headers = {k.lower(): v for k, v in request.headers.items()}
        plan = await self._app(request.method, url_target(request.url), headers, body)

        def cut() -> Exception:
            return httpx2.RemoteProtocolError(_CUT_MESSAGE, request=request)

        return httpx2.Response(
            plan.status,
            headers=plan.headers,
            stream=_H2AsyncStream(_async_chunks(plan, cut)),
            request=request,
        )


# --- httpx ------------------------------------------------------------------------------------


class _HSyncStream(httpx.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


class _HAsyncStream(httpx.AsyncByteStream):
    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for c in self._chunks:
            yield c


class HttpxTransport(httpx.BaseTransport):
    """``httpx.Client(transport=fake.httpx_transport())``."""

    def __init__(self, app: SyncApp) -> None:
        self._app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        plan = self._app(request.method, url_target(request.url), headers, body)

        def cut() -> Exception:
            return httpx.RemoteProtocolError(_CUT_MESSAGE, request=request)

        return httpx.Response(
            plan.status,
            headers=plan.headers,
            stream=_HSyncStream(_sync_chunks(plan, cut)),
            request=request,
        )


class HttpxAsyncTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=fake.httpx_async_transport())``."""

    def __init__(self, app: AsyncApp) -> None:
        self._app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = {k.lower(): v for k, v in request.headers.items()}
        plan = await self._app(request.method, url_target(request.url), headers, body)

        def cut() -> Exception:
            return httpx.RemoteProtocolError(_CUT_MESSAGE, request=request)

        return httpx.Response(
            plan.status,
            headers=plan.headers,
            stream=_HAsyncStream(_async_chunks(plan, cut)),
            request=request,
        )
