"""The AWS event stream framing (``application/vnd.amazon.eventstream``): encode and decode.

Bedrock's ConverseStream (and other AWS streaming APIs) send a body of binary messages. Each one
is::

    total length   (4 bytes, big-endian, the whole message)
    headers length (4 bytes)
    prelude CRC32  (4 bytes, of the 8 bytes before it)
    headers        (name length: 1 byte, name, value type: 1 byte, value)
    payload        (for Bedrock: JSON text)
    message CRC32  (4 bytes, of everything before it)

The headers that matter here are strings (value type 7, a 2-byte length then UTF-8):
``:message-type`` (``event`` or ``exception``), ``:event-type`` / ``:exception-type`` and
``:content-type``. Decoding reads every header type the format defines.

The fake provider encodes Bedrock's answers with it, and ``agui_replay.scrub`` decodes a stored
stream to scrub each message's payload (``scrub_eventstream``) and re-encodes what changed.

>>> frame = encode_event("messageStop", b'{"stopReason":"end_turn"}')
>>> message, end = decode_frame(frame)
>>> (message.event_type, message.payload, end == len(frame))
('messageStop', b'{"stopReason":"end_turn"}', True)
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agui_replay.errors import AguiReplayError

__all__ = [
    "EVENTSTREAM_CONTENT_TYPE",
    "EventStreamError",
    "Frame",
    "decode_frame",
    "decode_frames",
    "encode_event",
    "encode_frame",
]

EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"


class EventStreamError(AguiReplayError, ValueError):
    """Bytes that are not a whole, intact event stream message (short, bad length or CRC).

    Internal, so not in :mod:`agui_replay.errors`: :func:`decode_frames` stops at such bytes
    and returns the offset where decoding stopped, and its callers decide what the rest means.
    """

    code = "PROTOCOL"


_PRELUDE = 12  # total length, headers length, prelude CRC
_MIN_FRAME = _PRELUDE + 4
_MAX_FRAME = 16 * 1024 * 1024  # what the AWS SDKs accept for one message
_STRING = 7
# value type -> fixed size of the value (None: a 2-byte length, then that many bytes)
_SIZES: dict[int, int | None] = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}


@dataclass(frozen=True)
class Frame:
    """One decoded message: its headers (in order), its payload and its bytes as received."""

    headers: dict[str, Any]
    payload: bytes
    raw_headers: bytes

    @property
    def message_type(self) -> str | None:
        value = self.headers.get(":message-type")
        return value if isinstance(value, str) else None

    @property
    def event_type(self) -> str | None:
        value = self.headers.get(":event-type")
        return value if isinstance(value, str) else None

    @property
    def exception_type(self) -> str | None:
        value = self.headers.get(":exception-type")
        return value if isinstance(value, str) else None

    def with_payload(self, payload: bytes) -> bytes:
        """This message's bytes with another payload (same header bytes, new CRCs)."""
        return _assemble(self.raw_headers, payload)


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _assemble(raw_headers: bytes, payload: bytes) -> bytes:
    total = _PRELUDE + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    body = prelude + struct.pack(">I", _crc(prelude)) + raw_headers + payload
    return body + struct.pack(">I", _crc(body))


def _encode_headers(headers: Iterable[tuple[str, str]]) -> bytes:
    out = bytearray()
    for name, value in headers:
        name_b, value_b = name.encode("utf-8"), value.encode("utf-8")
        if len(name_b) > 255 or len(value_b) > 0xFFFF:
            raise EventStreamError(f"event stream header {name!r} is too long")
        out += struct.pack(">B", len(name_b)) + name_b
        out += struct.pack(">BH", _STRING, len(value_b)) + value_b
    return bytes(out)


def encode_frame(headers: Mapping[str, str] | Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """One message with string headers (in the given order) and ``payload``."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return _assemble(_encode_headers(pairs), payload)


def encode_event(
    event_type: str, payload: bytes, *, message_type: str = "event", type_header: str = ""
) -> bytes:
    """A JSON event message as AWS sends it: ``:event-type``, ``:content-type``,
    ``:message-type`` (``message_type="exception"`` makes an ``:exception-type`` message)."""
    kind = type_header or (":exception-type" if message_type == "exception" else ":event-type")
    return encode_frame(
        [
            (kind, event_type),
            (":content-type", "application/json"),
            (":message-type", message_type),
        ],
        payload,
    )


def _decode_headers(data: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    i, end = 0, len(data)
    while i < end:
        size = data[i]
        name = data[i + 1 : i + 1 + size].decode("utf-8", "replace")
        i += 1 + size
        if i >= end:
            raise EventStreamError(f"event stream header {name!r} has no value")
        kind = data[i]
        i += 1
        if kind not in _SIZES:
            raise EventStreamError(f"event stream header {name!r} has unknown value type {kind}")
        fixed = _SIZES[kind]
        if fixed is None:
            if i + 2 > end:
                raise EventStreamError(f"event stream header {name!r} is cut short")
            (length,) = struct.unpack_from(">H", data, i)
            i += 2
            raw = data[i : i + length]
            i += length
            value: Any = raw.decode("utf-8", "replace") if kind == _STRING else raw
        elif kind in (0, 1):
            value = kind == 0
        else:
            raw = data[i : i + fixed]
            i += fixed
            value = raw if kind == 9 else int.from_bytes(raw, "big", signed=True)
        if i > end:
            raise EventStreamError(f"event stream header {name!r} is cut short")
        headers[name] = value
    return headers


def decode_frame(data: bytes, start: int = 0) -> tuple[Frame, int]:
    """The message at ``data[start:]`` and where it ends; :class:`EventStreamError` when the bytes
    there are not a whole message with correct lengths and CRCs."""
    if len(data) - start < _PRELUDE:
        raise EventStreamError("fewer bytes than an event stream prelude (12)")
    total, header_len, prelude_crc = struct.unpack_from(">III", data, start)
    if _crc(data[start : start + 8]) != prelude_crc:
        raise EventStreamError("event stream prelude CRC does not match")
    if total < _MIN_FRAME or total > _MAX_FRAME or header_len > total - _MIN_FRAME:
        raise EventStreamError(
            f"event stream message length {total} (headers {header_len}) is invalid"
        )
    end = start + total
    if end > len(data):
        raise EventStreamError(f"event stream message of {total} bytes is cut short")
    (message_crc,) = struct.unpack_from(">I", data, end - 4)
    if _crc(data[start : end - 4]) != message_crc:
        raise EventStreamError("event stream message CRC does not match")
    raw_headers = bytes(data[start + _PRELUDE : start + _PRELUDE + header_len])
    payload = bytes(data[start + _PRELUDE + header_len : end - 4])
    return Frame(_decode_headers(raw_headers), payload, raw_headers), end


def decode_frames(data: bytes) -> tuple[list[tuple[int, int, Frame]], int]:
    """Every whole message from the start of ``data``: ``(start, end, frame)`` each, and the
    offset where decoding stopped (``len(data)`` when the bytes are all messages)."""
    out: list[tuple[int, int, Frame]] = []
    at = 0
    while at < len(data):
        try:
            frame, end = decode_frame(data, at)
        except EventStreamError:
            break
        out.append((at, end, frame))
        at = end
    return out, at
