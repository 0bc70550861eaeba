"""Where two JSON values differ: one walker and one path syntax, the JSON pointer.

Every "first difference" the package reports goes through :func:`differences`: replay matching
of recorded HTTP requests (``providers``), ``agui-replay serve`` and ``diff --interactions``
(``cli``), the assertions' messages and stream diffs, and a replayed run whose input is not the
recorded one (``recording``). Each place says *where* with the same pointer (``/messages/0/role``),
the syntax ``match_ignore`` globs and the normalize rules take, so a place a message names can be
pasted into a setting as it is.

>>> first_difference({"messages": [{"role": "user"}]}, {"messages": [{"role": "assistant"}]})
Difference(pointer='/messages/0/role', left='user', right='assistant')
>>> first_difference({"n": 1}, {"n": 1.0})
Difference(pointer='/n', left=1, right=1.0)
>>> first_difference({"n": 1}, {"n": 1.0}, numbers="value") is None
True
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "MISSING",
    "Difference",
    "describe",
    "differences",
    "escape",
    "first_difference",
    "json_diff",
    "show",
]

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""Stands for a key or item that only one side has."""

KeyOrder = Callable[[Iterable[str]], list[str]]
"""The order in which an object's keys are visited (default: the left's, then the right's new)."""


@dataclass(frozen=True)
class Difference:
    """One place where two JSON values differ: its pointer and both values there
    (:data:`MISSING` where one side lacks it)."""

    pointer: str
    left: Any
    right: Any

    @property
    def missing(self) -> Literal["left", "right", ""]:
        """Which side lacks the place (``""``: both have it)."""
        if self.left is MISSING:
            return "left"
        if self.right is MISSING:
            return "right"
        return ""

    @property
    def where(self) -> str:
        """The pointer, or ``(the whole value)`` for the root."""
        return self.pointer or "(the whole value)"


def escape(key: object) -> str:
    """One JSON pointer step for ``key`` (``~`` and ``/`` escaped)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def differences(
    left: Any,
    right: Any,
    *,
    limit: int = 5,
    ignore: Callable[[str], bool] | None = None,
    keys: KeyOrder | None = None,
    numbers: Literal["strict", "value"] = "strict",
    pointer: str = "",
) -> list[Difference]:
    """The first ``limit`` places where ``left`` and ``right`` differ, in visiting order.

    Objects are walked key by key (``keys`` orders them), arrays item by item; ``ignore(pointer)``
    leaves a place out with everything below it. ``numbers="strict"`` compares as JSON does
    where types matter (``1``, ``1.0`` and ``true`` all differ); ``"value"`` lets ``1`` equal
    ``1.0`` (never ``true``), for bodies that one serializer writes one way and another the other.
    """
    out: list[Difference] = []
    _walk(left, right, pointer, out, _Walk(limit, ignore, keys, numbers == "value"))
    return out


def first_difference(
    left: Any,
    right: Any,
    *,
    ignore: Callable[[str], bool] | None = None,
    keys: KeyOrder | None = None,
    numbers: Literal["strict", "value"] = "strict",
    pointer: str = "",
) -> Difference | None:
    """The first place where ``left`` and ``right`` differ (``None``: they are equal); the
    options are :func:`differences`'s."""
    found = differences(
        left, right, limit=1, ignore=ignore, keys=keys, numbers=numbers, pointer=pointer
    )
    return found[0] if found else None


def json_diff(a: Any, b: Any, *, limit: int = 5, path: str = "") -> list[tuple[str, Any, Any]]:
    """:func:`differences` as ``(pointer, a, b)`` tuples.

    >>> json_diff({"n": 1, "s": "x"}, {"n": 1.0, "s": "x"})
    [('/n', 1, 1.0)]
    """
    return [(d.pointer, d.left, d.right) for d in differences(a, b, limit=limit, pointer=path)]


@dataclass(frozen=True)
class _Walk:
    limit: int
    ignore: Callable[[str], bool] | None
    keys: KeyOrder | None
    loose_numbers: bool


def _walk(a: Any, b: Any, pointer: str, out: list[Difference], how: _Walk) -> None:
    if len(out) >= how.limit or (how.ignore is not None and pointer and how.ignore(pointer)):
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        names = [*a, *(k for k in b if k not in a)]
        for key in how.keys(names) if how.keys is not None else names:
            _walk(a.get(key, MISSING), b.get(key, MISSING), f"{pointer}/{escape(key)}", out, how)
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else MISSING
            y = b[i] if i < len(b) else MISSING
            _walk(x, y, f"{pointer}/{i}", out, how)
        return
    if not _same(a, b, how.loose_numbers):
        out.append(Difference(pointer, a, b))


def _same(a: Any, b: Any, loose_numbers: bool) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    if type(a) is type(b):
        return bool(a == b)
    numbers = (int, float)
    return (
        loose_numbers
        and isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def show(value: Any, limit: int = 300) -> str:
    """A value as one line of JSON, cut at ``limit`` characters (``(missing)`` for
    :data:`MISSING`)."""
    if value is MISSING:
        return "(missing)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def describe(diff: Difference, left: str = "recorded", right: str = "received") -> str:
    """Readable lines: where, both values under the names given (and a line diff of two
    multi-line strings)."""
    width = max(len(left), len(right))
    lines = [
        f"  first difference at {diff.where}",
        f"    {left + ':':<{width + 1}} {show(diff.left)}",
        f"    {right + ':':<{width + 1}} {show(diff.right)}",
    ]
    a, b = diff.left, diff.right
    if isinstance(a, str) and isinstance(b, str) and ("\n" in a or "\n" in b):
        udiff = difflib.unified_diff(a.splitlines(), b.splitlines(), left, right, lineterm="", n=1)
        lines.extend("    " + line for line in udiff)
    return "\n".join(lines)
