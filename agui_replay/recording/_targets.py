"""What a session runs: an agent function, an ASGI app (its lifespan, its loop), or a URL."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from agui_replay.events import WireEvent, to_wire
from agui_replay.recording._modes import TargetError
from agui_replay.sse import SSEDecoder

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

__all__ = ["AppHost", "TargetKind", "arun_target", "run_target", "target_kind"]

T = TypeVar("T")

TargetKind: TypeAlias = Literal["agent", "asgi", "url"]


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
    from agui_replay.server import run_agent_sync

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
    from agui_replay.server import run_agent

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


class AppHost:
    """The ASGI apps a session ran, each started once (its lifespan) on one loop of their own,
    and shut down at the session's end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lifespans: dict[int, _Lifespan] = {}
        self._loop: _AppLoop | None = None

    async def _started(self, app: Any) -> _Lifespan:
        # Runs on the app loop only, so two runs never start the same app twice.
        lifespan = self._lifespans.get(id(app))
        if lifespan is None:
            lifespan = self._lifespans[id(app)] = _Lifespan(app)  # keeps `app` (and its id)
        await lifespan.startup()
        return lifespan

    def _apps(self) -> _AppLoop:
        with self._lock:
            if self._loop is None:
                self._loop = _AppLoop()
            return self._loop

    def run(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        """One run of ``app`` (started first if need be), from a test that is not async."""
        apps = self._apps()
        lifespan: _Lifespan = apps.call(self._started(app))
        if not lifespan.supported:
            return run_target(app, run_input, kind="asgi", path=path)
        events: list[WireEvent] = apps.call(_asgi_events(app, run_input, path, lifespan.state))
        return events

    async def arun(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        """:meth:`run` for an async test."""
        apps = self._apps()
        lifespan: _Lifespan = await asyncio.wrap_future(apps.submit(self._started(app)))
        if not lifespan.supported:
            return await _asgi_events(app, run_input, path)
        events: list[WireEvent] = await asyncio.wrap_future(
            apps.submit(_asgi_events(app, run_input, path, lifespan.state))
        )
        return events

    def stop(self) -> None:
        """Send ``lifespan.shutdown`` to every started app; the first failure is raised."""
        __tracebackhide__ = True  # the error is the test's: show its line
        apps, self._loop = self._loop, None
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
