"""A second audit hook behind the network guard, for the guard tests.

The guard tests make the calls the guard must refuse. If the guard ever let one through, this
hook, added after the guard's own (so it only runs when the guard did not raise), stops the call
before the system call, so nothing leaves the machine, and records it in ``LEAKS``. It is inert
outside ``backstop()``.

Audit hooks cannot be removed; this one stays for the life of the test process, disarmed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

from agui_replay.recording._guard import NetworkGuard

LEAKS: list[str] = []


class Leak(BaseException):
    """A call the guard let through (a BaseException: no agent code swallows it)."""


_armed = threading.Event()
_LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost", "ip6-loopback"}


def _loopback(host: Any) -> bool:
    text = host.decode() if isinstance(host, bytes) else str(host)
    if text.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _literal(host: Any) -> bool:
    try:
        ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return True


def _leaks(event: str, args: tuple[Any, ...]) -> bool:
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) not in (
            socket.AF_INET,
            socket.AF_INET6,
        ):
            return False
        return not _loopback(address[0])
    if event in ("socket.getaddrinfo", "socket.gethostbyname"):
        host = args[0]
        return host not in (None, "", b"") and not _loopback(host) and not _literal(host)
    if event in ("socket.gethostbyaddr", "socket.getnameinfo"):
        target = args[0]
        host = target[0] if isinstance(target, tuple) else target
        return not _loopback(host)
    return False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _armed.is_set() and event.startswith("socket.") and _leaks(event, args):
        LEAKS.append(f"{event} {args!r}")
        raise Leak(f"the guard let {event} through: {args!r}")


def _audit_events_work() -> bool:
    seen: list[str] = []

    def probe(event: str, args: tuple[Any, ...]) -> None:
        if probing.is_set() and event == "socket.gethostbyname":
            seen.append(event)

    probing = threading.Event()
    sys.addaudithook(probe)
    probing.set()
    try:
        socket.gethostbyname("localhost")  # /etc/hosts: no network either way
    finally:
        probing.clear()
    return bool(seen)


# The guard's hook first (installing a guard once adds it), then ours.
_guard = NetworkGuard()
_guard.install()
_guard.uninstall()
AUDIT_EVENTS_WORK = _audit_events_work()
sys.addaudithook(_hook)


@contextlib.contextmanager
def backstop() -> Iterator[list[str]]:
    """Arm the backstop for the block; yields ``LEAKS`` (emptied first)."""
    if not AUDIT_EVENTS_WORK:  # without audit events neither hook could stop anything
        import pytest

        pytest.skip("this Python raises no socket audit events")
    LEAKS.clear()
    _armed.set()
    try:
        yield LEAKS
    finally:
        _armed.clear()
