"""Column sketches: how the StateManager shows, without the previous object, that a publish
after a snapshot is another snapshot.

After a snapshot the StateManager keeps the state only as its compact JSON. To find out that
the next (different) document needs a snapshot too, it used to walk the diff from the object
published last, after checking that its JSON had not changed since (one more encoding). A
sketch makes both unnecessary for the common shape of a large state, a long list of objects:
it holds, for a few string members of those objects, the baseline's values as they were
published (strings: the caller cannot change them behind our back), or their hashes, and
:func:`overflows` compares the new document's values with them a column at a time, inside C
iterators.

The bound is the walk's own (:meth:`_Walk.replace`): with both lists of the same length, the
diff pairs item ``i`` with item ``i``, and a string member whose value differs between them
gives exactly one ``replace`` of at least ``36 + len(path) + len(value) + 2`` bytes. Other
operations only add to the patch, so when these alone reach the budget the walk would have
stopped there too: the outcome is the one the full diff gives.

Private to :mod:`agui_replay.patch`.
"""

from __future__ import annotations

import operator
from itertools import compress
from typing import Any

from ._json import _escape

_MIN_ITEMS = 32  # shorter lists: the walk from the object is cheap enough
_MAX_ROOT = 64  # a root object with more members is not searched for a list
_COLUMNS = 2  # string members sketched per list
_REPLACE = 36 + 2  # a replace's fixed bytes and its string value's quotes (see _Walk.replace)


class Sketch:
    """The baseline's values of a few string members of the objects of its longest list, or
    their hashes.

    ``key`` is the root member holding the list (``None``: the root is the list), ``length``
    the list's length, ``columns`` pairs of member name and the values, item by item; with
    ``values`` false, their hashes instead (``-1``, which ``hash`` never returns, for a value
    that has none). ``reach``: the bound :func:`overflows` would reach against a document that
    differs in every sketched value, with values as long as these (as they were sketched;
    deltas leave it).

    The values themselves are what a new document's are compared with: cheaper than hashing
    both (a new document's strings are fresh, their hashes not computed yet), and the next
    sketch is then the new document's columns as they are. But while the sketched strings are
    also the state's, ``marshal``, the type check of every publish, sees them referenced twice
    and tracks each as a shared object (about half a ``dumps`` more at 10 MB): before the
    same object is checked again, :func:`hashed` turns the values into hashes. (The compiled
    check, where it is built, counts no references, and the StateManager then keeps the
    values.)
    """

    __slots__ = ("_paths", "columns", "key", "length", "reach", "values")

    def __init__(
        self,
        key: str | None,
        length: int,
        columns: list[tuple[str, list[Any]]],
        values: bool = True,
        reach: int = 0,
    ):
        self.key = key
        self.length = length
        self.columns = columns
        self.values = values  # the columns hold the values themselves (else their hashes)
        self.reach = reach
        self._paths: tuple[str, dict[str, list[Any]]] | None = None  # see updated

    def paths(self) -> tuple[str, dict[str, list[Any]]]:
        """The pointer of the list (``""``: the root) and each column by its escaped name,
        found once: :func:`updated` reads them for every delta it follows."""
        if self._paths is None:
            base = "" if self.key is None else "/" + _escape(self.key)
            self._paths = base, {_escape(name): values for name, values in self.columns}
        return self._paths

    def __repr__(self) -> str:
        names = [name for name, _ in self.columns]
        return f"Sketch(key={self.key!r}, length={self.length}, columns={names!r})"


def hashed(sketch: Sketch) -> None:
    """Turn ``sketch``'s values into their hashes, in place (see :class:`Sketch`)."""
    if sketch.values:
        sketch.columns = [(name, _hashes(values)) for name, values in sketch.columns]
        sketch.values = False
        sketch._paths = None


def _hash(value: Any) -> int:
    try:
        return hash(value)
    except TypeError:  # a list or an object: never the same JSON as a string
        return -1


def _hashes(values: list[Any]) -> list[int]:
    try:
        return list(map(hash, values))
    except TypeError:
        return list(map(_hash, values))


def _items_of(state: Any, key: str | None) -> list[Any] | None:
    if key is None:
        return state if type(state) is list else None
    if type(state) is not dict:
        return None
    items = state.get(key)
    return items if type(items) is list else None


def _text_size(values: list[Any]) -> int:
    """The characters of the strings among ``values``."""
    try:
        return len("".join(values))  # join refuses anything but strings
    except TypeError:
        return sum(len(value) for value in values if type(value) is str)


def _each(key: str | None, name: str) -> int:
    """The fewest bytes of a ``replace`` of member ``name`` of an object of the list under
    ``key``, but its index and its value: the walk's fixed bytes, the path's ``/`` and at
    least one digit, the value's quotes (see :func:`overflows`). Kept for the few names a
    manager sketches (each new document asks again for the same ones)."""
    try:
        return _EACH[key, name]
    except KeyError:
        pass
    prefix = 0 if key is None else 1 + len(_escape(key))
    each = _REPLACE + prefix + 3 + len(_escape(name))
    if len(_EACH) < _EACH_KEPT:
        _EACH[key, name] = each
    return each


_EACH: dict[tuple[str | None, str], int] = {}
_EACH_KEPT = 256


def _column(items: list[Any], name: str) -> list[Any] | None:
    try:
        return list(map(operator.itemgetter(name), items))
    except (KeyError, TypeError, IndexError):  # not in every object, or not only objects
        return None


Plan = tuple[str | None, list[str]]
"""Where a sketch looks: the root member holding the longest list (``None``: the root is the
list) and the string members of its objects to take."""


def plan(state: Any) -> Plan | None:
    """Where a sketch of ``state`` looks: its longest list, and the string members of the
    first object of it, the longest name and value first (each changed value weighs its path
    and its length in the bound); ``None`` when there is no long list of such objects.

    Only a choice: a sketch made from a plan that no longer fits the document (cached while
    deltas changed it) still bounds soundly, only less tightly."""
    key: str | None = None
    items: Any = state
    if type(state) is dict:
        if len(state) > _MAX_ROOT:
            return None
        longest = 0
        for name, value in state.items():
            if type(value) is list and len(value) > longest and type(name) is str:
                key, longest = name, len(value)
        if key is None:
            return None
        items = state[key]
    elif type(state) is not list:
        return None
    if len(items) < _MIN_ITEMS or type(items[0]) is not dict:
        return None
    first = items[0]
    names = sorted(
        (name for name, value in first.items() if type(value) is str),
        key=lambda name: -len(name) - len(first[name]),
    )[:_COLUMNS]
    return (key, names) if names else None


def _sketched(items: list[Any], where: Plan, measured: bool = True) -> Sketch | None:
    """The sketch of ``items`` (the list ``where`` names) for the members it names, with its
    reach when ``measured``."""
    key, names = where
    columns = []
    reach = 0
    for name in names:
        values = _column(items, name)
        if values is not None:
            columns.append((name, values))
            if measured:
                reach += _each(key, name) * len(values) + _text_size(values)
    return Sketch(key, len(items), columns, reach=reach) if columns else None


def sketch(state: Any) -> Sketch | None:
    """A sketch of ``state`` (a plain JSON value, as the StateManager's lazy baseline), or
    ``None`` when it has no long list of objects with string members."""
    where = plan(state)
    if where is None:
        return None
    items = _items_of(state, where[0])
    return None if items is None else _sketched(items, where)


def renewed(baseline: Any, state: Any, where: Plan) -> Sketch | None:
    """A sketch of ``baseline`` (a plain JSON value: the StateManager's decoded baseline),
    where :func:`plan` said, when ``state`` looks like another document, for
    :func:`overflows` to prove a snapshot due without the diff; ``None`` otherwise, at the
    cost of a few lookups.

    It looks like one when its list is as long and the first, middle and last objects differ
    from the baseline's in every sketched member. A guess only: the proof is still the bound,
    and where it falls short the diff decides."""
    key, names = where
    items, now = _items_of(baseline, key), _items_of(state, key)
    if items is None or now is None or len(now) != len(items) or not items:
        return None
    for index in (0, len(items) // 2, len(items) - 1):
        old, new = items[index], now[index]
        if type(old) is not dict or type(new) is not dict:
            return None
        for name in names:
            value = new.get(name)  # only a string counts in the bound
            if type(value) is not str or value == old.get(name):
                return None
    # Only read, once: its reach is not needed.
    return _sketched(items, where, measured=False)


def looks_new(previous: Sketch, state: Any) -> bool:
    """Whether ``state`` looks like another document than the one ``previous`` sketches: its
    list as long, and its first, middle and last objects differing in every sketched member.
    The guess of :func:`renewed`, for a sketch kept through deltas: a few lookups, so that a
    delta does not pay for :func:`overflows`."""
    now = _items_of(state, previous.key)
    if now is None or len(now) != previous.length or not now:
        return False
    values = previous.values
    for index in (0, len(now) // 2, len(now) - 1):
        new = now[index]
        if type(new) is not dict:
            return False
        for name, column in previous.columns:
            value = new.get(name)
            if type(value) is not str:
                return False
            if (value if values else hash(value)) == column[index]:
                return False
    return True


def overflows(
    previous: Sketch, state: Any, room: int, hashed: bool = False
) -> tuple[bool, Sketch | None]:
    """Whether the diff from the baseline ``previous`` sketches to ``state`` spends ``room``
    bytes (then a snapshot is due), and then the sketch of ``state`` for the same members (of
    hashes when ``hashed``).

    The caller must still check that ``state`` holds only the exact JSON types (the
    StateManager's ``marshal`` check) before it relies on a ``True``: a subclass of ``str``
    could hash and compare as it likes."""
    items = _items_of(state, previous.key)
    if items is None or len(items) != previous.length:
        return False, None
    fresh: list[tuple[str, list[Any]]] = []
    bound = reach = 0
    for name, was in previous.columns:
        now = _column(items, name)
        if now is None:
            return False, None
        if previous.values:
            compared = now
            fresh.append((name, _hashes(now) if hashed else now))
        else:
            compared = _hashes(now)
            fresh.append((name, compared if hashed else now))
        each = _each(previous.key, name)
        try:
            total, strings = len("".join(now)), True  # join refuses anything but strings
        except TypeError:
            total, strings = _text_size(now), False
        reach += each * len(now) + total
        if bound >= room:
            continue  # only the sketch of state is still needed
        # Each path is prefix + "/" + index (at least one digit) + "/" + name. Only values
        # that are strings now are counted, where they differ from the baseline's (or their
        # hashes do: equal strings hash equal). A value of another type is never the same
        # JSON as a string (a tuple is != the list it encodes as, so a container's != would
        # say nothing).
        if strings and all(map(operator.ne, was, compared)):
            bound += each * len(now) + total  # a new document changes every value: all count
            continue
        flags = list(map(operator.ne, was, compared))
        changed = [value for value in compress(now, flags) if isinstance(value, str)]
        bound += each * len(changed) + len("".join(changed))
    if bound >= room:
        return True, Sketch(previous.key, len(items), fresh, not hashed, reach)
    return False, None


def updated(previous: Sketch | None, ops: list[dict[str, Any]]) -> Sketch | None:
    """``previous`` after the baseline took the patch ``ops`` (its columns changed in place),
    or ``None`` when an operation changes what it cannot follow: the list itself, whole
    objects of it, or which objects hold a sketched member."""
    if previous is None:
        return None
    base, columns = previous.paths()
    inside = base + "/"
    for op in ops:
        path = op["path"]
        if base and not path.startswith(inside):
            if base.startswith(path + "/") or path in (base, ""):
                return None  # the list, or a container holding it, changed as a whole
            continue
        parts = path[len(base) + 1 :].split("/", 2)
        if len(parts) < 2:
            return None  # an object of the list added, removed or replaced
        column = columns.get(parts[1])
        if column is None or len(parts) == 3:
            continue  # another member, or inside a sketched one (still not a string)
        if op["op"] != "replace":
            return None
        value = op["value"]
        if previous.values:  # a string is kept; any other value differs from every string
            column[int(parts[0])] = value if type(value) is str else None
        else:
            column[int(parts[0])] = _hash(value)
    return previous
