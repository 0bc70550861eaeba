"""Compare a live request with a recorded one and describe the first difference readably."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Difference", "describe_difference", "first_difference"]

# Fields a reader cares about first when two requests differ.
_PRIORITY = (
    "model",
    "system",
    "instructions",
    "messages",
    "input",
    "tools",
    "tool_choice",
    "stream",
)


@dataclass(frozen=True)
class Difference:
    """The first place two requests differ: a dotted path and both values."""

    path: str
    recorded: Any
    received: Any
    missing: str = ""  # "recorded" / "received" when the key exists only on one side
    pointer: str = ""
    """The same place as a JSON pointer (``/body/messages/0/content``)."""


def _key_order(keys: Iterable[str]) -> list[str]:
    ks = set(keys)
    first = [k for k in _PRIORITY if k in ks]
    return first + sorted(ks - set(first))


def _step(pointer: str, key: object) -> str:
    return f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"


def first_difference(
    recorded: Any,
    received: Any,
    path: str = "",
    ignore: frozenset[str] = frozenset(),
    *,
    pointer: str = "",
) -> Difference | None:
    """The first differing leaf (dict keys in reading order, lists by position), or None."""
    if path in ignore:
        return None
    if isinstance(recorded, dict) and isinstance(received, dict):
        for key in _key_order([*recorded, *received]):
            sub = f"{path}.{key}" if path else key
            if sub in ignore:
                continue
            at = _step(pointer, key)
            if key not in received:
                return Difference(sub, recorded[key], None, missing="received", pointer=at)
            if key not in recorded:
                return Difference(sub, None, received[key], missing="recorded", pointer=at)
            diff = first_difference(recorded[key], received[key], sub, ignore, pointer=at)
            if diff is not None:
                return diff
        return None
    if isinstance(recorded, list) and isinstance(received, list):
        for i, (a, b) in enumerate(zip(recorded, received, strict=False)):
            diff = first_difference(a, b, f"{path}[{i}]", ignore, pointer=f"{pointer}/{i}")
            if diff is not None:
                return diff
        if len(recorded) != len(received):
            i = min(len(recorded), len(received))
            sub, at = f"{path}[{i}]", f"{pointer}/{i}"
            if len(recorded) > len(received):
                return Difference(sub, recorded[i], None, missing="received", pointer=at)
            return Difference(sub, None, received[i], missing="recorded", pointer=at)
        return None
    if type(recorded) is type(received) and recorded == received:
        return None
    # 1 == 1.0 in JSON terms, but True is not 1
    numbers = (int, float)
    if (
        isinstance(recorded, numbers)
        and isinstance(received, numbers)
        and not isinstance(recorded, bool)
        and not isinstance(received, bool)
        and recorded == received
    ):
        return None
    return Difference(path or "(whole value)", recorded, received, pointer=pointer)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 300 else text[:300] + "…"


def describe_difference(diff: Difference) -> str:
    """Several readable lines: where, the recorded value, the received value (and a diff)."""
    lines = [f"  first difference at {diff.path}"]
    if diff.missing == "received":
        lines.append(f"    recorded: {_show(diff.recorded)}")
        lines.append("    received: (missing)")
    elif diff.missing == "recorded":
        lines.append("    recorded: (missing)")
        lines.append(f"    received: {_show(diff.received)}")
    else:
        lines.append(f"    recorded: {_show(diff.recorded)}")
        lines.append(f"    received: {_show(diff.received)}")
        a, b = diff.recorded, diff.received
        if isinstance(a, str) and isinstance(b, str) and ("\n" in a or "\n" in b):
            udiff = difflib.unified_diff(
                a.splitlines(), b.splitlines(), "recorded", "received", lineterm="", n=1
            )
            lines.extend("    " + line for line in udiff)
    return "\n".join(lines)
