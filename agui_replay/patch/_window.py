"""Where two compact JSON documents differ: a small container holding every changed byte.

After a snapshot the StateManager keeps the state only as its compact JSON. The next publish
of a small change used to decode all of it (several times the cost of encoding) to diff
against. Both documents are compact JSON written by the same encoder, so every byte before the
first difference and after the last one is shared. :func:`locate` finds the first difference,
follows it down the new document (encoding only siblings to count offsets, the index of a
list item guessed first), and stops at a container small enough to decode whole; from there
up, the first container followed by the same bytes in both documents holds every change. The
old value there is the old document's bytes at the same offsets; decoding just those is
enough to diff.

Why those bytes are the old value: the old document equals the new one up to the start of
that container and from its end on. A JSON parser reading the old document is therefore at
the same place of the same structure when it reaches that start, and if the bytes up to the
shared tail are one complete JSON value (orjson says so when it decodes them, trailing bytes
refused), it reads exactly them there and then goes on as in the new document. :func:`locate`
only proposes; the caller decodes, and falls back to the whole document when that fails.

Private to :mod:`agui_replay.patch`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ._json import _OPTS, _escape

_CHUNK = 64  # items of a list encoded together while counting offsets
_GALLOP = 256  # bytes compared at first when looking for the first difference
_SMALL = 16  # containers up to this length count as small (see _member_holding)
_WHOLE = 256  # containers of up to this many bytes are decoded whole (see locate)
_GUESSES = 6  # guesses at the item holding a place before counting (see _item_at)


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``: runs compared in C,
    doubling, then the one that differs halved. The runs of ``a`` are views, not copies
    (``startswith`` compares a view in place), so the search reads the shared bytes about
    three times and allocates nothing large. (One loop, written out: a search takes some
    twenty steps, and a call per step was a third of its cost.)"""
    limit = min(len(a), len(b))
    view = memoryview(a)
    low, step = 0, _GALLOP
    while True:
        if low >= limit:
            return limit
        high = min(low + step, limit)
        if not b.startswith(view[low:high], low):
            break
        low, step = high, step * 2
    while high - low > 1:  # low bytes shared, and the run low:high differs
        middle = (low + high) >> 1
        if b.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle
    return low


def _length(value: Any) -> int:
    return len(orjson.dumps(value, option=_OPTS))


def _big(value: Any) -> bool:
    kind = type(value)
    return (kind is dict or kind is list or kind is tuple) and len(value) > _SMALL


def _member_holding(node: dict[str, Any], start: int, stop: int, low: int) -> Any:
    """``(key, value, begin, end)`` of the member of ``node`` (encoded at ``start:stop``)
    whose value's encoding, or the comma after it, holds the byte ``low``; or ``None``.

    Members before it are encoded to count offsets; the end of a large one is counted back
    from the end of ``node`` when only small members follow it (the usual large state: a long
    list beside a few settings), so that it is never encoded itself."""
    members = list(node.items())
    last = len(members) - 1
    last_big = next((i for i in range(last, -1, -1) if _big(members[i][1])), -1)
    position = start + 1
    for index, (key, value) in enumerate(members):
        begin = position + len(orjson.dumps(key)) + 1
        if begin > low:  # the change starts in this key or before it
            return None
        if index == last:
            end = stop - 1
        elif index == last_big:
            after = members[index + 1 :]
            end = stop - 1 - sum(len(orjson.dumps(k)) + 2 + _length(v) for k, v in after)
        else:
            end = begin + _length(value)
        if low <= end:
            return key, value, begin, end
        position = end + 1
    return None


def _item_holding(node: Any, start: int, stop: int, low: int) -> Any:
    """:func:`_member_holding` for a list (or tuple): ``(index, item, begin, end)``.

    Offsets are counted a block of items at a time; the block where the change starts is
    halved until one item is left, so about two blocks are encoded beyond what lies before."""
    count = len(node)
    # blocks of about a sixteenth of a short list, so that little is encoded twice
    position, index, size = start + 1, 0, max(1, min(_CHUNK, count // 16))
    while index < count:
        while size > 1 and index + size >= count:  # the last item's end is known: stop - 1
            size //= 2
        if size > 1:
            length = len(orjson.dumps(node[index : index + size], option=_OPTS)) - 2
            if position + length < low:  # the change starts after this block and its comma
                position += length + 1
                index += size
            else:
                size //= 2
            continue
        if position > low:  # the change starts at the comma before this item
            return None
        end = stop - 1 if index == count - 1 else position + _length(node[index])
        if low <= end:
            return index, node[index], position, end
        position = end + 1
        index += 1
    return None


def _item_at(node: Any, start: int, stop: int, low: int) -> Any:
    """``(index, item, begin, end)`` of the item of the list ``node`` (encoded at
    ``start:stop``) whose encoding, or the comma after it, holds the byte ``low``; or ``None``.

    The items of a state's long list are mostly alike, so the index is guessed from where
    ``low`` falls between two items whose offsets are known (at first the list's ends), and
    the guessed item's offset counted by encoding the items between it and the nearer of
    them at once; a miss narrows the two. A list too uneven for a few such guesses is counted
    block by block (:func:`_item_holding`)."""
    count = len(node)
    if not count or low <= start:
        return None
    # Item ``first`` begins at ``before``; the one after the last (``count``) would begin
    # at ``after``: the byte after the list's closing bracket, as after the comma of another.
    first, before, last, after = 0, start + 1, count, stop
    for _ in range(_GUESSES):
        index = first + (low - before) * (last - first) // (after - before)
        index = min(max(index, first), last - 1)
        if index - first <= last - index:
            begin = before if index == first else before + _length(node[first:index]) - 1
            end = begin + _length(node[index])
        else:
            end = after - _length(node[index + 1 : last]) if index + 1 < last else after - 1
            begin = end - _length(node[index])
        if low < begin:
            last, after = index, begin
        elif low > end:
            first, before = index + 1, end + 1
        else:
            return index, node[index], begin, end
        if first >= last:
            return None
    return _item_holding(node, start, stop, low)


def locate(old: bytes, new: bytes, state: Any) -> tuple[str, Any, int, int] | None:
    """``(pointer, value, start, stop)``: the deepest container of ``state`` (whose compact
    JSON is ``new``) whose encoding, ``new[start:stop]``, holds every byte where ``new`` and
    ``old`` differ, and its JSON pointer; ``old`` holds the same place at
    ``old[start : stop + len(old) - len(new)]``. ``None`` when the documents are equal or the
    change reaches the root's own bytes.

    Containers of up to ``_WHOLE`` bytes are not entered: decoding and diffing one whole costs
    less than counting the offsets inside it. The walk follows the first difference down;
    then, from the deepest container reached, the first whose bytes are followed by the same
    bytes in both documents holds the last difference too (one comparison each, in C)."""
    low = common_prefix(old, new)
    if low == len(old) == len(new):
        return None
    shift = len(old) - len(new)
    node: Any = state
    start, stop = 0, len(new)
    pointer = ""
    levels = []
    while stop - start > _WHOLE:
        kind = type(node)
        if kind is dict:
            child = _member_holding(node, start, stop, low)
        elif kind is list or kind is tuple:
            child = _item_at(node, start, stop, low)
        else:
            break
        if child is None or type(child[1]) not in (dict, list, tuple):
            break
        token, node, start, stop = child
        pointer += "/" + (_escape(token) if type(token) is str else str(token))
        levels.append((pointer, node, start, stop))
    after = memoryview(new)
    for pointer, node, start, stop in reversed(levels):
        if stop + shift >= start and old.endswith(after[stop:]):  # old[stop + shift:] is new[stop:]
            return pointer, node, start, stop
    return None
