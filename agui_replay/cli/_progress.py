"""A one-line progress counter on stderr, for long work over a recording (terminal only).

Only the command line shows one: library functions take an optional ``progress(done, total)``
callback, and the command passes a :class:`Progress` (which is such a callable) to them.
"""

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
    """A one-line counter on stderr for long work: only on a terminal, only after a while.

    Call it as ``progress(done, total)``, the callback the library functions take (the line
    is cleared once ``done`` reaches ``total``), or ``progress.tick(done)``; :meth:`close` it
    (``with contextlib.closing(Progress(...))``) so that the line is cleared however the work
    ends. Called, it starts its clock at the first call, so a counter made before its work
    waits as long.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = isatty(self.stream) and not os.environ.get("AGUI_REPLAY_NO_PROGRESS")
        self.started = time.monotonic()
        self.called = False
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

    def __call__(self, done: int, total: int) -> None:
        if not self.called:  # the work starts now, not when the counter was made
            self.called, self.started = True, time.monotonic()
        self.total = total
        if done >= total:
            self.close()
        else:
            self.tick(done)

    def close(self) -> None:
        if self.shown:
            self.shown = False
            self.stream.write("\r\033[K")
            self.stream.flush()


def isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
