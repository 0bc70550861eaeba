"""Where a value sits in JSON text: the line of a document path, for error messages.

Private; :func:`document_line` is public as ``agui_replay.cassette.document_line``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = ["document_line"]

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _offset_of(text: str, where: Sequence[str | int]) -> int:
    """Character offset where the value at ``where`` starts (or the deepest part found)."""
    idx = _WS.match(text, 0).end()  # type: ignore[union-attr]
    for part in where:
        opener = "{" if isinstance(part, str) else "["
        if text[idx : idx + 1] != opener:
            return idx
        container = idx
        idx = _WS.match(text, idx + 1).end()  # type: ignore[union-attr]
        if isinstance(part, str):
            while text[idx : idx + 1] == '"':
                key, idx = json.decoder.scanstring(text, idx + 1)  # type: ignore[attr-defined]
                idx = _WS.match(text, idx).end() + 1  # type: ignore[union-attr]  # past ':'
                idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
                if key == part:
                    break
                idx = _skip_value(text, idx)
            else:
                return container
        else:
            for _ in range(part):
                if text[idx : idx + 1] in ("]", ""):
                    return container
                idx = _skip_value(text, idx)
    return idx


def _skip_value(text: str, idx: int) -> int:
    _, idx = _DECODER.raw_decode(text, idx)
    idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
    if text[idx : idx + 1] == ",":
        idx = _WS.match(text, idx + 1).end()  # type: ignore[union-attr]
    return idx


def document_line(text: str, where: Sequence[str | int]) -> int | None:
    r"""The 1-based line of ``text`` (JSON) where the value at document path ``where`` starts.

    A path is a list of object keys and array indexes. When the path goes further than the
    document does, the line of the deepest part found; ``None`` when the text is not JSON up
    to there. Works on any JSON text, not only cassettes.

    >>> document_line('{\n "a": [\n  1,\n  2\n ]\n}', ["a", 1])
    4
    """
    try:
        return text.count("\n", 0, _offset_of(text, where)) + 1
    except (ValueError, IndexError, RecursionError):  # broken (or absurdly deep) further on
        return None
