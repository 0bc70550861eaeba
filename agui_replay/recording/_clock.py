"""The wall clock of a run: frozen at one instant, except where a signature needs the real one.

Recording and replay see the same instant, so an agent that writes the date into a prompt or a
state sends the same request both times. time-machine (when installed) does the freezing; it
leaves ``time.monotonic`` running, so asyncio timers and HTTP timeouts keep working.

AWS signs every request with the current time (SigV4's ``X-Amz-Date``) and refuses one signed
more than a few minutes away from its own clock, so a Bedrock request signed at the frozen
instant could never be recorded from AWS. botocore reads the time for its signatures through one
function, ``botocore.auth.get_current_datetime``: for the span of the run that one name reads the
real clock. The signing headers take no part in matching and never reach a cassette, so the real
time they carry changes nothing that is stored or compared.
"""

from __future__ import annotations

import contextlib
import datetime
import sys
from collections.abc import Iterator
from typing import Any


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
    with time_machine.travel(instant, tick=False), _real_signing_clock(time_machine):
        yield


@contextlib.contextmanager
def _real_signing_clock(time_machine: Any) -> Iterator[None]:
    auth = sys.modules.get("botocore.auth")
    current = getattr(auth, "get_current_datetime", None)
    if auth is None or current is None:
        yield
        return

    def real_now(remove_tzinfo: bool = True) -> datetime.datetime:
        now: datetime.datetime = time_machine.escape_hatch.datetime.datetime.now(
            datetime.timezone.utc
        )
        return now.replace(tzinfo=None) if remove_tzinfo else now

    setattr(auth, "get_current_datetime", real_now)  # noqa: B010  (a module typed as ModuleType)
    try:
        yield
    finally:
        setattr(auth, "get_current_datetime", current)  # noqa: B010
