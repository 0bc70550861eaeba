"""RFC 6902 apply: atomic copy-on-write :func:`apply_patch`.

Private to :mod:`agui_replay.patch`; the public names are re-exported there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._limits import MAX_DEPTH, Invalid, JSONValue, Operation, depth_within, plain_copy
from .._text import json_type, short_repr
from ..errors import PatchError
from ._json import (
    _OPS,
    _describe,
    _Fail,
    _json_eq,
    _kind,
    _pointer,
    _scalar_eq,
    _tokens,
)


def _index(token: str, length: int, *, for_insert: bool, tokens: Sequence[str], depth: int) -> int:
    """The array index ``token`` names; ``tokens[:depth]`` is the array's path (for errors)."""
    if token == "-":
        if for_insert:
            return length
        where = _pointer(tokens[:depth])
        raise _Fail(f"'-' (past the end of the array at {where!r}) can only be used by add")
    if not (token.isascii() and token.isdigit()) or (len(token) > 1 and token[0] == "0"):
        where = _pointer(tokens[:depth])
        raise _Fail(
            f"{token!r} is not a valid index into the array at {where!r}: use a non-negative "
            "integer without leading zeros (or '-' to append with add)"
        )
    index = int(token)
    if index > length or (index == length and not for_insert):
        where = _pointer(tokens[:depth])
        raise _Fail(f"index {index} is out of range for the array at {where!r} (length {length})")
    return index


def _numbers_equal(a: Any, b: Any, budget: int) -> bool:
    """RFC 6902 §4.6 equality for ``test``: numbers by value (``1`` equals ``1.0``), all else
    JSON-strict (``true`` is a literal, not the number 1). Raises Invalid for non-JSON."""
    kind, other = _kind(a), _kind(b)
    if kind == "?" or other == "?":
        bad = a if kind == "?" else b
        raise Invalid(f"a {type(bad).__name__} is not a JSON value")
    if kind in _NUMBER_KINDS and other in _NUMBER_KINDS:
        for number in (a, b):
            if type(number) is float and not math.isfinite(number):
                raise Invalid(
                    f"{number!r} is not a JSON number (NaN and infinity have no JSON form)"
                )
        return bool(a == b)  # exact: 2**53 + 1 differs from 2.0**53
    if kind != other:
        return False
    if kind == "array":
        if budget <= 0:
            raise Invalid(f"nested deeper than MAX_DEPTH={MAX_DEPTH} arrays/objects")
        return len(a) == len(b) and all(
            _numbers_equal(x, y, budget - 1) for x, y in zip(a, b, strict=True)
        )
    if kind == "object":
        if budget <= 0:
            raise Invalid(f"nested deeper than MAX_DEPTH={MAX_DEPTH} arrays/objects")
        return a.keys() == b.keys() and all(
            _numbers_equal(value, b[key], budget - 1) for key, value in a.items()
        )
    return _scalar_eq(a, b, kind)


_NUMBER_KINDS = ("integer", "float")


def _test_equal(actual: Any, expected: Any) -> bool:
    # JSON-strict equality is the common answer and runs at C speed; only a difference is
    # looked at again, number by number.
    return _json_eq(actual, expected) or _numbers_equal(actual, expected, MAX_DEPTH + 1)


def _undo(log: list[tuple[Any, ...]]) -> None:
    """Undo the logged in-place changes, newest first, and empty the log.

    Entries: ``("set", node, key, old)``, ``("del", node, key)`` (a new member),
    ``("pop", array, index)`` (an insertion), ``("insert", array, index, old)`` (a removal),
    ``("unpop", object, key, old, order)`` (a removed member; ``order``, the keys before the
    removal, or None when it was the last one, puts it back in its place).
    """
    for entry in reversed(log):
        kind, node, key = entry[0], entry[1], entry[2]
        if kind == "set":
            node[key] = entry[3]
        elif kind == "del":
            del node[key]
        elif kind == "pop":
            node.pop(key)
        elif kind == "insert":
            node.insert(key, entry[3])
        else:
            node[key] = entry[3]
            order = entry[4]
            if order is not None:
                for other in order[order.index(key) + 1 :]:
                    node[other] = node.pop(other)
    log.clear()


def _removal(node: dict[str, Any], key: str) -> tuple[Any, ...]:
    """Remove ``node[key]`` and return its undo entry."""
    order = None if next(reversed(node)) == key else list(node)
    return ("unpop", node, key, node.pop(key), order)


class _Patcher:
    """Applies operations to ``root``, copying each container on a written path first unless
    it is owned (``owned`` holds the ids of containers that may change in place; ``None``
    means all of them). With ``undo`` set, every in-place change is logged so that
    :meth:`rollback` puts the document back exactly, key order included.

    Copy-on-write (:func:`apply_patch`): ``owned`` starts empty and there is no undo log, since
    the input is never written. In place (:func:`apply_patch_in_place`): the log is kept.

    Ids without references are safe here: a container that was in the document when the call
    (or the caller's epoch of ``owned``) began stays alive while it is reachable, so no copy
    made later can share its id.
    """

    __slots__ = ("added", "log", "owned", "root")

    def __init__(self, doc: Any, owned: set[int] | None, undo: bool) -> None:
        self.root = doc
        self.owned = owned
        self.log: list[tuple[Any, ...]] | None = [] if undo else None
        self.added: list[int] = []  # ids put into ``owned`` by this call

    def _own(self, node: Any) -> Any:
        owned = self.owned
        if type(node) is not tuple and (owned is None or id(node) in owned):
            return node
        copy: Any = dict(node) if isinstance(node, dict) else list(node)
        if owned is not None:
            owned.add(id(copy))
            self.added.append(id(copy))
        return copy

    def rollback(self, doc: Any) -> None:
        """Undo every logged change (newest first); ``doc`` is the document before the call."""
        if self.log is None:
            return
        _undo(self.log)
        if self.owned is not None:
            self.owned.difference_update(self.added)
        self.root = doc

    def get(self, tokens: Sequence[str]) -> Any:
        node = self.root
        for depth, token in enumerate(tokens):
            node = self._child(node, token, tokens, depth)
        return node

    def _child(self, node: Any, token: str, tokens: Sequence[str], depth: int) -> Any:
        if isinstance(node, dict):
            try:
                return node[token]
            except KeyError:
                where = _pointer(tokens[:depth])
                raise _Fail(
                    f"path not found: the object at {where!r} has no member {token!r}"
                ) from None
        if isinstance(node, (list, tuple)):
            return node[_index(token, len(node), for_insert=False, tokens=tokens, depth=depth)]
        where = _pointer(tokens[:depth])
        raise _Fail(
            f"path not found: {where!r} is a {json_type(node)}, not an object or array, "
            f"so it has no member {token!r}"
        )

    def _put(self, node: Any, key: Any, value: Any) -> None:
        """``node[key] = value`` for an existing member or index, logged."""
        if self.log is not None:
            self.log.append(("set", node, key, node[key]))
        node[key] = value

    def parent(self, tokens: Sequence[str]) -> Any:
        """The container that holds the last token, made writable along the way."""
        node = self.root
        if not isinstance(node, (dict, list, tuple)):
            raise _Fail(
                f"path not found: the document is a {json_type(node)}, not an object or array"
            )
        node = self.root = self._own(node)
        owned = self.owned
        for depth in range(len(tokens) - 1):
            child = self._child(node, tokens[depth], tokens, depth)
            if not isinstance(child, (dict, list, tuple)):
                where = _pointer(tokens[: depth + 1])
                raise _Fail(
                    f"path not found: {where!r} is a {json_type(child)}, not an object or array"
                )
            if type(child) is tuple or (owned is not None and id(child) not in owned):
                child = self._own(child)
                key = tokens[depth] if isinstance(node, dict) else int(tokens[depth])
                self._put(node, key, child)
            node = child
        return node

    def _fresh(self, value: Any) -> None:
        """A value this call made: its top container may change in place later."""
        if self.owned is not None and isinstance(value, (dict, list)):
            self.owned.add(id(value))
            self.added.append(id(value))

    def add(self, tokens: Sequence[str], value: Any, replace: bool = False) -> None:
        """Put ``value`` at ``tokens``: added, or with ``replace`` replacing what is there."""
        if not tokens:
            self.root = value
            return
        node = self.parent(tokens)
        last = tokens[-1]
        depth = len(tokens) - 1
        if isinstance(node, dict):
            if last in node:
                self._put(node, last, value)
                return
            if replace:
                raise _Fail(
                    f"path not found: the object at {_pointer(tokens[:-1])!r} has no member "
                    f"{last!r} to replace (use add to create it)"
                )
            if self.log is not None:
                self.log.append(("del", node, last))
            node[last] = value
        elif replace:
            index = _index(last, len(node), for_insert=False, tokens=tokens, depth=depth)
            self._put(node, index, value)
        else:
            index = _index(last, len(node), for_insert=True, tokens=tokens, depth=depth)
            node.insert(index, value)
            if self.log is not None:
                self.log.append(("pop", node, index))

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
            if self.log is None:
                return node.pop(last)
            # Putting a member back appends it, so the key order is kept to restore it exactly
            # (not needed, and not copied, when the member was the last one).
            entry = _removal(node, last)
            self.log.append(entry)
            return entry[3]
        index = _index(last, len(node), for_insert=False, tokens=tokens, depth=len(tokens) - 1)
        old = node.pop(index)
        if self.log is not None:
            self.log.append(("insert", node, index, old))
        return old

    def apply(self, op: Mapping[str, Any]) -> None:
        name = op.get("op")
        if name not in _OPS:
            if "op" not in op:
                raise _Fail('missing "op" member (one of add, remove, replace, move, copy, test)')
            raise _Fail(
                f"unknown op {short_repr(name)}; expected one of add, remove, replace, move, "
                "copy, test"
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
                if not _test_equal(actual, raw):
                    raise _Fail(
                        f"test failed: the value at {_pointer(tokens)!r} is {_describe(actual)}, "
                        f"not {_describe(raw)}"
                    )
                return
            try:
                value = plain_copy(raw, MAX_DEPTH - len(tokens))
            except Invalid as exc:
                raise _Fail(_invalid_value(exc, "value", len(tokens))) from None
            self._fresh(value)
            self.add(tokens, value, replace=name == "replace")
            return
        source = _pointer_tokens(op, "from")
        if name == "copy":
            try:
                value = plain_copy(self.get(source), MAX_DEPTH - len(tokens))
            except Invalid as exc:
                raise _Fail(_invalid_value(exc, "copied value", len(tokens))) from None
            self._fresh(value)
            self.add(tokens, value)
            return
        # move
        if tokens[: len(source)] == source:
            if len(tokens) == len(source):
                self.get(source)  # moving a value onto itself is a no-op, if it exists
                return
            raise _Fail(f"cannot move {_pointer(source)!r} into its own child {_pointer(tokens)!r}")
        value = self.get(source)
        if len(tokens) > len(source) and not depth_within(value, MAX_DEPTH - len(tokens)):
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


def _invalid_value(exc: Invalid, what: str, depth: int) -> str:
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

    ``test`` compares as RFC 6902 §4.6 says: numbers by value (``1`` passes a test for
    ``1.0``), everything else JSON-strictly (``true`` is not the number ``1``).

    >>> apply_patch({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3}])
    {'a': [1, 2, 3]}
    """
    return _run(_Patcher(doc, set(), undo=False), ops)


def apply_patch_in_place(
    doc: JSONValue, ops: Sequence[Operation], *, owned: set[int] | None = None
) -> JSONValue:
    """Apply RFC 6902 operations to ``doc`` itself and return the new document.

    The cost is proportional to the operations, not to the document: containers are changed
    in place, and every change is logged so that a failing operation undoes the ones before it.
    All apply or none do: on :class:`PatchError`, ``doc`` is exactly as it was, key order
    included. The result is ``doc`` unless an operation replaced the whole document.

    ``doc`` must be yours alone (no part of it held elsewhere, no container in two places).
    ``owned`` narrows what may change in place: when given, it holds the ids of the containers
    that may be written; any other container on a written path is copied first (as
    :func:`apply_patch` does) and the copy's id is added. Pass an empty set after handing the
    document out, and the values handed out never change.

    >>> doc = {"log": ["a"]}
    >>> apply_patch_in_place(doc, [{"op": "add", "path": "/log/-", "value": "b"}]) is doc
    True
    >>> doc
    {'log': ['a', 'b']}
    """
    patcher = _Patcher(doc, owned, undo=True)
    try:
        return _run(patcher, ops)
    except PatchError:
        patcher.rollback(doc)
        raise


def _run(patcher: _Patcher, ops: Sequence[Operation]) -> JSONValue:
    if isinstance(ops, (str, bytes, Mapping)) or not isinstance(ops, Sequence):
        raise PatchError(
            f"a JSON Patch is an array of operations, got {json_type(ops)}; "
            'wrap a single operation in a list: [{"op": ...}]'
        )
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
        except Invalid as exc:  # a `test` against a value that is not JSON
            path = op.get("path")
            raise PatchError(
                _invalid_value(exc, "compared value", 0),
                op_index=index,
                op=op,
                path=path if isinstance(path, str) else None,
            ) from None
    return patcher.root
