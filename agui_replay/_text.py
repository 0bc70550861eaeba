"""Short text for messages: a value's repr cut to a size, built only that far."""

from __future__ import annotations

from typing import Any

__all__ = ["short_repr"]


def short_repr(value: Any, room: int = 60) -> str:
    """``repr(value)`` cut to about ``room`` characters, built only that far: any depth or
    size is safe (every nesting level costs at least one character of ``room``)."""
    if room <= 0:
        return ""
    if isinstance(value, dict):
        out = "{"
        for n, (key, item) in enumerate(value.items()):
            if len(out) >= room:
                break
            out += (", " if n else "") + short_repr(key, room - len(out)) + ": "
            out += short_repr(item, room - len(out))
        return out + "}"
    if isinstance(value, (list, tuple)):
        out = "[" if isinstance(value, list) else "("
        for n, item in enumerate(value):
            if len(out) >= room:
                break
            out += (", " if n else "") + short_repr(item, room - len(out))
        return out + ("]" if isinstance(value, list) else ")")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, str) and len(value) > room:
        value = value[:room]
    try:
        return repr(value)[: room + 3]
    except Exception:  # a foreign object whose repr fails
        return f"<{type(value).__name__}>"
