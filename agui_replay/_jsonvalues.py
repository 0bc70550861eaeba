"""JSON values as plain Python data: the checks, plain copies and compact bytes that the patch
and state packages share (private infrastructure; neither package re-exports it).

A JSON value here is ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` (tuples
read as arrays) or ``dict`` with ``str`` keys, nested at most :data:`MAX_DEPTH` containers deep.
:class:`Invalid` names the first place that is not one, innermost token first; callers turn it
into a :class:`~agui_replay.errors.PatchError` with :func:`value_error`.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeAlias

import orjson

from ._limits import MAX_JSON_INT_DIGITS, MAX_PATCH_DEPTH, depth_limited_dumps
from .errors import PatchError

__all__ = [
    "MAX_DEPTH",
    "OPTIONS",
    "SORTED_OPTIONS",
    "Invalid",
    "JSONValue",
    "Operation",
    "dumps",
    "dumps_known",
    "encode",
    "escape",
    "padded_dumps",
    "plain_copy",
    "value_error",
]

JSONValue: TypeAlias = Any
"""A JSON value as plain Python data (kept as ``Any`` so callers' ``dict[str, X]`` fit)."""

Operation: TypeAlias = dict[str, Any]
"""One RFC 6902 operation, e.g. ``{"op": "replace", "path": "/step", "value": 2}``."""

MAX_DEPTH = MAX_PATCH_DEPTH
"""The deepest (128) nesting of arrays/objects accepted (a scalar has depth 0, ``[]`` depth 1).

orjson refuses more than 254 levels and pydantic's JSON parser about 200; an event or a cassette
wraps the state in a few more levels, so 128 leaves room for every envelope while staying far
beyond any real application state.
"""

_INT_LIMIT = 10**MAX_JSON_INT_DIGITS  # the smallest integer with one digit too many
_INT_BITS = _INT_LIMIT.bit_length() - 1  # below this many bits, no integer reaches it
OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
SORTED_OPTIONS = OPTIONS | orjson.OPT_SORT_KEYS


class Invalid(Exception):
    """A value that is not a JSON value; ``tokens`` is filled innermost-first on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tokens: list[str] = []

    def where(self, base: str = "") -> str:
        return base + "".join("/" + escape(t) for t in reversed(self.tokens))


def escape(token: str) -> str:
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def plain_copy(value: Any, budget: int) -> Any:
    """An independent plain-JSON copy of ``value``, at most ``budget`` containers deep.

    Raises :class:`Invalid` for anything that is not JSON. Subclasses of the JSON types
    (``IntEnum``, ``OrderedDict``...) become the plain type, tuples become lists.
    """
    kind = type(value)
    if kind is int and value.bit_length() > _INT_BITS and abs(value) >= _INT_LIMIT:
        raise Invalid(
            f"an integer of more than MAX_JSON_INT_DIGITS={MAX_JSON_INT_DIGITS} digits has no "
            "JSON text Python can write"
        )
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise Invalid(f"{value!r} is not a JSON number (NaN and infinity have no JSON form)")
    if kind is dict or kind is list or kind is tuple:
        if budget <= 0:
            raise Invalid(f"nested deeper than MAX_DEPTH={MAX_DEPTH} arrays/objects")
        if kind is dict:
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise Invalid(
                            f"object key {key!r} is a {type(key).__name__}; JSON keys are strings"
                        )
                    key = str.__str__(key)
                try:
                    out[key] = plain_copy(item, budget - 1)
                except Invalid as exc:
                    exc.tokens.append(key)
                    raise
            return out
        items: list[Any] = []
        for index, item in enumerate(value):
            try:
                items.append(plain_copy(item, budget - 1))
            except Invalid as exc:
                exc.tokens.append(str(index))
                raise
        return items
    # Subclasses of the JSON types are accepted as the plain type they extend.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):  # pragma: no cover - bool cannot be subclassed
        return bool(value)
    if isinstance(value, int):
        return plain_copy(int(value), budget)
    if isinstance(value, float):
        return plain_copy(float(value), budget)
    if isinstance(value, dict):
        return plain_copy(dict(value), budget)
    if isinstance(value, (list, tuple)):
        return plain_copy(list(value), budget)
    raise Invalid(
        f"a {type(value).__name__} is not a JSON value; convert it first "
        "(pydantic models and dataclasses: agui_replay.state.encode_state)"
    )


# orjson.dumps refusing values nested deeper than MAX_DEPTH (raises TypeError like orjson).
padded_dumps = depth_limited_dumps(MAX_DEPTH)


def dumps(value: Any, sort: bool) -> bytes:
    """Compact JSON bytes; enforces MAX_DEPTH, string keys and JSON types (raises Invalid).

    NaN/infinity are *not* caught here (orjson writes them as null): callers that need that
    check it separately, see :func:`_check_finite`.
    """
    try:
        return padded_dumps(value, SORTED_OPTIONS if sort else OPTIONS)
    except TypeError as exc:
        return _slow_dumps(value, sort, exc)


def dumps_known(value: Any) -> bytes:
    """:func:`dumps` (key order kept) of a value already known to be JSON within MAX_DEPTH (a
    baseline, operations with copied values): no padding needed."""
    try:
        return orjson.dumps(value, option=OPTIONS)
    except TypeError:  # integers beyond 64 bits
        return dumps(value, sort=False)


def encode(value: Any) -> tuple[bytes, bool]:
    """:func:`dumps` (key order kept), and whether ``orjson.loads`` reads the bytes back as
    the same value (not when integers beyond 64 bits went through the standard library)."""
    try:
        encoded = padded_dumps(value, OPTIONS)
    except TypeError as exc:
        encoded = _slow_dumps(value, False, exc)
        return encoded, "64-bit" not in str(exc)
    return encoded, True


def _slow_dumps(value: Any, sort: bool, exc: TypeError) -> bytes:
    # Find the exact place and reason with the walker; it also converts what orjson cannot do
    # (integers beyond 64 bits are valid JSON, so they go through the standard library).
    plain = plain_copy(value, MAX_DEPTH)
    if "64-bit" not in str(exc):
        try:
            return orjson.dumps(plain, option=SORTED_OPTIONS if sort else OPTIONS)
        except TypeError:
            pass
    text = json.dumps(
        plain, separators=(",", ":"), ensure_ascii=False, sort_keys=sort, allow_nan=False
    )
    return text.encode()


def value_error(exc: Invalid, what: str) -> PatchError:
    place = exc.where()
    at = f" at {place!r}" if place else ""
    return PatchError(f"{what} is not valid JSON{at}: {exc.reason}", path=place or None)
