"""A one-line progress counter on stderr, for long work over a recording (terminal only)."""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any, TextIO

__all__ = [
    "Progress",
    "isatty",
]


class Progress:
    """A one-line counter on stderr for long work: only on a terminal, only after a while."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = isatty(self.stream) and not os.environ.get("AGUI_REPLAY_NO_PROGRESS")
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def tick(self, done: int) -> None:
        if not self.enabled or done & 0xFF:
            return
        now = time.monotonic()
        if now - self.started < 0.5 or now - self.last < 0.1:
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\r{self.label}: {done}/{self.total} events")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
