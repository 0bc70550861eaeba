"""Where two JSON values differ, as JSON pointers, compared JSON-strictly.

Private infrastructure shared by ``assertions`` (its failure messages and stream diffs) and
``recording`` (a replayed run whose input is not the recorded one). No unit re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agui_replay.patch import json_equal

__all__ = ["MISSING", "json_diff"]

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""Stands in :func:`json_diff`'s output for a key or item only one side has."""


def json_diff(a: Any, b: Any, *, limit: int = 5, path: str = "") -> list[tuple[str, Any, Any]]:
    """The first ``limit`` differences between two JSON values as ``(pointer, a, b)``.

    >>> json_diff({"n": 1, "s": "x"}, {"n": 1.0, "s": "x"})
    [('/n', 1, 1.0)]
    """
    out: list[tuple[str, Any, Any]] = []
    _diff(a, b, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            step = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            _diff(a.get(key, MISSING), b.get(key, MISSING), step, out, limit)
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else MISSING
            y = b[i] if i < len(b) else MISSING
            _diff(x, y, f"{path}/{i}", out, limit)
        return
    if a is MISSING or b is MISSING or not json_equal(a, b):
        out.append((path, a, b))
