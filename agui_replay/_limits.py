"""The size and depth limits on what agui_replay reads, and the one JSON reader that applies them.

Private: the public modules re-export what users may name (``patch.MAX_DEPTH``) or take it as
an argument (``max_frame_bytes=``); ``docs/reference/errors.md`` lists every limit and the
error it raises.

Every text that agui_replay parses as JSON (a cassette, an SSE frame, a JSON-lines line, the
text given to ``parse_event``) goes through :func:`loads_json`, so one document is refused the
same way wherever it comes from: nested deeper than :data:`MAX_JSON_DEPTH`, holding an integer
longer than :data:`MAX_JSON_INT_DIGITS`, or using the ``NaN`` / ``Infinity`` tokens (which are
not JSON: Python's ``json`` module reads them, and the value would then be written back as
``null``, silently changed).

It also holds JSON values as plain Python data, for ``patch`` and ``state``: the checks, plain
copies and compact bytes both build on. A JSON value here is ``None``, ``bool``, ``int``, finite
``float``, ``str``, ``list`` (tuples read as arrays) or ``dict`` with ``str`` keys, nested at
most :data:`MAX_DEPTH` containers deep; :class:`Invalid` names the first place that is not one,
innermost token first, and :func:`value_error` turns it into a
:class:`~agui_replay.errors.PatchError`.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable
from typing import Any, TypeAlias

import orjson

from agui_replay.errors import AguiReplayError, PatchError


class JSONLimitError(AguiReplayError, ValueError):
    """Text that is not JSON, or JSON beyond a limit; ``pos`` / ``lineno`` / ``colno`` say where
    (1-based line and column; ``None`` when unknown). ``msg`` is the reason alone.

    Internal, so not in :mod:`agui_replay.errors`: each reader of JSON text catches it and
    raises its own error, naming the file, line, frame or event (``CassetteError``,
    ``InputFileError``, ``SSEDecodeError``, ``EventDecodeError``...).
    """

    def __init__(self, msg: str, text: str | None = None, pos: int | None = None) -> None:
        self.msg = msg
        self.pos = pos
        self.lineno: int | None = None
        self.colno: int | None = None
        where = ""
        if text is not None and pos is not None:
            self.lineno = text.count("\n", 0, pos) + 1
            self.colno = pos - text.rfind("\n", 0, pos)
            where = f": line {self.lineno} column {self.colno} (char {pos})"
        super().__init__(msg + where)


MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays/objects in a JSON document read from text (``[]`` is 1).

A cassette wraps a state in 5 levels (``runs``, the run, ``events``, the event, ``snapshot``),
so a state of :data:`MAX_PATCH_DEPTH` fits with room to spare. The bound keeps every recursive
walk over a value (copies, ``repr``, the command line's printers) far below Python's recursion
limit, whatever the stack depth of the caller.
"""

MAX_PATCH_DEPTH = 128
"""The deepest nesting a JSON Patch document (the state, an activity) may reach
(``agui_replay.patch.MAX_DEPTH``)."""

MAX_JSON_INT_DIGITS = 4300
"""The most digits an integer in JSON text may have: Python's own default limit for converting
between ``int`` and ``str`` (``sys.get_int_max_str_digits``), so every integer read can also be
printed."""

MAX_SSE_FRAME_BYTES = 16 * 1024 * 1024
"""The default largest SSE frame (16 MiB, ``max_frame_bytes=`` in ``sse``); a larger one is
reported and skipped rather than buffered."""

MAX_SSE_RETRY_DIGITS = 10
"""The most digits an SSE ``retry:`` value may have (about 115 days in milliseconds); a longer
one is ignored, like a ``retry:`` that is not a number."""

# How the depth of a document orjson read is checked, by size (each the cheapest there):
# a small text counts its brackets (a document with at most MAX_JSON_DEPTH of them cannot nest
# deeper); a middling one is written back by orjson.dumps inside _DUMPS_PAD wrapper lists (it
# refuses more than 254 levels); a large one is read inside _LOADS_PAD wrapper lists (orjson
# refuses more than 1024 levels), a cost that does not grow with the text.
_COUNT_UP_TO = 4096
_DUMPS_UP_TO = 128 * 1024
_ORJSON_DUMPS_LEVELS = 254  # measured: orjson.dumps of 254 nested lists works, 255 fails
_LOADS_PAD = 1024 - MAX_JSON_DEPTH
_PAD_OPEN_BYTES, _PAD_CLOSE_BYTES = b"[" * _LOADS_PAD, b"]" * _LOADS_PAD
_PAD_OPEN_TEXT, _PAD_CLOSE_TEXT = "[" * _LOADS_PAD, "]" * _LOADS_PAD
# orjson turns integers outside 64 bits into floats; a run of 19+ digits may be such an
# integer, and then the stdlib parser (exact big ints) decides instead. The runs are found
# by turning every digit into "0" and searching for 19 of them: one pass in C over the bytes,
# where the regular expression \d{19} would try a match at every position. Text is encoded
# first, since str.translate on text that is not ASCII is far slower than on bytes.
_ZEROS = b"0" * 19
_TO_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def _long_digits(data: str | bytes) -> bool:
    """Whether ``data`` holds a run of 19 or more ASCII digits."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return _ZEROS in data.translate(_TO_ZEROS)


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
# A \uD800-\uDFFF escape that is not half of a pair (after an even run of backslashes).
_LONE_SURROGATE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<![dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_DIGITS = re.compile(rf"(?<![\d.eE+-])-?\d{{{MAX_JSON_INT_DIGITS + 1},}}")


def depth_limited_dumps(limit: int) -> Callable[..., bytes]:
    """``orjson.dumps`` that also refuses values nested deeper than ``limit`` arrays/objects.

    The value is written inside ``254 - limit`` wrapper lists, so orjson's own bound (254
    levels) is the limit: no walk in Python. ``depth_limited_dumps(128)(value, option)``
    returns the bytes of ``value`` alone and raises what ``orjson.dumps`` raises (a
    ``TypeError``). One prebuilt chain of wrappers is reused under a lock (building it costs
    more than writing a small value); a call that finds it busy builds its own. A closure,
    not a class with ``__call__``: every publish encodes through it, and a method call adds
    a cost that is noticeable next to writing a small value.
    """
    pad = _ORJSON_DUMPS_LEVELS - limit

    def wrappers() -> tuple[list[Any], list[Any]]:
        inner: list[Any] = [None]
        outer = inner
        for _ in range(pad - 1):
            outer = [outer]
        return outer, inner

    shared_outer, shared_inner = wrappers()
    lock = threading.Lock()
    acquire, release, dumps = lock.acquire, lock.release, orjson.dumps

    def padded_dumps(value: Any, option: int | None = None) -> bytes:
        mine = acquire(False)  # else another thread is writing through the shared chain
        outer, inner = (shared_outer, shared_inner) if mine else wrappers()
        inner[0] = value
        try:
            padded = dumps(outer, option=option)
        finally:
            inner[0] = None
            if mine:
                release()
        return padded[pad:-pad]

    return padded_dumps


dumps_within_json_depth = depth_limited_dumps(MAX_JSON_DEPTH)
"""``orjson.dumps`` refusing values nested deeper than :data:`MAX_JSON_DEPTH`."""


def non_finite_at(doc: Any) -> list[str | int] | None:
    """The place (keys and indexes) of the first NaN or infinity in ``doc``, depth first, or
    ``None``: JSON text cannot hold them, but a document built in Python can.

    orjson writes them as ``null``: a document whose JSON has no ``null``, or reads back
    equal to it, holds none, and only others are walked (in Python, which is much slower).
    """
    try:
        encoded = orjson.dumps(doc)
    except TypeError:  # not what orjson writes (integers beyond 64 bits, other types): walk
        pass
    else:
        if b"null" not in encoded or orjson.loads(encoded) == doc:
            return None
    stack: list[tuple[Any, list[str | int]]] = [(doc, [])]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return where
        elif isinstance(value, dict):
            stack.extend((v, [*where, k]) for k, v in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, [*where, i]) for i, v in reversed(list(enumerate(value))))
    return None


def loads_json(data: str | bytes, *, exact_ints: bool = True) -> Any:
    """Parse JSON text within the limits above; raises :class:`JSONLimitError` otherwise.

    ``exact_ints=False`` lets integers beyond 64 bits become floats (orjson's reading) rather
    than scanning the text for runs of 19 digits (a quarter of an ``orjson.loads``); where only
    the shape of a document matters, such as sniffing what kind of file it is.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif not isinstance(data, (str, bytes)):
        raise JSONLimitError(f"JSON text is a str or bytes, not {type(data).__name__}")
    if exact_ints and _long_digits(data):
        return _loads_slow(data)
    size = len(data)
    try:
        if size > _DUMPS_UP_TO:
            return _unpad(
                orjson.loads(
                    _PAD_OPEN_TEXT + data + _PAD_CLOSE_TEXT
                    if isinstance(data, str)
                    else _PAD_OPEN_BYTES + data + _PAD_CLOSE_BYTES
                )
            )
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, ValueError):  # ValueError: two values at a padding level
        return _loads_slow(data)
    if size > _COUNT_UP_TO or _brackets(data) > MAX_JSON_DEPTH:
        try:
            dumps_within_json_depth(value)
        except orjson.JSONEncodeError:
            return _loads_slow(data)  # names the place
    return value


def _brackets(data: str | bytes) -> int:
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _unpad(value: Any) -> Any:
    # Text like `1],[2` closes a wrapper and opens a sibling: then a level holds two items and
    # the unpacking raises ValueError (each level is a list: one of the wrappers).
    for _ in range(_LOADS_PAD):
        (value,) = value
    return value


def _refuse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (a JSON number is finite; write null or a string)", name)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _Refused(f"the number {text[:40]} is too large for a float", text)
    return number


def _int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_JSON_INT_DIGITS:
        raise _Refused(
            f"an integer of {len(text.lstrip('-'))} digits; at most MAX_JSON_INT_DIGITS="
            f"{MAX_JSON_INT_DIGITS} digits are read",
            None,
        )
    return int(text)


class _Refused(Exception):
    def __init__(self, msg: str, token: str | None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.token = token


def _loads_slow(data: str | bytes) -> Any:
    """The standard library's parser, for what orjson refused: the exact error and position,
    integers beyond 64 bits, and the limits checked on the way."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONLimitError(
                f"not UTF-8 text (bad byte at offset {exc.start})",
                data[: exc.start].decode("utf-8"),
                exc.start,
            ) from None
    else:
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise JSONLimitError(
                "a lone UTF-16 surrogate is not a character (the text is not valid Unicode)",
                text,
                exc.start,
            ) from None
    too_deep = _too_deep_at(text)
    if too_deep is not None:
        raise JSONLimitError(
            f"nested deeper than MAX_JSON_DEPTH={MAX_JSON_DEPTH} arrays/objects", text, too_deep
        )
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int
        )
    except json.JSONDecodeError as exc:
        raise JSONLimitError(exc.msg, text, exc.pos) from None
    except _Refused as exc:
        raise JSONLimitError(exc.msg, text, _token_at(text, exc.token)) from None
    except (ValueError, RecursionError) as exc:  # e.g. sys.set_int_max_str_digits set lower
        raise JSONLimitError(f"cannot be read ({exc})") from None
    if "\\u" in text:
        lone = _LONE_SURROGATE.search(text)
        if lone is not None:
            raise JSONLimitError(
                f"the escape {lone.group(1)} is half of a UTF-16 surrogate pair: it is no "
                "character and has no UTF-8 form",
                text,
                lone.start(1),
            )
    return value


def _too_deep_at(text: str) -> int | None:
    """Offset of the first bracket that nests deeper than MAX_JSON_DEPTH (strings skipped)."""
    if _brackets(text) <= MAX_JSON_DEPTH:
        return None
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def _token_at(text: str, token: str | None) -> int | None:
    if token is None:
        match = _DIGITS.search(text)
        return match.start() if match is not None else None
    found = text.find(token)
    return found if found >= 0 else None


def depth_within(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` lists/dicts (iterative: any depth is safe)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def finite_throughout(value: Any) -> bool:
    """Whether ``value`` holds no NaN or infinity (iterative; containers walked)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


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
