"""Server-sent events: the AG-UI HTTP transport.

Two layers. :class:`SSEParser` is a generic incremental ``text/event-stream`` parser (the
WHATWG rules: ``data`` / ``event`` / ``id`` / ``retry`` fields, CR / LF / CRLF, a leading BOM,
comment lines), used for AG-UI streams and for model-provider streams alike.
:class:`SSEDecoder` sits on top and turns each frame's data into an AG-UI wire event dict.

>>> frames = encode_sse({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
>>> frames
b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\\n\\n'
>>> decode_sse(frames[:10] + frames[10:])
[{'type': 'RUN_STARTED', 'threadId': 't', 'runId': 'r'}]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agui_replay._compat import LEGACY_PROTOCOL, WireEventModel, dump
from agui_replay._limits import (
    MAX_SSE_FRAME_BYTES,
    MAX_SSE_RETRY_DIGITS,
    JSONLimitError,
    loads_json,
)
from agui_replay._text import short_repr
from agui_replay.errors import InvalidArgumentError, SSEDecodeError
from agui_replay.events import EventLike, WireEvent, parse_event

__all__ = [
    "SSEDecoder",
    "SSEFrame",
    "SSEParser",
    "decode_sse",
    "encode_sse",
]

_BOM = b"\xef\xbb\xbf"
_LF = 0x0A
_COLON = 0x3A
_SNIPPET = 80
_KEPT_FRAME_BYTES = 4096


def encode_sse(event: EventLike) -> bytes:
    """One SSE frame, ``data: <compact json>\\n\\n``.

    Byte-identical to ``ag_ui.encoder.EventEncoder().encode(model)`` encoded as UTF-8; a wire
    dict is validated through its ``ag_ui.core`` model first (an invalid one raises
    :class:`~agui_replay.errors.EventDecodeError`).
    """
    return b"data: " + _dump_json(event).encode("utf-8") + b"\n\n"


def _dump_json(event: EventLike) -> str:
    """Compact JSON of an event, byte-identical to ``ag_ui.encoder.EventEncoder``'s payload."""
    model = parse_event(event)
    if isinstance(model, WireEventModel):
        return json.dumps(dump(model), ensure_ascii=False, separators=(",", ":"))
    return model.model_dump_json(by_alias=True, exclude_none=LEGACY_PROTOCOL)


@dataclass(slots=True)
class SSEFrame:
    """One dispatched SSE event.

    ``id`` is the last event id seen so far in the stream (the spec's "last event ID buffer"),
    ``retry`` the ``retry:`` value given inside this frame, ``offset`` the byte offset in the
    stream of the frame's first line (a comment line directly before its fields included).
    """

    event: str | None = None
    data: str = ""
    id: str | None = None
    retry: int | None = None
    offset: int = 0


class SSEParser:
    """Incremental SSE parser: feed bytes split anywhere, get :class:`SSEFrame` objects.

    A frame over ``max_frame_bytes`` (counted from its first byte to the end of its last
    line, line endings between its lines included) is skipped and reported in :attr:`errors`
    (or raised, with ``strict=True``); parsing resumes at the next frame.

    >>> p = SSEParser()
    >>> p.feed(b"event: ping\\r\\ndata: a\\r")
    []
    >>> p.feed(b"\\ndata: b\\r\\n\\r\\n")
    [SSEFrame(event='ping', data='a\\nb', id=None, retry=None, offset=0)]
    """

    def __init__(self, max_frame_bytes: int = MAX_SSE_FRAME_BYTES, *, strict: bool = False):
        self.max_frame_bytes = _frame_limit(max_frame_bytes)
        self.strict = strict
        self.errors: list[SSEDecodeError] = []
        self._buf = bytearray()
        self._base = 0  # stream offset of self._buf[0]
        self._scan = 0  # where to resume looking for a line ending in self._buf
        self._skip_lf = False  # the last line ended with CR: a following LF belongs to it
        self._bom_pending = True
        self._data: list[bytes] = []
        self._event: str | None = None
        self._retry: int | None = None
        self._last_id: str | None = None
        self._frame_start: int | None = None
        self._skipping = False
        self._in_dropped_line = False

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        """Parse the next bytes; returns the frames they complete."""
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(
                f"feed takes bytes, not {type(chunk).__name__}"
                + (
                    "; encode the text first: text.encode('utf-8')"
                    if isinstance(chunk, str)
                    else ""
                )
            )
        if not chunk:
            return []
        buf = self._buf
        buf += chunk
        if self._bom_pending:
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                return []
            self._bom_pending = False
            if buf.startswith(_BOM):
                del buf[: len(_BOM)]
                self._base += len(_BOM)
        frames: list[SSEFrame] = []
        before = len(self.errors)
        if self._skip_lf or b"\r" in chunk:
            self._drain(frames)
        else:
            # What is left over from earlier feeds never holds a CR (a CR ends a line), so
            # with none in this chunk the buffer splits on LF alone, at C speed.
            self._drain_lf(frames, b"\n" in chunk)
        self._raise_new(before)
        return frames

    def close(self) -> list[SSEFrame]:
        """End of stream: dispatch a last frame that lacks its blank line."""
        frames: list[SSEFrame] = []
        before = len(self.errors)
        self._bom_pending = False
        self._drain(frames)
        if self._buf:
            line = bytes(self._buf)
            start = self._base
            self._base += len(line)
            self._buf.clear()
            self._scan = 0
            self._line(line, start, self._base, frames)
        if not self._skipping:
            self._dispatch(frames)
        self._reset_frame()
        self._skipping = False
        self._in_dropped_line = False
        self._skip_lf = False
        self._raise_new(before)
        return frames

    def _drain(self, frames: list[SSEFrame]) -> None:
        buf = self._buf
        n = len(buf)
        pos = 0
        scan = self._scan
        while True:
            if self._skip_lf:
                if pos >= n:
                    break
                self._skip_lf = False
                if buf[pos] == _LF:
                    pos += 1
                    scan = max(scan, pos)
            nl = buf.find(b"\n", scan)
            cr = buf.find(b"\r", scan, n if nl < 0 else nl)
            if cr >= 0:
                end = cr
                nxt = cr + 1
                if nxt < n:
                    if buf[nxt] == _LF:
                        nxt += 1
                else:
                    self._skip_lf = True
            elif nl >= 0:
                end = nl
                nxt = nl + 1
            else:
                scan = n
                if pos < n:
                    self._check_partial(pos, n)
                    if self._skipping:
                        pos = scan = n  # an oversized line is dropped as it arrives
                        self._in_dropped_line = True
                break
            line = bytes(buf[pos:end])
            self._line(line, self._base + pos, self._base + end, frames)
            pos = scan = nxt
        if pos:
            del buf[:pos]
            self._base += pos
        self._scan = scan - pos

    def _drain_lf(self, frames: list[SSEFrame], has_lf: bool) -> None:
        buf = self._buf
        if has_lf:
            lines = bytes(buf).split(b"\n")
            partial = lines.pop()
            buf.clear()
            buf += partial
            offset = self._base
            cap = self.max_frame_bytes
            data = self._data
            for line in lines:
                end = offset + len(line)
                if line.startswith(b"data:") and not self._skipping:
                    if self._frame_start is None:
                        self._frame_start = offset
                    if end - self._frame_start > cap:
                        self._too_large(self._frame_start)
                        data = self._data
                    else:
                        data.append(line[6:] if line[5:6] == b" " else line[5:])
                else:
                    self._line(line, offset, end, frames)
                    data = self._data
                offset = end + 1
            self._base = offset
        n = len(buf)
        self._scan = n
        if n:
            self._check_partial(0, n)
            if self._skipping:
                buf.clear()
                self._base += n
                self._scan = 0
                self._in_dropped_line = True

    def _check_partial(self, pos: int, n: int) -> None:
        if self._skipping:
            return
        start = self._frame_start if self._frame_start is not None else self._base + pos
        if self._base + n - start > self.max_frame_bytes:
            self._too_large(start)

    def _too_large(self, start: int) -> None:
        self._reset_frame()
        self._skipping = True
        self._error(
            SSEDecodeError(
                f"frame larger than max_frame_bytes={self.max_frame_bytes}; it was skipped. "
                "If such frames are expected, raise the limit, e.g. "
                f"SSEDecoder(max_frame_bytes={self.max_frame_bytes * 4})",
                offset=start,
            )
        )

    def _error(self, error: SSEDecodeError) -> None:
        self.errors.append(error)

    def _raise_new(self, before: int) -> None:
        # Raised only once the bytes are consumed, so the parser stays consistent.
        if self.strict and len(self.errors) > before:
            raise self.errors[before]

    def _line(self, line: bytes, start: int, end: int, frames: list[SSEFrame]) -> None:
        # `end` is where the line's content ends: a frame's size leaves out the terminator of
        # its last line, so a CRLF split across feeds cannot change whether it fits.
        if self._in_dropped_line:
            # The tail of a line whose head was dropped: not a blank line even if empty here.
            self._in_dropped_line = False
            return
        if not line:
            if self._skipping:
                self._skipping = False
            else:
                self._dispatch(frames)
            self._reset_frame()
            return
        if self._skipping:
            return
        if self._frame_start is None:
            self._frame_start = start
        if end - self._frame_start > self.max_frame_bytes:
            self._too_large(self._frame_start)
            return
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value[:1] == b" " else value)
            return
        if line[0] == _COLON:
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit() and len(value) <= MAX_SSE_RETRY_DIGITS:
            self._retry = int(value)
        # Any other field name is ignored, as the spec says.

    def _dispatch(self, frames: list[SSEFrame]) -> None:
        if not self._data:
            return
        lines = self._data
        data = (lines[0] if len(lines) == 1 else b"\n".join(lines)).decode("utf-8", "replace")
        frames.append(
            SSEFrame(
                event=self._event,
                data=data,
                id=self._last_id,
                retry=self._retry,
                offset=self._frame_start if self._frame_start is not None else self._base,
            )
        )

    def _reset_frame(self) -> None:
        self._data = []
        self._event = None
        self._retry = None
        self._frame_start = None


def _frame_limit(max_frame_bytes: Any) -> int:
    if type(max_frame_bytes) is not int or max_frame_bytes < 1:
        raise InvalidArgumentError(
            f"max_frame_bytes is a positive number of bytes, not {short_repr(max_frame_bytes)}; "
            f"the default is {MAX_SSE_FRAME_BYTES} (16 MiB)"
        )
    return max_frame_bytes


class SSEDecoder:
    """AG-UI events out of an SSE byte stream, fed in arbitrary splits.

    A frame whose data is not a JSON object is recorded in :attr:`errors` (with its byte
    offset) and skipped; decoding goes on. ``strict=True`` raises the first error instead.
    Frames with empty data (keep-alives) are ignored.

    >>> d = SSEDecoder()
    >>> d.feed(b'data: {"type":"RAW","event":1}\\n\\ndata: oops\\n\\n: keep-alive\\n\\n')
    [{'type': 'RAW', 'event': 1}]
    >>> [e.offset for e in d.errors]
    [32]
    """

    def __init__(self, max_frame_bytes: int = MAX_SSE_FRAME_BYTES, *, strict: bool = False):
        self.strict = strict
        self._parser = SSEParser(max_frame_bytes, strict=strict)
        self.errors: list[SSEDecodeError] = self._parser.errors

    @property
    def max_frame_bytes(self) -> int:
        return self._parser.max_frame_bytes

    def feed(self, chunk: bytes) -> list[WireEvent]:
        """Decode the next bytes; returns the events they complete."""
        return self._events(self._parser.feed(chunk))

    def close(self) -> list[WireEvent]:
        """End of stream: decode a final frame that lacks its blank line."""
        return self._events(self._parser.close())

    def _events(self, frames: list[SSEFrame]) -> list[WireEvent]:
        events: list[WireEvent] = []
        for frame in frames:
            data = frame.data
            if not data:
                continue
            try:
                value = loads_json(data)
            except JSONLimitError as exc:
                self._bad(frame, f"data is not valid JSON ({exc})")
                continue
            if type(value) is not dict:
                self._bad(frame, f"data is {type(value).__name__}, not a JSON object")
                continue
            events.append(value)
        return events

    def _bad(self, frame: SSEFrame, why: str) -> None:
        raw = frame.data.encode("utf-8", "replace")
        snippet = frame.data if len(frame.data) <= _SNIPPET else frame.data[:_SNIPPET] + "…"
        error = SSEDecodeError(
            f"{why}; the frame was skipped. Every AG-UI frame is `data: <JSON object>`; "
            f"data was {snippet!r}",
            offset=frame.offset,
            frame=raw[:_KEPT_FRAME_BYTES],
        )
        self.errors.append(error)
        if self.strict:
            raise error


def decode_sse(
    data: bytes, *, strict: bool = True, max_frame_bytes: int = MAX_SSE_FRAME_BYTES
) -> list[WireEvent]:
    """Decode a whole SSE body into wire events (raising on the first bad frame by default)."""
    decoder = SSEDecoder(max_frame_bytes, strict=strict)
    return decoder.feed(data) + decoder.close()
