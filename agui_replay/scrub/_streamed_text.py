"""Scrubbing the text a model streamed, not only the bytes that carried it (see :mod:`.scrub`).

A streamed provider response is stored as chunks (one per network read). When the model echoes
a key, the key is cut into JSON-escaped pieces of several SSE frames
(``data: {"choices":[{"delta":{"content":"sk-pr"}}]}`` then ``..."oj-abc"...``), so the joined
raw bytes never hold it. :func:`scrub_chunks` therefore

1. joins the chunks (one text, so a frame split across reads is whole again) and finds each
   ``data:`` line that is a JSON value;
2. takes from each frame the pieces of the *logical streams* it carries: OpenAI Chat
   Completions (``choices[i].delta`` ``content`` / ``refusal`` / ``reasoning_content`` /
   ``reasoning``, ``tool_calls[j].function.arguments`` per choice and tool call index, legacy
   ``function_call.arguments`` and ``choices[i].text``), the OpenAI Responses API (every
   ``response.*.delta`` event's ``delta``, per event type, item and content / summary index),
   Anthropic Messages (``content_block_delta``'s ``text`` / ``partial_json`` / ``thinking``
   per block ``index``) and Gemini (``candidates[i].content.parts[j].text`` per candidate,
   thoughts apart);
3. scrubs each stream's pieces as one text (:func:`split_scrub`), and every other string of a
   frame (object keys too) on its own;
4. edits the changed JSON strings in place (the rest of the frame keeps its bytes) and maps
   the edits back onto the chunks, which keep their count and order.

Text outside the JSON frames (``event:`` and comment lines, ``[DONE]``, a ``data:`` line that
is not a JSON value by itself, such as a broken frame or one value spread over several
``data:`` lines, a body that is not SSE at all) is scrubbed as plain joined text, as before.
Everything is linear in the length of the stream.
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["apply_edits", "match_spans", "scrub_chunks", "split_scrub"]

Regexes = Sequence[re.Pattern[str]]
Edit = tuple[int, int, str]
"""Replace ``text[start:end]`` with the string (``start == end``: insert it there)."""
Path = tuple[object, ...]

_DATA_LINE = re.compile(r"^data:[ ]?([^\r\n]*)", re.MULTILINE)
# The tokens of JSON text that give its shape: strings and punctuation (scalars are skipped).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]')
# (string, index after the opening quote) -> (decoded value, index after the closing quote)
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_KEY = ("<key>",)  # the last element of the path of an object key's own string token

# Chat Completions delta fields that stream text (reasoning_content: DeepSeek-style servers).
_CHAT_TEXT_FIELDS = ("content", "refusal", "reasoning_content", "reasoning")
_ANTHROPIC_FIELDS = ("text", "partial_json", "thinking")


def match_spans(
    text: str, regexes: Regexes, start: int = 0, end: int | None = None
) -> list[tuple[int, int]]:
    """The non-empty matches of ``regexes`` in ``text[start:end]``, sorted and merged."""
    stop = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    for regex in regexes:
        spans.extend(m.span() for m in regex.finditer(text, start, stop) if m.end() > m.start())
    if len(regexes) > 1:
        spans.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def apply_edits(text: str, pieces: Sequence[str], edits: Sequence[Edit]) -> list[str]:
    """Apply sorted, non-overlapping ``edits`` of ``text`` (``"".join(pieces)``) piece by piece.

    An edit's new string goes in the piece where it starts; the rest of the range it replaces
    is removed from the pieces it runs into. The result has as many pieces as ``pieces``.

    >>> apply_edits("abcdef", ["ab", "cd", "ef"], [(1, 5, "X")])
    ['aX', '', 'f']
    """
    out: list[str] = []
    n, e = len(edits), 0
    skip_to = 0  # the end of the edit in progress: text before it is gone
    hi = 0
    last = len(pieces) - 1
    for k, piece in enumerate(pieces):
        lo, hi = hi, hi + len(piece)
        if e >= n and skip_to <= lo:
            out.append(piece)
            continue
        cursor = max(lo, min(skip_to, hi))
        parts: list[str] = []
        while e < n and (edits[e][0] < hi or (k == last and edits[e][0] <= hi)):
            start, stop, new = edits[e]
            if start > cursor:
                parts.append(text[cursor:start])
            parts.append(new)
            e += 1
            skip_to = stop
            cursor = min(stop, hi)
            if stop > hi:
                break
        if cursor < hi:
            parts.append(text[cursor:hi])
        out.append("".join(parts))
    return out


def split_scrub(pieces: Sequence[str], regexes: Regexes, replacement: str) -> list[str]:
    """Scrub pieces of one text as a whole; the result has as many pieces as the input.

    >>> split_scrub(["a sk", "-123", "4 b"], [re.compile("sk-1234")], "<x>")
    ['a <x>', '', ' b']
    """
    text = "".join(pieces)
    spans = match_spans(text, regexes)
    if not spans:
        return list(pieces)
    return apply_edits(text, pieces, [(lo, hi, replacement) for lo, hi in spans])


def scrub_chunks(pieces: Sequence[str], regexes: Regexes, replacement: str) -> list[str]:
    """The ``data`` of a response's chunks with secrets scrubbed from what the model streamed.

    See the module docstring; the result has as many chunks as ``pieces``, each frame that was
    JSON still is (a changed string is re-encoded in place).

    >>> frame = 'data: {{"choices":[{{"index":0,"delta":{{"content":"{}"}}}}]}}\\n\\n'.format
    >>> chunks = [frame("key sk-ab"), frame("cdefghijklmnopqrstu!")]
    >>> key = re.compile(r"sk-[a-z]{16,}")
    >>> scrub_chunks(chunks, [key], "<x>")  # doctest: +NORMALIZE_WHITESPACE
    ['data: {"choices":[{"index":0,"delta":{"content":"key <x>"}}]}\\n\\n',
     'data: {"choices":[{"index":0,"delta":{"content":"!"}}]}\\n\\n']
    """
    regexes = [r for r in regexes]
    if not regexes or not pieces:
        return list(pieces)
    text = "".join(pieces)
    if "data:" not in text:
        return split_scrub(pieces, regexes, replacement)
    edits: list[Edit] = []
    frames: list[tuple[int, str]] = []  # (where the data starts in text, the data)
    value_spans: dict[int, dict[Path, tuple[int, int]]] = {}  # frame -> path -> token span
    changes: dict[int, dict[tuple[int, int], str]] = {}  # frame -> token span -> new value
    streams: dict[tuple[object, ...], list[tuple[int, Path, str]]] = {}
    plain_from = 0
    for m in _DATA_LINE.finditer(text):
        start, end = m.span(1)
        data = m.group(1)
        if not data.lstrip(" \t").startswith(("{", "[")):
            continue
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):
            continue  # not JSON: scrubbed with the plain text around it
        frame = len(frames)
        toks: list[tuple[Path, int, int, str]] | None = None
        if "\\" in data or any(r.search(data) for r in regexes):
            # a string may hold a secret (or an escape could hide one): decode each string
            toks = _string_tokens(data)
            value_spans[frame] = {path: (lo, hi) for path, lo, hi, _ in toks}
            for _path, lo, hi, value in toks:
                new = _scrub_string(value, regexes, replacement)
                if new != value:
                    changes.setdefault(frame, {})[(lo, hi)] = new
        frames.append((start, data))
        for span in match_spans(text, regexes, plain_from, start):
            edits.append((*span, replacement))
        plain_from = end
        for key, path, value in _stream_pieces(obj):
            streams.setdefault(key, []).append((frame, path, value))
    for span in match_spans(text, regexes, plain_from):
        edits.append((*span, replacement))

    _scrub_streams(streams, frames, value_spans, changes, regexes, replacement)

    for frame, frame_changes in changes.items():
        base, data = frames[frame]
        for (lo, hi), new in frame_changes.items():
            edits.append(_token_edit(data, base, lo, hi, new))
    if not edits:
        return list(pieces)
    edits.sort()
    return apply_edits(text, pieces, edits)


def _scrub_streams(
    streams: dict[tuple[object, ...], list[tuple[int, Path, str]]],
    frames: list[tuple[int, str]],
    value_spans: dict[int, dict[Path, tuple[int, int]]],
    changes: dict[int, dict[tuple[int, int], str]],
    regexes: Regexes,
    replacement: str,
) -> None:
    """Scrub each stream's pieces as one text, noting the changed tokens in ``changes``."""
    for entries in streams.values():
        scrubbed = split_scrub([value for _, _, value in entries], regexes, replacement)
        for (frame, path, old), new in zip(entries, scrubbed, strict=True):
            frame_changes = changes.get(frame)
            if new == old and frame_changes is None:
                continue
            by_path = value_spans.get(frame)
            found = None if by_path is not None else _only_token(frames[frame][1], old)
            if found is None:
                if by_path is None:
                    toks = _string_tokens(frames[frame][1])
                    by_path = value_spans[frame] = {p: (lo, hi) for p, lo, hi, _ in toks}
                found = by_path.get(path)  # the last token of a path wins, as in json.loads
            if found is None:
                continue
            if new != old:
                changes.setdefault(frame, {})[found] = new
            elif frame_changes is not None:
                # the stream as a whole decides about its pieces (a lone piece may look like
                # a key that, joined with the piece before, is not one)
                frame_changes.pop(found, None)


def _scrub_string(value: str, regexes: Regexes, replacement: str) -> str:
    for regex in regexes:
        value = regex.sub(replacement, value)
    return value


def _only_token(data: str, value: str) -> tuple[int, int] | None:
    """Where the string token of ``value`` is in ``data``, a frame without a backslash, when
    ``value`` appears there once: without escapes a string has one encoding only."""
    token = f'"{value}"'
    at = data.find(token)
    if at < 0 or data.find(token, at + 1) >= 0:
        return None
    return (at, at + len(token))


def _token_edit(data: str, base: int, lo: int, hi: int, value: str) -> Edit:
    """The smallest edit that turns the string token ``data[lo:hi]`` into one for ``value``."""
    old = data[lo:hi]
    new = json.dumps(value, ensure_ascii=old.isascii())  # an ASCII-only encoder stays so
    p = 0
    limit = min(len(old), len(new))
    while p < limit and old[p] == new[p]:
        p += 1
    s = 0
    while s < limit - p and old[-1 - s] == new[-1 - s]:
        s += 1
    return (base + lo + p, base + hi - s, new[p : len(new) - s])


def _hashable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float)):
        return value
    return repr(value)


def _stream_pieces(obj: object) -> Iterator[tuple[tuple[object, ...], Path, str]]:
    """The streamed-text pieces of one frame: (stream key, path of the string, the piece)."""
    if not isinstance(obj, dict):
        return
    kind = obj.get("type")
    if kind == "content_block_delta":  # Anthropic Messages
        delta = obj.get("delta")
        if isinstance(delta, dict):
            index = _hashable(obj.get("index"))
            for name in _ANTHROPIC_FIELDS:
                value = delta.get(name)
                if isinstance(value, str):
                    yield ("anthropic", index, name), ("delta", name), value
        return
    if isinstance(kind, str) and kind.startswith("response.") and kind.endswith(".delta"):
        value = obj.get("delta")  # OpenAI Responses: output_text, function_call_arguments...
        if isinstance(value, str):
            where = tuple(
                _hashable(obj.get(k))
                for k in ("item_id", "output_index", "content_index", "summary_index")
            )
            yield ("responses", kind, *where), ("delta",), value
        return
    choices = obj.get("choices")
    if isinstance(choices, list):
        yield from _chat_pieces(choices)
    candidates = obj.get("candidates")
    if isinstance(candidates, list):
        yield from _gemini_pieces(candidates)


def _chat_pieces(choices: list[object]) -> Iterator[tuple[tuple[object, ...], Path, str]]:
    for p, choice in enumerate(choices):
        if not isinstance(choice, dict):
            continue
        index = _hashable(choice.get("index", p))
        text = choice.get("text")  # the legacy Completions API
        if isinstance(text, str):
            yield ("chat", index, "text"), ("choices", p, "text"), text
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            continue
        for name in _CHAT_TEXT_FIELDS:
            value = delta.get(name)
            if isinstance(value, str):
                yield ("chat", index, name), ("choices", p, "delta", name), value
        calls = delta.get("tool_calls")
        for q, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            args = function.get("arguments") if isinstance(function, dict) else None
            if isinstance(args, str):
                key = ("chat", index, "tool", _hashable(call.get("index", q)))
                yield key, ("choices", p, "delta", "tool_calls", q, "function", "arguments"), args
        legacy = delta.get("function_call")
        args = legacy.get("arguments") if isinstance(legacy, dict) else None
        if isinstance(args, str):
            path = ("choices", p, "delta", "function_call", "arguments")
            yield ("chat", index, "function_call"), path, args


def _gemini_pieces(candidates: list[object]) -> Iterator[tuple[tuple[object, ...], Path, str]]:
    for p, candidate in enumerate(candidates):
        if not isinstance(candidate, dict):
            continue
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            continue
        index = _hashable(candidate.get("index", p))
        for j, part in enumerate(parts):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                key = ("gemini", index, bool(part.get("thought")))
                yield key, ("candidates", p, "content", "parts", j, "text"), part["text"]


def _string_tokens(data: str) -> list[tuple[Path, int, int, str]]:
    """Every string token of the JSON text ``data`` (which ``json.loads`` accepted): (path,
    start, end, decoded value). An object key's own token has its value's path plus ``_KEY``.
    """
    out: list[tuple[Path, int, int, str]] = []
    # one entry per open container: [is an object, its current key / index, expecting a key]
    stack: list[list[Any]] = []
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c == '"':
            value = _scanstring(data, m.start() + 1)[0]
            top = stack[-1] if stack else None
            if top is not None and top[0] and top[2]:
                top[1], top[2] = value, False
                path: Path = (*(e[1] for e in stack), _KEY)
            else:
                path = tuple(e[1] for e in stack)
            out.append((path, m.start(), m.end(), value))
        elif c == "{":
            stack.append([True, None, True])
        elif c == "[":
            stack.append([False, 0, False])
        elif c == ",":
            top = stack[-1]
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif c != ":":  # } or ]
            stack.pop()
    return out
