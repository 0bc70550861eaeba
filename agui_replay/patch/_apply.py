"""RFC 6902 apply: atomic copy-on-write :func:`apply_patch`.

Private to :mod:`agui_replay.patch`; the public names are re-exported there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import PatchError
from ._json import (
    _OPS,
    MAX_DEPTH,
    JSONValue,
    Operation,
    _copy,
    _depth_within,
    _describe,
    _Fail,
    _Invalid,
    _json_eq,
    _pointer,
    _tokens,
    _type_name,
)


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
