"""``agui-replay serve``: recordings as a live AG-UI endpoint (an ASGI app), on loopback unless
``--host`` says otherwise.

Each posted ``RunAgentInput`` gets the recorded run whose input matches it
(:mod:`agui_replay.cli._serve_match`), streamed with the ids the front end posted, so a whole
conversation plays turn after turn; faults (:mod:`agui_replay.cli._serve_faults`: a cut
connection, a RUN_ERROR, a slow start, a lost, doubled or garbled event), from the options or one
request's ``X-AGUI-Replay-Fault`` header, let a front end's error and loading states be tested
against the same recordings. ``GET /_agui/runs`` lists the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from agui_replay.cassette import Recording, load_recording
from agui_replay.cli._common import EXIT_OK, _UsageError
from agui_replay.cli._posted import (
    Refusal,
    listen,
    reach_warning,
    read_run_input,
    run_until_signal,
    uvicorn_server,
)
from agui_replay.cli._serve_faults import (
    FAULT_HEADER,
    GRACE,
    Faults,
    garbled,
    parse_faults,
)
from agui_replay.cli._serve_match import Choice, RunMatcher, ServedRun, input_view, posted_ids
from agui_replay.errors import InvalidArgumentError
from agui_replay.events import WireEvent
from agui_replay.sse import encode_sse

__all__ = [
    "ReplayApp",
    "replay_app",
]


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
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"*"),
]
# Chromium with Private Network Access lets a page from another network call a loopback server
# only when the preflight says the server accepts it (later versions ask the user instead).
_PRIVATE_NETWORK = (b"access-control-allow-private-network", b"true")

FAULT_CODE = "INJECTED_FAULT"
"""The ``code`` of the RUN_ERROR ``--error-after`` sends."""
NO_MATCH_CODE = "NO_MATCHING_RUN"
"""The ``code`` of the 404 answer to an input no recorded run matches."""
RUNS_PATH = "/_agui/runs"
"""Where a ``GET`` lists the served runs (:meth:`ReplayApp.listing`)."""
_ID_KEYS = frozenset(
    {"id", "messageId", "parentMessageId", "toolCallId", "tool_call_id", "interruptId", "entityId"}
)


class _ConnectionCut(Exception):
    """Raised mid-stream by ``--cut-after``: the ASGI server drops the connection (an ASGI app
    that fails after its response started is cut off, not ended)."""


class _QuietCut(logging.Filter):
    """Keeps uvicorn from logging a planned cut as an error with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], _ConnectionCut))


_QUIET_CUT = _QuietCut()


def _served_runs(recordings: Sequence[Recording], root: Path | None) -> list[ServedRun]:
    """Every run of the recordings, numbered across them, each with its normalized input."""
    served: list[ServedRun] = []
    for recording in recordings:
        name = ""
        if len(recordings) > 1 or root is not None:
            where = recording.path
            if root is not None:
                with contextlib.suppress(ValueError):
                    where = recording.path.relative_to(root)
            name = f"{where} "
        for run in recording.runs:
            view = input_view(run.input) if isinstance(run.input, dict) else None
            served.append(
                ServedRun(len(served), recording.path, run, f"{name}run {run.index}", view)
            )
    return served


def _count_option(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidArgumentError(f"{name} must be a whole number of events >= 0, not {value!r}")


class ReplayApp:
    """An ASGI app that answers every POSTed ``RunAgentInput`` with a recorded run as SSE.

    ``recording`` is one recording or several (a folder of cassettes). Each request gets the
    run whose recorded input matches the posted one (messages and resume, with ids
    normalized; among equal matches a run of the recording this posted thread was answered
    from first, then order); runs recorded without an input are served in order, and an
    input no recorded run matches gets a 404 naming the closest run (the one agreeing with it
    on the most messages, resume entries, state and tools) and their first difference.
    ``in_order=True`` ignores the inputs: the n-th request gets run ``n`` (wrapping around);
    ``run`` serves one run (numbered across the recordings) every time. The stream names the
    posted thread, run and the messages the front end posted by the front end's ids.

    Timing follows the events' ``timestamp`` fields scaled by ``speed`` (``0``: as fast as
    possible), each gap capped at ``max_gap``, after ``delay`` seconds before the first event.
    Faults: ``cut_after=N`` drops the connection after N events (no clean end of the stream),
    ``error_after=N`` sends a RUN_ERROR (code ``INJECTED_FAULT``) after N events and ends it.
    A request's ``X-AGUI-Replay-Fault`` header replaces these for that request (and adds
    ``drop``, ``duplicate`` and ``garble``). ``root``, the folder the recordings were found
    in, names them relative to it in the log.
    """

    def __init__(
        self,
        recording: Recording | Sequence[Recording],
        *,
        run: int | None = None,
        speed: float = 1.0,
        max_gap: float = 5.0,
        log: TextIO | None = None,
        delay: float = 0.0,
        cut_after: int | None = None,
        error_after: int | None = None,
        in_order: bool = False,
        root: Path | None = None,
    ) -> None:
        recordings = [recording] if isinstance(recording, Recording) else list(recording)
        if not recordings:
            raise InvalidArgumentError("ReplayApp needs at least one recording to serve")
        _count_option("cut_after", cut_after)
        _count_option("error_after", error_after)
        if cut_after is not None and error_after is not None:
            raise InvalidArgumentError(
                "cut_after and error_after are two endings of one stream: choose one"
            )
        if not (math.isfinite(delay) and delay >= 0):
            raise InvalidArgumentError(f"delay must be a number of seconds >= 0, not {delay!r}")
        self.recordings = recordings
        self.recording = recordings[0]
        self.runs = _served_runs(recordings, root)
        if not self.runs:
            raise InvalidArgumentError(
                f"{recordings[0].path}: no run to serve (the recording has no events)"
            )
        count = len(self.runs)
        if run is not None and not -count <= run < count:
            raise InvalidArgumentError(f"run {run} is out of range: {count} run(s), 0–{count - 1}")
        self.run = None if run is None else run % count
        self.speed = speed
        self.max_gap = max_gap
        self.log = log
        self.delay = delay
        self.cut_after = cut_after
        self.error_after = error_after
        self.faults = Faults(delay=delay, cut_after=cut_after, error_after=error_after)
        self.matcher = RunMatcher(self.runs, fixed=self.run, in_order=in_order)
        # A cut may come with any request (its header), not only with --cut-after.
        logging.getLogger("uvicorn.error").addFilter(_QUIET_CUT)

    @property
    def requests(self) -> int:
        """How many valid inputs were posted so far."""
        return self.matcher.requests

    def _say(self, text: str) -> None:
        if self.log is not None:
            self.log.write(text + "\n")
            self.log.flush()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        method = scope.get("method", "GET")
        if method == "OPTIONS":
            await self._preflight(scope, send)
            return
        path = scope.get("path", "/")
        if method == "GET" and path == RUNS_PATH:
            await self._answer(send, 200, self.listing())
            return
        if method != "POST":
            await self._refuse(
                send,
                405,
                f"POST a RunAgentInput JSON body to replay a run (GET {RUNS_PATH} lists the runs)",
                f"{method} {path}",
            )
            return
        faults = self.faults
        asked = _header(scope, FAULT_HEADER)
        if asked is not None:
            try:
                faults = parse_faults(asked)
            except ValueError as exc:
                await self._refuse(send, 400, str(exc), f"POST {path}", code="INVALID_FAULT")
                return
        read = await read_run_input(receive)
        if read is None:  # the client went away
            return
        if isinstance(read, Refusal):
            await self._refuse(send, read.status, read.message, f"POST {path}")
            return
        posted = read.data
        choice = self.matcher.choose(posted)
        if choice.served is None:
            await self._no_match(send, choice, f"POST {path}")
            return
        served = choice.served
        events = served.run.events
        how = {"matched": "input matched", "in order": "in order", "fixed": "--run"}[choice.how]
        said = f", {FAULT_HEADER}: {faults}" if asked is not None else ""
        self._say(f"POST {path} → {served.label} ({len(events)} events, {how}){said}")
        recorded = served.run.input if isinstance(served.run.input, dict) else {}
        await self._stream(
            events,
            _as_posted(events, posted, recorded),
            faults,
            receive,
            send,
            header=asked is not None,
        )

    def listing(self) -> dict[str, Any]:
        """What ``GET /_agui/runs`` answers: each served run with its number (``--run``),
        label, file, recorded thread and run id, a summary of its input and its event count."""
        runs = []
        for served in self.runs:
            first = served.run.events[0] if served.run.events else {}
            recorded = served.run.input if isinstance(served.run.input, dict) else None
            runs.append(
                {
                    "run": served.number,
                    "label": served.label,
                    "file": str(served.path),
                    "threadId": (recorded or first).get("threadId"),
                    "runId": (recorded or first).get("runId"),
                    "input": None if recorded is None else _summary(recorded),
                    "events": len(served.run.events),
                }
            )
        return {"runs": runs}

    async def _preflight(self, scope: dict[str, Any], send: Any) -> None:
        headers = [*_CORS_HEADERS, (b"access-control-max-age", b"600")]
        asked = dict(scope.get("headers") or [])
        if asked.get(b"access-control-request-private-network", b"").lower() == b"true":
            headers.append(_PRIVATE_NETWORK)
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(
        self,
        send: Any,
        status: int,
        message: str,
        request: str,
        *,
        logged: str | None = None,
        **extra: Any,
    ) -> None:
        self._say(f"{request} → {status} refused: {logged or message}")
        code = extra.pop("code", "INVALID_INPUT" if status == 400 else str(status))
        await self._answer(send, status, {"code": code, "message": message, **extra})

    async def _answer(self, send: Any, status: int, answer: dict[str, Any]) -> None:
        body = json.dumps(answer, ensure_ascii=False)
        headers = [(b"content-type", b"application/json"), *_CORS_HEADERS]
        if status == 405:
            headers.append((b"allow", b"GET, POST, OPTIONS"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})

    async def _no_match(self, send: Any, choice: Choice, request: str) -> None:
        closest = choice.closest
        assert closest is not None
        named = closest.label
        if named == f"run {closest.run.index}":  # one file served: say which
            named = f"{named} of {closest.path}"
        message = (
            f"no recorded run matches this RunAgentInput (its messages and resume, ids "
            f"normalized, are compared with each run's recorded input); the closest is "
            f"{named}, first difference: {choice.difference}. Post the input of a recorded "
            "run (the conversation as recorded), record this conversation, or serve with "
            "--in-order (or --run N) to ignore the input"
        )
        await self._refuse(
            send,
            404,
            message,
            request,
            logged=f"no recorded run matches; the closest is {closest.label}, first "
            f"difference: {choice.difference}",
            code=NO_MATCH_CODE,
            closestRun=closest.label,
            difference=choice.difference,
        )

    async def _stream(
        self,
        recorded: list[WireEvent],
        events: list[WireEvent],
        faults: Faults,
        receive: Any,
        send: Any,
        *,
        header: bool = False,
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

        async def wait(seconds: float) -> None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(gone.wait(), seconds)

        async def write(body: bytes) -> None:
            await send({"type": "http.response.body", "body": body, "more_body": True})

        for fault in faults.past(len(events)):
            flag = fault if header else "--" + fault.replace("=", " ")
            self._say(f"  {flag}: this run has only {len(events)} event(s)")
        faults = faults.within(len(events))
        stop = len(events) if faults.stop is None else faults.stop
        delays = _event_delays(recorded, self.speed, self.max_gap)
        watcher = asyncio.ensure_future(watch())
        sent = 0
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            if faults.delay > 0:  # a slow start: the headers are out, the first event is not
                await wait(faults.delay)
            for i, (delay, event) in enumerate(zip(delays[:stop], events[:stop], strict=True)):
                if i in (faults.drop, faults.garble):
                    await wait(GRACE)  # the events before a fault reach the page first
                if delay > 0:
                    await wait(delay)
                else:
                    # Let the loop see a closed connection before the next write: writes to a
                    # reset socket would each be refused (and logged) until it does.
                    await asyncio.sleep(0)
                if gone.is_set():
                    break
                body = garbled(event) if i == faults.garble else encode_sse(event)
                if i != faults.drop:
                    await write(body)
                if i == faults.duplicate:
                    await wait(GRACE)
                    if gone.is_set():
                        break
                    await write(body)
                sent = i + 1
            if not gone.is_set():
                await self._end(faults, sent, len(events), write, header)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            gone.set()  # the client went away mid-write
        finally:
            watcher.cancel()
        if gone.is_set():  # a normal end of a run for a client: one line, no traceback
            self._say(f"  client disconnected after {sent} of {len(events)} event(s)")

    async def _end(self, faults: Faults, sent: int, count: int, write: Any, header: bool) -> None:
        """The end of a faulty stream: the connection cut, or a RUN_ERROR (then the caller
        ends the response)."""
        if faults.cut_after is not None:
            # The events before the cut reach the page before the error does (the module
            # docstring of _serve_faults says why).
            await asyncio.sleep(GRACE)
            why = f"{FAULT_HEADER}: cut-after={sent}" if header else "--cut-after"
            self._say(f"  connection cut after {sent} of {count} event(s) ({why})")
            raise _ConnectionCut(why)
        if faults.error_after is not None:
            asked = f"error-after={sent} ({FAULT_HEADER})" if header else f"--error-after {sent}"
            error = {
                "type": "RUN_ERROR",
                "message": f"agui-replay serve {asked}: an injected fault after {sent} of "
                f"{count} recorded event(s)",
                "code": FAULT_CODE,
            }
            await write(encode_sse(error))
            why = FAULT_HEADER if header else "--error-after"
            self._say(f"  RUN_ERROR sent after {sent} of {count} event(s) ({why})")


def _as_posted(
    events: Sequence[WireEvent], posted: dict[str, Any], recorded: dict[str, Any]
) -> list[WireEvent]:
    """The recorded events as an answer to ``posted``: its ``threadId`` and ``runId`` in place
    of the recorded ones (a front end checks that the stream answers the run it started), and
    each id of a message, tool call or interrupt the front end posted under a name of its own
    (:func:`posted_ids`) called by that name, wherever the events carry it (a MESSAGES_SNAPSHOT,
    a STATE_SNAPSHOT, a tool call's parent): ``HttpAgent`` replaces its history with a
    MESSAGES_SNAPSHOT by id, and would otherwise lose the messages it posted. Ids the recorded
    agent minted are left as recorded, so they stay the same from one turn to the next."""
    first = events[0] if events else {}
    names: dict[str, dict[Any, Any]] = {}
    for key in ("threadId", "runId"):
        was, wanted = first.get(key), posted.get(key)
        if first.get("type") == "RUN_STARTED" and isinstance(wanted, str) and was != wanted:
            names[key] = {was: wanted}
    ids = posted_ids(posted, recorded)
    if not names and not ids:
        return list(events)
    out = []
    for event in events:
        if ids:
            event = _renamed(event, ids)
        changed = {k: m[event[k]] for k, m in names.items() if k in event and event[k] in m}
        out.append({**event, **changed} if changed else event)
    return out


def _renamed(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every id in ``ids`` (a value of an id key) renamed."""
    if isinstance(value, dict):
        return {
            key: (
                ids.get(item, item)
                if key in _ID_KEYS and isinstance(item, str)
                else _renamed(item, ids)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_renamed(item, ids) for item in value]
    return value


def _header(scope: dict[str, Any], name: str) -> str | None:
    """A request header's value (``None``: not sent)."""
    wanted = name.lower().encode()
    for key, value in scope.get("headers") or []:
        if key.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


def _summary(recorded: dict[str, Any]) -> dict[str, Any]:
    """What ``GET /_agui/runs`` says of a recorded input: its messages and resume entries
    counted, and the last message's role and words."""
    messages = recorded.get("messages")
    messages = messages if isinstance(messages, list) else []
    resume = recorded.get("resume")
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = last.get("content")
    return {
        "messages": len(messages),
        "resume": len(resume) if isinstance(resume, list) else 0,
        "lastRole": last.get("role"),
        "lastContent": content if isinstance(content, str) else None,
    }


def replay_app(
    recording: Recording | Sequence[Recording],
    *,
    run: int | None = None,
    speed: float = 1.0,
    max_gap: float = 5.0,
    delay: float = 0.0,
    cut_after: int | None = None,
    error_after: int | None = None,
    in_order: bool = False,
) -> ReplayApp:
    """The ASGI app ``agui-replay serve`` runs (serve it with any ASGI server); the options
    are those of :class:`ReplayApp`."""
    return ReplayApp(
        recording,
        run=run,
        speed=speed,
        max_gap=max_gap,
        delay=delay,
        cut_after=cut_after,
        error_after=error_after,
        in_order=in_order,
    )


def _load(path: str) -> tuple[list[Recording], Path | None]:
    """The recordings at ``path``: one file, or every cassette (``*.json``) under a folder."""
    folder = Path(path)
    if not folder.is_dir():
        return [load_recording(path)], None
    found = sorted(p for p in folder.rglob("*.json") if p.is_file())
    if not found:
        raise _UsageError(
            f"{path}: a folder with no cassette (*.json) in it; give a cassette, an SSE "
            "capture or JSON lines file, or a folder of cassettes"
        )
    return [load_recording(p) for p in found], folder


def _check_options(args: argparse.Namespace) -> None:
    if not (math.isfinite(args.speed) and args.speed >= 0):
        raise _UsageError("--speed must be a number >= 0 (0 streams every event at once)")
    if not (math.isfinite(args.delay) and args.delay >= 0):
        raise _UsageError(
            f"--delay {args.delay:g}: give the seconds to wait before the first event, >= 0"
        )
    for flag, value in (("--cut-after", args.cut_after), ("--error-after", args.error_after)):
        if value is not None and value < 0:
            raise _UsageError(
                f"{flag} {value}: give how many events to send first, a whole number >= 0 "
                "(0: fail before the first event)"
            )
    if args.cut_after is not None and args.error_after is not None:
        raise _UsageError(
            "--cut-after and --error-after both end the stream: give one (a cut connection, "
            "or a RUN_ERROR event)"
        )
    if args.run is not None and args.in_order:
        raise _UsageError(
            "--run N serves one run every time; --in-order serves them in turn: give one"
        )


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    _check_options(args)
    recordings, root = _load(args.file)
    total = sum(len(r.runs) for r in recordings)
    if args.run is not None and not -total <= args.run < total:
        where = f"the cassettes under {root}" if root is not None else str(recordings[0].path)
        raise _UsageError(
            f"--run {args.run} is out of range: {where} ha{'ve' if root else 's'} {total} "
            f"run(s), 0–{total - 1}" + (" (numbered across the files in order)" if root else "")
        )
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        raise _UsageError("`serve` needs uvicorn: pip install 'agui-replay[server]'") from None
    app = ReplayApp(
        recordings,
        run=args.run,
        speed=args.speed,
        max_gap=args.max_gap,
        log=None if args.quiet else sys.stderr,
        delay=args.delay,
        cut_after=args.cut_after,
        error_after=args.error_after,
        in_order=args.in_order,
        root=root,
    )
    sock, url = listen(args.host, args.port)
    try:
        server = uvicorn_server(app)
        out.write(f"{url}\n")
        out.flush()
        warning = reach_warning("serve", args.host, url, "replay the recordings and read them")
        if warning is not None:  # said even with --quiet
            sys.stderr.write(warning)
            sys.stderr.flush()
        if not args.quiet:  # --quiet: the URL line only (tools read it)
            sys.stderr.write(_banner(args, recordings, root, total, url))
            sys.stderr.flush()
        run_until_signal(server, sock)
    finally:
        sock.close()
    if not args.quiet:
        sys.stderr.write("stopped\n")
    return EXIT_OK


def _banner(
    args: argparse.Namespace, recordings: list[Recording], root: Path | None, total: int, url: str
) -> str:
    what = (
        f"{root} ({len(recordings)} cassette(s), {total} run(s)"
        if root is not None
        else f"{recordings[0].path} ({total} run(s)"
    )
    notes = ["instant" if args.speed == 0 else f"speed {args.speed:g}"]
    if args.run is not None:
        notes.append(f"always run {args.run}")
    elif args.in_order:
        notes.append("in order")
    if args.delay:
        notes.append(f"--delay {args.delay:g}")
    if args.cut_after is not None:
        notes.append(f"--cut-after {args.cut_after}")
    if args.error_after is not None:
        notes.append(f"--error-after {args.error_after}")
    return f"serving {what}, {', '.join(notes)}) at {url} — POST a RunAgentInput; Ctrl-C stops\n"
