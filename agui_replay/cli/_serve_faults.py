"""The faults a served stream carries: read from ``serve``'s flags or one request's
``X-AGUI-Replay-Fault`` header, and the writes they make of a run's events.

Events are counted from 0: ``cut-after=N`` sends events 0 to N-1 and drops the connection,
``error-after=N`` sends them and a RUN_ERROR, ``drop=N`` leaves event N out, ``duplicate=N`` sends
it twice and ``garble=N`` sends it as a ``data:`` line that is not JSON; ``delay=S`` holds the
first event S seconds. A fault past a run's last event changes nothing (the log says so).

Every fault but a slow start or a RUN_ERROR breaks the stream where the client cannot follow it,
and ``@ag-ui/client`` 1.0 applies events asynchronously (an rxjs ``concatMap`` over an async
function, one event after the other) while an error from the fetch reader, from ``JSON.parse``
or from its event verifier travels down the same pipe at once: the ``concatMap`` forwards it
immediately and drops the events still queued behind the one being applied. Events and a fault
that arrive in one read are then lost together. So the events before a fault are written, and
the fault waits :data:`GRACE` seconds after them: they reach the page and are applied first
(unless its handlers take longer than that).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from agui_replay.events import WireEvent
from agui_replay.sse import encode_sse

__all__ = [
    "FAULT_FORMS",
    "FAULT_HEADER",
    "GRACE",
    "Faults",
    "garbled",
    "parse_faults",
]

FAULT_HEADER = "X-AGUI-Replay-Fault"
FAULT_FORMS = (
    "cut-after=N, error-after=N, delay=S, drop=N, duplicate=N or garble=N (N an event, counted "
    "from 0; S seconds), several separated by commas, or none"
)
GRACE = 0.5
"""Seconds between the events before a fault and the fault (see the module docstring)."""


@dataclass(frozen=True)
class Faults:
    """What one stream does wrong: each ``None`` (or a 0 delay) is a fault it does not have."""

    delay: float = 0.0
    cut_after: int | None = None
    error_after: int | None = None
    drop: int | None = None
    duplicate: int | None = None
    garble: int | None = None

    def __str__(self) -> str:
        said = [
            f"{f.name.replace('_', '-')}={getattr(self, f.name):g}"
            for f in fields(self)
            if getattr(self, f.name) not in (None, 0.0)
        ]
        return ", ".join(said) or "none"

    @property
    def stop(self) -> int | None:
        """How many events are sent before the stream ends on a fault (``None``: all)."""
        return self.cut_after if self.cut_after is not None else self.error_after

    def past(self, count: int) -> list[str]:
        """The faults at an event a run of ``count`` events does not have."""
        return [
            f"{f.name.replace('_', '-')}={value}"
            for f in fields(self)
            if f.name != "delay" and (value := getattr(self, f.name)) is not None and value >= count
        ]

    def within(self, count: int) -> Faults:
        """These faults without those past a run of ``count`` events."""
        kept: dict[str, Any] = {
            f.name: value
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None and (f.name == "delay" or value < count)
        }
        return Faults(**kept)


def parse_faults(value: str) -> Faults:
    """The faults a ``X-AGUI-Replay-Fault`` header value asks for; a ``ValueError`` saying what
    is wrong with it, naming the header, the value and the accepted forms."""
    given: dict[str, Any] = {}
    names = {f.name.replace("_", "-"): f.name for f in fields(Faults)}
    for part in (p.strip() for p in value.split(",")):
        if part.lower() == "none" and value.strip().lower() == "none":
            return Faults()
        name, equals, number = (s.strip() for s in part.partition("="))
        field = names.get(name.lower())
        if field is None or not equals or field in given:
            raise ValueError(_wrong(value, part, "repeated" if field in given else "unknown"))
        try:
            given[field] = _number(field, number)
        except ValueError:
            raise ValueError(_wrong(value, part, "number")) from None
    if "cut_after" in given and "error_after" in given:
        raise ValueError(_wrong(value, "", "both"))
    return Faults(**given)


def _number(field: str, text: str) -> float | int:
    if field == "delay":
        seconds = float(text)
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(text)
        return seconds
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _wrong(value: str, part: str, why: str) -> str:
    reason = {
        "unknown": f"{part!r} is not a fault",
        "repeated": f"{part!r} is given twice",
        "number": f"{part!r} needs a whole number of events >= 0 (delay: seconds >= 0)",
        "both": "cut-after and error-after both end the stream: give one",
    }[why]
    return f"{FAULT_HEADER}: {value!r}: {reason}; accepted: {FAULT_FORMS}"


def garbled(event: WireEvent) -> bytes:
    """``event`` as an SSE frame whose ``data:`` is not JSON: its JSON cut in the middle."""
    text = encode_sse(event)[len(b"data: ") : -2]
    return b"data: " + text[: max(1, len(text) // 2)] + b"\n\n"
