"""Terminal output: colours, width, and the short forms of values the commands print."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

from agui_replay._text import clip
from agui_replay.cli._progress import isatty


class _Style:
    """ANSI colours when writing to a terminal (and NO_COLOR is unset), else plain text."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def blue(self, text: str) -> str:
        return self._wrap("34", text)

    def magenta(self, text: str) -> str:
        return self._wrap("35", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def _want_color(args: argparse.Namespace, out: TextIO) -> bool:
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return isatty(out)


def _terminal_width(out: TextIO) -> int:
    if isatty(out):
        try:
            return os.get_terminal_size(out.fileno()).columns
        except (OSError, ValueError):
            pass
    return 120


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def _quoted(text: str, width: int | None) -> str:
    return clip(json.dumps(text, ensure_ascii=False), width)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    return "" if content is None else _compact(content)


def _describe_ops(ops: list[dict[str, Any]], width: int | None) -> str:
    pieces = []
    for op in ops[:4]:
        value = f" {_compact(op['value'])}" if "value" in op else ""
        pieces.append(f"{op['op']} {op['path'] or '/'}{value}")
    more = f" (+{len(ops) - 4} more)" if len(ops) > 4 else ""
    return clip("; ".join(pieces), width) + more


_RAW_LABEL_KEYS = ("event", "type", "name")


def _raw_parts(event: dict[str, Any]) -> tuple[str, Any]:
    """A RAW event's inner event named first (``on_chat_model_stream ChatOpenAI``), and the
    rest of its payload without the fields the label took.

    Frameworks wrap their own events in RAW (LangGraph's ``{"event": "on_chain_start",
    "name": ..., "data": ...}``); cut at the width, every such line would start the same.
    """
    payload = event.get("event")
    if not isinstance(payload, dict):
        return "", payload
    taken = [k for k in _RAW_LABEL_KEYS if isinstance(payload.get(k), str) and payload[k]]
    rest = {k: v for k, v in payload.items() if k not in taken}
    return " ".join(payload[k] for k in taken), rest
