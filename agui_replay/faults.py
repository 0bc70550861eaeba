"""Faults for replayed tests: the recorded conversation, with one thing going wrong.

A fault is applied to one recorded provider response while a test replays its cassette;
``request=`` is the 0-based index of the test's provider request it hits (counted over the
test's runs, in the order they were recorded):

>>> from agui_replay import faults
>>> faults.cut(after_chunks=3)
Fault(kind='cut', request=0, after_chunks=3)
>>> faults.status(429, headers={"retry-after": "0"}, times=2)
Fault(kind='status', request=0, code=429, headers=(('retry-after', '0'),), times=2)

Use them in the marker: ``@pytest.mark.agui(faults=[faults.cut(after_chunks=3)])``. A faulted
test only replays (it never records nor rewrites its cassette), and its events are checked by
its own assertions or snapshot, not compared with the recorded ones. See
``docs/reference/faults.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from agui_replay.errors import InvalidArgumentError

__all__ = ["Fault", "cut", "delay", "malformed", "status", "timeout"]

FaultKind = Literal["cut", "status", "delay", "malformed", "timeout"]


@dataclass(frozen=True)
class Fault:
    """One fault, built by :func:`cut`, :func:`status`, :func:`delay`, :func:`malformed` or
    :func:`timeout`; the replaying fake provider reads its fields."""

    kind: FaultKind
    request: int = 0
    """The 0-based index of the test's provider request it hits."""
    after_chunks: int | None = field(default=None, repr=False)
    """``cut`` / ``malformed``: how many recorded chunks are served first."""
    code: int | None = field(default=None, repr=False)
    """``status``: the HTTP status answered."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """``status``: the headers sent with it."""
    times: int = field(default=1, repr=False)
    """``status`` / ``timeout``: how many attempts of the request it answers."""
    seconds: float = field(default=0.0, repr=False)
    """``delay``: the wait before the first chunk."""

    def __repr__(self) -> str:
        shown = [f"kind={self.kind!r}", f"request={self.request}"]
        if self.after_chunks is not None:
            shown.append(f"after_chunks={self.after_chunks}")
        if self.code is not None:
            shown.append(f"code={self.code}")
        if self.headers:
            shown.append(f"headers={self.headers!r}")
        if self.kind in ("status", "timeout") and self.times != 1:
            shown.append(f"times={self.times}")
        if self.kind == "delay":
            shown.append(f"seconds={self.seconds:g}")
        return f"Fault({', '.join(shown)})"

    def describe(self) -> str:
        """The fault as it is written: ``cut(after_chunks=3, request=0)``."""
        if self.kind in ("cut", "malformed"):
            args = f"after_chunks={self.after_chunks}"
        elif self.kind == "status":
            args = f"{self.code}" + (f", times={self.times}" if self.times != 1 else "")
        elif self.kind == "delay":
            args = f"{self.seconds:g}"
        else:
            args = f"times={self.times}" if self.times != 1 else ""
        sep = ", " if args else ""
        return f"faults.{self.kind}({args}{sep}request={self.request})"


def _index(value: object, what: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"faults.{what}({name}=...) takes a whole number >= 0, got {value!r}"
        )
    return value


def _times(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(
            f"faults.{what}(times=...) takes a whole number >= 1 (how many attempts of the "
            f"request it answers), got {value!r}"
        )
    return value


def cut(after_chunks: int, *, request: int = 0) -> Fault:
    """The connection drops after ``after_chunks`` recorded chunks of the response (the client
    sees an incomplete body, as from a dying upstream)."""
    return Fault(
        "cut",
        _index(request, "cut", "request"),
        after_chunks=_index(after_chunks, "cut", "after_chunks"),
    )


def status(
    code: int,
    *,
    headers: Mapping[str, str] | None = None,
    times: int = 1,
    request: int = 0,
) -> Fault:
    """The request is answered ``times`` times with HTTP ``code`` (and ``headers``, e.g.
    ``{"retry-after": "0"}``) in the provider's own error shape, before the recorded response
    is served: an SDK that retries reaches the recording."""
    if isinstance(code, bool) or not isinstance(code, int) or not 400 <= code <= 599:
        raise InvalidArgumentError(
            f"faults.status(code) takes an HTTP error status from 400 to 599, got {code!r}"
        )
    if headers is not None and not isinstance(headers, Mapping):
        raise InvalidArgumentError(
            f"faults.status(headers=...) takes a mapping of header names to values, got "
            f"{type(headers).__name__}"
        )
    pairs = tuple((str(k).lower(), str(v)) for k, v in (headers or {}).items())
    return Fault(
        "status",
        _index(request, "status", "request"),
        code=code,
        headers=pairs,
        times=_times(times, "status"),
    )


def delay(seconds: float, *, request: int = 0) -> Fault:
    """The response waits ``seconds`` before its first chunk."""
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    if not ok or not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(
            f"faults.delay(seconds) takes a finite number of seconds >= 0, got {seconds!r}"
        )
    return Fault("delay", _index(request, "delay", "request"), seconds=float(seconds))


def malformed(after_chunks: int, *, request: int = 0) -> Fault:
    """After ``after_chunks`` recorded chunks, a frame the SDK cannot parse (an SSE event or
    an AWS event stream message whose JSON is cut short); the recorded chunks follow."""
    return Fault(
        "malformed",
        _index(request, "malformed", "request"),
        after_chunks=_index(after_chunks, "malformed", "after_chunks"),
    )


def timeout(*, times: int = 1, request: int = 0) -> Fault:
    """The request fails as the client's own read timeout would, ``times`` times (an SDK that
    retries reaches the recording after that; build the client with ``max_retries=0`` to see
    the timeout error).

    Replayed requests are answered in process, so no socket timeout ever fires; what the HTTP
    library raises is raised instead: ``httpx.ReadTimeout`` / ``httpx2.ReadTimeout`` (openai,
    anthropic), urllib3's ``ReadTimeoutError`` (requests, botocore), aiohttp's
    ``ServerTimeoutError``, ``socket.timeout`` (``http.client``, ``urllib``).
    """
    return Fault("timeout", _index(request, "timeout", "request"), times=_times(times, "timeout"))
