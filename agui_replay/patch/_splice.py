"""The byte check of a small patch without encoding the patched baseline.

The StateManager applies each delta to its private baseline in place, and then has to show
that the result is the new state's JSON byte for byte: the diff compares with Python ``==``,
which takes ``1``, ``1.0`` and ``True`` for one another, so a change of type alone can hide
from it. Encoding the whole patched baseline to compare it costs one ``orjson.dumps`` of the
state, as much as the encoding of the state itself.

A patch of a few operations changes the baseline's encoding at a few places only, and the
baseline's encoding before the patch is known (the manager keeps it). :func:`places` says,
for each operation, which bytes of the old encoding it rewrites (``before``) and into what
(``after``): a member ``"key":old`` of an object becomes ``"key":new``, an item ``old`` of a
list ``new``; an inserted item goes in before the item at its index, appended ones after the
last item (and before its ``]``), a new member after the last one; a removed member or item
takes one comma with it. Each ``before`` is built from the baseline as it was, so it occurs
in the old encoding at the place the operation rewrites; :func:`spliced` finds it there by
searching, and trusts the place only when ``before`` occurs exactly once (then that
occurrence is the place). Writing every ``after`` in at its place gives the encoding of the
patched baseline, exactly, and that is compared with the new state's bytes.

Private to :mod:`agui_replay.patch`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ._json import _dumps_known

MOST = 2  # places at most. Each one is a search through the whole old encoding, which costs
# more than its instructions say (a branch at every byte): a tenth of an orjson.dumps of the
# state by valgrind's count, 0.2x-0.8x timed. With 8 places at 100 KB, the 1% cells of
# bench_state.py read 5.4x-5.7x against 4.0x-4.3x with the encoding.

Place = tuple[bytes, bytes]  # (before, after)


def _member(key: str, value: Any) -> bytes:
    return orjson.dumps(key) + b":" + _dumps_known(value)


def places(
    sets: list[tuple[Any, Any, Any, Any]], edits: list[tuple[Any, Any, Any, str]]
) -> list[Place] | None:
    """The places a patch rewrites, from the walk's writes before they are applied: ``sets``,
    ``(node, key, new, old)`` replacements; ``edits``, ``(node, key, value, kind)`` additions
    (``kind`` ``"add"``) and removals, in patch order. ``None`` when they are too many or of
    a shape this does not cover (then the patched baseline is encoded whole): a container
    with more than one edit (but for additions at the end of a list), an edit in an empty
    one. Replacements and an edit in one container are fine: the replacements are applied
    first, at the indexes of the container as it was, and rewrite other bytes (or the places
    overlap, and :func:`spliced` refuses them)."""
    if (not sets and not edits) or len(sets) > MOST:
        return None
    found: list[Place] = []
    for node, key, new, old in sets:
        if type(node) is dict:
            found.append((_member(key, old), _member(key, new)))
        else:
            found.append((_dumps_known(old), _dumps_known(new)))
    if not edits:
        return found
    groups: dict[int, list[tuple[Any, Any, Any, str]]] = {}
    for edit in edits:
        groups.setdefault(id(edit[0]), []).append(edit)
    if len(found) + len(groups) > MOST:
        return None
    for group in groups.values():
        node = group[0][0]
        if not node:
            return None
        place = _list_edits(node, group) if type(node) is list else _dict_edit(node, group)
        if place is None:
            return None
        found.append(place)
    return found


def _list_edits(node: list[Any], group: list[tuple[Any, Any, Any, str]]) -> Place | None:
    length = len(node)
    if all(kind == "add" and key == length + n for n, (_, key, _, kind) in enumerate(group)):
        last = _dumps_known(node[-1])  # items appended: after the last one
        added = b",".join([_dumps_known(value) for _, _, value, _ in group])
        return last + b"]", last + b"," + added + b"]"
    if len(group) != 1:
        return None
    _, index, value, kind = group[0]
    item = _dumps_known(node[index])
    if kind == "add":  # inserted before the item now at its index
        return item, _dumps_known(value) + b"," + item
    if index:  # removed with the comma before it
        return b"," + item, b""
    return (item + b",", b"") if length > 1 else (b"[" + item + b"]", b"[]")


def _dict_edit(node: dict[str, Any], group: list[tuple[Any, Any, Any, str]]) -> Place | None:
    if len(group) != 1:
        return None
    _, key, value, kind = group[0]
    if kind == "add":  # a new key goes last: after the last member
        last = _member(*next(reversed(node.items())))
        return last + b"}", last + b"," + _member(key, value) + b"}"
    member = _member(key, node[key])
    if len(node) == 1:
        return b"{" + member + b"}", b"{}"
    if next(iter(node)) == key:  # the first member: with the comma after it
        return member + b",", b""
    return b"," + member, b""


def spliced(old: bytes, rewrites: list[Place], new: bytes) -> bool:
    """Whether ``old``, the compact JSON of the baseline before the patch (as
    :func:`_dumps_known` writes it), with ``rewrites`` (from :func:`places`) written in, is
    ``new``. ``False`` means "not shown", never "different": a ``before`` that does not occur
    exactly once, or places that overlap, leave it to the encoding."""
    if len(new) - len(old) != sum(len(after) - len(before) for before, after in rewrites):
        return False
    spans: list[tuple[int, int, bytes]] = []
    for before, after in rewrites:
        at = old.find(before)
        if at < 0 or old.find(before, at + 1) >= 0:
            return False
        spans.append((at, at + len(before), after))
    spans.sort()
    parts: list[bytes] = []
    position = 0
    for start, stop, after in spans:  # places that overlap copy some bytes twice: then the
        parts += (old[position:start], after)  # result is longer than ``new``, and refused
        position = stop
    parts.append(old[position:])
    return b"".join(parts) == new
