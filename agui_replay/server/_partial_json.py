"""An incremental parser for JSON text that arrives in fragments (streamed tool arguments).

:class:`PartialJSON` says, after each fragment, the most that can be said of the value without
guessing; predictive state (:mod:`agui_replay.server._predictive`) publishes it as the client's
state while a tool call's arguments stream in. It depends on nothing but the standard library.

>>> parser = PartialJSON()
>>> parser.feed('{"title": "Carbo')
True
>>> parser.value
{'title': 'Carbo'}
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["PartialJSON"]

_MISSING: Any = object()

_STRING_STOP = re.compile(r'["\\]')
_HEX = frozenset("0123456789abcdefABCDEF")
_SCALAR_START = frozenset("-0123456789tfn")
_WS = frozenset(" \t\r\n")

# What an open container expects next.
_KEY, _COLON, _VALUE, _COMMA, _FIRST = range(5)


class _Frame:
    __slots__ = ("close", "expect", "safe")

    def __init__(self, close: str, safe: int) -> None:
        self.close = close  # "}" or "]"
        self.safe = safe  # end of the last complete member: a valid place to cut
        self.expect = _FIRST


class PartialJSON:
    """Incremental parser for a JSON text that arrives in fragments.

    :attr:`value` is the most that can be said of the text so far without guessing: objects
    and arrays are closed, a string being written shows what it holds so far, and a member whose
    key, number or literal is incomplete is left out. So every value seen is a *prefix* of the
    final one: keys only get added, the last array element or string only grows. Scanning is
    incremental (each character once); a changed value is parsed by ``json.loads`` (C) from the
    prefix plus the closing brackets.

    >>> p = PartialJSON()
    >>> p.feed('{"title": "Classic Pas')
    True
    >>> p.value
    {'title': 'Classic Pas'}
    >>> p.feed('ta", "serves": 1')  # 1 could still become 12: not shown yet
    True
    >>> p.value
    {'title': 'Classic Pasta'}
    >>> p.feed("2}"), p.value, p.complete
    (True, {'title': 'Classic Pasta', 'serves': 12}, True)
    """

    __slots__ = (
        "_cut",
        "_error",
        "_escape_at",
        "_high_end",
        "_in_key",
        "_mode",
        "_root_done",
        "_stack",
        "_text",
        "_token_at",
        "value",
    )

    def __init__(self) -> None:
        self._text = ""
        self._stack: list[_Frame] = []
        self._mode = 0  # 0 between tokens, 1 in a string, 2 in a number or literal
        self._in_key = False
        self._escape_at = -1  # where an unfinished escape starts (-1: none)
        self._high_end = -1  # end of a \uD800-\uDBFF escape (half a surrogate pair)
        self._token_at = -1
        self._root_done = False
        self._error: str | None = None
        self._cut: tuple[int, str] | None = None
        self.value: Any = _MISSING
        """The value parsed so far (``PartialJSON.NOTHING`` before anything can be said)."""

    NOTHING: Any = _MISSING
    """What :attr:`value` is before the text says anything."""

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return self._text

    @property
    def error(self) -> str | None:
        """Why the text stopped being JSON, if it did (the value then stays where it was)."""
        return self._error

    @property
    def complete(self) -> bool:
        """Whether the text holds one whole JSON value."""
        return self._root_done and self._error is None

    def feed(self, fragment: str) -> bool:
        """Add a fragment; ``True`` when :attr:`value` changed."""
        start = len(self._text)
        self._text += fragment
        if self._error is None:
            self._scan(start)
        if self._error is not None:
            return False
        cut = self._cut_point()
        if cut is None or cut == self._cut:
            return False
        self._cut = cut
        position, suffix = cut
        try:
            value = json.loads(self._text[:position] + suffix)
        except ValueError as exc:  # a malformed number or literal the scanner let through
            self._error = f"not JSON: {exc}"
            return False
        if self.value is not _MISSING and type(value) is type(self.value) and value == self.value:
            return False
        self.value = value
        return True

    def final(self) -> Any:
        """The whole text parsed strictly: raises ``ValueError`` unless it is complete JSON."""
        return json.loads(self._text)

    # -- scanning -----------------------------------------------------------------------------

    def _fail(self, at: int, what: str) -> None:
        self._error = f"{what} at character {at}"

    def _value_done(self, end: int) -> None:
        """A value ended at ``end`` (exclusive): its container may be cut after it."""
        if not self._stack:
            self._root_done = True
            return
        frame = self._stack[-1]
        frame.safe = end
        frame.expect = _COMMA

    def _token_done(self, i: int) -> bool:
        """A number or literal ended before ``i``; False when it is no JSON literal."""
        token = self._text[self._token_at : i]
        if token[0].isalpha() and token not in ("true", "false", "null"):
            self._fail(self._token_at, f"unknown literal {token!r}")
            return False
        self._mode = 0
        self._value_done(i)
        return True

    def _scan(self, i: int) -> None:
        text = self._text
        n = len(text)
        stack = self._stack
        while i < n:
            mode = self._mode
            if mode == 1:  # inside a string
                if self._escape_at >= 0:
                    i = self._scan_escape(i)
                    continue
                match = _STRING_STOP.search(text, i)
                if match is None:
                    return
                i = match.start()
                if text[i] == "\\":
                    self._escape_at = i
                    i += 1
                    continue
                self._mode, self._high_end = 0, -1  # the closing quote
                if self._in_key:
                    self._in_key, stack[-1].expect = False, _COLON
                else:
                    self._value_done(i + 1)
                i += 1
                continue
            ch = text[i]
            if mode == 2:  # inside a number or a literal
                if ch.isalnum() or ch in "+-.":
                    i += 1
                    continue
                if not self._token_done(i):
                    return
                continue  # the delimiter is read as usual
            if ch in _WS:
                i += 1
                continue
            if self._root_done:
                self._fail(i, f"unexpected {ch!r} after the end of the value")
                return
            frame = stack[-1] if stack else None
            expect = frame.expect if frame is not None else _VALUE
            if frame is not None and frame.close == "}" and expect in (_FIRST, _KEY):
                if ch == '"':
                    self._mode, self._in_key = 1, True
                elif ch == "}" and expect == _FIRST:
                    stack.pop()
                    self._value_done(i + 1)
                else:
                    self._fail(i, f"expected a key, got {ch!r}")
                    return
            elif expect == _COLON:
                if ch != ":":
                    self._fail(i, f"expected ':', got {ch!r}")
                    return
                assert frame is not None
                frame.expect = _VALUE
            elif expect == _COMMA:
                assert frame is not None
                if ch == ",":
                    frame.expect = _KEY if frame.close == "}" else _VALUE
                elif ch == frame.close:
                    stack.pop()
                    self._value_done(i + 1)
                else:
                    self._fail(i, f"expected ',' or {frame.close!r}, got {ch!r}")
                    return
            else:  # a value (or, first in an array, the closing bracket)
                if ch == '"':
                    self._mode, self._in_key = 1, False
                elif ch in "{[":
                    stack.append(_Frame("}" if ch == "{" else "]", i + 1))
                elif ch in _SCALAR_START:
                    self._mode, self._token_at = 2, i
                elif ch == "]" and frame is not None and expect == _FIRST:
                    stack.pop()
                    self._value_done(i + 1)
                else:
                    self._fail(i, f"expected a value, got {ch!r}")
                    return
            i += 1
        # A number or literal at the very end stays open: it may go on in the next fragment.

    def _scan_escape(self, i: int) -> int:
        text = self._text
        start = self._escape_at
        if i == start + 1:
            if text[i] != "u":
                if text[i] not in '"\\/bfnrt':
                    self._fail(i, f"invalid escape \\{text[i]}")
                    return len(text)
                self._escape_at = -1
                self._high_end = -1
            return i + 1
        # \uXXXX: four hex digits
        if text[i] not in _HEX:
            self._fail(i, "invalid \\u escape")
            return len(text)
        if i == start + 5:
            self._escape_at = -1
            code = int(text[start + 2 : i + 1], 16)
            self._high_end = i + 1 if 0xD800 <= code <= 0xDBFF else -1
        return i + 1

    def _cut_point(self) -> tuple[int, str] | None:
        """Where to cut the text and what to append so that it parses."""
        stack = self._stack
        closers = "".join(frame.close for frame in reversed(stack))
        if self._root_done:
            return len(self._text), ""
        if self._mode == 1 and not self._in_key:
            end = self._escape_at if self._escape_at >= 0 else len(self._text)
            if end == self._high_end:
                end -= 6  # half a surrogate pair is not text yet
            return end, '"' + closers
        if not stack:
            return None  # a number or literal at the top, or nothing yet
        return stack[-1].safe, closers
