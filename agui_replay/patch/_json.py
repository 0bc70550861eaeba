"""JSON values for the patch package: validation, copies, compact bytes and strict equality.

Private to :mod:`agui_replay.patch`; the public names are re-exported there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import orjson

from .._limits import MAX_DEPTH, JSONValue
from .._limits import Invalid as _Invalid
from .._limits import dumps as _dumps
from .._limits import escape as _escape
from .._limits import plain_copy as _copy
from .._limits import value_error as _value_error
from .._text import JSON_TYPE_NAMES, json_type, short_repr

_OPS = ("add", "remove", "replace", "move", "copy", "test")


class _Fail(Exception):
    """An operation that cannot be applied (turned into a PatchError with the op's index)."""


_BAD_ESCAPE = re.compile(r"~(?![01])")


@lru_cache(maxsize=4096)
def _tokens(pointer: str) -> tuple[str, ...]:
    """Split a JSON pointer (RFC 6901) into unescaped reference tokens."""
    if pointer == "":
        return ()
    if pointer[0] != "/":
        raise _Fail(
            f"invalid JSON pointer {pointer!r}: it must be empty (the whole document) "
            "or start with '/', e.g. '/items/0'"
        )
    parts = pointer[1:].split("/")
    if "~" in pointer:
        if _BAD_ESCAPE.search(pointer):
            raise _Fail(
                f"invalid JSON pointer {pointer!r}: '~' must be followed by 0 or 1 "
                "(write '~0' for '~' and '~1' for '/')"
            )
        parts = [p.replace("~1", "/").replace("~0", "~") for p in parts]
    return tuple(parts)


def _pointer(tokens: Sequence[str]) -> str:
    return "".join("/" + _escape(t) for t in tokens)


def _describe(value: Any) -> str:
    text = short_repr(value, 61)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({json_type(value)})"


# --------------------------------------------------------------------------- validation and copies


def _check_finite(value: Any, encoded: bytes, *, thorough: bool = False) -> None:
    """Raise _Invalid if ``value`` holds NaN/infinity (orjson silently writes them as null).

    ``thorough`` also rejects objects orjson converts on its own (UUID, Enum...): any value
    whose JSON does not read back ``==`` to it is walked, which names the offending place.
    """
    # A document whose JSON has no "null" cannot hold NaN, so most checks stop here.
    if thorough or b"null" in encoded:
        try:
            same = orjson.loads(encoded) == value
        except orjson.JSONDecodeError:  # integers beyond 64 bits came from the stdlib path
            same = False
        if not same:
            _copy(value, MAX_DEPTH)  # raises with the exact place, or accepts tuples


def _clone(value: Any) -> Any:
    """An independent copy of a value already known to be plain JSON (fast path via orjson)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:  # integers beyond 64 bits: orjson would turn them into floats
        return _copy(value, MAX_DEPTH)


def _checked_json(value: Any, *, sort: bool, what: str, thorough: bool = False) -> bytes:
    """:func:`_dumps` of ``value`` that raises :class:`PatchError` naming ``what`` on bad JSON."""
    try:
        encoded = _dumps(value, sort=sort)
        _check_finite(value, encoded, thorough=thorough)
    except _Invalid as exc:
        raise _value_error(exc, what) from None
    return encoded


# ----------------------------------------------------------------------------------- public helpers


def compact_json(value: JSONValue) -> bytes:
    """Compact JSON bytes of ``value`` with its key order kept (what a STATE_* event carries).

    >>> compact_json({"b": 1, "a": [1.0, True]})
    b'{"b":1,"a":[1.0,true]}'
    """
    return _checked_json(value, sort=False, what="the value")


def canonical_json(value: JSONValue) -> bytes:
    """Compact JSON bytes with sorted keys: equal bytes if and only if JSON-equal values.

    >>> canonical_json({"b": 1, "a": None}) == canonical_json({"a": None, "b": 1})
    True
    """
    return _checked_json(value, sort=True, what="the value")


def _kind(value: Any) -> str:
    """:func:`json_type`, but ``"?"`` for a value that is not JSON (the comparisons refuse it)."""
    kind = JSON_TYPE_NAMES.get(type(value))
    if kind is not None:
        return kind
    return json_type(value) if isinstance(value, (dict, list, tuple, str, int, float)) else "?"


def _scalar_eq(a: Any, b: Any, kind: str) -> bool:
    if kind == "float":
        if not (math.isfinite(a) and math.isfinite(b)):
            bad = b if math.isfinite(a) else a
            raise _Invalid(f"{bad!r} is not a JSON number (NaN and infinity have no JSON form)")
        # -0.0 and 0.0 serialize differently, so they count as different values.
        return bool(a == b) and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))
    if kind == "?":
        raise _Invalid(f"a {type(a).__name__} is not a JSON value")
    return bool(a == b)


def _strict_eq(a: Any, b: Any) -> bool:
    """JSON-strict equality of values without tuples (the diff's plain copies)."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind == "object" or kind == "array":
        # == rejects most differences at C speed; canonical bytes settle 1 vs 1.0 vs true.
        return bool(a == b) and _dumps(a, sort=True) == _dumps(b, sort=True)
    return _scalar_eq(a, b, kind)


def _json_eq(a: Any, b: Any) -> bool:
    """JSON-strict equality of any values (tuples count as arrays); raises _Invalid."""
    kind, other = _kind(a), _kind(b)
    if kind == "?" or other == "?":
        bad = a if kind == "?" else b
        raise _Invalid(f"a {type(bad).__name__} is not a JSON value")
    if kind != other:
        return False
    if kind == "object" or kind == "array":
        # Not ==: a tuple never equals a list in Python, but both are JSON arrays.
        if len(a) != len(b):
            return False
        left, right = _dumps(a, sort=True), _dumps(b, sort=True)
        if left != right:
            return False
        # Equal bytes, but orjson writes NaN as null: make sure neither side hides one.
        _check_finite(a, left)
        _check_finite(b, right)
        return True
    return _scalar_eq(a, b, kind)


def json_equal(a: JSONValue, b: JSONValue) -> bool:
    """JSON-strict equality: types must match (``1``, ``1.0``, ``True`` all differ), key order not.

    Raises :class:`PatchError` for values that are not JSON (NaN, infinity, other objects).

    >>> json_equal({"a": [1, 2.5]}, {"a": [1, 2.5]}), json_equal({"a": 1}, {"a": 1.0})
    (True, False)
    """
    try:
        return _json_eq(a, b)
    except _Invalid as exc:
        raise _value_error(exc, "a compared value") from None
