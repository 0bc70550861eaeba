"""Record an agent's AG-UI stream with the provider chunks that drove it; replay it offline.

This is the engine behind the pytest plugin's ``agui`` fixture, and it does not import pytest:
use it from any script as well::

    from agui_replay.recording import CassetteSession

    with CassetteSession("cassettes/demo.json", mode="once") as agui:
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key=key)
        events = agui.run(my_agent, "What is the weather in Paris?")

A :class:`CassetteSession` holds one cassette file. Each :meth:`~CassetteSession.run` is one
run in it: the session either *records* it (the agent's SDK talks to ``agui.provider``, a
loopback proxy in front of the real provider that captures every request and each response
chunk, scrubbed of secrets) or *replays* it (``agui.provider`` serves the recorded chunks one by
one, and the agent's new stream, normalized, must equal the recorded one). Which of the two
depends on the :class:`RecordMode` and on what the cassette already holds:

==========  ===========================  ==================================================
mode        cassette exists              cassette missing
==========  ===========================  ==================================================
``none``    replay every run             fail, naming the file and the command to record it
``once``    replay every run             record every run
``rewrite`` record every run (the old    record every run
            runs are dropped)
``new``     replay the recorded runs,    record every run
            record the runs beyond them
==========  ===========================  ==================================================

While a session only replays, a :class:`NetworkGuard` refuses every connection that is not to
a loopback address (and every name lookup other than ``localhost``), so a replay can never
reach a real provider by accident.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar, cast
from urllib.parse import urlsplit

import orjson

from .assertions import explain_stream_diff, json_diff
from .cassette import Cassette, CassetteRun, load_cassette, save_cassette
from .errors import AguiReplayError, CassetteError
from .events import WireEvent, to_wire
from .normalize import normalize_events
from .scrub import scrub
from .sse import SSEDecoder

if TYPE_CHECKING:
    import httpx
    import httpx2
    from ag_ui.core import RunAgentInput

    from .providers import FakeProvider, LoopbackServer, Plan, Recorder

__all__ = [
    "DEFAULT_FROZEN_TIME",
    "DEFAULT_SECRET_ENV",
    "DEFAULT_UPSTREAM",
    "CassetteSession",
    "MissingCassetteError",
    "NetworkBlockedError",
    "NetworkGuard",
    "RecordMode",
    "RecordModeError",
    "ReplayMismatchError",
    "RunRecord",
    "SessionProvider",
    "TargetError",
    "TargetKind",
    "arun_target",
    "run_target",
    "secrets_from_env",
    "target_kind",
]

T = TypeVar("T")

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
"""Where recording sends provider traffic unless configured otherwise."""

DEFAULT_FROZEN_TIME = "2025-01-01T00:00:00+00:00"
"""The wall-clock instant every run sees (record and replay), when time-machine is installed."""

DEFAULT_SECRET_ENV: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
)
"""Environment variables whose values (when set) are always scrubbed from cassettes."""

TargetKind: TypeAlias = Literal["agent", "asgi", "url"]


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


Upstream: TypeAlias = "str | _HasBaseUrl | Callable[[], str | _HasBaseUrl]"


# --- errors -----------------------------------------------------------------------------------


class RecordModeError(AguiReplayError, ValueError):
    """A record mode that is not one of ``none``, ``once``, ``rewrite``, ``new``."""

    code = "CONFIG"


class MissingCassetteError(CassetteError):
    """Replay needs a cassette (or a run in it) that was never recorded."""


class ReplayMismatchError(AguiReplayError, AssertionError):
    """The agent's new stream (or its provider requests) differs from the recording."""

    code = "REPLAY_MISMATCH"


class NetworkBlockedError(AguiReplayError, ConnectionRefusedError):
    """A connection to a non-loopback address was attempted while replaying.

    It is a :class:`ConnectionRefusedError` so the agent's HTTP library treats it as a failed
    connection; the session also remembers it and fails the run even if the agent swallowed it.
    """

    code = "NETWORK_BLOCKED"


class TargetError(AguiReplayError):
    """The run target is not an agent, ASGI app or URL, or its endpoint refused the run."""

    code = "TARGET"


# --- record modes -----------------------------------------------------------------------------


class RecordMode(str, Enum):
    """When a :class:`CassetteSession` records and when it replays (see the module table)."""

    NONE = "none"
    ONCE = "once"
    REWRITE = "rewrite"
    NEW = "new"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: str | RecordMode, *, source: str = "record mode") -> RecordMode:
        """The mode named ``value``; anything else raises :class:`RecordModeError`.

        >>> RecordMode.parse("once")
        <RecordMode.ONCE: 'once'>
        """
        if isinstance(value, RecordMode):
            return value
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return cls(value.strip().lower())
        valid = ", ".join(repr(m.value) for m in cls)
        raise RecordModeError(f"{source}: {value!r} is not a record mode; use one of {valid}")


# --- the network guard ------------------------------------------------------------------------


def _loopback_host(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _ip_literal(host: str) -> bool:
    # Resolving an address literal needs no network; connect() then decides.
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _allowed_address(family: int, address: Any) -> bool:
    if getattr(socket, "AF_UNIX", None) is not None and family == socket.AF_UNIX:
        return True
    if isinstance(address, (str, bytes)):  # a unix socket path
        return True
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return _loopback_host(address[0])
    return False


def _show_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = str(address[0])
        return f"[{host}]:{address[1]}" if ":" in host else f"{host}:{address[1]}"
    return repr(address)


class NetworkGuard:
    """Refuses non-loopback connections and name lookups while :attr:`active`.

    ``install()`` patches ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``
    for the whole process (every thread: agents often make their requests from worker
    threads); ``uninstall()`` restores what was there. Each refusal raises
    :class:`NetworkBlockedError` *and* is kept in :attr:`violations`.
    """

    def __init__(self, reason: str = "replaying a cassette") -> None:
        self.reason = reason
        self.hint = ""
        self.active = False
        self.violations: list[str] = []
        self._saved: tuple[Any, Any, Any] | None = None
        self._lock = threading.Lock()

    def _block(self, what: str) -> NetworkBlockedError:
        message = (
            f"agui-replay blocked {what} while {self.reason}: a replay never touches the "
            "network. Point the agent's SDK at agui.provider.base_url (or its transports)"
            + (f"; {self.hint}" if self.hint else "")
            + "."
        )
        with self._lock:
            self.violations.append(message)
        return NetworkBlockedError(message)

    def install(self) -> None:
        if self._saved is not None:
            return
        guard = self
        original_connect = socket.socket.connect
        original_connect_ex = socket.socket.connect_ex
        original_getaddrinfo = socket.getaddrinfo
        self._saved = (original_connect, original_connect_ex, original_getaddrinfo)

        def connect(sock: socket.socket, address: Any) -> None:
            if guard.active and not _allowed_address(sock.family, address):
                raise guard._block(f"a connection to {_show_address(address)}")
            return original_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if guard.active and not _allowed_address(sock.family, address):
                raise guard._block(f"a connection to {_show_address(address)}")
            return original_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if guard.active and host is not None:
                name = host.decode("idna") if isinstance(host, bytes) else str(host)
                if name and not _loopback_host(name) and not _ip_literal(name):
                    raise guard._block(f"a name lookup of {name!r}")
            return original_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = getaddrinfo

    def uninstall(self) -> None:
        if self._saved is None:
            return
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = self._saved  # type: ignore[method-assign]
        self._saved = None
        self.active = False

    @contextlib.contextmanager
    def guarding(self, active: bool = True) -> Iterator[NetworkGuard]:
        """Install the guard for the block, refusing connections when ``active``."""
        installed_here = self._saved is None
        self.install()
        before = self.active
        self.active = active or before
        try:
            yield self
        finally:
            self.active = before
            if installed_here:
                self.uninstall()


# --- targets: agent function, ASGI app, URL ---------------------------------------------------


def target_kind(target: Any) -> TargetKind:
    """What ``target`` is: an ``"agent"`` for the run driver, an ``"asgi"`` app, or a ``"url"``.

    An ASGI app is a callable taking ``(scope, receive, send)``; an agent takes the run context
    (or is an object with a ``run(ctx)`` method).
    """
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return "url"
        raise TargetError(
            f"a string target must be the URL of an AG-UI endpoint (http:// or https://), "
            f"got {target!r}"
        )
    if not callable(target):
        if callable(getattr(target, "run", None)):
            return "agent"
        raise TargetError(
            "agui.run() takes an agent function, an object with run(ctx), an ASGI app or an "
            f"endpoint URL; got {type(target).__name__}"
        )
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return "agent"
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return "asgi" if len(positional) == 3 else "agent"


def _input_body(run_input: RunAgentInput) -> bytes:
    return run_input.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")


def _refused(status: int, body: bytes, where: str) -> TargetError:
    text = body.decode("utf-8", "replace").strip()
    if len(text) > 500:
        text = text[:499] + "…"
    return TargetError(f"{where} answered HTTP {status} instead of an event stream: {text}")


def _decode_errors(decoder: SSEDecoder, where: str) -> None:
    if decoder.errors:
        raise TargetError(f"{where} sent a frame that is not an AG-UI event: {decoder.errors[0]}")


async def _asgi_events(
    app: Any,
    run_input: RunAgentInput,
    path: str = "/",
    state: Mapping[str, Any] | None = None,
) -> list[WireEvent]:
    """POST the input to an ASGI app in process and decode its SSE body as it streams.

    ``state`` is what the app's lifespan put in its state; each request gets a shallow copy,
    as the ASGI spec says.
    """
    body = _input_body(run_input)
    decoder = SSEDecoder()
    events: list[WireEvent] = []
    status = 0
    refused: list[bytes] = []
    finished = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        # Servers listen for a disconnect while they stream; the client stays until the end.
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunk = bytes(message.get("body", b""))
            if status == 200:
                events.extend(decoder.feed(chunk))
            else:
                refused.append(chunk)
            if not message.get("more_body", False):
                finished.set()

    raw_path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": raw_path,
        "raw_path": raw_path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [
            (b"host", b"agui-replay.test"),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("agui-replay.test", 80),
        "state": dict(state or {}),
    }
    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    where = f"the ASGI app at {path}"
    if status != 200:
        raise _refused(status, b"".join(refused), where)
    events.extend(decoder.close())
    _decode_errors(decoder, where)
    return events


def _url_events(
    url: str, run_input: RunAgentInput, headers: Mapping[str, str] | None = None
) -> list[WireEvent]:
    """POST the input to an AG-UI endpoint over HTTP and decode the SSE stream."""
    import httpx2

    decoder = SSEDecoder()
    events: list[WireEvent] = []
    sent = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        **dict(headers or {}),
    }
    timeout = httpx2.Timeout(300.0, connect=10.0)
    with (
        httpx2.Client(timeout=timeout) as client,
        client.stream("POST", url, content=_input_body(run_input), headers=sent) as response,
    ):
        if response.status_code != 200:
            raise _refused(response.status_code, response.read(), url)
        for chunk in response.iter_bytes():
            events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    _decode_errors(decoder, url)
    return events


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _off_loop(fn: Callable[[], T]) -> T:
    """``fn()``, in a helper thread when this thread runs an event loop (so it cannot block)."""
    if not _loop_running():
        return fn()
    result: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=work, name="agui-replay-run", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def run_target(
    target: Any,
    run_input: RunAgentInput,
    *,
    kind: TargetKind | None = None,
    state_type: Any = None,
    path: str = "/",
    headers: Mapping[str, str] | None = None,
) -> list[WireEvent]:
    """Run ``target`` on ``run_input`` and return its events as wire dicts (no recording).

    Callable from inside a running event loop too (the run then happens in a helper thread).
    """
    kind = kind or target_kind(target)
    if kind == "url":
        return _off_loop(lambda: _url_events(str(target), run_input, headers))
    if kind == "asgi":
        return _off_loop(lambda: asyncio.run(_asgi_events(target, run_input, path)))
    from .server import run_agent_sync

    return _off_loop(
        lambda: [to_wire(e) for e in run_agent_sync(target, run_input, state_type=state_type)]
    )


async def arun_target(
    target: Any,
    run_input: RunAgentInput,
    *,
    kind: TargetKind | None = None,
    state_type: Any = None,
    path: str = "/",
    headers: Mapping[str, str] | None = None,
) -> list[WireEvent]:
    """:func:`run_target` on the running event loop (an async agent runs on this loop)."""
    kind = kind or target_kind(target)
    if kind == "url":
        return await asyncio.to_thread(_url_events, str(target), run_input, headers)
    if kind == "asgi":
        return await _asgi_events(target, run_input, path)
    from .server import run_agent

    return [to_wire(e) async for e in run_agent(target, run_input, state_type=state_type)]


# --- ASGI lifespan: an app's startup and shutdown around a session's runs ------------------


def _app_name(app: Any) -> str:
    name = getattr(app, "__qualname__", None)
    if isinstance(name, str):
        return f"{getattr(app, '__module__', '?')}.{name}"
    return f"{type(app).__module__}.{type(app).__qualname__} instance"


class _Lifespan:
    """The ASGI lifespan of one app: started once, shut down when the session finishes.

    Per the ASGI spec, an app that raises before it reads the startup message, or returns
    without answering it, does not support lifespan and simply runs without it. An app that
    answers ``lifespan.startup.failed``, or raises once it has the startup message, fails the
    run with a :class:`TargetError`.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.name = _app_name(app)
        self.state: dict[str, Any] = {}
        self.supported = False
        self.error: TargetError | None = None
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._to_app: asyncio.Queue[dict[str, Any]] | None = None
        self._from_app: asyncio.Queue[dict[str, Any]] | None = None

    async def _exchange(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Send ``message``; the app's answer, or ``None`` if the app ended without one."""
        assert self._to_app is not None
        assert self._from_app is not None
        assert self._task is not None
        self._to_app.put_nowait(message)
        answer = asyncio.ensure_future(self._from_app.get())
        await asyncio.wait({answer, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if answer.done():
            return answer.result()
        answer.cancel()
        # The app may have answered in the same step it ended in.
        try:
            return self._from_app.get_nowait()
        except asyncio.QueueEmpty:
            return None

    async def startup(self) -> None:
        if self._ready is not None:  # started (or starting) already: wait for it
            await self._ready.wait()
            if self.error is not None:
                raise self.error
            return
        self._ready = asyncio.Event()
        try:
            await self._startup()
        except TargetError as error:
            self.error = error
            raise
        finally:
            self._ready.set()

    async def _startup(self) -> None:
        self._to_app = asyncio.Queue()
        self._from_app = asyncio.Queue()
        took_startup = False
        to_app, from_app = self._to_app, self._from_app

        async def receive() -> dict[str, Any]:
            nonlocal took_startup
            message = await to_app.get()
            took_startup = True
            return message

        async def send(message: Mapping[str, Any]) -> None:
            from_app.put_nowait(dict(message))

        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "state": self.state,
        }
        self._task = asyncio.ensure_future(self.app(scope, receive, send))
        answer = await self._exchange({"type": "lifespan.startup"})
        where = f"the ASGI app {self.name}"
        if answer is None:
            failure = self._task.exception()
            if failure is None or not took_startup:
                return  # no lifespan support: run without it
            raise TargetError(
                f"{where} raised during its lifespan startup: {type(failure).__name__}: "
                f"{failure}. Fix the startup (or the app's lifespan= handler) so that it "
                "completes; agui.run() starts the app before the first run."
            ) from failure
        if answer.get("type") == "lifespan.startup.complete":
            self.supported = True
            return
        if answer.get("type") == "lifespan.startup.failed":
            await asyncio.wait({self._task})  # it usually re-raises; the message says it all
            raise TargetError(
                f"the lifespan startup of {where} failed: {answer.get('message') or '(no message)'}"
                ". Fix the startup (or the app's lifespan= handler) so that it completes; "
                "agui.run() starts the app before the first run."
            )
        raise TargetError(
            f"{where} answered the lifespan startup with {answer.get('type')!r} instead of "
            "'lifespan.startup.complete' or 'lifespan.startup.failed'"
        )

    async def shutdown(self) -> None:
        task = self._task
        if not self.supported or task is None:
            return
        self.supported = False
        where = f"the ASGI app {self.name}"
        if task.done():
            failure = task.exception()
            if failure is not None:
                raise TargetError(
                    f"{where} crashed in its lifespan after startup: "
                    f"{type(failure).__name__}: {failure}"
                ) from failure
            return
        answer = await self._exchange({"type": "lifespan.shutdown"})
        if answer is None:
            failure = task.exception()
            if failure is not None:
                raise TargetError(
                    f"{where} raised during its lifespan shutdown: "
                    f"{type(failure).__name__}: {failure}"
                ) from failure
            return
        # The app returns after answering; give it a moment, then stop waiting for it.
        _, pending = await asyncio.wait({task}, timeout=5.0)
        for leftover in pending:
            leftover.cancel()
        if not pending and not task.cancelled():
            task.exception()  # retrieved: a failure is reported through the answer below
        if answer.get("type") == "lifespan.shutdown.failed":
            raise TargetError(
                f"the lifespan shutdown of {where} failed: "
                f"{answer.get('message') or '(no message)'}"
            )


class _AppLoop:
    """An event loop in a daemon thread: the home of the session's ASGI apps with a lifespan.

    What an app's startup opens (HTTP clients, pools) is bound to the loop it ran on, so the
    app's requests, in every run of the session (``run`` and ``arun`` alike), run there too.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="agui-replay-apps", daemon=True
        )
        self._thread.start()

    def submit(self, coro: Any) -> Any:
        """A ``concurrent.futures.Future`` of ``coro`` run on this loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Any) -> Any:
        return self.submit(coro).result()

    def close(self) -> None:
        async def cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.call(cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10.0)
        if not self._thread.is_alive():
            self.loop.close()


# --- the provider ------------------------------------------------------------------------------


class SessionProvider:
    """``agui.provider``: one model provider for the whole session, recording or replaying.

    Point the agent's SDK at :attr:`base_url` (OpenAI clients) or :attr:`anthropic_base_url`,
    or plug one of the in-process transports in. Behind it, each run of the session is served
    by a fresh :class:`~agui_replay.providers.FakeProvider` built from that run's recorded
    interactions (replay), or forwarded to the upstream by a
    :class:`~agui_replay.providers.Recorder` (record). The loopback server starts on first use
    and stops with the session.
    """

    def __init__(self, session: CassetteSession) -> None:
        self._session = session
        self._server: LoopbackServer | None = None
        self._lock = threading.Lock()
        self.fake: FakeProvider | None = None
        """The fake serving the current (or last) replayed run."""
        self.recorder: Recorder | None = None
        """The recorder of this session's recorded runs (created when the first one starts)."""
        self._proxy: Callable[[str, str, dict[str, str], bytes], Plan] | None = None
        self._mode: Literal["idle", "replay", "record"] = "idle"

    # --- what the agent uses ------------------------------------------------------------------

    def _ensure_server(self) -> LoopbackServer:
        with self._lock:
            if self._server is None:
                from .providers import LoopbackServer

                self._session.start()
                self._server = LoopbackServer(self.handle, base_path=self._session.base_path)
            return self._server

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` plus the provider's base path (``/v1`` for OpenAI)."""
        return self._ensure_server().base_url

    @property
    def anthropic_base_url(self) -> str:
        """The bare origin, for ``anthropic.Anthropic(base_url=...)``."""
        return self._ensure_server().anthropic_base_url

    @property
    def url(self) -> str:
        """The loopback origin, ``http://127.0.0.1:PORT``."""
        return self._ensure_server().url

    # Four near-copies: each returns its own library's transport type (httpx and httpx2 types
    # do not mix), so a shared helper would only trade them for casts.
    def transport(self) -> httpx2.BaseTransport:
        """An in-process ``httpx2`` transport: ``httpx2.Client(transport=...)``."""
        from .providers import Httpx2Transport

        self._session.start()
        return Httpx2Transport(self.handle)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """An in-process async ``httpx2`` transport."""
        from .providers import Httpx2AsyncTransport

        self._session.start()
        return Httpx2AsyncTransport(self.ahandle)

    def httpx_transport(self) -> httpx.BaseTransport:
        """An in-process ``httpx`` transport."""
        from .providers import HttpxTransport

        self._session.start()
        return HttpxTransport(self.handle)

    def httpx_async_transport(self) -> httpx.AsyncBaseTransport:
        """An in-process async ``httpx`` transport."""
        from .providers import HttpxAsyncTransport

        self._session.start()
        return HttpxAsyncTransport(self.ahandle)

    @property
    def mode(self) -> Literal["idle", "replay", "record"]:
        """What the provider does right now: between runs it is ``"idle"``."""
        return self._mode

    # --- serving ------------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        """Answer one request: the current run's fake (replay) or the recording proxy."""
        if self._mode == "replay" and self.fake is not None:
            return self.fake.handle(method, path, headers, self._scrubbed(headers, body))
        if self._mode == "record" and self._proxy is not None:
            return self._proxy(method, path, headers, body)
        return self._outside_run(method, path)

    async def ahandle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        if self._mode == "replay" and self.fake is not None:
            body = self._scrubbed(headers, body)
            return await self.fake.ahandle(method, path, headers, body)
        if self._mode == "record" and self._proxy is not None:
            return await asyncio.to_thread(self._proxy, method, path, headers, body)
        return self._outside_run(method, path)

    def _scrubbed(self, headers: Mapping[str, str], body: bytes) -> bytes:
        """The request body as the recording stored it: secrets (and auth tokens) scrubbed.

        The recorded request is compared with this one, so a secret the agent sends in a body
        (a key, a configured password) must not make the replay differ from its recording.
        """
        if not body:
            return body
        from .providers.interaction import parse_body

        parsed = parse_body(body)
        scrubbed = scrub({"headers": dict(headers), "body": parsed}, secrets=self._session.secrets)
        if scrubbed["body"] == parsed:
            return body
        if isinstance(parsed, str):
            return str(scrubbed["body"]).encode("utf-8")
        return json.dumps(scrubbed["body"], ensure_ascii=False).encode("utf-8")

    def _outside_run(self, method: str, path: str) -> Plan:
        from .providers import detect_api, error_plan

        return error_plan(
            detect_api(path),
            500,
            f"agui_replay: {method} {path} arrived outside agui.run(); the session's provider "
            "only serves requests made while a run is in progress",
            error_type="agui_replay_error",
            headers=[("x-should-retry", "false")],
        )

    def _replay(self, interactions: Sequence[Mapping[str, Any]], match: Any) -> FakeProvider:
        from .providers import FakeProvider

        self.fake = FakeProvider.from_interactions(interactions, match=match)
        self._mode = "replay"
        return self.fake

    def _record(self) -> int:
        """Start forwarding to the upstream; returns the index of the run's first interaction."""
        if self.recorder is None:
            from .providers import Recorder

            self.recorder = Recorder(self._session.upstream_url(), secrets=self._session.secrets)
            proxy = self.recorder.app()
            self._proxy = proxy
            self._proxy_close: Callable[[], None] | None = proxy.close
        self._mode = "record"
        return len(self.recorder.interactions)

    def _recorded_since(self, start: int) -> list[dict[str, Any]]:
        assert self.recorder is not None
        return [i.to_dict() for i in self.recorder.interactions[start:]]

    def _idle(self) -> None:
        self._mode = "idle"

    def close(self) -> None:
        self._mode = "idle"
        if self._server is not None:
            self._server.close()
            self._server = None
        close = getattr(self, "_proxy_close", None)
        if close is not None:
            close()
            self._proxy_close = None


# --- the session -------------------------------------------------------------------------------


@dataclass
class RunRecord:
    """One run of a session, as it happened."""

    index: int
    action: Literal["recorded", "replayed"]
    input: dict[str, Any]
    events: list[WireEvent]
    """The events as the agent produced them now (raw ids and timestamps)."""
    normalized: list[WireEvent]
    """The events after normalization and scrubbing (what the cassette stores / compares)."""
    interactions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Pending:
    index: int
    replay: bool
    input: RunAgentInput
    wire_input: dict[str, Any]
    recorded: CassetteRun | None = None
    first_interaction: int = 0
    violations_before: int = 0


def secrets_from_env(names: Iterable[str] = DEFAULT_SECRET_ENV) -> list[str]:
    """The values of those environment variables that are set (the secrets to scrub)."""
    return [v for v in (os.environ.get(n, "") for n in names) if v.strip()]


def _canonical(value: Any) -> bytes:
    # Sorted keys, and 1 / 1.0 / true kept apart, as JSON sees them.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _wire_input(run_input: RunAgentInput) -> dict[str, Any]:
    dumped: dict[str, Any] = run_input.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


class CassetteSession:
    """The runs of one cassette file, recorded or replayed (the pytest ``agui`` fixture).

    ``path`` is the cassette file; ``mode`` a :class:`RecordMode` (or its name); ``upstream``
    the real provider to record from (a base URL, an object with ``base_url``, or a callable
    returning one, called only when a run is recorded); ``secrets`` the values to scrub besides
    auth headers and key-shaped strings; ``record_command`` the command a failure message tells
    the user to run to record (default: ``pytest --agui-record``); ``freeze_time`` the instant
    the wall clock shows during each run (``False``: the real clock).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: RecordMode | str = RecordMode.NONE,
        upstream: Upstream | None = None,
        secrets: Iterable[str] = (),
        record_command: str | None = None,
        name: str | None = None,
        normalize: bool = True,
        match: Literal["order", "unordered", "none"] = "order",
        state_type: Any = None,
        freeze_time: str | bool = DEFAULT_FROZEN_TIME,
    ) -> None:
        self.path = Path(path)
        self.freeze_time = freeze_time
        self.mode = RecordMode.parse(mode)
        self._upstream = upstream
        self.secrets: list[str] = [s for s in secrets if s]
        self.record_command = record_command or "pytest --agui-record"
        self.name = name
        self.normalize = normalize
        self.match = match
        self.state_type = state_type
        self.runs: list[RunRecord] = []
        """Every run of this session so far, in order."""
        self.provider = SessionProvider(self)
        self.guard = NetworkGuard(f"replaying {self.path}")
        self.guard.hint = f"to re-record, run `{self.record_command}`"
        self._started = False
        self._existed = False
        self._recorded_runs: list[CassetteRun] = []
        self._cassette: Cassette | None = None
        self._finished = False
        self._lock = threading.Lock()
        self._lifespans: dict[int, _Lifespan] = {}
        self._app_loop: _AppLoop | None = None

    def __repr__(self) -> str:
        return f"<CassetteSession {self.path} mode={self.mode.value}>"

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def replay_only(self) -> bool:
        """Whether no run of this session can record (so the network guard may stay up)."""
        if self.mode is RecordMode.NONE:
            return True
        if self.mode is RecordMode.ONCE:
            return self.path.exists()
        return False

    def start(self) -> None:
        """Read the cassette (once). Done lazily by the first run or provider use."""
        with self._lock:
            if self._started:
                return
            self._existed = self.path.exists()
            if self.mode is not RecordMode.REWRITE and self._existed:
                self._cassette = load_cassette(self.path, validate="shape")
                self._recorded_runs = list(self._cassette.runs)
            elif self.mode is RecordMode.NONE:
                raise MissingCassetteError(
                    f"no cassette for this test, and record mode 'none' only replays. Record it "
                    f"with `{self.record_command}` (against the real provider; keep its API key "
                    "in the environment, it is scrubbed from the file).",
                    path=str(self.path),
                )
            self._started = True

    @property
    def recorded_runs(self) -> list[CassetteRun]:
        """The runs the cassette held when the session started (empty under ``rewrite``)."""
        self.start()
        return list(self._recorded_runs)

    @property
    def base_path(self) -> str:
        """The URL path of the provider's base URL (``/v1`` for OpenAI)."""
        meta = self._cassette.meta if self._cassette is not None else {}
        provider = meta.get("provider") if isinstance(meta, dict) else None
        if isinstance(provider, dict) and isinstance(provider.get("base_path"), str):
            return str(provider["base_path"])
        if not self._replays(0):
            return urlsplit(self.upstream_url()).path.rstrip("/")
        return "/v1"

    def upstream_url(self) -> str:
        """The upstream base URL (resolving a callable ``upstream`` the first time)."""
        upstream = self._upstream
        if upstream is None:
            upstream = DEFAULT_UPSTREAM
        if not isinstance(upstream, str) and not hasattr(upstream, "base_url"):
            assert callable(upstream)
            upstream = upstream()  # a factory, called only now that a run records
            self._upstream = upstream
        return upstream if isinstance(upstream, str) else cast("_HasBaseUrl", upstream).base_url

    def _replays(self, index: int) -> bool:
        if self.mode is RecordMode.NONE:
            return True
        if self.mode is RecordMode.ONCE:
            return self._existed
        if self.mode is RecordMode.REWRITE:
            return False
        return index < len(self._recorded_runs)

    @property
    def outcome(self) -> Literal["recorded", "replayed"] | None:
        """``"recorded"`` if any run was recorded, ``"replayed"`` if runs only replayed."""
        if any(r.action == "recorded" for r in self.runs):
            return "recorded"
        return "replayed" if self.runs else None

    def __enter__(self) -> CassetteSession:
        if self.replay_only:
            self.guard.install()
            self.guard.active = True
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.finish()
        finally:
            self.guard.uninstall()

    def finish(self) -> Path | None:
        """Write the cassette if a run was recorded, shut the ASGI apps down (their lifespan),
        stop the provider; returns the path written."""
        if self._finished:
            return None
        self._finished = True
        try:
            return self._save()
        finally:
            try:
                self._stop_apps()
            finally:
                self.provider.close()

    def _save(self) -> Path | None:
        if self.outcome != "recorded":
            return None
        runs = [self._run_to_store(r) for r in self.runs]
        if self.mode is RecordMode.NEW:
            recorded_new = runs[len(self._recorded_runs) :]
            runs = self._recorded_runs + recorded_new
        meta: dict[str, Any] = {"provider": {"base_path": self.base_path}}
        cassette = Cassette(runs=runs, name=self.name, meta=meta)
        return save_cassette(cassette, self.path, secrets=self.secrets)

    # --- ASGI apps and their lifespan -----------------------------------------------------------

    async def _app_started(self, app: Any) -> _Lifespan:
        # Runs on the app loop only, so two runs never start the same app twice.
        lifespan = self._lifespans.get(id(app))
        if lifespan is None:
            lifespan = self._lifespans[id(app)] = _Lifespan(app)  # keeps `app` (and its id)
        await lifespan.startup()
        return lifespan

    def _apps(self) -> _AppLoop:
        with self._lock:
            if self._app_loop is None:
                self._app_loop = _AppLoop()
            return self._app_loop

    def _run_asgi(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        apps = self._apps()
        lifespan: _Lifespan = apps.call(self._app_started(app))
        if not lifespan.supported:
            return run_target(app, run_input, kind="asgi", path=path)
        events: list[WireEvent] = apps.call(_asgi_events(app, run_input, path, lifespan.state))
        return events

    async def _arun_asgi(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        apps = self._apps()
        lifespan: _Lifespan = await asyncio.wrap_future(apps.submit(self._app_started(app)))
        if not lifespan.supported:
            return await _asgi_events(app, run_input, path)
        events: list[WireEvent] = await asyncio.wrap_future(
            apps.submit(_asgi_events(app, run_input, path, lifespan.state))
        )
        return events

    def _stop_apps(self) -> None:
        """Send ``lifespan.shutdown`` to every started app; the first failure is raised."""
        apps, self._app_loop = self._app_loop, None
        if apps is None:
            return
        failures: list[TargetError] = []
        try:
            for lifespan in self._lifespans.values():
                try:
                    apps.call(lifespan.shutdown())
                except TargetError as error:
                    failures.append(error)
        finally:
            self._lifespans.clear()
            apps.close()
        if failures:
            raise failures[0]

    def _run_to_store(self, run: RunRecord) -> CassetteRun:
        if run.action == "replayed":
            return self._recorded_runs[run.index]
        return CassetteRun(input=run.input, events=run.normalized, interactions=run.interactions)

    def check_complete(self) -> None:
        """After a passing test: every recorded run was replayed, and nothing was blocked."""
        if self.guard.violations:
            raise NetworkBlockedError(self.guard.violations[0])
        if not self._started or not self.replay_only:
            return
        used, held = len(self.runs), len(self._recorded_runs)
        if 0 < used < held:
            raise ReplayMismatchError(
                f"{self.path}: the test made {used} run(s) but the cassette holds {held}; "
                f"the test changed since it was recorded. Re-record with `{self.record_command}`."
            )

    # --- runs -----------------------------------------------------------------------------------

    def _coerce_input(self, value: Any, index: int) -> RunAgentInput:
        from .server import run_input
        from .server.context import coerce_input

        run_id = f"run-{index + 1}"
        if value is None:
            return run_input("thread", run_id)
        if isinstance(value, str):
            return run_input("thread", run_id, messages=[value])
        if isinstance(value, Mapping):
            # A test writes the fields it cares about; the rest of RunAgentInput is empty.
            defaults: dict[str, Any] = {"messages": [], "tools": [], "context": [], "state": None}
            value = {**defaults, "forwardedProps": None, **value}
        return coerce_input(value)

    def _begin(self, value: Any) -> _Pending:
        self.start()
        if self._finished:
            raise AguiReplayError(f"{self!r} is finished; start a new session to run again")
        index = len(self.runs)
        run_input = self._coerce_input(value, index)
        pending = _Pending(index, self._replays(index), run_input, _wire_input(run_input))
        pending.violations_before = len(self.guard.violations)
        if pending.replay:
            pending.recorded = self._recorded_run(index)
            self._check_input(pending)
            self.provider._replay(pending.recorded.interactions, self.match)
        else:
            pending.first_interaction = self.provider._record()
        return pending

    def _clock(self) -> contextlib.AbstractContextManager[Any]:
        """The wall clock frozen at :attr:`freeze_time` for a run (time-machine, if installed).

        Recording and replay see the same instant, so an agent that writes the date into a
        prompt or a state sends the same request both times. time-machine leaves
        ``time.monotonic`` running: asyncio timers and HTTP timeouts keep working.
        """
        if self.freeze_time is False:
            return contextlib.nullcontext()
        try:
            import time_machine
        except ImportError:
            return contextlib.nullcontext()
        instant = DEFAULT_FROZEN_TIME if self.freeze_time is True else self.freeze_time
        return time_machine.travel(instant, tick=False)

    def _recorded_run(self, index: int) -> CassetteRun:
        if index < len(self._recorded_runs):
            return self._recorded_runs[index]
        held = len(self._recorded_runs)
        if self.mode is RecordMode.ONCE:
            how = (
                "record mode 'once' never changes an existing cassette: append the new run "
                f"with `{self.record_command.replace('--agui-record', '--agui-record-mode=new')}`"
                f" or re-record it all with `{self.record_command}`"
            )
        else:
            how = f"re-record it with `{self.record_command}`"
        raise MissingCassetteError(
            f"run #{index} (agui.run call {index + 1}) is not in the cassette, which holds "
            f"{held} run(s); {how}.",
            path=str(self.path),
        )

    def _check_input(self, pending: _Pending) -> None:
        assert pending.recorded is not None
        recorded = pending.recorded.input
        now = scrub(pending.wire_input, secrets=self.secrets)
        if _canonical(now) == _canonical(recorded):
            return
        diffs = json_diff(recorded, now)
        shown = "\n".join(
            f"  {p or '/'}: recorded {_short(a)} != now {_short(b)}" for p, a, b in diffs
        )
        raise ReplayMismatchError(
            f"{self.path}: run #{pending.index} starts from another input than the recorded "
            f"one:\n{shown}\nRe-record with `{self.record_command}` if the change is intended."
        )

    def _end(self, pending: _Pending, events: list[WireEvent]) -> list[WireEvent]:
        provider = self.provider
        interactions: list[dict[str, Any]] = []
        fake = provider.fake if pending.replay else None
        if not pending.replay:
            interactions = provider._recorded_since(pending.first_interaction)
        provider._idle()
        # The recording is stored normalized, so only the new stream needs normalizing, and
        # the comparison is of canonical bytes (a readable diff is built only on a mismatch).
        expected = b""
        same = False
        if pending.replay and pending.recorded is not None:
            expected = _canonical(pending.recorded.events)
            # Already equal to the (normalized) recording: normalizing is idempotent, so the
            # normalized stream would be equal too. Streams with run-id-derived ids and no
            # timestamps (this package's own emitter) skip the copy.
            same = _canonical(events) == expected
        normalized = events if same else self._normalize(events, pending.wire_input)
        record = RunRecord(
            pending.index,
            "replayed" if pending.replay else "recorded",
            pending.wire_input,
            events,
            normalized,
            interactions,
        )
        self.runs.append(record)
        blocked = self.guard.violations[pending.violations_before :]
        if blocked:
            raise NetworkBlockedError(
                blocked[0] + (f" ({len(blocked) - 1} more)" if len(blocked) > 1 else "")
            )
        if pending.replay:
            assert pending.recorded is not None
            assert fake is not None
            self._compare(pending, record, fake, expected, same)
        return events

    def _normalize(self, events: list[WireEvent], wire_input: Mapping[str, Any]) -> list[WireEvent]:
        if not self.normalize:
            return [dict(e) for e in events]
        messages = wire_input.get("messages")
        keep = {
            m["id"]
            for m in (messages if isinstance(messages, list) else [])
            if isinstance(m, dict) and isinstance(m.get("id"), str)
        }
        return normalize_events(events, preserve=keep)

    def _compare(
        self,
        pending: _Pending,
        record: RunRecord,
        fake: FakeProvider,
        expected_bytes: bytes,
        same: bool,
    ) -> None:
        """``same`` says the raw stream already equals the recording (canonical bytes)."""
        assert pending.recorded is not None
        expected = pending.recorded.events
        actual = record.normalized
        same = same or _canonical(actual) == expected_bytes
        if not same:
            # The recording is scrubbed; a key-shaped string the agent emits is too.
            actual = scrub(actual, secrets=self.secrets)
            record.normalized = actual
            same = _canonical(actual) == expected_bytes
        problems: list[str] = []
        if fake.errors:
            problems.append(
                "the agent's provider requests differ from the recorded ones:\n"
                + "\n".join(f"  {line}" for e in fake.errors for line in str(e).splitlines())
            )
        if not same:
            lines = explain_stream_diff(
                expected, actual, left_name="recorded", right_name="replayed"
            )
            problems.append("the agent's stream differs from the recording: " + "\n".join(lines))
        if fake.unserved and not fake.errors:
            problems.append(
                f"the agent made {len(fake.requests)} provider request(s); the recording has "
                f"{len(fake.turns)}: never requested: " + "; ".join(fake.unserved)
            )
        if problems:
            header = f"{self.path}: run #{pending.index} does not replay as recorded"
            footer = f"If the change is intended, re-record with `{self.record_command}`."
            raise ReplayMismatchError("\n".join([header, *problems, footer]))

    def run(
        self,
        target: Any,
        input: RunAgentInput | Mapping[str, Any] | str | None = None,
        *,
        kind: TargetKind | None = None,
        state_type: Any = None,
        path: str = "/",
        headers: Mapping[str, str] | None = None,
    ) -> list[WireEvent]:
        """Run ``target`` once, recording or replaying, and return its events (wire dicts).

        ``target`` is an agent function (run by :func:`agui_replay.server.run_agent_sync`), an
        ASGI app speaking AG-UI (called in process, POST at ``path``) or the URL of an AG-UI
        endpoint. ``input`` is a ``RunAgentInput`` (model or camelCase dict), a user message
        text, or ``None`` (thread ``"thread"``, run ``"run-<n>"``). In replay the new stream
        is compared with the recording and a difference raises :class:`ReplayMismatchError`.
        """
        pending = self._begin(input)
        try:
            with self.guard.guarding(pending.replay), self._clock():
                if (kind or target_kind(target)) == "asgi":
                    events = self._run_asgi(target, pending.input, path)
                else:
                    events = run_target(
                        target,
                        pending.input,
                        kind=kind,
                        state_type=state_type if state_type is not None else self.state_type,
                        path=path,
                        headers=headers,
                    )
        except BaseException:
            self.provider._idle()
            raise
        return self._end(pending, events)

    async def arun(
        self,
        target: Any,
        input: RunAgentInput | Mapping[str, Any] | str | None = None,
        *,
        kind: TargetKind | None = None,
        state_type: Any = None,
        path: str = "/",
        headers: Mapping[str, str] | None = None,
    ) -> list[WireEvent]:
        """:meth:`run` for async tests: an async agent or ASGI app runs on the current loop."""
        pending = self._begin(input)
        try:
            with self.guard.guarding(pending.replay), self._clock():
                if (kind or target_kind(target)) == "asgi":
                    events = await self._arun_asgi(target, pending.input, path)
                else:
                    events = await arun_target(
                        target,
                        pending.input,
                        kind=kind,
                        state_type=state_type if state_type is not None else self.state_type,
                        path=path,
                        headers=headers,
                    )
        except BaseException:
            self.provider._idle()
            raise
        return self._end(pending, events)

    @property
    def events(self) -> list[WireEvent]:
        """The events of every run so far, as produced (raw)."""
        return [e for r in self.runs for e in r.events]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else "null"
    return text if len(text) <= 80 else text[:79] + "…"
