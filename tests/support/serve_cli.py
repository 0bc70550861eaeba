"""``agui-replay serve`` started as a user starts it: the installed console script on a free
loopback port, stopped with SIGTERM (as Ctrl-C in a shell or a process manager stops it)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("agui-replay")


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]
    out: str = ""
    """What the server wrote to stdout after its URL line, once it has stopped."""
    err: str = ""
    """What it wrote to stderr, once it has stopped."""

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


@contextlib.contextmanager
def serving(*argv: str) -> Iterator[Served]:
    """``agui-replay serve ARGV --speed 0``; yields it once it has printed its URL and stops it
    on the way out. An URL that is not the loopback one fails with what the server said."""
    process = subprocess.Popen(
        [str(SCRIPT), "serve", *argv, "--speed", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    served = Served(process.stdout.readline().strip(), process)
    try:
        if not served.url.startswith("http://127.0.0.1:"):
            raise AssertionError(f"serve printed {served.url!r}, not its URL: {stop(process)[1]}")
        yield served
    finally:
        if process.returncode is None:
            served.out, served.err = stop(process)


def stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM, then its stdout and stderr; killed when it does not stop within 10 s."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()
