"""RFC 6902 diff: type-strict, checked by applying, with a fast ``==`` pass first.

Private to :mod:`agui_replay.patch`; the public names are re-exported there.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from itertools import compress, count
from typing import Any

from ._apply import apply_patch
from ._json import (
    MAX_DEPTH,
    JSONValue,
    Operation,
    _checked_json,
    _copy,
    _dumps,
    _escape,
    _Invalid,
    _strict_eq,
    _tokens,
    _value_error,
)

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
