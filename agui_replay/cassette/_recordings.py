"""Recorded AG-UI streams as a library: load one, walk it through a client, verify it.

A *recording* is any stored stream: a cassette (``.json``, its runs with their recorded inputs),
an SSE capture (``data:`` frames, ``.sse`` / ``.txt``) or JSON lines (``.jsonl``, one event per
line). :func:`load_recording` reads any of them into a :class:`Recording`: its runs, the whole
stream, and the file line each event came from, so every message can point at ``path:line``.

- :func:`walk` applies the events one by one to a client :class:`~agui_replay.client.Session`,
  run by run, each run starting from the state and messages its recorded input carried;
- :func:`state_at` is the client state right after event N (or at the end);
- :func:`verify_recording` lists the AG-UI ordering violations of the stream.

Event indices count every event of the file from 0, across runs, as the verifier numbers them.
The ``agui-replay`` command and its HTML viewer are built on this module::

    recording = load_recording("cassettes/test_agent/test_weather.json")
    violations, invalid = verify_recording(recording, "client")
    print(recording.where(12), state_at(recording, 12))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agui_replay._limits import JSONLimitError, loads_json
from agui_replay._text import short_repr
from agui_replay.client import Session
from agui_replay.errors import (
    EventDecodeError,
    InputFileError,
    ProtocolViolation,
)
from agui_replay.events import WireEvent, parse_event
from agui_replay.sse import SSEParser
from agui_replay.verify import Mode, Verifier

__all__ = [
    "InputFileError",
    "Kind",
    "RecordedRun",
    "Recording",
    "StreamWalk",
    "initial_state",
    "load_recording",
    "state_at",
    "verify_recording",
    "walk",
]

Kind = Literal["cassette", "sse", "jsonl", "json"]
_SSE_EXTENSIONS = {".sse", ".txt", ".log", ".eventstream"}
_JSONL_EXTENSIONS = {".jsonl", ".ndjson"}


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
    version: int | None = None
    """A cassette's format version once loaded, the current one (older formats are migrated
    as they are read); ``None`` for SSE captures and JSON lines."""

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
    # Lines end at "\n" (or "\r\n") only: str.splitlines() would also cut at U+2028, U+0085
    # and other separators, which JSON strings may hold unescaped.
    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip(" \t\r")
        if not stripped:
            continue
        try:
            value = loads_json(stripped)
        except JSONLimitError as exc:
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
            value = loads_json(frame.data)
        except JSONLimitError as exc:
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
    for raw in text.split("\n"):
        line = raw.strip(" \t\r")
        if not line or line.startswith(":"):
            continue
        return line.startswith(("data:", "event:", "id:", "retry:"))
    return False


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a cassette, an SSE capture or a JSON-lines capture (detected by extension and
    content). Raises :class:`InputFileError` or :class:`CassetteError` naming file and line.
    """
    from agui_replay.cassette._lines import document_line

    if not isinstance(path, (str, os.PathLike)):
        raise InputFileError(
            f"load_recording takes a file path (a str or os.PathLike), not {type(path).__name__}",
            path=short_repr(path),
        )
    target = Path(path)
    name = str(target)
    data, text = _read(target)
    kind = _kind_of(target, text)
    if kind == "cassette":
        return _cassette_recording(target, text)
    lines: list[int | None]
    if kind == "jsonl":
        events, lines = _load_jsonl(text, name)
    elif kind == "sse":
        events, lines = _load_sse(data, name)
    else:
        try:
            doc = loads_json(text)
        except JSONLimitError as exc:
            raise InputFileError(f"not valid JSON ({exc})", path=name, line=exc.lineno) from None
        if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
            raise InputFileError("a JSON array input must hold event objects only", path=name)
        events = doc

        def array_line(index: int) -> int | None:
            return document_line(text, [index])

        _validate(events, name, array_line)
        return Recording(target, kind, _split_runs(events), events, _line_finder=array_line)
    _validate(events, name, lambda i: lines[i] if i < len(lines) else None)
    return Recording(target, kind, _split_runs(events), events, lines)


def _read(target: Path) -> tuple[bytes, str]:
    """The bytes of an input file, and its text (UTF-8, without a byte order mark)."""
    name = str(target)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        raise InputFileError("no such file", path=name) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        why = getattr(exc, "strerror", None) or exc
        raise InputFileError(f"cannot read it: {why}", path=name) from None
    try:
        return data, data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"not UTF-8 text (bad byte at offset {exc.start})",
            path=name,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None


def _kind_of(target: Path, text: str) -> Kind:
    """What an input file holds, told by its extension and its first characters."""
    suffix = target.suffix.lower()
    head = text.lstrip()[:1]
    if suffix in _JSONL_EXTENSIONS:
        return "jsonl"
    if suffix in _SSE_EXTENSIONS and _looks_like_sse(text):
        return "sse"
    if head == "[":
        return "json"
    if head == "{":
        if suffix == ".json":
            return "cassette"
        # A file of event objects one per line, or one whole document?
        try:
            doc = loads_json(text, exact_ints=False)
        except JSONLimitError:
            return "jsonl"
        return "cassette" if isinstance(doc, dict) and "runs" in doc else "jsonl"
    if _looks_like_sse(text):
        return "sse"
    if not text.strip():
        raise InputFileError("the file is empty", path=str(target), line=1)
    raise InputFileError(
        "cannot tell what this is: expected a cassette (JSON object with `runs`), an SSE "
        "capture (`data: {...}` frames) or JSON lines (one event object per line)",
        path=str(target),
        line=1,
    )


def _cassette_recording(target: Path, text: str) -> Recording:
    """A cassette file as a recording: each event's line is found when it is asked for."""
    from agui_replay.cassette._format import event_line, load_cassette

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
    return Recording(
        target, "cassette", runs, events, _line_finder=cassette_line, version=cassette.version
    )


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
        """Whether the event left a different state (a snapshot equal to it changes nothing)."""
        if self.session.state is self.previous_state:
            return False
        return bool(self.session.state != self.previous_state)


def _run_session(run: RecordedRun, previous: Session | None) -> Session:
    """The client as it stood when it sent this run's request.

    A cassette recorded the input, so its state and messages are the client's; a bare stream
    carries the previous run's client over.
    """
    if run.input is None and previous is not None:
        return previous  # a bare stream: the same client goes on (no copy per run)
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


def state_at(
    recording: Recording,
    index: int | None = None,
    *,
    on_step: Callable[[int], None] | None = None,
) -> Any:
    """The client state right after event ``index``, or after the whole recording (``None``).

    ``index`` counts from 0 over the whole recording (negative from the end); out of range
    raises :class:`IndexError`. ``on_step`` is called with each event index walked (for a
    progress counter).
    """
    total = len(recording.events)
    stop = total - 1
    if index is not None:
        if not -total <= index < total:
            raise IndexError(f"event #{index} is out of range: {recording.path} has {total}")
        stop = index + total if index < 0 else index
    state = initial_state(recording)
    for step in walk(recording):
        if on_step is not None:
            on_step(step.index)
        if step.index > stop:
            break
        state = step.session.state
    return state


# --- verifying ------------------------------------------------------------------------------


def verify_recording(
    recording: Recording,
    mode: Mode,
    *,
    limit: int = 20,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[ProtocolViolation], list[EventDecodeError]]:
    """Every ordering violation of the stream (up to ``limit``), refused events skipped.

    ``progress(done, total)`` is called after each event is checked, with the count of events
    checked so far and the number in the recording; nothing is printed.
    """
    verifier = Verifier(mode)
    violations: list[ProtocolViolation] = []
    problems: list[EventDecodeError] = []
    total = len(recording.events)
    for done, event in enumerate(recording.events, 1):
        try:
            verifier.feed(event)
        except ProtocolViolation as error:
            violations.append(error)
        except EventDecodeError as error:
            problems.append(error)
        if progress is not None:
            progress(done, total)
        if len(violations) + len(problems) >= limit:
            break
    else:
        try:
            verifier.finish()
        except ProtocolViolation as error:
            violations.append(error)
    return violations, problems
