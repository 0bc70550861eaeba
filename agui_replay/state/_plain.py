"""The type check of a snapshot: whether a state's compact JSON says all there is to say.

A snapshot must refuse what is not JSON (NaN and infinity, which orjson writes as ``null``;
enums, UUIDs and the like, which it writes as their value), and nothing else walks the state
then. The plain check would decode the bytes and compare them with the state (``orjson.loads``
and ``==``, several ``dumps`` of work, growing to many at megabytes); instead ``marshal``
serialises the state, which it refuses unless every container and leaf is of an exact built-in
type, and its output is searched for the bit pattern of a NaN or an infinity, which only
appears where ``orjson`` could have written one (and then only if the JSON holds a ``null``).
A ``False`` here means "not shown", never "invalid": the caller then checks the slow way,
which names the place.
"""

from __future__ import annotations

import marshal
from typing import Any

__all__ = ["is_plain"]


def is_plain(value: Any, encoded: bytes) -> bool:
    """Whether ``value``, whose compact JSON orjson wrote as ``encoded``, holds only the exact
    JSON types (tuples too) and no NaN or infinity."""
    try:
        data = marshal.dumps(value, 4)
    except ValueError:  # an enum, a UUID, a subclass of a JSON type...
        return False
    # The search for NaN's shape usually costs less than the one for "null" (without which
    # there is no NaN); when it finds something, or too much to look at, "null" settles it.
    return _finite(data) or b"null" not in encoded


def _finite(data: bytes) -> bool:
    """Whether no float in the marshal (version 4) bytes ``data`` can be NaN or infinite.

    marshal writes a float as ``g`` (``0xe7`` when it is referenced again) and its 8 bytes,
    little-endian: NaN and infinity have all 11 exponent bits set, so their last byte is
    ``0x7f`` or ``0xff`` and the one before it at least ``0xf0``. The bytes are searched for
    that shape; bytes of other records that happen to look like it give a false ``False``
    (never a false ``True``), and so does a document with too many candidates to look at.
    """
    seen, most = 0, 256 + len(data) // 64
    for last in (0x7F, 0xFF):
        at = data.find(last, 8)
        while at != -1:
            if data[at - 1] >= 0xF0 and data[at - 8] in (0x67, 0xE7):
                return False
            seen += 1
            if seen > most:
                return False
            at = data.find(last, at + 1)
    return True
