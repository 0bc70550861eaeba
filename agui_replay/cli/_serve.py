"""``agui-replay serve``: a recording as a live AG-UI endpoint on loopback (an ASGI app)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import signal
import socket
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agui_replay.cassette import RecordedRun, Recording, load_recording
from agui_replay.cli._common import EXIT_OK, _select_runs, _UsageError
from agui_replay.events import WireEvent
from agui_replay.sse import encode_sse

__all__ = [
    "ReplayApp",
    "replay_app",
]

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_MAX_REQUEST_BYTES = 16 * 1024 * 1024


def _event_delays(events: Sequence[WireEvent], speed: float, max_gap: float) -> list[float]:
    """Seconds to wait before each event: the recorded gaps (``timestamp``, ms) over speed."""
    delays = [0.0] * len(events)
    if speed <= 0:
        return delays
    last: float | None = None
    for i, event in enumerate(events):
        stamp = event.get("timestamp")
        if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
            continue
        if last is not None and stamp > last:
            delays[i] = min((stamp - last) / 1000.0 / speed, max_gap)
        last = float(stamp)
    return delays


_CORS_HEADERS = [
    # A front end on its own dev server (another origin) calls the replay directly.
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"POST, OPTIONS"),
    (b"access-control-allow-headers", b"*"),
]


class ReplayApp:
    """An ASGI app that answers every POSTed ``RunAgentInput`` with a recorded run as SSE.

    Without ``run``, the n-th request gets run ``n`` (wrapping around), so a front end can
    play a whole recorded conversation in order. Timing follows the events' ``timestamp``
    fields scaled by ``speed`` (``0``: as fast as possible), each gap capped at ``max_gap``.
    """

    def __init__(
        self,
        recording: Recording,
        *,
        run: int | None = None,
        speed: float = 1.0,
        max_gap: float = 5.0,
        log: TextIO | None = None,
    ) -> None:
        self.recording = recording
        self.run = run
        self.speed = speed
        self.max_gap = max_gap
        self.log = log
        self.requests = 0

    def _say(self, text: str) -> None:
        if self.log is not None:
            self.log.write(text + "\n")
            self.log.flush()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        method = scope.get("method", "GET")
        if method == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": _CORS_HEADERS})
            await send({"type": "http.response.body", "body": b""})
            return
        path = scope.get("path", "/")
        if method != "POST":
            await self._refuse(
                send, 405, "POST a RunAgentInput JSON body to replay a run", f"{method} {path}"
            )
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > _MAX_REQUEST_BYTES:
                await self._refuse(send, 413, "the request body is too large", f"POST {path}")
                return
            if not message.get("more_body"):
                break
        problem, posted = _check_run_input(bytes(body))
        if problem is not None:
            await self._refuse(send, 400, problem, f"POST {path}")
            return
        number = self.run if self.run is not None else self.requests % len(self.recording.runs)
        self.requests += 1
        run = self.recording.runs[number]
        self._say(f"POST {path} → run {number} ({len(run.events)} events)")
        await self._stream(run, _as_posted(run.events, posted), receive, send)

    async def _refuse(self, send: Any, status: int, message: str, request: str) -> None:
        self._say(f"{request} → {status} refused: {message}")
        body = json.dumps(
            {"code": "INVALID_INPUT" if status == 400 else str(status), "message": message}
        )
        headers = [(b"content-type", b"application/json"), *_CORS_HEADERS]
        if status == 405:
            headers.append((b"allow", b"POST, OPTIONS"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})

    async def _stream(
        self, run: RecordedRun, events: list[WireEvent], receive: Any, send: Any
    ) -> None:
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *_CORS_HEADERS,
        ]
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.ensure_future(watch())
        sent = 0
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            for delay, event in zip(
                _event_delays(run.events, self.speed, self.max_gap), events, strict=True
            ):
                if delay > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(gone.wait(), delay)
                else:
                    # Let the loop see a closed connection before the next write: writes to a
                    # reset socket would each be refused (and logged) until it does.
                    await asyncio.sleep(0)
                if gone.is_set():
                    break
                await send(
                    {"type": "http.response.body", "body": encode_sse(event), "more_body": True}
                )
                sent += 1
            else:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            gone.set()  # the client went away mid-write
        finally:
            watcher.cancel()
        if gone.is_set():  # a normal end of a run for a client: one line, no traceback
            self._say(f"  client disconnected after {sent} of {len(run.events)} event(s)")


def _check_run_input(body: bytes) -> tuple[str | None, dict[str, Any]]:
    """The problem with a posted body (``None`` when it is a valid input), and the body."""
    from pydantic import ValidationError

    from agui_replay._compat import input_model

    try:
        data = json.loads(body or b"null")
    except ValueError as exc:
        return f"the request body is not JSON: {exc}", {}
    if not isinstance(data, dict):
        return "the request body must be a RunAgentInput JSON object", {}
    try:
        input_model(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"not a valid RunAgentInput: {where}: {first['msg']}", {}
    return None, data


def _as_posted(events: Sequence[WireEvent], posted: dict[str, Any]) -> list[WireEvent]:
    """The recorded events carrying the posted ``threadId`` and ``runId`` in place of the
    recorded ones (a front end checks that the stream answers the run it started)."""
    first = events[0] if events else {}
    names: dict[str, dict[Any, Any]] = {}
    for key in ("threadId", "runId"):
        recorded, wanted = first.get(key), posted.get(key)
        if first.get("type") == "RUN_STARTED" and isinstance(wanted, str) and recorded != wanted:
            names[key] = {recorded: wanted}
    if not names:
        return list(events)
    out = []
    for event in events:
        changed = {k: m[event[k]] for k, m in names.items() if k in event and event[k] in m}
        out.append({**event, **changed} if changed else event)
    return out


def replay_app(
    recording: Recording, *, run: int | None = None, speed: float = 1.0, max_gap: float = 5.0
) -> ReplayApp:
    """The ASGI app ``agui-replay serve`` runs (serve it with any ASGI server)."""
    return ReplayApp(recording, run=run, speed=speed, max_gap=max_gap)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    if args.host not in _LOOPBACK_HOSTS:
        raise _UsageError(
            f"--host {args.host} is not a loopback address: `serve` replays recordings for local "
            "development only; use 127.0.0.1, localhost or ::1"
        )
    if not (math.isfinite(args.speed) and args.speed >= 0):
        raise _UsageError("--speed must be a number >= 0 (0 streams every event at once)")
    recording = load_recording(args.file)
    if args.run is not None:
        _select_runs(recording, args.run)
    try:
        import uvicorn
    except ImportError:
        raise _UsageError("`serve` needs uvicorn: pip install 'agui-replay[server]'") from None
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        host = "127.0.0.1" if args.host == "localhost" else args.host
        try:
            sock.bind((host, args.port))
        except OSError as exc:
            raise _UsageError(
                f"cannot listen on {host}:{args.port}: {exc.strerror or exc}"
            ) from None
        # Listening before the URL is printed: a client that connects at once is queued.
        sock.listen(128)
        port = sock.getsockname()[1]
        url = f"http://[{host}]:{port}/" if family == socket.AF_INET6 else f"http://{host}:{port}/"
        app = ReplayApp(
            recording,
            run=args.run,
            speed=args.speed,
            max_gap=args.max_gap,
            log=None if args.quiet else sys.stderr,
        )
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", http="h11", ws="none", loop="asyncio"
        )
        server = uvicorn.Server(config)
        timing = "instant" if args.speed == 0 else f"speed {args.speed:g}"
        out.write(f"{url}\n")
        out.flush()
        if not args.quiet:  # --quiet: the URL line only (tools read it)
            sys.stderr.write(
                f"serving {recording.path} ({len(recording.runs)} run(s), {timing}) at {url} "
                "— POST a RunAgentInput; Ctrl-C stops\n"
            )
            sys.stderr.flush()
        _run_until_signal(server, sock)
    finally:
        sock.close()
    if not args.quiet:
        sys.stderr.write("stopped\n")
    return EXIT_OK


def _run_until_signal(server: Any, sock: socket.socket) -> None:
    """Run uvicorn; SIGINT and SIGTERM stop it cleanly (uvicorn re-raises the signal it
    caught once it has shut down, so a quiet handler stands in for the default one)."""
    import threading

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
