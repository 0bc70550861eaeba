"""Faults for replayed tests: the recorded conversation, with one thing going wrong.

A fault is applied to one recorded response while a test replays its cassette. Without
``host=`` it hits a model provider's response: ``request=`` is the 0-based index of the test's
provider request (counted over the test's runs, in the order they were recorded). With
``host=`` (``"127.0.0.1:8765"``, ``"api.weather.test"``) it hits one of the test's other
recorded requests (the cassette's ``http`` list): ``request=`` then counts the recorded requests
to that host, in the order the list holds them (a host without a port: to that host on any
port):

>>> from agui_replay import faults
>>> faults.cut(after_chunks=3)
Fault(kind='cut', request=0, after_chunks=3)
>>> faults.status(429, headers={"retry-after": "0"}, times=2)
Fault(kind='status', request=0, code=429, headers=(('retry-after', '0'),), times=2)
>>> faults.timeout(host="127.0.0.1:8765", request=1)
Fault(kind='timeout', request=1, host='127.0.0.1:8765')

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
from urllib.parse import urlsplit

from agui_replay.errors import InvalidArgumentError

__all__ = ["Fault", "cut", "delay", "malformed", "status", "timeout"]

FaultKind = Literal["cut", "status", "delay", "malformed", "timeout"]


@dataclass(frozen=True)
class Fault:
    """One fault, built by :func:`cut`, :func:`status`, :func:`delay`, :func:`malformed` or
    :func:`timeout`; a replay reads its fields (``agui_replay.providers``' reel, which answers
    provider and other hosts' requests alike)."""

    kind: FaultKind
    request: int = 0
    """The 0-based index of the request it hits: among the test's provider requests, or with
    :attr:`host` among the cassette's recorded requests to that host."""
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
    host: str | None = field(default=None, repr=False)
    """``None``: a model provider's request; else the host (``HOST`` or ``HOST:PORT``, lower
    case) of the recorded request it hits."""

    def __repr__(self) -> str:
        shown = [f"kind={self.kind!r}", f"request={self.request}"]
        if self.host is not None:
            shown.append(f"host={self.host!r}")
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
        if self.host is not None:
            args += (", " if args else "") + f"host={self.host!r}"
        sep = ", " if args else ""
        return f"faults.{self.kind}({args}{sep}request={self.request})"


def _index(value: object, what: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"faults.{what}({name}=...) takes a whole number >= 0, got {value!r}"
        )
    return value


def _host(value: object, what: str) -> str | None:
    """``host=`` checked: ``None``, or a host name / address with an optional port, lower
    case (an IPv6 address in brackets: ``[::1]:8000``)."""
    if value is None:
        return None
    hint = (
        f"faults.{what}(host=...) takes the host of a recorded request as its URL writes it, "
        'HOST or HOST:PORT ("127.0.0.1:8765", "api.weather.test")'
    )
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{hint}, got {value!r}")
    text = value.strip().lower()
    if "://" in text or "/" in text or "?" in text or "@" in text or " " in text:
        parts = urlsplit(text if "://" in text else f"//{text}")
        suggestion = f"; write host={parts.netloc.rpartition('@')[2]!r}" if parts.netloc else ""
        raise InvalidArgumentError(f"{hint}, not a URL: got {value!r}{suggestion}")
    try:
        parts = urlsplit(f"//{text}")
        port = parts.port
    except ValueError:
        raise InvalidArgumentError(f"{hint}; {value!r} has a port that is not a number") from None
    if not parts.hostname or (text.endswith(":") and port is None):
        raise InvalidArgumentError(f"{hint}, got {value!r}")
    return text


def _times(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(
            f"faults.{what}(times=...) takes a whole number >= 1 (how many attempts of the "
            f"request it answers), got {value!r}"
        )
    return value


def cut(after_chunks: int, *, request: int = 0, host: str | None = None) -> Fault:
    """The connection drops after ``after_chunks`` recorded chunks of the response (the client
    sees an incomplete body, as from a dying upstream)."""
    return Fault(
        "cut",
        _index(request, "cut", "request"),
        after_chunks=_index(after_chunks, "cut", "after_chunks"),
        host=_host(host, "cut"),
    )


def status(
    code: int,
    *,
    headers: Mapping[str, str] | None = None,
    times: int = 1,
    request: int = 0,
    host: str | None = None,
) -> Fault:
    """The request is answered ``times`` times with HTTP ``code`` (and ``headers``, e.g.
    ``{"retry-after": "0"}``) in the provider's own error shape (with ``host=``: a JSON
    ``{"error": {...}}``), before the recorded response is served: a client that retries
    reaches the recording."""
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
        host=_host(host, "status"),
    )


def delay(seconds: float, *, request: int = 0, host: str | None = None) -> Fault:
    """The response waits ``seconds`` before its first chunk."""
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    if not ok or not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(
            f"faults.delay(seconds) takes a finite number of seconds >= 0, got {seconds!r}"
        )
    return Fault(
        "delay",
        _index(request, "delay", "request"),
        seconds=float(seconds),
        host=_host(host, "delay"),
    )


def malformed(after_chunks: int, *, request: int = 0, host: str | None = None) -> Fault:
    """After ``after_chunks`` recorded chunks, a frame the SDK cannot parse (an SSE event or
    an AWS event stream message whose JSON is cut short); the recorded chunks follow. With
    ``host=``: the bytes ``{"truncated": `` (in an SSE ``data:`` line for an event stream)."""
    return Fault(
        "malformed",
        _index(request, "malformed", "request"),
        after_chunks=_index(after_chunks, "malformed", "after_chunks"),
        host=_host(host, "malformed"),
    )


def timeout(*, times: int = 1, request: int = 0, host: str | None = None) -> Fault:
    """The request fails as the client's own read timeout would, ``times`` times (an SDK that
    retries reaches the recording after that; build the client with ``max_retries=0`` to see
    the timeout error).

    Replayed requests are answered in process, so no socket timeout ever fires; what the HTTP
    library raises is raised instead: ``httpx.ReadTimeout`` / ``httpx2.ReadTimeout`` (openai,
    anthropic), urllib3's ``ReadTimeoutError`` (requests, botocore), aiohttp's
    ``ServerTimeoutError``, ``socket.timeout`` (``http.client``, ``urllib``).
    """
    return Fault(
        "timeout",
        _index(request, "timeout", "request"),
        times=_times(times, "timeout"),
        host=_host(host, "timeout"),
    )
