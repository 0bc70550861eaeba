"""RFC 6902 JSON Patch: a type-strict ``diff`` and an atomic, copy-on-write ``apply_patch``.

JSON values are the plain Python ones: ``None``, ``bool``, ``int``, ``float`` (finite),
``str``, ``list`` (tuples are read as arrays) and ``dict`` with ``str`` keys. Equality is
JSON-strict: ``1``, ``1.0`` and ``True`` are three different values, nested or not, because
they serialize differently and a client sees the difference.

>>> doc = {"step": 1, "notes": ["a"]}
>>> ops = diff(doc, {"step": 2, "notes": ["a", "b"]})
>>> ops
[{'op': 'replace', 'path': '/step', 'value': 2}, {'op': 'add', 'path': '/notes/1', 'value': 'b'}]
>>> apply_patch(doc, ops)
{'step': 2, 'notes': ['a', 'b']}
>>> doc  # never mutated
{'step': 1, 'notes': ['a']}
>>> json_equal(1, 1.0), json_equal([1], [True])
(False, False)

Documents nested deeper than :data:`MAX_DEPTH` containers are refused with a
:class:`~agui_replay.errors.PatchError`, as are NaN/infinity, non-string keys and objects that
are not JSON values.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import compress, count
from typing import Any, TypeAlias

import orjson

from .errors import PatchError

__all__ = [
    "MAX_DEPTH",
    "JSONValue",
    "Operation",
    "apply_patch",
    "canonical_json",
    "compact_json",
    "diff",
    "json_equal",
]

JSONValue: TypeAlias = Any
"""A JSON value as plain Python data (kept as ``Any`` so callers' ``dict[str, X]`` fit)."""

Operation: TypeAlias = dict[str, Any]
"""One RFC 6902 operation, e.g. ``{"op": "replace", "path": "/step", "value": 2}``."""

MAX_DEPTH = 128
"""The deepest nesting of arrays/objects accepted (a scalar has depth 0, ``[]`` depth 1).

orjson refuses more than 254 levels and pydantic's JSON parser about 200; an event or a cassette
wraps the state in a few more levels, so 128 leaves room for every envelope while staying far
beyond any real application state.
"""

_ORJSON_LIMIT = 254  # measured: orjson.dumps of 254 nested lists works, 255 fails
_PAD = _ORJSON_LIMIT - MAX_DEPTH  # wrapper lists that make orjson enforce MAX_DEPTH for us
_OPTS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_SORTED = _OPTS | orjson.OPT_SORT_KEYS
_OPS = ("add", "remove", "replace", "move", "copy", "test")


class _Invalid(Exception):
    """A value that is not a JSON value; ``tokens`` is filled innermost-first on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tokens: list[str] = []

    def where(self, base: str = "") -> str:
        return base + "".join("/" + _escape(t) for t in reversed(self.tokens))


class _Fail(Exception):
    """An operation that cannot be applied (turned into a PatchError with the op's index)."""


def _escape(token: str) -> str:
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


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
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({_type_name(value)})"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# --------------------------------------------------------------------------- validation and copies


def _copy(value: Any, budget: int) -> Any:
    """An independent plain-JSON copy of ``value``, at most ``budget`` containers deep.

    Raises :class:`_Invalid` for anything that is not JSON. Subclasses of the JSON types
    (``IntEnum``, ``OrderedDict``...) become the plain type, tuples become lists.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise _Invalid(f"{value!r} is not a JSON number (NaN and infinity have no JSON form)")
    if kind is dict or kind is list or kind is tuple:
        if budget <= 0:
            raise _Invalid(f"nested deeper than MAX_DEPTH={MAX_DEPTH} arrays/objects")
        if kind is dict:
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise _Invalid(
                            f"object key {key!r} is a {type(key).__name__}; JSON keys are strings"
                        )
                    key = str.__str__(key)
                try:
                    out[key] = _copy(item, budget - 1)
                except _Invalid as exc:
                    exc.tokens.append(key)
                    raise
            return out
        items: list[Any] = []
        for index, item in enumerate(value):
            try:
                items.append(_copy(item, budget - 1))
            except _Invalid as exc:
                exc.tokens.append(str(index))
                raise
        return items
    # Subclasses of the JSON types are accepted as the plain type they extend.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):  # pragma: no cover - bool cannot be subclassed
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _copy(float(value), budget)
    if isinstance(value, dict):
        return _copy(dict(value), budget)
    if isinstance(value, (list, tuple)):
        return _copy(list(value), budget)
    raise _Invalid(
        f"a {type(value).__name__} is not a JSON value; convert it first "
        "(pydantic models and dataclasses: agui_replay.state.encode_state)"
    )


def _depth_within(value: Any, budget: int) -> bool:
    """Whether ``value`` nests at most ``budget`` containers (stops early; no RecursionError)."""
    if isinstance(value, dict):
        if budget <= 0:
            return False
        return all(_depth_within(v, budget - 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        if budget <= 0:
            return False
        return all(_depth_within(v, budget - 1) for v in value)
    return True


def _pad(value: Any) -> Any:
    for _ in range(_PAD):
        value = [value]
    return value


def _dumps(value: Any, sort: bool) -> bytes:
    """Compact JSON bytes; enforces MAX_DEPTH, string keys and JSON types (raises _Invalid).

    NaN/infinity are *not* caught here (orjson writes them as null): callers that need that
    check it separately, see :func:`_check_finite`.
    """
    try:
        padded = orjson.dumps(_pad(value), option=_SORTED if sort else _OPTS)
    except TypeError as exc:
        return _dumps_slow(value, sort, exc)
    return padded[_PAD:-_PAD]


def _dumps_slow(value: Any, sort: bool, exc: TypeError) -> bytes:
    # Find the exact place and reason with the walker; it also converts what orjson cannot do
    # (integers beyond 64 bits are valid JSON, so they go through the standard library).
    plain = _copy(value, MAX_DEPTH)
    if "64-bit" not in str(exc):
        try:
            return orjson.dumps(plain, option=_SORTED if sort else _OPTS)
        except TypeError:
            pass
    text = json.dumps(
        plain, separators=(",", ":"), ensure_ascii=False, sort_keys=sort, allow_nan=False
    )
    return text.encode()


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


def _clone_checked(value: Any) -> Any:
    """An independent plain-JSON copy of ``value``, validating it completely (raises _Invalid)."""
    try:
        encoded = orjson.dumps(_pad(value), option=_OPTS)[_PAD:-_PAD]
    except TypeError:
        return _copy(value, MAX_DEPTH)
    copy = orjson.loads(encoded)
    # Python == cannot hold for NaN (written as null), tuples or enums orjson converted.
    if copy == value:
        return copy
    return _copy(value, MAX_DEPTH)


def _value_error(exc: _Invalid, what: str) -> PatchError:
    place = exc.where()
    at = f" at {place!r}" if place else ""
    return PatchError(f"{what} is not valid JSON{at}: {exc.reason}", path=place or None)


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
    kind = type(value)
    if kind is dict:
        return "object"
    if kind is list or kind is tuple:
        return "array"
    if kind is str:
        return "string"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "float"
    if value is None:
        return "null"
    return _type_name(value) if isinstance(value, (dict, list, tuple, str, int, float)) else "?"


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


# -------------------------------------------------------------------------------------------- apply


def _index(token: str, length: int, *, for_insert: bool, where: str) -> int:
    if token == "-":
        if for_insert:
            return length
        raise _Fail(f"'-' (past the end of the array at {where!r}) can only be used by add")
    if not (token.isascii() and token.isdigit()) or (len(token) > 1 and token[0] == "0"):
        raise _Fail(
            f"{token!r} is not a valid index into the array at {where!r}: use a non-negative "
            "integer without leading zeros (or '-' to append with add)"
        )
    index = int(token)
    if index > length or (index == length and not for_insert):
        raise _Fail(f"index {index} is out of range for the array at {where!r} (length {length})")
    return index


class _Patcher:
    """Applies operations copy-on-write: containers are copied once, on first write."""

    __slots__ = ("owned", "root")

    def __init__(self, doc: Any) -> None:
        self.root = doc
        # id -> container for copies made during this call; holding them keeps ids unique.
        self.owned: dict[int, Any] = {}

    def _own(self, node: Any) -> Any:
        if id(node) in self.owned:
            return node
        copy: Any = dict(node) if isinstance(node, dict) else list(node)
        self.owned[id(copy)] = copy
        return copy

    def get(self, tokens: Sequence[str]) -> Any:
        node = self.root
        for depth, token in enumerate(tokens):
            node = self._child(node, token, tokens, depth)
        return node

    def _child(self, node: Any, token: str, tokens: Sequence[str], depth: int) -> Any:
        where = _pointer(tokens[:depth])
        if isinstance(node, dict):
            try:
                return node[token]
            except KeyError:
                raise _Fail(
                    f"path not found: the object at {where!r} has no member {token!r}"
                ) from None
        if isinstance(node, (list, tuple)):
            return node[_index(token, len(node), for_insert=False, where=where)]
        raise _Fail(
            f"path not found: {where!r} is a {_type_name(node)}, not an object or array, "
            f"so it has no member {token!r}"
        )

    def parent(self, tokens: Sequence[str]) -> Any:
        """The container that holds the last token, made writable along the way."""
        node = self.root
        if not isinstance(node, (dict, list, tuple)):
            raise _Fail(
                f"path not found: the document is a {_type_name(node)}, not an object or array"
            )
        node = self.root = self._own(node)
        for depth in range(len(tokens) - 1):
            child = self._child(node, tokens[depth], tokens, depth)
            if not isinstance(child, (dict, list, tuple)):
                where = _pointer(tokens[: depth + 1])
                raise _Fail(
                    f"path not found: {where!r} is a {_type_name(child)}, not an object or array"
                )
            if id(child) not in self.owned:
                child = self._own(child)
                if isinstance(node, dict):
                    node[tokens[depth]] = child
                else:
                    node[int(tokens[depth])] = child
            node = child
        return node

    def add(self, tokens: Sequence[str], value: Any) -> None:
        if not tokens:
            self.root = value
            return
        node = self.parent(tokens)
        last = tokens[-1]
        if isinstance(node, dict):
            node[last] = value
        else:
            node.insert(
                _index(last, len(node), for_insert=True, where=_pointer(tokens[:-1])), value
            )

    def remove(self, tokens: Sequence[str]) -> Any:
        if not tokens:
            raise _Fail("cannot remove the whole document (path ''); use replace instead")
        node = self.parent(tokens)
        last = tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise _Fail(
                    f"path not found: the object at {_pointer(tokens[:-1])!r} "
                    f"has no member {last!r}"
                )
            return node.pop(last)
        return node.pop(_index(last, len(node), for_insert=False, where=_pointer(tokens[:-1])))

    def replace(self, tokens: Sequence[str], value: Any) -> None:
        if not tokens:
            self.root = value
            return
        node = self.parent(tokens)
        last = tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise _Fail(
                    f"path not found: the object at {_pointer(tokens[:-1])!r} has no member "
                    f"{last!r} to replace (use add to create it)"
                )
            node[last] = value
        else:
            node[_index(last, len(node), for_insert=False, where=_pointer(tokens[:-1]))] = value

    def apply(self, op: Mapping[str, Any]) -> None:
        name = op.get("op")
        if name not in _OPS:
            if "op" not in op:
                raise _Fail('missing "op" member (one of add, remove, replace, move, copy, test)')
            raise _Fail(
                f"unknown op {name!r}; expected one of add, remove, replace, move, copy, test"
            )
        tokens = _pointer_tokens(op, "path")
        if name == "remove":
            self.remove(tokens)
            return
        if name == "add" or name == "replace" or name == "test":
            if "value" not in op:
                raise _Fail(f'missing "value" member: {name} needs the value to use')
            raw = op["value"]
            if name == "test":
                actual = self.get(tokens)
                if not _json_eq(actual, raw):
                    raise _Fail(
                        f"test failed: the value at {_pointer(tokens)!r} is {_describe(actual)}, "
                        f"not {_describe(raw)}"
                    )
                return
            try:
                value = _copy(raw, MAX_DEPTH - len(tokens))
            except _Invalid as exc:
                raise _Fail(_invalid_value(exc, "value", len(tokens))) from None
            if name == "add":
                self.add(tokens, value)
            else:
                self.replace(tokens, value)
            return
        source = _pointer_tokens(op, "from")
        if name == "copy":
            try:
                value = _copy(self.get(source), MAX_DEPTH - len(tokens))
            except _Invalid as exc:
                raise _Fail(_invalid_value(exc, "copied value", len(tokens))) from None
            self.add(tokens, value)
            return
        # move
        if tokens[: len(source)] == source:
            if len(tokens) == len(source):
                self.get(source)  # moving a value onto itself is a no-op, if it exists
                return
            raise _Fail(f"cannot move {_pointer(source)!r} into its own child {_pointer(tokens)!r}")
        value = self.get(source)
        if len(tokens) > len(source) and not _depth_within(value, MAX_DEPTH - len(tokens)):
            raise _Fail(
                f"moving it there would nest the document deeper than MAX_DEPTH={MAX_DEPTH}"
            )
        self.remove(source)
        self.add(tokens, value)


def _member(op: Mapping[str, Any], name: str) -> str:
    if name not in op:
        what = "the location to read from" if name == "from" else "the target location"
        raise _Fail(f'missing "{name}" member ({what}, a JSON pointer such as "/items/0")')
    value = op[name]
    if not isinstance(value, str):
        raise _Fail(f'"{name}" must be a JSON pointer string, got {_describe(value)}')
    return value


def _pointer_tokens(op: Mapping[str, Any], name: str) -> tuple[str, ...]:
    tokens = _tokens(_member(op, name))
    if len(tokens) > MAX_DEPTH:
        raise _Fail(
            f'"{name}" is {len(tokens)} levels deep; documents may nest at most '
            f"MAX_DEPTH={MAX_DEPTH} arrays/objects"
        )
    return tokens


def _invalid_value(exc: _Invalid, what: str, depth: int) -> str:
    if exc.reason.startswith("nested deeper"):
        return (
            f"the {what} would nest the document deeper than MAX_DEPTH={MAX_DEPTH} "
            f"arrays/objects (it is placed {depth} levels down)"
        )
    place = exc.where()
    return f"the {what} is not valid JSON" + (f" at {place!r}" if place else "") + f": {exc.reason}"


def _as_operation(op: Any) -> Any:
    # ag_ui.core's StateDeltaEvent holds pydantic operation models; accept them as their dicts.
    dump = getattr(op, "model_dump", None)
    if dump is not None and not isinstance(op, Mapping):
        return dump(by_alias=True, mode="python")
    return op


def apply_patch(doc: JSONValue, ops: Sequence[Operation]) -> JSONValue:
    """Apply RFC 6902 operations and return the new document; ``doc`` is never modified.

    All operations apply or none do: a failing one raises :class:`PatchError` (naming the
    operation's index, the op and its path, and why) and nothing is changed. Only the
    containers along the touched paths are copied, so the result shares untouched parts with
    ``doc`` (treat both as read-only, or copy one); inserted values are fresh copies.

    >>> apply_patch({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3}])
    {'a': [1, 2, 3]}
    """
    if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Sequence):
        raise PatchError(
            f"a JSON Patch is an array of operations, got {_type_name(ops)}; "
            'wrap a single operation in a list: [{"op": ...}]'
        )
    patcher = _Patcher(doc)
    for index, raw in enumerate(ops):
        op = _as_operation(raw)
        if not isinstance(op, Mapping):
            raise PatchError(
                f"an operation must be a JSON object, got {_describe(op)}",
                op_index=index,
                op=op,
            )
        try:
            patcher.apply(op)
        except _Fail as exc:
            path = op.get("path")
            raise PatchError(
                str(exc), op_index=index, op=op, path=path if isinstance(path, str) else None
            ) from None
        except _Invalid as exc:  # a `test` against a value that is not JSON
            path = op.get("path")
            raise PatchError(
                _invalid_value(exc, "compared value", 0),
                op_index=index,
                op=op,
                path=path if isinstance(path, str) else None,
            ) from None
    return patcher.root


# --------------------------------------------------------------------------------------------- diff

_Eq = Callable[[Any, Any], bool]


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _same(a: Any, b: Any, eq: _Eq) -> bool:
    # The type test makes the fast (==) pass see 1 -> True at a leaf; deeper type changes
    # inside an "equal" container are left to the byte comparison after it.
    return type(a) is type(b) and eq(a, b)


def _diff_value(a: Any, b: Any, path: str, ops: list[Operation], eq: _Eq) -> None:
    """Append the operations turning ``a`` into ``b``, for values not already known equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        _diff_object(a, b, path, ops, eq)
    elif _is_array(a) and _is_array(b):
        _diff_array(a, b, path, ops, eq)
    elif not _same(a, b, eq):
        ops.append({"op": "replace", "path": path, "value": b})


def _diff_object(
    a: Mapping[str, Any], b: Mapping[str, Any], path: str, ops: list[Operation], eq: _Eq
) -> None:
    same_keys = a.keys() == b.keys()
    if not same_keys:
        for key in a:
            if key not in b:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
    keys: Any = b.keys()
    if same_keys and eq is operator.eq and len(b) > 8:
        # A large object (records keyed by id): pick the changed members inside C iterators
        # instead of running Python code for every member.
        keys = compress(keys, map(operator.ne, map(a.__getitem__, keys), b.values()))
    for key in keys:
        new = b[key]
        if key not in a:
            ops.append({"op": "add", "path": f"{path}/{_escape(key)}", "value": new})
            continue
        old = a[key]
        # Arrays skip the == test: the array diff finds equality itself, at no extra cost.
        if type(old) is list and type(new) is list:
            _diff_array(old, new, f"{path}/{_escape(key)}", ops, eq)
        elif not _same(old, new, eq):
            _diff_value(old, new, f"{path}/{_escape(key)}", ops, eq)


_CHUNK = 64


def _first_difference(a: list[Any], b: list[Any], limit: int) -> int:
    """Length of the ``==`` prefix of ``a[:limit]`` and ``b[:limit]``.

    Chunks are compared as list slices (C speed, no per-item Python code); the chunk that
    differs is scanned item by item, still inside C iterators.
    """
    start = 0
    while start < limit:
        stop = min(start + _CHUNK, limit)
        if a[start:stop] != b[start:stop]:
            offset = next(compress(count(), map(operator.ne, a[start:stop], b[start:stop])))
            return start + offset
        start = stop
    return limit


def _common_prefix(a: list[Any], b: list[Any], limit: int, eq: _Eq) -> int:
    if eq is operator.eq:
        return _first_difference(a, b, limit)
    # Strict equality is a Python function, so compare slices (galloping, then bisecting):
    # each comparison still runs at C speed, and the work stays proportional to the prefix.
    low, step = 0, 1
    while low < limit:
        high = min(low + step, limit)
        if eq(a[low:high], b[low:high]):
            low, step = high, step * 2
            continue
        while high - low > 1:
            mid = (low + high) // 2
            if eq(a[low:mid], b[low:mid]):
                low = mid
            else:
                high = mid
        return low
    return limit


def _common_suffix(a: list[Any], b: list[Any], limit: int, eq: _Eq) -> int:
    n, m = len(a), len(b)
    if eq is operator.eq:
        # The usual edit changes one item: test the whole rest in one comparison first.
        if limit > 1 and n == m and a[n - limit + 1 :] == b[m - limit + 1 :]:
            return limit - 1
        return _first_difference(a[n - limit :][::-1], b[m - limit :][::-1], limit)
    low, step = 0, 1
    while low < limit:
        high = min(low + step, limit)
        if eq(a[n - high : n - low], b[m - high : m - low]):
            low, step = high, step * 2
            continue
        while high - low > 1:
            mid = (low + high) // 2
            if eq(a[n - mid : n - low], b[m - mid : m - low]):
                low = mid
            else:
                high = mid
        return low
    return limit


def _diff_array(a: Any, b: Any, path: str, ops: list[Operation], eq: _Eq) -> None:
    """Trim the common prefix and suffix; pair up the middle, then remove or add the rest.

    One insertion, removal or changed item anywhere gives one operation.
    """
    a = a if type(a) is list else list(a)
    b = b if type(b) is list else list(b)
    n, m = len(a), len(b)
    shorter = min(n, m)
    prefix = _common_prefix(a, b, shorter, eq)
    if prefix == n == m:
        return
    suffix = _common_suffix(a, b, shorter - prefix, eq)
    a_end, b_end = n - suffix, m - suffix
    paired = min(a_end, b_end) - prefix
    for i in range(prefix, prefix + paired):
        old, new = a[i], b[i]
        if not _same(old, new, eq):
            _diff_value(old, new, f"{path}/{i}", ops, eq)
    for i in range(a_end - 1, prefix + paired - 1, -1):
        ops.append({"op": "remove", "path": f"{path}/{i}"})
    for i in range(prefix + paired, b_end):
        ops.append({"op": "add", "path": f"{path}/{i}", "value": b[i]})


def _raw_diff(a: Any, b: Any, eq: _Eq) -> list[Operation]:
    ops: list[Operation] = []
    _diff_value(a, b, "", ops, eq)
    return ops


def _copy_ops(ops: list[Operation]) -> list[Operation]:
    """Independent copies of the values in ``ops`` (they point into the diffed document)."""
    out: list[Operation] = []
    for op in ops:
        if "value" in op:
            depth = len(_tokens(op["path"]))
            try:
                value = _copy(op["value"], MAX_DEPTH - depth)
            except _Invalid as exc:
                raise _value_error(exc, "the new value") from None
            op = {**op, "value": value}
        out.append(op)
    return out


def _diff_checked(
    a: Any, b: Any, *, b_bytes: bytes | None = None, a_plain: bool = False
) -> tuple[list[Operation], Any, bytes]:
    """A verified type-strict patch from ``a`` to ``b``, ``a`` with it applied, and that
    result's compact JSON.

    Both must have passed :func:`_dumps`; ``a_plain`` says ``a`` is already a plain copy (the
    StateManager's baseline). A fast diff using Python ``==`` runs first; since ``==`` equates
    1, 1.0 and True, its result is applied to ``a`` and compared byte for byte with ``b``. Only
    on a mismatch does the strict diff run, on plain copies. NaN or non-JSON objects inside the
    changed parts of ``b`` raise :class:`PatchError`.
    """
    if b_bytes is None:
        b_bytes = _dumps(b, sort=False)
    ops = _copy_ops(_raw_diff(a, b, operator.eq))
    patched = apply_patch(a, ops) if ops else a
    patched_bytes = _verified(patched, b, b_bytes)
    if patched_bytes is not None:
        return ops, patched, patched_bytes
    try:
        plain_a = a if a_plain else _copy(a, MAX_DEPTH)
        plain_b = _copy(b, MAX_DEPTH)
    except _Invalid as exc:
        raise _value_error(exc, "the new value") from None
    # plain_b is private to this call, so its parts can go into the ops without another copy.
    ops = _raw_diff(plain_a, plain_b, _strict_eq)
    patched = apply_patch(a, ops) if ops else a
    patched_bytes = _verified(patched, b, b_bytes)
    if patched_bytes is None:  # pragma: no cover - the strict diff is exact by construction
        raise AssertionError(f"diff could not express the change: {ops!r}")
    return ops, patched, patched_bytes


def _verified(patched: Any, b: Any, b_bytes: bytes) -> bytes | None:
    """The compact JSON of ``patched`` if it is JSON-equal to ``b``, else None."""
    patched_bytes = _dumps(patched, sort=False)
    if patched_bytes == b_bytes:
        return patched_bytes
    # The same JSON with keys in another order still counts.
    if len(patched_bytes) == len(b_bytes) and _dumps(patched, sort=True) == _dumps(b, sort=True):
        return patched_bytes
    return None


def diff(a: JSONValue, b: JSONValue) -> list[Operation]:
    """RFC 6902 operations that turn ``a`` into ``b`` (neither is modified).

    Type-strict: a change between ``1``, ``1.0`` and ``True`` is always in the patch, and the
    patch is empty only when the two values are JSON-equal. Operation values are independent
    copies. Arrays are compared by common prefix and suffix, so one insertion or removal gives one
    operation.

    >>> diff({"a": 1, "b": [1, 2, 3]}, {"a": 1.0, "b": [1, 3]})
    [{'op': 'replace', 'path': '/a', 'value': 1.0}, {'op': 'remove', 'path': '/b/1'}]
    """
    _checked_json(a, sort=False, what="diff argument a", thorough=True)
    b_bytes = _checked_json(b, sort=False, what="diff argument b", thorough=True)
    return _diff_checked(a, b, b_bytes=b_bytes)[0]
