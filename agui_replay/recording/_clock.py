"""The wall clock of a run: frozen at one instant, except where a signature needs the real one.

Recording and replay see the same instant, so an agent that writes the date into a prompt or a
state sends the same request both times. time-machine (when installed) does the freezing; it
leaves ``time.monotonic`` running, so asyncio timers and HTTP timeouts keep working. botocore's
request signing reads the real clock all the same (see ``_botocore``): AWS refuses a signature
made at another time.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any

from agui_replay.recording._botocore import real_signing_clock


def frozen_clock(instant: str) -> contextlib.AbstractContextManager[Any]:
    """The wall clock frozen at ``instant`` (ISO 8601), botocore's signing clock aside; a no-op
    without time-machine."""
    try:
        import time_machine
    except ImportError:
        return contextlib.nullcontext()
    return _travel(time_machine, instant)


@contextlib.contextmanager
def _travel(time_machine: Any, instant: str) -> Iterator[None]:
    def real_now() -> datetime.datetime:
        now: datetime.datetime = time_machine.escape_hatch.datetime.datetime.now(
            datetime.timezone.utc
        )
        return now

    with time_machine.travel(instant, tick=False), real_signing_clock(real_now):
        yield
