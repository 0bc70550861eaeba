"""A small threaded HTTP/1.1 server on 127.0.0.1 that sends each planned write as one HTTP chunk."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agui_replay.providers._plan import Failure, Library, Plan, StreamCut

__all__ = ["App", "AsyncApp", "LoopbackServer"]

App = Callable[[str, str, dict[str, str], bytes], Plan]
"""A provider app: ``app(method, path, headers, body) -> Plan`` (headers lower-cased).

What :class:`LoopbackServer` and the in-process transports serve: a
:class:`~agui_replay.providers.FakeProvider`'s ``handle``, a :meth:`Recorder.app()
<agui_replay.providers.Recorder.app>`, or your own router in front of them."""

AsyncApp = Callable[[str, str, dict[str, str], bytes], Awaitable[Plan]]
"""The async form of :data:`App`, for the async transports."""

_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive"}

OPEN_PORTS: set[int] = set()
"""The ports of this process's running loopback servers (fakes, recording proxies, the
session's own): requests to them are ours, never recorded as a test's other traffic."""


_SOCKET = Library()
"""A server thread's failures: the standard library's."""

_BATCH = 1 << 20
"""At most this many bytes of consecutive undelayed chunks leave in one ``sendall``."""

_END = b"0\r\n\r\n"


def _http_chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def listed_writes(plan: Plan, head: bytes) -> Iterator[bytes | float]:
    """The writes of a streamed response whose chunks are all known (a replay, a scripted
    turn): ``head`` (status line and headers), then the body, each chunk its own HTTP chunk.
    Chunks with no delay between them go out together, at most :data:`_BATCH` bytes in one
    write: a client's HTTP parser still hands each over as one piece, as when they were
    written one by one (TCP never kept write boundaries; the chunked framing does). A float is
    a pause before what follows; what is pending goes out before it, so the bytes leave when
    the plan says. On a cut stream, what came before the cut is yielded, then
    :class:`StreamCut` is raised."""
    pending = [head]
    size = len(head)
    try:
        for delay, chunk in plan.writes():
            if delay > 0:
                yield b"".join(pending)
                pending, size = [], 0
                yield float(delay)  # a number of any type: the writes are bytes
            if chunk:
                pending.append(_http_chunk(chunk))
                size += len(chunk)
                if size >= _BATCH:
                    yield b"".join(pending)
                    pending, size = [], 0
    except StreamCut:
        yield b"".join(pending)
        raise
    pending.append(_END)
    yield b"".join(pending)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # each write goes out at once, not after the ACK of the one before (Nagle)
    disable_nagle_algorithm = True
    server: _Server
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, untyped in typeshed

    def log_message(self, format: str, *args: Any) -> None:
        # tests should not print a line per request on stderr
        return

    def _head(self) -> bytes:
        """The status line and headers, ready to send (they leave with the first write)."""
        self._headers_buffer.append(b"\r\n")
        head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        return head

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            plan = self.server.app(self.command, self.path, headers, body)
        except Failure as failure:  # the connection ends unanswered, as the library's error
            raise (_SOCKET.error(failure) or failure) from failure
        self.send_response(plan.status)
        for k, v in plan.headers:
            if k.lower() not in _HOP_BY_HOP:
                self.send_header(k, v)
        if not plan.streaming:
            data = b"".join(plan.paced())  # a faults.delay: the whole answer waits
            self.send_header("content-length", str(len(data)))
            self.connection.sendall(self._head() + data)
            return
        self.send_header("transfer-encoding", "chunked")
        try:
            if isinstance(plan.body, (list, tuple)):
                self._send_listed(plan, self._head())
            else:
                self._send_lazily(plan, self._head())
        except StreamCut:
            # drop the connection without the terminating zero-length chunk, as a dying
            # upstream would; the client sees an incomplete body
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _send_lazily(self, plan: Plan, head: bytes) -> None:
        # a generator may take its time over its next chunk (a live upstream, a function
        # turn): the headers and each chunk leave the moment they exist
        send = self.connection.sendall
        send(head)
        for chunk in plan.paced():
            if chunk:
                send(_http_chunk(chunk))
        send(_END)

    def _send_listed(self, plan: Plan, head: bytes) -> None:
        # One sendall per chunk would cost a syscall, a wake-up of the reader and, in the
        # same process, a hand-over of the GIL between this thread and the agent's, per chunk.
        send = self.connection.sendall
        for write in listed_writes(plan, head):
            if isinstance(write, float):
                time.sleep(write)
            elif write:
                send(write)

    def do_POST(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._serve()

    do_GET = do_POST
    do_PUT = do_POST
    do_DELETE = do_POST


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app: App) -> None:
        self.app = app
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # the app reports its own failures; socket errors of a vanished client are not news
        return


class LoopbackServer:
    """A running loopback server. ``base_url`` is for OpenAI clients (ends in ``/v1``, or the
    upstream's path for a recording proxy);
    ``anthropic_base_url`` and ``gemini_base_url`` are the bare origin (the Anthropic SDK
    appends ``/v1/messages``, google-genai ``/v1beta/models/...``).
    """

    def __init__(
        self, app: App, *, base_path: str = "/v1", on_close: Callable[[], None] | None = None
    ) -> None:
        self._server = _Server(app)
        self._on_close = on_close
        self.base_path = base_path.rstrip("/")
        self.host = "127.0.0.1"
        self.port: int = self._server.server_address[1]
        # serve_forever() only notices shutdown() on its next poll (up to poll_interval per
        # close, i.e. per test); a socket pair wakes this loop the moment close() is called.
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(
            target=self._serve, name=f"agui-replay-loopback-{self.port}", daemon=True
        )
        self._thread.start()
        self.closed = False
        OPEN_PORTS.add(self.port)

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._server, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake_r:
                        return
                    self._accept()

    def _accept(self) -> None:
        # What serve_forever does for a ready socket: accept, and handle it in a new thread.
        server = self._server
        try:
            request, address = server.get_request()
        except OSError:
            return
        try:
            server.process_request(request, address)
        except Exception:
            server.handle_error(request, address)
            server.shutdown_request(request)

    @property
    def url(self) -> str:
        """The origin, ``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + self.base_path

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """The bare origin, for ``google.genai.Client(http_options={"base_url": ...})`` (the
        SDK adds ``/v1beta/models/...``)."""
        return self.url

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        OPEN_PORTS.discard(self.port)
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5)
        self._server.server_close()
        self._wake_r.close()
        self._wake_w.close()
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LoopbackServer {self.base_url}{' closed' if self.closed else ''}>"
