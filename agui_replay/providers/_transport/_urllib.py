"""``http.client`` (and so ``urllib.request``) requests answered in process, with no socket.

A routed :class:`http.client.HTTPConnection` is given a :class:`MemorySocket` instead of a
connected one (:func:`patch_connect`): the request ``http.client`` writes to it is parsed and
handed to the router, and the planned response is read back by ``http.client``'s own parser as
HTTP/1.1 bytes, each planned chunk its own HTTP chunk (and its own read of the socket), so
``read1()`` and ``urllib3``'s chunked reads give the chunks one by one, as a socket's would.
:func:`plan_response` is the same answer for a caller that already has the request in parts
(the ``urllib3`` pool patch, :mod:`._urllib3`).

Private to :mod:`agui_replay.providers`.
"""

from __future__ import annotations

import functools
import http.client
import io
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from agui_replay.errors import ProviderError
from agui_replay.providers._plan import Failure, Library, Plan, StreamCut
from agui_replay.providers._transport._aiohttp import _reason, parse_request
from agui_replay.providers._transport._loopback import _END, _HOP_BY_HOP, _http_chunk

__all__ = [
    "MemorySocket",
    "install",
    "patch_connect",
    "patch_putrequest",
    "plan_frames",
    "plan_response",
]

_HTTP_CLIENT = Library()
"""``http.client``'s exceptions: the standard library's (``socket.timeout``...)."""

Answer = Callable[[str, str, dict[str, str], bytes], Plan]
"""``answer(method, target, headers, body) -> Plan``, headers lower-cased."""


def plan_frames(plan: Plan, method: str) -> Iterator[bytes]:
    """The bytes of ``plan`` as an HTTP/1.1 response, one item per socket read: the head,
    then each chunk as its own HTTP chunk (after its delay), then the last chunk. The
    connection closes after it (``connection: close``): the memory socket serves one
    request. A cut stream ends before the last chunk (the reader sees an incomplete body)."""
    head = [b"HTTP/1.1 %d %s\r\n" % (plan.status, _reason(plan.status))]
    head += [
        f"{k}: {v}\r\n".encode("latin-1") for k, v in plan.headers if k.lower() not in _HOP_BY_HOP
    ]
    head.append(b"connection: close\r\n")
    if method.upper() == "HEAD" or not plan.streaming:
        try:
            data = b"".join(plan.paced())  # a faults.delay: the whole answer waits
        except StreamCut:
            data = b""
        if method.upper() == "HEAD":
            data = b""
        head.append(b"content-length: %d\r\n\r\n" % len(data))
        yield b"".join(head) + data
        return
    head.append(b"transfer-encoding: chunked\r\n\r\n")
    yield b"".join(head)
    try:
        for chunk in plan.paced():
            if chunk:
                yield _http_chunk(chunk)
    except StreamCut:
        return  # no last chunk: the body is incomplete, as from a dying upstream
    yield _END


class _FrameReader(io.RawIOBase):
    """A raw stream whose reads are the frames, at most one frame per read (a socket's)."""

    def __init__(self, frames: Iterator[bytes]) -> None:
        self._frames = frames
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            frame = next(self._frames, None)
            if frame is None:
                return 0
            self._pending = memoryview(frame)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        close = getattr(self._frames, "close", None)
        if close is not None:
            close()  # a live upstream's response is closed with it
        super().close()


def plan_response(plan: Plan, method: str) -> http.client.HTTPResponse:
    """An :class:`http.client.HTTPResponse` (its head read) whose body is ``plan``'s, read
    lazily, chunk by chunk."""
    response = http.client.HTTPResponse(_FrameSource(plan_frames(plan, method)), method=method)  # type: ignore[arg-type]
    response.begin()
    return response


class _FrameSource:
    """What :class:`http.client.HTTPResponse` needs of a socket: ``makefile("rb")``."""

    def __init__(self, frames: Iterator[bytes]) -> None:
        self._frames = frames

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_FrameReader(self._frames))


class MemorySocket:
    """The socket of a routed ``http.client`` connection: takes the request, answers it.

    ``http.client`` writes the request with ``sendall`` and reads the response through
    ``makefile("rb")``; the request is answered then (once complete). One request per socket:
    the response says ``connection: close``, so the connection opens a new one for the next.
    """

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._request = bytearray()
        self._frames: Iterator[bytes] | None = None
        self.closed = False

    # what http.client (and code around it) calls on a socket
    def sendall(self, data: Any) -> None:
        if self._frames is not None:
            raise ProviderError("one request per in-process connection")
        self._request += bytes(data)

    def send(self, data: Any) -> int:
        self.sendall(data)
        return len(data)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if self._frames is None:
            parsed = parse_request(bytes(self._request))
            if parsed is None:
                raise http.client.RemoteDisconnected(
                    "agui_replay: the response was read before the whole request was sent"
                )
            method, target, headers, body = parsed
            try:
                plan = self._answer(method, target, headers, body)
            except Failure as failure:
                raise (_HTTP_CLIENT.error(failure) or failure) from failure
            self._frames = plan_frames(plan, method)
        return io.BufferedReader(_FrameReader(self._frames))

    def settimeout(self, value: float | None) -> None:
        return

    def gettimeout(self) -> float | None:
        return None

    def setsockopt(self, *args: Any) -> None:
        return

    def shutdown(self, how: int) -> None:
        return

    def close(self) -> None:
        self.closed = True

    def fileno(self) -> int:
        return -1


Route = Callable[[str | None, int | None, str], "Answer | None"]
"""``route(host, port or None for the scheme's default, origin) -> answer | None``."""


_PROXIED = "_agui_replay_proxied_url"
"""Set by :func:`patch_putrequest` on a connection whose request names its URL whole (the
absolute form ``urllib.request`` writes to an HTTP proxy): where the request really goes."""


def patch_putrequest(cls: Any) -> Any:
    """``cls.putrequest`` remembering an absolute-form URL (a request to an HTTP proxy, which
    ``connect`` then routes by its real destination, not by the proxy's address)."""
    original = cls.putrequest

    def putrequest(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        setattr(self, _PROXIED, url if "://" in url[:12] else None)
        return original(self, method, url, *args, **kwargs)

    putrequest.__wrapped__ = original  # type: ignore[attr-defined]
    return putrequest


def patch_connect(cls: Any, scheme: str, route: Route) -> Any:
    """``cls.connect`` (an ``http.client`` connection class) giving a routed connection a
    :class:`MemorySocket` (no socket, no TLS, no proxy tunnel) and any other its own. A
    request through a proxy is routed by its destination (the tunnel's, or the URL of an
    absolute-form request), before the proxy is reached."""
    original = cls.connect
    default_port = 443 if scheme == "https" else 80

    def connect(self: Any) -> None:
        if scheme == "http" and isinstance(self, http.client.HTTPSConnection):
            original(self)  # HTTPSConnection.connect (patched too) decided already
            return
        host = getattr(self, "_tunnel_host", None) or self.host
        port = (getattr(self, "_tunnel_port", None) if self._tunnel_host else self.port) or (
            default_port
        )
        wanted = scheme
        proxied = getattr(self, _PROXIED, None)
        if proxied and not self._tunnel_host:
            parts = urlsplit(proxied)
            if parts.hostname:
                wanted, host = parts.scheme, parts.hostname
                port = parts.port or (443 if wanted == "https" else 80)
        explicit = None if port == (443 if wanted == "https" else 80) else port
        netloc = f"[{host}]" if ":" in host else host
        if explicit is not None:
            netloc = f"{netloc}:{explicit}"
        answer = route(host, explicit, f"{wanted}://{netloc}")
        if answer is None:
            original(self)
            return
        self.sock = MemorySocket(answer)

    connect.__wrapped__ = original  # type: ignore[attr-defined]
    return connect


def install(route: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
    """Patch ``http.client``'s connections (``urllib.request``) to answer routed requests
    through ``route(host, port, origin, asynchronous=False)``."""
    sync_route = functools.partial(route, asynchronous=False)
    saved: list[tuple[Any, str, Any]] = []
    connections: tuple[Any, ...] = (http.client.HTTPConnection, http.client.HTTPSConnection)
    for cls, scheme in zip(connections, ("http", "https"), strict=True):
        saved.append((cls, "connect", cls.__dict__["connect"]))
        cls.connect = patch_connect(cls, scheme, sync_route)
    base = http.client.HTTPConnection
    saved.append((base, "putrequest", base.__dict__["putrequest"]))
    base.putrequest = patch_putrequest(base)  # type: ignore[method-assign]
    return saved
