"""The changed objects of a long list, read from two compact JSON encodings of it.

After a snapshot the StateManager keeps the state only as its compact JSON. A change spread
over a long list of objects (1% of them, say) reaches from the first object to the last, so
:mod:`._window` can only hand back the whole list, and decoding all of the old bytes to diff
them cost more than the snapshot before it. Both encodings were written by the same encoder,
item after item, so each object's bytes stand alone between its neighbours' ``},{``:
splitting both lists there and comparing the pieces in C finds the objects that changed, and
only their old pieces are decoded.

Why a piece is the object it stands for. In the new list (its items all objects: the
caller checks that it :func:`fits`) every item is ``{...}``, and neighbours meet at
``},{``; so the list's inside splits into at least as many pieces as it has items, and into
exactly that many only when no item holds ``},{`` itself (in a string, or between nested
objects). :func:`changed` asks for exactly that many. In the old list nothing is known
beforehand, but a piece wrapped as ``{piece}`` is then never a JSON object when the split
cut an object in two: the first part of a cut object, read on its own, would have to end
where the object ends, and it ends earlier (or inside a string, which then never closes). A
piece that equals the new list's piece at the same place is one of the new objects, so it is
whole; every other old piece is decoded, and :func:`changed` gives up at the first that is
not an object. So when it answers, every old piece is one old item, in order, and the old
list had as many items as the new.

Private to :mod:`agui_replay.patch`.
"""

from __future__ import annotations

import operator
from itertools import compress, count
from typing import Any

import orjson

_SEPARATOR = b"},{"


def fits(items: Any) -> bool:
    """Whether ``items`` is a list that :func:`changed` can read: two objects or more, and
    nothing else (checked before the caller's type check, which costs more)."""
    return type(items) is list and len(items) > 1 and set(map(type, items)) == {dict}


def changed(
    old: bytes, new: bytes, items: list[Any], start: int, stop: int, end: int
) -> tuple[list[int], list[Any], bytes, bytes] | None:
    """``(indexes, olds, old_part, new_part)``: which objects of ``items`` (a list that
    :func:`fits`, whose compact JSON is ``new[start:stop]``) differ from the list encoded as
    ``old[start:end]`` (both lists start at ``start``, where the two documents are alike),
    the old objects there, decoded, and the compact JSON of the lists of just those objects,
    old and new; ``None``
    when that cannot be told from the bytes (another length, ``},{`` inside an item, or an
    old piece that does not decode).

    Indexes are those of pieces whose bytes differ: equal bytes are the same JSON, so no
    other item changed."""
    if not (old.startswith(b"[{", start) and old.endswith(b"}]", start, end)):
        return None
    news = new[start + 2 : stop - 2].split(_SEPARATOR)  # each slice is the one copy made
    if len(news) != len(items):
        return None
    olds = old[start + 2 : end - 2].split(_SEPARATOR)
    if len(olds) != len(news):
        return None
    indexes = list(compress(count(), map(operator.ne, olds, news)))
    if not indexes:  # pragma: no cover - the caller's parts differ
        return None
    decoded = []
    for index in indexes:
        try:  # what decodes between braces is an object
            decoded.append(orjson.loads(b"{%b}" % olds[index]))
        except orjson.JSONDecodeError:
            return None
    old_part = b"[{%b}]" % _SEPARATOR.join(map(olds.__getitem__, indexes))
    new_part = b"[{%b}]" % _SEPARATOR.join(map(news.__getitem__, indexes))
    return indexes, decoded, old_part, new_part
