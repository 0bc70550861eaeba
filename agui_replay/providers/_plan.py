"""A planned HTTP answer, and the three ways an answered request fails.

Whatever answers a request (the scripted fake, the tape replaying or recording, a recording
proxy) returns a :class:`Plan`: status, headers and the body as ``(delay_before, bytes)``
writes. It fails the request by raising one of three neutral signals, never an HTTP library's
exception: :class:`StreamCut` (from the body: the connection drops there), :class:`TimedOut`
(the client's read timeout) and :class:`Unreachable` (the destination refused the connection).
The transport that carried the request turns the signal into its own library's exception
through its :class:`Library`, so nothing here knows which library sent the request.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agui_replay.errors import AguiReplayError, ProviderError

__all__ = [
    "PASSTHROUGH",
    "Failure",
    "Library",
    "Plan",
    "Request",
    "StreamCut",
    "TimedOut",
    "Unreachable",
    "json_plan",
    "url_target",
]


PASSTHROUGH = "agui_replay.passthrough"
"""A request extension (``httpx`` / ``httpx2``): the routing lets a request that carries it
through untouched (the recorder's and the tape's own requests to the real destination)."""


class Failure(AguiReplayError):
    """A request answered by failing; the transport raises its library's form of it."""

    code = "REPLAY_FAILURE"


class StreamCut(Failure):
    """Raised by a planned response's body: drop the connection here instead of ending it."""

    code = "STREAM_CUT"


class TimedOut(Failure):
    """The request fails as the client's read timeout would (a ``faults.timeout``)."""

    code = "TIMED_OUT"


class Unreachable(Failure):
    """The request's destination could not be reached (while recording)."""

    code = "UNREACHABLE"


class Library:
    """What one HTTP library raises for each :class:`Failure`.

    Each transport module defines a subclass and gives an instance to the transports it
    builds; the defaults are the standard library's (``socket.timeout``, ``ConnectionError``)
    and a cut that the transport makes itself by ending the response's bytes early (``None``).
    """

    def timeout(self, message: str, request: Any) -> BaseException:
        return TimeoutError(message)

    def unreachable(self, message: str, request: Any) -> BaseException:
        return ConnectionError(message)

    def cut(self, request: Any) -> BaseException | None:
        return None

    def error(self, failure: Failure, request: Any = None) -> BaseException | None:
        """The library's exception for ``failure`` (``None``: a cut the transport makes)."""
        if isinstance(failure, TimedOut):
            return self.timeout(str(failure), request)
        if isinstance(failure, Unreachable):
            return self.unreachable(str(failure), request)
        return self.cut(request)


@dataclass
class Request:
    """One request, whichever HTTP library sent it: what every router's handler is given.

    ``target`` is the path and query as sent; ``origin`` the scheme and host it was sent to
    (``None``: it came to a loopback server, whose path says where it was meant for);
    ``provider`` the model provider the routing took it for (``None``: another host, or the
    loopback server). Header names are lower-cased.
    """

    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    origin: str | None = None
    provider: str | None = None

    @property
    def url(self) -> str:
        """The full URL (the target alone when the origin is not known)."""
        return f"{self.origin or ''}{self.target}"


@dataclass
class Plan:
    """An HTTP response to send: the body is ``(delay_before, bytes)`` writes."""

    status: int
    headers: list[tuple[str, str]]
    body: Iterable[tuple[float, bytes]]
    streaming: bool
    cut: bool = False
    abody: AsyncIterator[tuple[float, bytes]] | None = None
    """Set instead of ``body`` when the writes are produced by async code (an async transport)."""

    def writes(self) -> Iterator[tuple[float, bytes]]:
        """The writes in order; raises :class:`StreamCut` at the end if the stream is cut."""
        if self.abody is not None:
            raise ProviderError(
                "this response is produced by async code; serve it through an async transport"
            )
        yield from self.body
        if self.cut:
            raise StreamCut

    async def awrites(self) -> AsyncIterator[tuple[float, bytes]]:
        """:meth:`writes` for async consumers (also serves a plan with an async body)."""
        if self.abody is None:
            for w in self.writes():
                yield w
            return
        async for w in self.abody:
            yield w
        if self.cut:
            raise StreamCut

    def paced(self) -> Iterator[bytes]:
        """The writes' bytes, each once its delay has passed (:meth:`writes` otherwise)."""
        for delay, chunk in self.writes():
            if delay > 0:
                time.sleep(delay)
            yield chunk

    async def apaced(self) -> AsyncIterator[bytes]:
        """:meth:`paced` for async consumers, waiting without blocking the loop."""
        async for delay, chunk in self.awrites():
            if delay > 0:
                await asyncio.sleep(delay)
            yield chunk


def url_target(url: Any) -> str:
    """The request target (path and query, as sent) of an ``httpx`` or ``httpx2`` URL."""
    raw = url.raw_path
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


def json_plan(status: int, obj: Any, headers: Iterable[tuple[str, str]] = ()) -> Plan:
    """A JSON answer, sent whole."""
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    return Plan(status, [("content-type", "application/json"), *headers], [(0.0, data)], False)
