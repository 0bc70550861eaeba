"""Short text for messages: a value's repr cut to a size, a line clipped to a width, the JSON
name of a value's type, and the record commands a cassette's errors suggest (``cassette``
writes them into a :class:`~agui_replay.errors.CassetteError`; ``recording`` puts the test's
own command in their place)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "JSON_TYPE_NAMES",
    "RECORD_HINT",
    "UNNAMED_RECORD_COMMAND",
    "clip",
    "json_type",
    "short_repr",
]

_NONE = type(None)
JSON_TYPE_NAMES: dict[type, str] = {
    _NONE: "null",
    bool: "boolean",
    int: "integer",
    float: "float",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
}
"""The JSON name of each Python type a JSON value is made of, by exact type."""

# For subclasses, in this order: bool before int, since bool is an int.
_JSON_BASES = tuple((kind, name) for kind, name in JSON_TYPE_NAMES.items() if kind is not _NONE)


def json_type(value: Any) -> str:
    """``"null"``, ``"boolean"``, ``"integer"``, ``"float"``, ``"string"``, ``"array"`` (a list
    or tuple) or ``"object"``; a subclass is named after its JSON base class, and anything else
    by its Python class name.

    >>> [json_type(v) for v in (None, True, 1, 1.5, "a", (), {}, {1})]
    ['null', 'boolean', 'integer', 'float', 'string', 'array', 'object', 'set']
    """
    name = JSON_TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    for kind, name in _JSON_BASES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def clip(text: str, width: int | None) -> str:
    """``text`` on one line (each newline shown as ``⏎``) and at most ``width`` characters, the
    last one ``…`` where it was cut; ``width=None`` keeps it whole.

    >>> clip("first line\\nsecond line", 12)
    'first line⏎…'
    """
    text = text.replace("\n", "⏎")
    if width is None or len(text) <= width:
        return text
    return text[: max(1, width - 1)] + "…"


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


RECORD_HINT = "Record it by running the test with `pytest --agui-record`."
"""What a missing cassette's message says, unless the caller gives its own hint."""

UNNAMED_RECORD_COMMAND = (
    "`pytest path/to/test_file.py::test_name --agui-record` (the test that uses this file)"
)
"""The re-record command a broken cassette's message shows when the file does not say which
test wrote it; the pytest plugin puts the test's own command in its place."""
