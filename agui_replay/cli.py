"""The ``agui-replay`` command: look at, check, compare and serve recorded AG-UI streams.

Every subcommand reads a cassette (``.json``), an SSE capture (``data:`` frames, ``.sse`` /
``.txt``) or JSON lines (``.jsonl``, one event per line)::

    agui-replay show cassettes/test_agent/test_weather.json
    agui-replay verify capture.sse --mode strict --json
    agui-replay diff before.json after.json
    agui-replay state capture.jsonl --at 12
    agui-replay serve cassettes/test_agent/test_weather.json --speed 0
    agui-replay view cassettes/test_agent/test_weather.json -o weather.html
    agui-replay examples                  # replay every example's cassettes, offline

Exit codes: 0 all good, 1 a protocol violation or a difference was found, 2 the command line
or an input file is wrong (the message names the file and line). Event indices (``#N``) count
every event of the file from 0, across runs, exactly as the verifier numbers them; runs count
from 0 as in ``runs[0]`` of a cassette.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, NoReturn, TextIO

import orjson

from . import __version__
from .client import Session
from .errors import AguiReplayError, CassetteError, EventDecodeError, ProtocolViolation
from .events import WireEvent, event_type, parse_event
from .patch import diff as state_diff
from .sse import SSEParser, encode_sse
from .verify import Mode, Verifier

__all__ = [
    "EXIT_DIFFERENT",
    "EXIT_OK",
    "EXIT_USAGE",
    "ExampleTest",
    "ExamplesReport",
    "InputFileError",
    "RecordedRun",
    "Recording",
    "StreamWalk",
    "load_recording",
    "main",
    "replay_app",
    "replay_examples",
    "walk",
]

EXIT_OK = 0
EXIT_DIFFERENT = 1
"""A protocol violation (``verify``) or a difference (``diff``)."""
EXIT_USAGE = 2
"""A wrong command line or an input file that cannot be read."""

Kind = Literal["cassette", "sse", "jsonl", "json"]

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_SSE_EXTENSIONS = {".sse", ".txt", ".log", ".eventstream"}
_JSONL_EXTENSIONS = {".jsonl", ".ndjson"}
_MAX_REQUEST_BYTES = 16 * 1024 * 1024


class InputFileError(AguiReplayError, ValueError):
    """An input file that cannot be read as a cassette, an SSE capture or JSON lines."""

    code = "INPUT"

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(f"{path}{f':{line}' if line is not None else ''}: {message}")
        self.path = path
        self.line = line


# --- reading inputs -------------------------------------------------------------------------


@dataclass
class RecordedRun:
    """One run of a recording: its events and where they sit in the whole stream."""

    index: int
    start: int
    """Global index of the run's first event."""
    events: list[WireEvent]
    input: dict[str, Any] | None = None
    """The ``RunAgentInput`` a cassette recorded (``None`` for a bare stream)."""
    name: str | None = None

    @property
    def end(self) -> int:
        """Global index one past the run's last event."""
        return self.start + len(self.events)


@dataclass
class Recording:
    """A loaded input file: its runs, and the whole stream with the file line of each event."""

    path: Path
    kind: Kind
    runs: list[RecordedRun]
    events: list[WireEvent]
    _lines: list[int | None] = field(default_factory=list, repr=False)
    _line_finder: Callable[[int], int | None] | None = field(default=None, repr=False)

    def line_of(self, index: int) -> int | None:
        """The file line where event ``index`` starts, when it can be told."""
        if 0 <= index < len(self._lines) and self._lines[index] is not None:
            return self._lines[index]
        if self._line_finder is not None and 0 <= index < len(self.events):
            return self._line_finder(index)
        return None

    def known_lines(self) -> list[int | None]:
        """The file line of each event when the reader noted them (SSE, JSON lines), else []."""
        return list(self._lines)

    def run_of(self, index: int) -> RecordedRun:
        """The run holding event ``index``."""
        for run in self.runs:
            if run.start <= index < run.end:
                return run
        return self.runs[-1]

    def where(self, index: int | None) -> str:
        """``path:line`` of an event (``path`` alone when the line is unknown)."""
        line = None if index is None else self.line_of(index)
        return f"{self.path}:{line}" if line is not None else str(self.path)


def _split_runs(events: list[WireEvent]) -> list[RecordedRun]:
    """A bare stream's runs: each RUN_STARTED after the first event opens a new one."""
    runs: list[RecordedRun] = []
    start = 0
    for i, event in enumerate(events):
        if i > start and event.get("type") == "RUN_STARTED":
            runs.append(RecordedRun(len(runs), start, events[start:i]))
            start = i
    runs.append(RecordedRun(len(runs), start, events[start:]))
    return runs


def _validate(events: list[Any], path: str, line_of: Callable[[int], int | None]) -> None:
    for i, event in enumerate(events):
        try:
            parse_event(event)
        except EventDecodeError as exc:
            raise InputFileError(
                f"event #{i} is not a valid AG-UI event: {exc}. "
                "Fix or remove it; each event is a JSON object with a known `type`.",
                path=path,
                line=line_of(i),
            ) from None


def _load_jsonl(text: str, path: str) -> tuple[list[WireEvent], list[int | None]]:
    events: list[WireEvent] = []
    lines: list[int | None] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            raise InputFileError(
                f"not valid JSON ({exc}); a JSON-lines capture holds one event object per line",
                path=path,
                line=number,
            ) from None
        if not isinstance(value, dict):
            raise InputFileError(
                f"expected an event object on this line, found {type(value).__name__}",
                path=path,
                line=number,
            )
        events.append(value)
        lines.append(number)
    return events, lines


def _load_sse(data: bytes, path: str) -> tuple[list[WireEvent], list[int | None]]:
    parser = SSEParser()
    frames = parser.feed(data) + parser.close()
    if parser.errors:
        first = parser.errors[0]
        raise InputFileError(str(first), path=path, line=data.count(b"\n", 0, first.offset) + 1)
    events: list[WireEvent] = []
    lines: list[int | None] = []
    for frame in frames:
        if not frame.data:
            continue  # a keep-alive
        line = data.count(b"\n", 0, frame.offset) + 1
        try:
            value = json.loads(frame.data)
        except ValueError as exc:
            snippet = frame.data if len(frame.data) <= 60 else frame.data[:60] + "…"
            raise InputFileError(
                f"SSE frame data is not JSON ({exc}): {snippet!r}; "
                "an AG-UI frame is `data: <event JSON>` followed by a blank line",
                path=path,
                line=line,
            ) from None
        if not isinstance(value, dict):
            raise InputFileError(
                f"SSE frame data is {type(value).__name__}, not an event object",
                path=path,
                line=line,
            )
        events.append(value)
        lines.append(line)
    return events, lines


def _looks_like_sse(text: str) -> bool:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(":"):
            continue
        return line.startswith(("data:", "event:", "id:", "retry:"))
    return False


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a cassette, an SSE capture or a JSON-lines capture (detected by extension and
    content). Raises :class:`InputFileError` or :class:`CassetteError` naming file and line.
    """
    from .cassette import document_line, event_line, load_cassette

    target = Path(path)
    name = str(target)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        raise InputFileError("no such file", path=name) from None
    except OSError as exc:
        raise InputFileError(f"cannot read it: {exc.strerror or exc}", path=name) from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"not UTF-8 text (bad byte at offset {exc.start})",
            path=name,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None
    suffix = target.suffix.lower()
    head = text.lstrip()[:1]
    kind: Kind
    if suffix in _JSONL_EXTENSIONS:
        kind = "jsonl"
    elif suffix in _SSE_EXTENSIONS and _looks_like_sse(text):
        kind = "sse"
    elif head == "[":
        kind = "json"
    elif head == "{":
        kind = "cassette"
        if suffix != ".json":
            # A file of event objects one per line, or one whole document?
            try:
                doc = orjson.loads(text)
            except orjson.JSONDecodeError:
                kind = "jsonl"
            else:
                kind = "cassette" if isinstance(doc, dict) and "runs" in doc else "jsonl"
    elif _looks_like_sse(text):
        kind = "sse"
    elif not text.strip():
        raise InputFileError("the file is empty", path=name, line=1)
    else:
        raise InputFileError(
            "cannot tell what this is: expected a cassette (JSON object with `runs`), an SSE "
            "capture (`data: {...}` frames) or JSON lines (one event object per line)",
            path=name,
            line=1,
        )

    if kind == "cassette":
        cassette = load_cassette(target)
        runs: list[RecordedRun] = []
        events: list[WireEvent] = []
        for i, crun in enumerate(cassette.runs):
            runs.append(RecordedRun(i, len(events), crun.events, crun.input, crun.name))
            events.extend(crun.events)
        starts = [run.start for run in runs]

        def cassette_line(index: int) -> int | None:
            run = max((r for r, s in enumerate(starts) if s <= index), default=0)
            return event_line(text, run, index - starts[run])

        if not runs:
            runs = [RecordedRun(0, 0, [])]
        return Recording(target, kind, runs, events, _line_finder=cassette_line)

    lines: list[int | None]
    if kind == "jsonl":
        events, lines = _load_jsonl(text, name)
    elif kind == "sse":
        events, lines = _load_sse(data, name)
    else:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            raise InputFileError(f"not valid JSON ({exc})", path=name, line=line) from None
        if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
            raise InputFileError("a JSON array input must hold event objects only", path=name)
        events = doc

        def array_line(index: int) -> int | None:
            return document_line(text, [index])

        _validate(events, name, array_line)
        return Recording(target, kind, _split_runs(events), events, _line_finder=array_line)
    _validate(events, name, lambda i: lines[i] if i < len(lines) else None)
    return Recording(target, kind, _split_runs(events), events, lines)


# --- folding a recording into client state ----------------------------------------------------


@dataclass
class StreamWalk:
    """One step of :func:`walk`: the event just applied and the client session after it."""

    index: int
    event: WireEvent
    run: RecordedRun
    session: Session
    previous_state: Any
    """The client state before this event (the same object as ``session.state`` when the event
    did not change it)."""

    @property
    def state_changed(self) -> bool:
        return self.session.state is not self.previous_state


def _run_session(run: RecordedRun, previous: Session | None) -> Session:
    """The client as it stood when it sent this run's request.

    A cassette recorded the input, so its state and messages are the client's; a bare stream
    carries the previous run's client over.
    """
    state = previous.state if previous is not None else None
    messages: list[Any] = list(previous.messages) if previous is not None else []
    if run.input is not None:
        if run.input.get("state") is not None:
            state = run.input["state"]
        if isinstance(run.input.get("messages"), list):
            messages = run.input["messages"]
    return Session(state=state, messages=messages, verify=False)


def walk(
    recording: Recording, *, runs: Sequence[RecordedRun] | None = None
) -> Iterator[StreamWalk]:
    """Apply a recording's events one by one, as the reference client would (unverified).

    Each run starts from the state and messages its recorded input carried.
    """
    previous: Session | None = None
    for run in runs if runs is not None else recording.runs:
        session = _run_session(run, previous)
        before = session.state
        for offset, event in enumerate(run.events):
            session.apply(event)
            yield StreamWalk(run.start + offset, event, run, session, before)
            before = session.state
        session.finish()
        previous = session


def initial_state(recording: Recording) -> Any:
    """The client state before the first event."""
    first = recording.runs[0] if recording.runs else None
    if first is not None and first.input is not None:
        return first.input.get("state")
    return None


# --- output helpers -----------------------------------------------------------------------------


class _Progress:
    """A one-line counter on stderr for long work: only on a terminal, only after a while."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self.stream) and not os.environ.get("AGUI_REPLAY_NO_PROGRESS")
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def tick(self, done: int) -> None:
        if not self.enabled or done & 0xFF:
            return
        now = time.monotonic()
        if now - self.started < 0.5 or now - self.last < 0.1:
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\r{self.label}: {done}/{self.total} events")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Style:
    """ANSI colours when writing to a terminal (and NO_COLOR is unset), else plain text."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def blue(self, text: str) -> str:
        return self._wrap("34", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def _clip(text: str, width: int | None) -> str:
    text = text.replace("\n", "⏎")
    if width is None or len(text) <= width:
        return text
    return text[: max(1, width - 1)] + "…"


def _quoted(text: str, width: int | None) -> str:
    return _clip(json.dumps(text, ensure_ascii=False), width)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    return "" if content is None else _compact(content)


# --- show -----------------------------------------------------------------------------------------


@dataclass
class _Block:
    """A message, reasoning message or tool call, assembled from its whole stream."""

    kind: str  # text | reasoning | tool
    ident: str
    first: int
    last: int
    name: str = ""
    role: str = ""
    parts: list[str] = field(default_factory=list)


_TEXT_TYPES = {
    "TEXT_MESSAGE_START": ("text", "start"),
    "TEXT_MESSAGE_CONTENT": ("text", "content"),
    "TEXT_MESSAGE_END": ("text", "end"),
    "TEXT_MESSAGE_CHUNK": ("text", "chunk"),
    "REASONING_MESSAGE_START": ("reasoning", "start"),
    "REASONING_MESSAGE_CONTENT": ("reasoning", "content"),
    "REASONING_MESSAGE_END": ("reasoning", "end"),
    "REASONING_MESSAGE_CHUNK": ("reasoning", "chunk"),
    "TOOL_CALL_START": ("tool", "start"),
    "TOOL_CALL_ARGS": ("tool", "content"),
    "TOOL_CALL_END": ("tool", "end"),
    "TOOL_CALL_CHUNK": ("tool", "chunk"),
}


def _assemble(run: RecordedRun) -> tuple[dict[int, _Block], set[int]]:
    """Blocks keyed by the index of their first event, and the indices they swallow."""
    open_blocks: dict[tuple[str, str], _Block] = {}
    last_chunk: dict[str, str] = {}
    first_of: dict[int, _Block] = {}
    swallowed: set[int] = set()
    for offset, event in enumerate(run.events):
        index = run.start + offset
        kind_step = _TEXT_TYPES.get(event_type(event))
        if kind_step is None:
            continue
        kind, step = kind_step
        id_field = "toolCallId" if kind == "tool" else "messageId"
        ident = event.get(id_field)
        if step == "chunk" and not isinstance(ident, str):
            ident = last_chunk.get(kind)
        if not isinstance(ident, str):
            continue
        if step == "chunk":
            last_chunk[kind] = ident
        block = open_blocks.get((kind, ident))
        if block is None or step == "start":
            block = _Block(kind, ident, index, index)
            open_blocks[(kind, ident)] = block
            first_of[index] = block
        else:
            swallowed.add(index)
        block.last = index
        if step in ("start", "chunk"):
            block.name = event.get("toolCallName") or block.name
            block.role = event.get("role") or block.role
        if step in ("content", "chunk") and isinstance(event.get("delta"), str):
            block.parts.append(event["delta"])
        if step == "end":
            del open_blocks[(kind, ident)]
    return first_of, swallowed


def _input_summary(run_input: dict[str, Any], width: int | None) -> list[str]:
    lines = []
    messages = run_input.get("messages") or []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    said = (
        f", last user message {_quoted(_text_of(users[-1].get('content')), width)}" if users else ""
    )
    lines.append(f"input: {len(messages)} message(s){said}")
    tools = [t.get("name", "?") for t in run_input.get("tools") or [] if isinstance(t, dict)]
    if tools:
        lines.append(f"tools: {', '.join(tools)}")
    if run_input.get("state") not in (None, {}):
        lines.append(f"state: {_clip(_compact(run_input.get('state')), width)}")
    for answer in run_input.get("resume") or []:
        if isinstance(answer, dict):
            payload = f" {_compact(answer['payload'])}" if "payload" in answer else ""
            lines.append(f"resume: {answer.get('interruptId')} {answer.get('status')}{payload}")
    return lines


def _describe_ops(ops: list[dict[str, Any]], width: int | None) -> str:
    pieces = []
    for op in ops[:4]:
        value = f" {_compact(op['value'])}" if "value" in op else ""
        pieces.append(f"{op['op']} {op['path'] or '/'}{value}")
    more = f" (+{len(ops) - 4} more)" if len(ops) > 4 else ""
    return _clip("; ".join(pieces), width) + more


def _show(args: argparse.Namespace, out: TextIO) -> int:
    recording = load_recording(args.file)
    runs = _select_runs(recording, args.run)
    color = _Style(_want_color(args, out))
    width: int | None = None if args.full else max(60, _terminal_width(out) - 14)
    kinds = {"cassette": "cassette", "sse": "SSE capture", "jsonl": "JSON lines", "json": "JSON"}
    out.write(
        color.bold(str(recording.path))
        + color.dim(
            f"  {kinds[recording.kind]}, {len(recording.runs)} run(s), "
            f"{len(recording.events)} event(s)"
        )
        + "\n"
    )
    progress = _Progress("show", len(recording.events))
    blocks: dict[int, _Block] = {}
    swallowed: set[int] = set()
    results: dict[str, list[str]] = {}
    seen_errors = 0
    current_run: RecordedRun | None = None
    for step in walk(recording, runs=runs):
        progress.tick(step.index)
        run, i = step.run, step.index
        if run is not current_run:
            current_run = run
            blocks, swallowed = _assemble(run)
            seen_errors = 0
            first = run.events[0] if run.events else {}
            ids = ""
            if first.get("type") == "RUN_STARTED":
                ids = f" · thread {first.get('threadId')} · run {first.get('runId')}"
            name = f" {run.name}" if run.name else ""
            out.write(
                "\n"
                + color.bold(f"── run {run.index}{name}{ids}")
                + color.dim(f" · {len(run.events)} event(s), #{run.start}–#{run.end - 1}")
                + "\n"
            )
            if run.input is not None:
                for line in _input_summary(run.input, width):
                    out.write("   " + color.dim(line) + "\n")
        for line in _show_event(step, blocks, swallowed, results, color, width):
            out.write(f"  {color.dim(f'#{i:<4}')} {line}\n")
        errors = step.session.errors
        for error in errors[seen_errors:]:
            out.write(f"  {color.dim(f'#{i:<4}')} {color.red('! ' + str(error))}\n")
        seen_errors = len(errors)
    progress.close()
    return EXIT_OK


def _show_event(
    step: StreamWalk,
    blocks: dict[int, _Block],
    swallowed: set[int],
    results: dict[str, list[str]],
    c: _Style,
    width: int | None,
) -> list[str]:
    event, i = step.event, step.index
    kind = event_type(event)
    if i in swallowed:
        return []
    block = blocks.get(i)
    span = "" if block is None or block.last == i else c.dim(f" (#{block.first}–#{block.last})")
    if block is not None and block.kind == "text":
        role = block.role or "assistant"
        return [
            f"{c.cyan(role)} {c.dim(block.ident)}{span}: {_quoted(''.join(block.parts), width)}"
        ]
    if block is not None and block.kind == "reasoning":
        return [
            f"{c.magenta('reasoning')} {c.dim(block.ident)}{span}: "
            + _quoted("".join(block.parts), width)
        ]
    if block is not None and block.kind == "tool":
        args = "".join(block.parts)
        return [
            f"{c.yellow('tool call')} {c.bold(block.name or '?')} {c.dim(block.ident)}{span} "
            + _clip(args, width)
        ]
    if kind == "TOOL_CALL_RESULT":
        content = _text_of(event.get("content"))
        return [
            f"{c.yellow('tool result')} {c.dim(str(event.get('toolCallId')))} → "
            + _clip(content, width)
        ]
    if kind in ("STATE_SNAPSHOT", "STATE_DELTA"):
        if not step.state_changed:
            return [f"{c.blue('state')} unchanged ({kind})"]
        new = _clip(_compact(step.session.state), width)
        if step.previous_state is None:
            return [f"{c.blue('state =')} {new}"]
        ops = state_diff(step.previous_state, step.session.state)
        how = "snapshot" if kind == "STATE_SNAPSHOT" else "delta"
        return [
            f"{c.blue('state')} {how}: {_describe_ops(ops, width)}",
            f"      {c.blue('=')} {new}",
        ]
    if kind == "STEP_STARTED":
        return [f"{c.green('step')} {event.get('stepName')} ▸"]
    if kind == "STEP_FINISHED":
        return [f"{c.green('step')} {event.get('stepName')} ◂"]
    if kind == "RUN_STARTED":
        return [c.bold("RUN_STARTED")]
    if kind == "RUN_FINISHED":
        outcome = event.get("outcome") or {}
        kind_of = outcome.get("type", "success") if isinstance(outcome, dict) else "success"
        lines = [
            c.bold("RUN_FINISHED")
            + f" {c.green(kind_of) if kind_of == 'success' else c.yellow(kind_of)}"
        ]
        if "result" in event:
            lines[0] += f" result {_clip(_compact(event['result']), width)}"
        for interrupt in (outcome.get("interrupts") or []) if isinstance(outcome, dict) else []:
            message = f' "{interrupt.get("message")}"' if interrupt.get("message") else ""
            call = f" tool call {interrupt['toolCallId']}" if interrupt.get("toolCallId") else ""
            lines.append(
                f"      {c.yellow('interrupt')} {interrupt.get('id')} ({interrupt.get('reason')})"
                f"{call}{message}"
            )
        return lines
    if kind == "RUN_ERROR":
        code = f" [{event['code']}]" if event.get("code") else ""
        return [c.red(f"RUN_ERROR{code} {event.get('message', '')}")]
    if kind in ("REASONING_START", "REASONING_END"):
        return [c.dim(f"{kind.lower().replace('_', ' ')} {event.get('messageId', '')}")]
    if kind == "MESSAGES_SNAPSHOT":
        return [f"{c.cyan('messages snapshot')} {len(event.get('messages') or [])} message(s)"]
    if kind in ("CUSTOM", "RAW"):
        label = event.get("name") if kind == "CUSTOM" else event.get("source", "")
        payload = event.get("value") if kind == "CUSTOM" else event.get("event")
        return [f"{c.dim(kind.lower())} {label or ''} {_clip(_compact(payload), width)}"]
    if kind in ("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
        return [
            f"{c.dim(kind.lower())} {event.get('activityType', '')} {event.get('messageId', '')}"
        ]
    rest = {k: v for k, v in event.items() if k not in ("type", "timestamp")}
    return [f"{kind} {_clip(_compact(rest), width)}"]


# --- verify ---------------------------------------------------------------------------------------


def _violation_dict(recording: Recording, error: ProtocolViolation) -> dict[str, Any]:
    line = recording.line_of(error.index) if error.index is not None else None
    return {
        "rule": error.rule,
        "event_type": error.event_type,
        "index": error.index,
        "ids": list(error.ids),
        "detail": error.detail,
        "hint": error.hint,
        "message": str(error),
        "line": line,
    }


def verify_recording(
    recording: Recording, mode: Mode, *, limit: int = 20
) -> tuple[list[ProtocolViolation], list[EventDecodeError]]:
    """Every ordering violation of the stream (up to ``limit``), refused events skipped."""
    verifier = Verifier(mode)
    violations: list[ProtocolViolation] = []
    problems: list[EventDecodeError] = []
    progress = _Progress("verify", len(recording.events))
    for i, event in enumerate(recording.events):
        progress.tick(i)
        try:
            verifier.feed(event)
        except ProtocolViolation as error:
            violations.append(error)
        except EventDecodeError as error:
            problems.append(error)
        if len(violations) + len(problems) >= limit:
            break
    else:
        try:
            verifier.finish()
        except ProtocolViolation as error:
            violations.append(error)
    progress.close()
    return violations, problems


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    recording = load_recording(args.file)
    violations, problems = verify_recording(recording, args.mode, limit=args.max_errors)
    ok = not violations and not problems
    if args.json:
        result = {
            "file": str(recording.path),
            "mode": args.mode,
            "ok": ok,
            "events": len(recording.events),
            "runs": len(recording.runs),
            "violations": [_violation_dict(recording, v) for v in violations],
            "invalid_events": [
                {"index": p.index, "line": recording.line_of(p.index or 0), "message": str(p)}
                for p in problems
            ],
        }
        out.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK if ok else EXIT_DIFFERENT
    color = _Style(_want_color(args, out))
    for violation in violations:
        out.write(f"{recording.where(violation.index)}: {color.red(str(violation))}\n")
        if violation.hint:
            out.write(f"  fix: {violation.hint}\n")
    for problem in problems:
        out.write(f"{recording.where(problem.index)}: {color.red(str(problem))}\n")
    if ok:
        out.write(
            color.green("ok")
            + f": {len(recording.events)} event(s) in {len(recording.runs)} run(s) follow the "
            f"AG-UI ordering rules ({args.mode} mode)\n"
        )
        return EXIT_OK
    count = len(violations) + len(problems)
    out.write(f"{count} problem(s) in {recording.path} ({args.mode} mode)\n")
    return EXIT_DIFFERENT


# --- diff -----------------------------------------------------------------------------------------


def _diff(args: argparse.Namespace, out: TextIO) -> int:
    from .assertions import explain_stream_diff
    from .normalize import normalize_events

    left, right = load_recording(args.a), load_recording(args.b)
    a_events, b_events = left.events, right.events
    if not args.raw:
        a_events, b_events = normalize_events(a_events), normalize_events(b_events)
    lines = explain_stream_diff(
        a_events, b_events, context=args.context, left_name=str(args.a), right_name=str(args.b)
    )
    color = _Style(_want_color(args, out))
    how = "raw" if args.raw else "ids and timestamps normalized"
    if not lines:
        out.write(color.green("same") + f": {len(a_events)} event(s) ({how})\n")
        return EXIT_OK
    out.write(color.red(lines[0]) + color.dim(f"  ({how})") + "\n")
    for line in lines[1:]:
        out.write(line + "\n")
    a_state, b_state = _final_state(left), _final_state(right)
    ops = state_diff(a_state, b_state)
    if ops:
        out.write(f"final state differs: {_describe_ops(ops, None)}\n")
    else:
        out.write("final state: same\n")
    return EXIT_DIFFERENT


def _final_state(recording: Recording) -> Any:
    state = initial_state(recording)
    for step in walk(recording):
        state = step.session.state
    return state


# --- state ----------------------------------------------------------------------------------------


def _state(args: argparse.Namespace, out: TextIO) -> int:
    recording = load_recording(args.file)
    total = len(recording.events)
    runs: Sequence[RecordedRun] | None = None
    stop = total - 1
    if args.at is not None:
        at = args.at + total if args.at < 0 else args.at
        if not 0 <= at < total:
            raise _UsageError(
                f"--at {args.at} is out of range: {recording.path} has {total} event(s), "
                f"#0–#{total - 1} (negative counts from the end)"
            )
        stop = at
    elif args.run is not None:
        run = _select_runs(recording, args.run)[0]
        runs = recording.runs[: run.index + 1]
        stop = run.end - 1
    state = initial_state(recording)
    progress = _Progress("state", total)
    for step in walk(recording, runs=runs):
        progress.tick(step.index)
        if step.index > stop:
            break
        state = step.session.state
    progress.close()
    indent = None if args.compact else 2
    out.write(json.dumps(state, indent=indent, ensure_ascii=False) + "\n")
    return EXIT_OK


# --- serve ----------------------------------------------------------------------------------------


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
        if method != "POST":
            await self._refuse(send, 405, "POST a RunAgentInput JSON body to replay a run")
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > _MAX_REQUEST_BYTES:
                await self._refuse(send, 413, "the request body is too large")
                return
            if not message.get("more_body"):
                break
        problem = _check_run_input(bytes(body))
        if problem is not None:
            await self._refuse(send, 400, problem)
            return
        number = self.run if self.run is not None else self.requests % len(self.recording.runs)
        self.requests += 1
        run = self.recording.runs[number]
        self._say(f"POST {scope.get('path', '/')} → run {number} ({len(run.events)} events)")
        await self._stream(run, receive, send)

    async def _refuse(self, send: Any, status: int, message: str) -> None:
        body = json.dumps(
            {"code": "INVALID_INPUT" if status == 400 else str(status), "message": message}
        )
        headers = [(b"content-type", b"application/json"), *_CORS_HEADERS]
        if status == 405:
            headers.append((b"allow", b"POST, OPTIONS"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})

    async def _stream(self, run: RecordedRun, receive: Any, send: Any) -> None:
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
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            for delay, event in zip(
                _event_delays(run.events, self.speed, self.max_gap), run.events, strict=True
            ):
                if delay > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(gone.wait(), delay)
                if gone.is_set():
                    return
                await send(
                    {"type": "http.response.body", "body": encode_sse(event), "more_body": True}
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return  # the client went away mid-write
        finally:
            watcher.cancel()


def _check_run_input(body: bytes) -> str | None:
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    try:
        data = json.loads(body or b"null")
    except ValueError as exc:
        return f"the request body is not JSON: {exc}"
    if not isinstance(data, dict):
        return "the request body must be a RunAgentInput JSON object"
    try:
        RunAgentInput.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"not a valid RunAgentInput: {where}: {first['msg']}"
    return None


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
        sys.stderr.write(
            f"serving {recording.path} ({len(recording.runs)} run(s), {timing}) at {url} "
            "— POST a RunAgentInput; Ctrl-C stops\n"
        )
        sys.stderr.flush()
        _run_until_signal(server, sock)
    finally:
        sock.close()
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


# --- view -----------------------------------------------------------------------------------------


def _view(args: argparse.Namespace, out: TextIO) -> int:
    from .viewer import render_html, view_data

    recording = load_recording(args.file)
    total = len(recording.events)
    if args.at is not None and not (-total <= args.at < total):
        raise _UsageError(f"--at {args.at} is out of range: the file has {total} event(s)")
    selected = None if args.at is None else (args.at + total if args.at < 0 else args.at)
    html = render_html(view_data(recording, selected=selected))
    if args.output == "-":
        out.write(html)
        return EXIT_OK
    target = Path(args.output) if args.output else Path(recording.path.stem + ".html")
    from .cassette import atomic_write_text

    atomic_write_text(target, [html])
    sys.stderr.write(f"wrote {target} ({len(html) // 1024 + 1} KiB); open it in a browser\n")
    return EXIT_OK


# --- command line ---------------------------------------------------------------------------------


# --- examples -----------------------------------------------------------------------------------


@dataclass
class ExampleTest:
    """One test of an ``agui-replay examples`` run, with the cassette it replayed."""

    nodeid: str
    example: str
    """The folder right below the examples path (``.`` for a test file directly in it)."""
    name: str
    """``file.py::test`` below the example folder."""
    outcome: Literal["passed", "failed", "skipped"] = "passed"
    cassette: str | None = None
    runs: int = 0
    events: int = 0
    replayed: bool = False
    failure: str = ""


@dataclass
class ExamplesReport:
    """What :func:`replay_examples` found: every test, pytest's exit code and its output."""

    root: Path
    tests: list[ExampleTest]
    exit_code: int
    output: str
    seconds: float
    unused: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every test passed, at least one ran, and pytest itself had nothing to say."""
        return (
            self.exit_code == 0
            and bool(self.tests)
            and all(t.outcome == "passed" for t in self.tests)
        )

    def examples(self) -> dict[str, list[ExampleTest]]:
        grouped: dict[str, list[ExampleTest]] = {}
        for test in self.tests:
            grouped.setdefault(test.example, []).append(test)
        return dict(sorted(grouped.items()))


class _ExamplesCollector:
    """A pytest plugin, registered for one in-process run: keeps the cassette tests (unless
    ``all_tests``) and notes what each one replayed and how it ended."""

    def __init__(self, root: Path, all_tests: bool, progress: TextIO | None) -> None:
        self.root = root.resolve()
        self.all_tests = all_tests
        self.progress = progress
        self.tests: dict[str, ExampleTest] = {}
        self.total = 0

    def _shown(self, path: Path) -> str:
        resolved = path.resolve()
        with contextlib.suppress(ValueError):
            return resolved.relative_to(Path.cwd()).as_posix()
        return resolved.as_posix()

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if not self.all_tests:
            keep = [i for i in items if "agui" in getattr(i, "fixturenames", ())]
            dropped = [i for i in items if "agui" not in getattr(i, "fixturenames", ())]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = keep
        for item in items:
            path = Path(item.path).resolve()
            try:
                parts = path.relative_to(self.root).parts
            except ValueError:
                parts = (path.name,)
            example = parts[0] if len(parts) > 1 else "."
            test_name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
            self.tests[item.nodeid] = ExampleTest(item.nodeid, example, f"{path.name}::{test_name}")
        self.total = len(items)

    def pytest_runtest_teardown(self, item: Any) -> None:
        # Before the fixtures go: the agui session still holds its runs here.
        from .recording import CassetteSession

        test = self.tests.get(item.nodeid)
        session = getattr(item, "funcargs", {}).get("agui")
        if test is None or not isinstance(session, CassetteSession):
            return
        test.cassette = self._shown(session.path)
        test.runs = len(session.runs)
        test.events = sum(len(run.events) for run in session.runs)
        test.replayed = session.outcome == "replayed"

    def pytest_runtest_logreport(self, report: Any) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:
            return
        if report.failed:
            test.outcome = "failed"
            text = str(report.longreprtext).strip()
            test.failure = f"{test.failure}\n{text}".strip() if test.failure else text
        elif report.skipped and test.outcome == "passed":
            test.outcome = "skipped"
            test.failure = str(report.longreprtext).strip()
        if report.when == "teardown" and self.progress is not None:
            done = sum(1 for t in self.tests.values() if t.outcome != "passed" or t.runs) or 0
            self.progress.write(f"\rreplaying: {min(done, self.total)}/{self.total} tests")
            self.progress.flush()


def replay_examples(
    path: str | os.PathLike[str] = "examples",
    *,
    all_tests: bool = False,
    progress: TextIO | None = None,
) -> ExamplesReport:
    """Run the cassette tests under ``path`` in this process, replay only, and report.

    pytest runs with ``--agui-record-mode=none`` (no network, no key: a missing or changed
    cassette fails), ``--agui-fail-on-unused``, quiet, and without the cache plugin or
    bytecode files, so nothing is written. ``all_tests`` also runs the tests that use no
    cassette.
    """
    import io

    import pytest

    root = Path(path)
    collector = _ExamplesCollector(root, all_tests, progress)
    args = [
        str(root),
        "--agui-record-mode=none",
        "--agui-fail-on-unused",
        "-q",
        "-p",
        "no:cacheprovider",
        "--color=no",
        # This process imported agui_replay (the plugin) before pytest could rewrite its asserts;
        # an ini `filterwarnings = error` would turn that notice into a failure.
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    ]
    buffer = io.StringIO()
    started = time.monotonic()
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = int(pytest.main(args, plugins=[collector]))
    finally:
        sys.dont_write_bytecode = dont_write
        if progress is not None and collector.total:
            progress.write("\r\033[K")
            progress.flush()
    output = buffer.getvalue()
    unused = [
        line.split("unused:", 1)[1].strip()
        for line in output.splitlines()
        if line.lstrip().startswith("unused:")
    ]
    return ExamplesReport(
        root, list(collector.tests.values()), code, output, time.monotonic() - started, unused
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _examples(args: argparse.Namespace, out: TextIO) -> int:
    root = Path(args.path) if args.path else Path.cwd() / "examples"
    if not root.exists():
        raise _UsageError(
            f"{root} does not exist: run this in the repository root, or pass the folder of "
            "the examples (agui-replay examples PATH)"
        )
    style = _Style(_want_color(args, out))
    tty = _isatty(sys.stderr) and not os.environ.get("AGUI_REPLAY_NO_PROGRESS")
    shown_root = os.path.relpath(root) if root.is_absolute() else str(root)
    out.write(f"agui-replay examples: replaying the cassettes under {shown_root} offline\n\n")
    out.flush()
    report = replay_examples(root, all_tests=args.all, progress=sys.stderr if tty else None)
    mark = {
        "passed": style.green("pass"),
        "failed": style.red("FAIL"),
        "skipped": style.yellow("skip"),
    }
    for example, tests in report.examples().items():
        passed = sum(1 for t in tests if t.outcome == "passed")
        verdict = style.green("ok") if passed == len(tests) else style.red("FAILED")
        out.write(
            f"{style.bold(example)}  {passed}/{_plural(len(tests), 'test')} passed  {verdict}\n"
        )
        for test in tests:
            out.write(f"  {mark[test.outcome]}  {test.name}\n")
            if test.cassette is not None:
                detail = f"{_plural(test.runs, 'run')}, {_plural(test.events, 'event')}"
                out.write(style.dim(f"        {test.cassette}  ({detail})") + "\n")
            if test.outcome != "passed" and test.failure:
                lines = test.failure.splitlines()
                shown = lines[: args.max_lines] if args.max_lines else lines
                for line in shown:  # whole lines: a clipped path or diff helps nobody
                    out.write(f"        {line}\n")
                if len(shown) < len(lines):
                    more = len(lines) - len(shown)
                    out.write(style.dim(f"        … {more} more line(s) (--max-lines 0)") + "\n")
        out.write("\n")
    tests = report.tests
    failed = sum(1 for t in tests if t.outcome == "failed")
    skipped = sum(1 for t in tests if t.outcome == "skipped")
    cassettes = [t for t in tests if t.replayed]
    runs = sum(t.runs for t in cassettes)
    events = sum(t.events for t in cassettes)
    for path in report.unused:
        out.write(style.red(f"unused cassette (no test replays it): {path}") + "\n")
    if not tests and report.exit_code in (0, 5):
        out.write(f"no cassette tests under {shown_root}\n")
    elif report.exit_code not in (0, 1) or (report.exit_code == 1 and not failed):
        # Collection or usage errors, or an unused cassette: pytest's own words say which.
        tail = [line for line in report.output.splitlines() if line.strip()][-25:]
        out.write("pytest reported:\n" + "".join(f"  {line}\n" for line in tail))
    skipped_text = f", {skipped} skipped" if skipped else ""
    total = (
        f"total: {_plural(len(tests), 'test')}, {len(tests) - failed - skipped} passed, "
        f"{failed} failed{skipped_text} · {_plural(len(cassettes), 'cassette')} replayed: "
        f"{_plural(runs, 'run')}, {_plural(events, 'event')} · {report.seconds:.1f} s"
    )
    out.write((style.green(total) if report.ok else style.red(total)) + "\n")
    return EXIT_OK if report.ok else EXIT_DIFFERENT


class _UsageError(AguiReplayError):
    code = "USAGE"


def _select_runs(recording: Recording, run: int | None) -> list[RecordedRun]:
    if run is None:
        return recording.runs
    count = len(recording.runs)
    if not -count <= run < count:
        raise _UsageError(
            f"--run {run} is out of range: {recording.path} has {count} run(s), 0–{count - 1}"
        )
    return [recording.runs[run]]


def _want_color(args: argparse.Namespace, out: TextIO) -> bool:
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return _isatty(out)


def _terminal_width(out: TextIO) -> int:
    if _isatty(out):
        try:
            return os.get_terminal_size(out.fileno()).columns
        except (OSError, ValueError):
            pass
    return 120


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


_EPILOG = """\
inputs: a cassette (.json), an SSE capture (.sse/.txt, `data:` frames) or JSON lines
(.jsonl, one event per line). Event numbers #N count from 0 over the whole file.
exit codes: 0 ok, 1 protocol violation or difference found, 2 usage or input error.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and for tests of ``--help``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="agui-replay",
        description="Look at, check, compare and serve recorded AG-UI event streams.",
        epilog=_EPILOG,
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"agui-replay {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name, help=summary, description=description, epilog=_EPILOG, formatter_class=fmt
        )

    def no_color(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--no-color",
            action="store_true",
            help="plain text even on a terminal (NO_COLOR=1 does the same)",
        )

    show = command(
        "show",
        "print a readable timeline",
        "Print a recording as a timeline: runs, messages with their text assembled, tool calls "
        "with arguments and results, reasoning, the state after each change, interrupts and "
        "errors.",
    )
    show.add_argument("file", help="cassette, SSE capture or JSON lines")
    show.add_argument("--run", type=int, metavar="N", help="only run N (from 0)")
    show.add_argument("--full", action="store_true", help="do not shorten long values")
    no_color(show)
    show.set_defaults(handler=_show)

    verify = command(
        "verify",
        "check the AG-UI ordering rules (exit 1 on a violation)",
        "Check a recording against the AG-UI ordering rules. `client` mode accepts what the "
        "reference TypeScript client accepts; `strict` adds the server verifier's rules (tool "
        "results for known, ended calls; no stream ending inside a run).",
    )
    verify.add_argument("file", help="cassette, SSE capture or JSON lines")
    verify.add_argument(
        "--mode",
        choices=["client", "strict"],
        default="client",
        help="which rules to apply (default: client)",
    )
    verify.add_argument("--json", action="store_true", help="print a machine-readable result")
    verify.add_argument(
        "--max-errors",
        type=int,
        default=20,
        metavar="N",
        help="stop after N problems (default: 20)",
    )
    no_color(verify)
    verify.set_defaults(handler=_verify)

    diff = command(
        "diff",
        "compare two recordings event by event (exit 1 when they differ)",
        "Compare two recordings event by event. Ids and timestamps are normalized first (ids "
        "renamed in order of appearance, timestamps dropped) so two runs of one agent compare "
        "equal; --raw compares them as they are.",
    )
    diff.add_argument("a", help="the expected recording")
    diff.add_argument("b", help="the actual recording")
    diff.add_argument("--raw", action="store_true", help="compare without normalizing")
    diff.add_argument(
        "--context",
        type=int,
        default=2,
        metavar="N",
        help="events of context around the first difference (default: 2)",
    )
    no_color(diff)
    diff.set_defaults(handler=_diff)

    state = command(
        "state",
        "print the client state (final, or after event N) as JSON",
        "Print the state a client holds after the whole recording, after event N (--at), or "
        "at the end of run N (--run), as JSON.",
    )
    state.add_argument("file", help="cassette, SSE capture or JSON lines")
    state.add_argument(
        "--at",
        type=int,
        metavar="N",
        help="the state right after event #N (negative counts from the end)",
    )
    state.add_argument("--run", type=int, metavar="N", help="the state at the end of run N")
    state.add_argument("--compact", action="store_true", help="one line of JSON")
    state.set_defaults(handler=_state)

    serve = command(
        "serve",
        "serve a recording as a live AG-UI endpoint on loopback",
        "Serve a recording as an AG-UI endpoint: POST any RunAgentInput and the recorded "
        "events of a run stream back as SSE. The n-th request gets run n (wrapping), unless "
        "--run fixes one. Events with timestamps keep their recorded pacing, scaled by "
        "--speed. Prints the URL on stdout; Ctrl-C or SIGTERM stops it.",
    )
    serve.add_argument("file", help="cassette, SSE capture or JSON lines")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="loopback address to bind: 127.0.0.1 (default), localhost or ::1",
    )
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    serve.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="timing factor: 1 as recorded, 10 ten times faster, 0 instant",
    )
    serve.add_argument(
        "--max-gap",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="cap on any one pause between events (default: 5)",
    )
    serve.add_argument("--run", type=int, metavar="N", help="always serve run N")
    serve.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    serve.set_defaults(handler=_serve)

    view = command(
        "view",
        "write a self-contained HTML viewer",
        "Write one self-contained HTML page (no network): the timeline of events, the "
        "messages as a chat and the state at any event, with the changes highlighted. "
        "Select an event with the mouse or the arrow keys; the URL hash #event=N selects one.",
    )
    view.add_argument("file", help="cassette, SSE capture or JSON lines")
    view.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write (default: <input name>.html here; - for stdout)",
    )
    view.add_argument("--at", type=int, metavar="N", help="preselect event #N")
    view.set_defaults(handler=_view)

    examples = commands.add_parser(
        "examples",
        help="replay every example's cassettes offline and report",
        description="Run the cassette tests under PATH (default: examples/ here) with pytest, "
        "in this process, replay only: no network, no API key, nothing written. Prints per "
        "example folder each test, the cassette it replayed with its runs and events, and a "
        "total. A cassette no test replays fails the run too.",
        epilog="exit codes: 0 every test passed, 1 a test failed (or none ran, or a cassette "
        "is unused), 2 PATH does not exist.",
        formatter_class=fmt,
    )
    examples.add_argument(
        "path", nargs="?", metavar="PATH", help="the examples folder (default: ./examples)"
    )
    examples.add_argument(
        "--all",
        action="store_true",
        help="also run the tests that use no cassette (property tests and the like)",
    )
    examples.add_argument(
        "--max-lines",
        type=int,
        default=30,
        metavar="N",
        help="first lines of each failure shown (default: 30; 0 for all)",
    )
    no_color(examples)
    examples.set_defaults(handler=_examples)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout
    try:
        code: int = args.handler(args, out)
    except (InputFileError, CassetteError, _UsageError) as error:
        if getattr(args, "json", False):
            out.write(json.dumps({"ok": False, "error": str(error)}, ensure_ascii=False) + "\n")
        sys.stderr.write(f"agui-replay {args.command}: error: {error}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # `agui-replay show big.json | head`: the reader left; not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
