"""Secrets kept out of a binary AWS event stream (Bedrock's ConverseStream), frame by frame.

Each frame's JSON payload is scrubbed; text streamed over several ``contentBlockDelta`` frames
is scrubbed as one text, so a key split across two frames is still found. A frame whose payload
changed gets new CRCs; every other frame keeps its bytes, and the chunks keep their number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agui_replay._eventstream import decode_frames
from agui_replay.scrub._streamed_text import split_scrub

__all__ = ["scrub_eventstream"]

# --- scrubbing --------------------------------------------------------------------------------

Regexes = Sequence[re.Pattern[str]]
_ByteEdit = tuple[int, int, bytes]


def _sub(value: str, regexes: Regexes, replacement: str) -> str:
    for regex in regexes:
        value = regex.sub(replacement, value)
    return value


# contentBlockDelta fields that carry a piece of streamed text, per content block
_DELTA_FIELDS: tuple[tuple[str, ...], ...] = (
    ("text",),
    ("toolUse", "input"),
    ("reasoningContent", "text"),
)


def _delta_pieces(obj: Any) -> Iterable[tuple[tuple[object, ...], tuple[str, ...], str]]:
    """(stream key, path in the payload, text) of a contentBlockDelta payload's streamed text."""
    if not isinstance(obj, dict):
        return
    delta, index = obj.get("delta"), obj.get("contentBlockIndex")
    if not isinstance(delta, dict):
        return
    for path in _DELTA_FIELDS:
        node: Any = delta
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str):
            yield (index if isinstance(index, int) else -1, path), ("delta", *path), node


def _walk(obj: Any, path: tuple[str, ...], fixed: Mapping[tuple[str, ...], str], sub: Any) -> Any:
    if isinstance(obj, str):
        return fixed[path] if path in fixed else sub(obj)
    if isinstance(obj, dict):
        return {sub(k): _walk(v, (*path, k), fixed, sub) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v, path, fixed, sub) for v in obj]
    return obj


def _apply_byte_edits(pieces: Sequence[bytes], edits: Sequence[_ByteEdit]) -> list[bytes]:
    """Apply sorted, non-overlapping edits of ``b"".join(pieces)``: the new bytes go in the
    piece where an edit starts, the rest of its range is removed from the pieces it runs into
    (so the pieces keep their count)."""
    out: list[bytes] = []
    pos = k = 0
    for piece in pieces:
        lo, hi = pos, pos + len(piece)
        pos = hi
        buf = bytearray()
        at = lo
        while at < hi:
            while k < len(edits) and edits[k][1] <= at and edits[k][0] < at:
                k += 1
            if k < len(edits) and edits[k][0] < hi:
                start, end, new = edits[k]
                if start >= at:
                    buf += piece[at - lo : start - lo] + new
                # else: the rest of an edit begun in an earlier piece, removed here
                at = min(end, hi)
                if end <= hi:
                    k += 1
                continue
            buf += piece[at - lo :]
            at = hi
        out.append(bytes(buf))
    return out


def scrub_eventstream(pieces: Sequence[bytes], regexes: Regexes, replacement: str) -> list[bytes]:
    """Scrub an event stream body stored as ``pieces`` (network reads); as many pieces come
    back. Bytes after the last whole message (a cut stream, or a body that is not an event
    stream at all) are scrubbed as Latin-1 text: a secret found there is replaced even though
    the replacement may leave those bytes unreadable."""
    if not regexes:
        return list(pieces)
    data = b"".join(pieces)
    frames, stop = decode_frames(data)
    decoded: list[Any] = []
    for _, _, frame in frames:
        try:
            decoded.append(json.loads(frame.payload.decode("utf-8")) if frame.payload else None)
        except (UnicodeDecodeError, ValueError):
            decoded.append(_NOT_JSON)
    # The text streamed per content block, scrubbed as one text.
    streams: dict[tuple[object, ...], list[tuple[int, tuple[str, ...], str]]] = {}
    for n, obj in enumerate(decoded):
        if frames[n][2].event_type == "contentBlockDelta":
            for key, path, text in _delta_pieces(obj):
                streams.setdefault(key, []).append((n, path, text))
    fixed: dict[int, dict[tuple[str, ...], str]] = {}
    for members in streams.values():
        joined = split_scrub([t for _, _, t in members], regexes, replacement)
        for (n, path, _), text in zip(members, joined, strict=True):
            fixed.setdefault(n, {})[path] = text

    def sub(value: str) -> str:
        return _sub(value, regexes, replacement)

    edits: list[_ByteEdit] = []
    for n, (start, end, frame) in enumerate(frames):
        obj = decoded[n]
        if obj is _NOT_JSON:
            text = frame.payload.decode("latin-1")
            new_text = sub(text)
            if new_text != text:
                edits.append((start, end, frame.with_payload(new_text.encode("latin-1"))))
            continue
        if obj is None:
            continue
        new = _walk(obj, (), fixed.get(n, {}), sub)
        if new != obj:
            payload = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
            edits.append((start, end, frame.with_payload(payload)))
    if stop < len(data):
        tail = data[stop:].decode("latin-1")
        new_tail = sub(tail)
        if new_tail != tail:
            edits.append((stop, len(data), new_tail.encode("latin-1", "replace")))
    if not edits:
        return list(pieces)
    return _apply_byte_edits(pieces, edits)


_NOT_JSON: Any = object()
