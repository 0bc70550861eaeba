"""RFC 6902 diff: type-strict, checked by applying, with a fast ``==`` pass first.

Private to :mod:`agui_replay.patch`; the public names are re-exported there.
"""

from __future__ import annotations

import gc
import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from itertools import compress, count, repeat
from typing import Any, cast

import orjson

from .._limits import (
    MAX_DEPTH,
    Invalid,
    JSONValue,
    Operation,
    dumps,
    dumps_known,
    escape,
    plain_copy,
    value_error,
)
from ._apply import _removal, _undo, apply_patch, apply_patch_in_place
from ._json import _checked_json, _strict_eq, _tokens

_Eq = Callable[[Any, Any], bool]


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _same(a: Any, b: Any, eq: _Eq) -> bool:
    # The type test makes the fast (==) pass see 1 -> True at a leaf; deeper type changes
    # inside an "equal" container are left to the byte comparison after it.
    return type(a) is type(b) and eq(a, b)


_SCALARS = frozenset((str, int, float, bool, type(None)))
_NUMBERS = frozenset((int, float, bool))
_SHORT = 16  # lists up to this length skip the prefix/suffix machinery
_COLUMNS = 32  # changed objects of a long list from which _Walk._columns compares them


class _TooBig(Exception):
    """The patch has grown at least as long as the new document: send a snapshot instead."""


def _value_size(value: Any) -> int:
    """A lower bound of the compact JSON length of ``value`` (exact for containers, strings
    without escapes, and literals), cheap enough to take for every operation."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is bool:
        return 4 if value else 5
    if value is None:
        return 4
    if kind is dict or kind is list:
        try:
            return len(orjson.dumps(value))
        except TypeError:  # integers beyond 64 bits; the exact size comes later
            return 2
    return 1


class _Walk:
    """One diff: the operations, and optionally a byte budget and the writes that apply them.

    ``room`` (``None``: unlimited) is how many bytes the patch may take before it can no longer
    be shorter than the new document; each operation takes a lower bound of its JSON length
    from it, and :class:`_TooBig` stops the walk once it is spent. With ``writes``, the walk
    also keeps what applying the patch to ``a`` in place takes, naming the containers of ``a``
    it changes (no paths parsed later): ``sets``, one ``(node, key, value, old)`` per
    replacement; ``edits``, one ``(node, key, value, kind)`` per addition or removal, in patch
    order; ``owned``, the operations whose value is not an immutable scalar (it gets copied,
    which also validates it); ``root``, the new root when the whole document is replaced.
    """

    __slots__ = ("edits", "eq", "ops", "owned", "room", "root", "sets")

    def __init__(self, eq: _Eq, room: int | None = None, writes: bool = False) -> None:
        self.eq = eq
        self.ops: list[Operation] = []
        self.room = room
        self.sets: list[tuple[Any, Any, Any, Any]] | None = [] if writes else None
        self.edits: list[tuple[Any, Any, Any, str]] = []
        self.owned: list[tuple[Operation, list[Any], int]] = []
        self.root: list[Any] = []

    def _spend(self, size: int) -> None:
        room = self.room
        if room is not None:
            room -= size
            self.room = room
            if room <= 0:
                raise _TooBig

    def _own(self, op: Operation, kind: type, value: Any, where: list[Any]) -> None:
        """Note that ``op``'s value (the last entry of ``where``) needs its own copy; a float
        only needs to be finite."""
        if kind is float:
            if not math.isfinite(value):
                exc = Invalid(
                    f"{value!r} is not a JSON number (NaN and infinity have no JSON form)"
                )
                exc.tokens.extend(reversed(_tokens(op["path"])))
                raise exc
            return
        self.owned.append((op, where, len(where) - 1))

    def replace(self, path: str, value: Any, node: Any, key: Any) -> None:
        op = {"op": "replace", "path": path, "value": value}
        self.ops.append(op)
        kind = type(value)
        room = self.room
        if room is not None:
            room -= 36 + len(path) + (len(value) + 2 if kind is str else _value_size(value))
            self.room = room
            if room <= 0:
                raise _TooBig
        sets = self.sets
        if sets is not None:
            where: list[Any]
            if node is None:
                self.root.append(value)
                where = self.root
            else:
                sets.append((node, key, value, node[key]))
                where = sets
            if kind is not str and kind is not int and kind is not bool and value is not None:
                self._own(op, kind, value, where)

    def remove(self, path: str, node: Any, key: Any) -> None:
        self.ops.append({"op": "remove", "path": path})
        if self.room is not None:
            self._spend(26 + len(path))
        if self.sets is not None:
            self.edits.append((node, key, None, "del"))

    def add(self, path: str, value: Any, node: Any, key: Any) -> None:
        op = {"op": "add", "path": path, "value": value}
        self.ops.append(op)
        if self.room is not None:
            self._spend(32 + len(path) + _value_size(value))
        if self.sets is not None:
            self.edits.append((node, key, value, "add"))
            kind = type(value)
            if kind is not str and kind is not int and kind is not bool and value is not None:
                self._own(op, kind, value, self.edits)

    def value(self, a: Any, b: Any, path: str, node: Any, key: Any) -> None:
        """The operations turning ``a`` (``node[key]``, or the root when ``node`` is None) into
        ``b``, for values not already known equal."""
        if isinstance(a, dict) and isinstance(b, dict):
            self.object(a, b, path)
        elif _is_array(a) and _is_array(b):
            self.array(a, b, path)
        elif not _same(a, b, self.eq):
            self.replace(path, b, node, key)

    def object(self, a: Mapping[str, Any], b: Mapping[str, Any], path: str) -> None:
        eq = self.eq
        fast = eq is operator.eq
        same_keys = a.keys() == b.keys()
        if not same_keys:
            for key in a:
                if key not in b:
                    self.remove(f"{path}/{escape(key)}", a, key)
        members: Any = b.items()
        if same_keys and fast and len(b) > 8:
            # A large object (records keyed by id): pick the changed members inside C iterators
            # instead of running Python code for every member.
            keys = b.keys()
            changed = compress(keys, map(operator.ne, map(a.__getitem__, keys), b.values()))
            members = ((key, b[key]) for key in changed)
        for key, new in members:
            if not same_keys and key not in a:
                self.add(f"{path}/{escape(key)}", new, a, key)
                continue
            old = a[key]
            kind = type(new)
            if type(old) is kind:
                # Equal lists give no operations either way (the array diff finds that itself);
                # == first is only cheaper for short ones, long ones go straight to the diff.
                if kind is list:
                    if fast and len(new) <= _SHORT and old == new:
                        continue
                    self.array(old, new, f"{path}/{escape(key)}")
                    continue
                if (old == new) if fast else eq(old, new):
                    continue
                if kind is dict:
                    self.object(old, new, f"{path}/{escape(key)}")
                    continue
                if kind in _SCALARS:
                    self.replace(f"{path}/{escape(key)}", new, a, key)
                    continue
            self.value(old, new, f"{path}/{escape(key)}", a, key)

    def array(self, a: Any, b: Any, path: str) -> None:
        """Trim the common prefix and suffix; pair up the middle, then remove or add the rest.

        One insertion, removal or changed item anywhere gives one operation.
        """
        eq = self.eq
        fast = eq is operator.eq
        a = a if type(a) is list else list(a)  # a tuple is only read (never in a baseline)
        b = b if type(b) is list else list(b)
        n, m = len(a), len(b)
        if fast and n == m and n <= _SCAN:
            # What the trimming below comes to for lists of the same length: pair up
            # everything from the first to the last index where == differs. For a list this
            # short one pass in C finds them all (the trimming compares every item too, the
            # first and last that differ twice, and it slices the lists), and the pairing is
            # told which they are. A longer list is trimmed. When the first items differ, the
            # probe goes first: it stops the walk of a new document before that pass.
            if self.room is not None and n >= 16 and a[0] != b[0]:
                self._probe(a, b, path, 0, n)
            if n <= _SHORT:
                changed = [i for i in range(n) if a[i] != b[i]]
            else:
                changed = list(compress(count(), map(operator.ne, a, b)))
            if changed:
                self.paired(a, b, path, changed[0], changed[-1] + 1, changed)
            return
        shorter = min(n, m)
        prefix = _common_run(a, b, shorter, eq)
        if prefix == n == m:
            return
        suffix = _common_run(a, b, shorter - prefix, eq, from_end=True)
        a_end, b_end = n - suffix, m - suffix
        paired = min(a_end, b_end) - prefix
        if self.room is not None and paired >= 16:
            self._probe(a, b, path, prefix, prefix + paired)
        self.paired(a, b, path, prefix, prefix + paired)
        for i in range(a_end - 1, prefix + paired - 1, -1):
            self.remove(f"{path}/{i}", a, i)
        for i in range(prefix + paired, b_end):
            self.add(f"{path}/{i}", b[i], a, i)

    def _probe(self, a: list[Any], b: list[Any], path: str, start: int, stop: int) -> None:
        """Raise :class:`_TooBig` early when the objects ``a[start:stop]`` against
        ``b[start:stop]`` are sure to overflow the budget (a new document, say): when the
        first pair differs in enough members that the whole range, at that rate and 36 bytes
        plus the path each, would overflow, and :func:`_objects_overflow` shows it."""
        left = cast(int, self.room)
        old, new = a[start], b[start]
        if type(old) is not dict or type(new) is not dict:
            return
        differing = sum(map(operator.ne, map(old.get, new), new.values()))
        if differing * (36 + len(path)) * (stop - start) < left:
            return
        if _objects_overflow(a, b, path, start, stop, left):
            raise _TooBig

    def paired(
        self,
        a: list[Any],
        b: list[Any],
        path: str,
        start: int,
        stop: int,
        known: list[int] | None = None,
    ) -> None:
        """Diff ``a[i]`` against ``b[i]`` for ``start <= i < stop``; ``known``, when given,
        lists (ascending) every ``i`` there where ``a[i] != b[i]``, so the items are not
        compared again to find them."""
        if self.eq is not operator.eq or stop - start < _COLUMNS:
            self._items(a, b, path, _among(known, start, stop))
            return
        for chunk in range(start, stop, 1024):
            end = min(stop, chunk + 1024)
            if known is None:
                olds, news = a[chunk:end], b[chunk:end]
                changed = list(compress(count(chunk), map(operator.ne, olds, news)))
            else:
                changed = _between(known, chunk, end)
            if len(changed) < _COLUMNS or not self._columns(a, b, path, changed):
                self._items(a, b, path, changed)

    def _items(self, a: list[Any], b: list[Any], path: str, indexes: Iterable[int]) -> None:
        eq = self.eq
        fast = eq is operator.eq
        for i in indexes:
            old, new = a[i], b[i]
            kind = type(new)
            if type(old) is kind:
                if (old == new) if fast else eq(old, new):
                    continue
                if kind is dict:
                    self.object(old, new, f"{path}/{i}")
                    continue
                if kind in _SCALARS:
                    self.replace(f"{path}/{i}", new, a, i)
                    continue
            self.value(old, new, f"{path}/{i}", a, i)

    def _columns(self, a: list[Any], b: list[Any], path: str, changed: list[int]) -> bool:
        """The fast diff of the objects ``a[i]`` / ``b[i]`` (``i`` in ``changed``, which differ
        by ``==``), member by member across all of them inside C iterators, when every one of
        them has the keys of the first (in ``b``, in the same order too, where more than one
        member differs); ``False`` (nothing done) otherwise. The operations come out as the
        per-object walk makes them."""
        olds = list(map(a.__getitem__, changed))
        news = list(map(b.__getitem__, changed))
        if set(map(type, olds)) != {dict} or set(map(type, news)) != {dict}:
            return False
        order = tuple(news[0])
        width = len(order)
        # The same keys everywhere: as many in each object, and each of ``order`` found in every
        # one (the column reads below raise KeyError otherwise). Their order is checked later,
        # only where it can matter: in objects with more than one member to diff.
        if set(map(len, olds)) != {width} or set(map(len, news)) != {width}:
            return False
        hits: list[tuple[int, list[int], list[Any], list[Any]]] = []
        for k, key in enumerate(order):
            get = operator.itemgetter(key)
            try:
                was, now = list(map(get, olds)), list(map(get, news))
            except KeyError:
                return False
            # Or its type changed: 1 -> True, which == calls equal (other types never are).
            retyped = not _NUMBERS.isdisjoint(map(type, was)) and list(map(type, was)) != list(
                map(type, now)
            )
            if not retyped and was == now:  # the whole column at once, most often
                continue
            differs: Iterable[bool] = map(operator.ne, was, now)
            if retyped:
                differs = map(
                    operator.or_, differs, map(operator.is_not, map(type, was), map(type, now))
                )
            where = list(compress(count(), differs))
            if where:
                hits.append((k, where, was, now))
        if len(hits) > 1 and not _in_order(news, order, hits):
            return False
        names = [escape(key) for key in order]
        if self._scalar_columns(path, changed, olds, order, names, hits):
            return True
        columns = {k: (was, now) for k, _, was, now in hits}
        codes: list[int] = []
        for k, where, _, _ in hits:
            codes += map(operator.add, map(operator.mul, where, repeat(width)), repeat(k))
        codes.sort()  # object by object, members in key order
        for code in codes:
            p, k = divmod(code, width)
            was, now = columns[k]
            old, new = was[p], now[p]
            kind = type(new)
            sub = f"{path}/{changed[p]}/{names[k]}"
            if type(old) is kind:
                if kind is dict:
                    self.object(old, new, sub)
                    continue
                if kind is list:
                    self.array(old, new, sub)
                    continue
                if kind in _SCALARS:
                    self.replace(sub, new, olds[p], order[k])
                    continue
            self.value(old, new, sub, olds[p], order[k])
        return True

    def _scalar_columns(
        self,
        path: str,
        changed: list[int],
        olds: list[dict[str, Any]],
        order: tuple[str, ...],
        names: list[str],
        hits: list[tuple[int, list[int], list[Any], list[Any]]],
    ) -> bool:
        """:meth:`_columns` when every member that differs is a scalar of an unchanged type,
        the same in its whole column (finite, for floats): the replacements are built a column
        at a time, then put in the per-object order. ``False`` (nothing done) otherwise."""
        built: list[tuple[list[int], list[Operation], list[tuple[Any, Any, Any, Any]]]] = []
        spent = 0
        sets = self.sets
        for k, where, was, now in hits:
            values = list(map(now.__getitem__, where))
            kinds = set(map(type, values))
            if len(kinds) != 1:
                return False
            kind = kinds.pop()
            if kind not in _SCALARS or set(map(type, map(was.__getitem__, where))) != {kind}:
                return False
            if kind is float and not all(map(math.isfinite, values)):
                return False  # the per-member walk names the place
            name = names[k]
            paths = [f"{path}/{i}/{name}" for i in map(changed.__getitem__, where)]
            ops = [
                {"op": "replace", "path": q, "value": v} for q, v in zip(paths, values, strict=True)
            ]
            writes = []
            if sets is not None:
                writes = list(
                    zip(
                        map(olds.__getitem__, where),
                        repeat(order[k]),
                        values,
                        map(was.__getitem__, where),
                        strict=False,  # repeat() never ends
                    )
                )
            # The lower bounds replace() takes, for the whole column at once.
            spent += 36 * len(ops) + sum(map(len, paths))
            if kind is str:
                spent += sum(map(len, values)) + 2 * len(values)
            elif kind is bool:
                spent += 4 * len(values) + values.count(False)
            else:
                spent += len(values)
            width = len(order)
            built.append(([p * width + k for p in where], ops, writes))
        if len(built) == 1:
            _, ops, writes = built[0]
        else:  # object by object, members in key order
            merged = sorted(
                (code, n, column)
                for column, (codes, _, _) in enumerate(built)
                for n, code in enumerate(codes)
            )
            ops = [built[column][1][n] for _, n, column in merged]
            writes = [built[column][2][n] for _, n, column in merged] if sets is not None else []
        self.ops += ops
        if sets is not None:
            sets += writes
        self._spend(spent)
        return True


def _between(indexes: list[int], low: int, high: int) -> list[int]:
    """The items of the ascending ``indexes`` from ``low`` on, below ``high``."""
    return indexes[bisect_left(indexes, low) : bisect_left(indexes, high)]


def _among(known: list[int] | None, low: int, high: int) -> Iterable[int]:
    """The indexes from ``low`` to ``high`` to diff: all of them, or the ``known`` ones."""
    return range(low, high) if known is None else _between(known, low, high)


def _in_order(news: list[dict[str, Any]], order: tuple[str, ...], hits: list[Any]) -> bool:
    """Whether every object of ``news`` with more than one member in ``hits`` (columns of
    differing members, see _Walk._columns) has its keys in ``order``: the per-object walk emits
    an object's operations in its own key order, the columns in ``order``. (An object with
    one operation gives it in the same place either way.)"""
    seen: set[int] = set()
    several: set[int] = set()
    for _, where, _, _ in hits:
        several.update(seen.intersection(where))
        seen.update(where)
    return all(map(order.__eq__, map(tuple, map(news.__getitem__, several))))


def _objects_overflow(
    a: list[Any], b: list[Any], path: str, start: int, stop: int, left: int
) -> bool:
    """Whether the patch under ``path/index`` for the objects ``a[start:stop]`` against
    ``b[start:stop]`` is sure to take at least ``left`` bytes (each operation with its comma).

    The members are counted by key, for all pairs at once, inside C iterators (no operation
    built), those holding a string first (their values count too), until the bound
    (:func:`_column_bytes`, rigorous) reaches ``left``. ``False`` (not shown) when an item is
    not an object."""
    first = b[start]
    keys = sorted(first, key=lambda key: type(first[key]) is not str)
    bound = 0
    for chunk in range(start, stop, 1024):
        end = min(stop, chunk + 1024)
        olds, news = a[chunk:end], b[chunk:end]
        digits = len(str(chunk))  # the op paths hold "/index/", index >= chunk
        for key in keys:
            try:
                bound += _column_bytes(olds, news, key, 28 + len(path) + digits + len(key))
            except TypeError:  # an item that is not an object
                return False
            if bound >= left:
                return True
    return False


def _column_bytes(olds: list[Any], news: list[Any], key: str, size: int) -> int:
    """A lower bound of the bytes the patch spends under ``.../index/key`` for the pairs of
    objects ``olds`` / ``news``, ``size`` being 26 plus the shortest such path (a removal,
    with its comma). Raises ``TypeError`` for an item that is not an object.

    A member whose value differs between a pair gives at least one operation there: a removal
    (``size``) when the new object lacks it; else, when both hold it, a replacement, which
    also carries the new value (10 bytes more, and the value's JSON: at least 1 byte, and
    ``len + 2`` for a string). Only members holding a scalar in ``news`` are counted: for
    containers ``!=`` may differ from JSON (a tuple is never ``==`` the list it encodes as).
    """
    get = operator.itemgetter(key)
    try:
        now = list(map(get, news))
        flags = list(map(operator.ne, map(get, olds), now))
    except KeyError:  # not in every object: a missing member reads as None
        every = repeat(key)
        now = list(map(dict.get, news, every))
        flags = list(map(operator.ne, map(dict.get, olds, every), now))
        size -= 11  # some may be removals; an addition carries its value, as a replacement
    changed = flags.count(True)
    if not changed:
        return 0
    try:
        text = "".join(compress(now, flags))  # all strings? (the usual column of names)
    except TypeError:
        kinds = set(map(type, compress(now, flags)))
        if not kinds <= _SCALARS:
            scalar = map(_SCALARS.__contains__, map(type, now))
            changed = sum(map(operator.and_, flags, scalar))
        return (size + 11) * changed
    return (size + 11) * changed + len(text) + changed


_CHUNK = 64
_SCAN = 128  # items scanned one by one before chunks are compared
_GALLOP = 1 << 14  # the longest slice _equal_run compares


def _equal_run(a: list[Any], b: list[Any], limit: int, from_end: bool = False) -> int:
    """Length of the ``==`` prefix of ``a[:limit]`` and ``b[:limit]`` (``from_end``: of the
    suffix of ``a[-limit:]`` and ``b[-limit:]``), without copying the lists whole.

    The first (or last) items are scanned one by one inside C iterators: the scan stops at the
    first difference, where a slice that differs would be compared twice (once as a slice,
    then item by item to find the place), and for a change among the first objects of a list
    that second pass was half the walk. Then slices are compared (C speed, no per-item Python
    code), each twice the one before, up to ``_GALLOP`` items: a slice copies its items'
    references, and touching every object of a long list costs as much as comparing many of
    them, so no slice is much longer than what has been compared already. The slice that
    differs is scanned.
    """
    order: Callable[[list[Any]], Iterable[Any]] = reversed if from_end else iter
    start, stop, size = 0, min(limit, _SCAN), _CHUNK
    while start < limit:
        olds, news = _slices(a, b, start, stop, from_end)
        if start == 0 or olds != news:
            found = next(compress(count(), map(operator.ne, order(olds), order(news))), None)
            if found is not None:
                return start + found
            if start:  # == and != disagree: say the run ends here
                return start
        start, stop = stop, min(stop + size, limit)
        size = min(2 * size, _GALLOP)
    return limit


def _slices(
    a: list[Any], b: list[Any], low: int, high: int, from_end: bool
) -> tuple[list[Any], list[Any]]:
    """``a[low:high]`` and ``b[low:high]``, or with ``from_end`` the same counted from the end."""
    if from_end:
        n, m = len(a), len(b)
        return a[n - high : n - low], b[m - high : m - low]
    return a[low:high], b[low:high]


def _common_run(a: list[Any], b: list[Any], limit: int, eq: _Eq, from_end: bool = False) -> int:
    """Length of the common prefix (``from_end``: suffix) of ``a`` and ``b``, at most ``limit``
    items, by ``eq``."""
    if eq is operator.eq:
        return _equal_run(a, b, limit, from_end)
    # Strict equality is a Python function, so compare slices (galloping, then bisecting):
    # each comparison still runs at C speed, and the work stays proportional to the run.
    low, step = 0, 1
    while low < limit:
        high = min(low + step, limit)
        if eq(*_slices(a, b, low, high, from_end)):
            low, step = high, step * 2
            continue
        while high - low > 1:
            mid = (low + high) // 2
            if eq(*_slices(a, b, low, mid, from_end)):
                low = mid
            else:
                high = mid
        return low
    return limit


def _raw_diff(a: Any, b: Any, eq: _Eq) -> list[Operation]:
    walk = _Walk(eq)
    walk.value(a, b, "", None, None)
    return walk.ops


def _copy_ops(ops: list[Operation]) -> list[Operation]:
    """Independent copies of the values in ``ops`` (they point into the diffed document)."""
    out: list[Operation] = []
    for op in ops:
        if "value" in op:
            depth = len(_tokens(op["path"]))
            try:
                value = plain_copy(op["value"], MAX_DEPTH - depth)
            except Invalid as exc:
                raise value_error(exc, "the new value") from None
            op = {**op, "value": value}
        out.append(op)
    return out


def _diff_checked(
    a: Any, b: Any, *, b_bytes: bytes | None = None, a_plain: bool = False, fast: bool = True
) -> tuple[list[Operation], Any, bytes]:
    """A verified type-strict patch from ``a`` to ``b``, ``a`` with it applied, and that
    result's compact JSON.

    Both must have passed :func:`dumps`; ``a_plain`` says ``a`` is already a plain copy (the
    StateManager's baseline). A fast diff using Python ``==`` runs first; since ``==`` equates
    1, 1.0 and True, its result is applied to ``a`` and compared byte for byte with ``b``. Only
    on a mismatch does the strict diff run, on plain copies. NaN or non-JSON objects inside the
    changed parts of ``b`` raise :class:`PatchError`.
    """
    if b_bytes is None:
        b_bytes = dumps(b, sort=False)
    if fast:
        ops = _copy_ops(_raw_diff(a, b, operator.eq))
        patched = apply_patch(a, ops) if ops else a
        patched_bytes = _verified(patched, b, b_bytes)
        if patched_bytes is not None:
            return ops, patched, patched_bytes
    try:
        plain_a = a if a_plain else plain_copy(a, MAX_DEPTH)
        plain_b = plain_copy(b, MAX_DEPTH)
    except Invalid as exc:
        raise value_error(exc, "the new value") from None
    # plain_b is private to this call, so its parts can go into the ops without another copy.
    ops = _raw_diff(plain_a, plain_b, _strict_eq)
    patched = apply_patch(a, ops) if ops else a
    patched_bytes = _verified(patched, b, b_bytes)
    if patched_bytes is None:  # pragma: no cover - the strict diff is exact by construction
        raise AssertionError(f"diff could not express the change: {ops!r}")
    return ops, patched, patched_bytes


def diff_in_place(
    doc: JSONValue,
    new: JSONValue,
    *,
    limit: int | None = None,
    new_json: bytes | None = None,
    what: str = "the new value",
) -> tuple[list[Operation], JSONValue] | None:
    """Turn ``doc``, a JSON document you own, into ``new`` in place; return the operations that
    did it (the type-strict patch :func:`diff` gives, values independent copies) and the
    document, which is ``doc`` itself unless the whole of it was replaced (an object by an
    array, say), as :func:`apply_patch_in_place` returns it.

    ``doc`` must hold only plain JSON values (as ``orjson.loads`` or a copy made by this package
    gives them): it is not validated. ``new`` is validated where it differs from ``doc``; a value
    that is not JSON raises :class:`~agui_replay.errors.PatchError` naming ``what`` and the
    place, and leaves ``doc`` as it was. ``new_json``, when given, must be the compact JSON of
    ``new`` (key order kept, as ``orjson.dumps`` writes it), which spares encoding it again.

    ``limit``: the walk stops as soon as the patch's compact JSON is sure to take at least
    ``limit`` bytes, and then ``None`` is returned and ``doc`` is untouched. This is how a
    state sync picks a patch only when it is shorter than the whole document.

    >>> doc = {"step": 1, "notes": ["a"]}
    >>> ops, now = diff_in_place(doc, {"step": 2, "notes": ["a"]})
    >>> ops, now is doc
    ([{'op': 'replace', 'path': '/step', 'value': 2}], True)
    >>> doc
    {'step': 2, 'notes': ['a']}
    >>> diff_in_place(doc, {"other": "document"}, limit=20) is None
    True
    """
    try:
        if new_json is None:
            new_json = dumps(new, sort=False)
        return _diff_in_place(doc, new, new_json, limit)
    except Invalid as exc:
        raise value_error(exc, what) from None


def _diff_in_place(
    a: Any, b: Any, b_bytes: bytes, limit: int | None
) -> tuple[list[Operation], Any] | None:
    """:func:`diff_in_place`, raising :class:`Invalid`: the patch is applied to ``a`` through
    the container references the walk kept (no paths parsed, nothing copied but the new
    values), then checked against ``b_bytes`` and undone when ``==`` hid a change of type."""
    walk = _Walk(operator.eq, room=None if limit is None else limit - 1, writes=True)
    try:
        walk.value(a, b, "", None, None)
    except _TooBig:
        return None
    ops = walk.ops
    _own_values(walk)  # first, so that bad JSON raises before anything changes
    sets = cast(list[tuple[Any, Any, Any, Any]], walk.sets)
    for node, key, value, _ in sets:
        node[key] = value
    log: list[tuple[Any, ...]] = []
    for node, key, value, kind in walk.edits:
        if kind == "add":
            if type(node) is list:
                node.insert(key, value)
                log.append(("pop", node, key))
            else:
                node[key] = value
                log.append(("del", node, key))
        elif type(node) is list:
            log.append(("insert", node, key, node.pop(key)))
        else:
            log.append(_removal(node, key))
    root = walk.root[0] if walk.root else a
    if _verified(root, b, b_bytes) is not None:
        return ops, root
    # 1, 1.0 and True are == in Python: the strict diff settles it, from the document as it was.
    _undo(log)
    for node, key, _, old in reversed(sets):
        node[key] = old
    ops = _raw_diff(a, plain_copy(b, MAX_DEPTH), _strict_eq)
    return ops, apply_patch_in_place(a, ops)


def _own_values(walk: _Walk) -> None:
    """Give each operation the walk marked an independent copy of its value, and its write
    another one for the baseline (raises :class:`Invalid`, naming the place, for bad JSON)."""
    for op, where, index in walk.owned:
        value = op["value"]
        depth = op["path"].count("/")
        try:
            value = op["value"] = plain_copy(value, MAX_DEPTH - depth)
            mine = plain_copy(value, MAX_DEPTH - depth) if type(value) in (dict, list) else value
        except Invalid as exc:
            exc.tokens.extend(reversed(_tokens(op["path"])))
            raise
        entry = where[index]
        where[index] = mine if where is walk.root else (entry[0], entry[1], mine, entry[3])


def _verified(patched: Any, b: Any, b_bytes: bytes) -> bytes | None:
    """The compact JSON of ``patched`` if it is JSON-equal to ``b``, else None (both are JSON
    within MAX_DEPTH: ``b`` passed :func:`_dumps`, ``patched`` is built from it)."""
    patched_bytes = dumps_known(patched)
    if patched_bytes == b_bytes:
        return patched_bytes
    # The same JSON with keys in another order still counts.
    if len(patched_bytes) == len(b_bytes) and dumps(patched, sort=True) == dumps(b, sort=True):
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
    # The checks decode both documents: collections triggered by those containers would scan
    # the whole heap (cost growing faster than the documents), so the collector waits.
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        _checked_json(a, sort=False, what="diff argument a", thorough=True)
        b_bytes = _checked_json(b, sort=False, what="diff argument b", thorough=True)
        return _diff_checked(a, b, b_bytes=b_bytes)[0]
    finally:
        if collecting:
            gc.enable()


def diff_exceeds(a: JSONValue, b: JSONValue, limit: int) -> bool:
    """Whether the compact JSON of ``diff(a, b)`` is sure to take at least ``limit`` bytes,
    found by a walk that stops as soon as it is (a lower bound: ``False`` means "maybe
    shorter"). Neither value is modified or validated; one that is not JSON may raise
    anything, or count as a change.

    >>> diff_exceeds({"a": 1}, {"b": 2}, 7), diff_exceeds([1] * 50, [1] * 49 + [2], 100)
    (True, False)
    """
    walk = _Walk(operator.eq, room=limit - 1)
    try:
        walk.value(a, b, "", None, None)
    except _TooBig:
        return True
    return False
