"""The network guard: no connection leaves the machine while a session only replays."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Iterator
from typing import Any

from .modes import NetworkBlockedError

__all__ = ["NetworkGuard"]


def _loopback_host(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _ip_literal(host: str) -> bool:
    # Resolving an address literal needs no network; connect() then decides.
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _allowed_address(family: int, address: Any) -> bool:
    if getattr(socket, "AF_UNIX", None) is not None and family == socket.AF_UNIX:
        return True
    if isinstance(address, (str, bytes)):  # a unix socket path
        return True
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return _loopback_host(address[0])
    return False


def _show_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = str(address[0])
        return f"[{host}]:{address[1]}" if ":" in host else f"{host}:{address[1]}"
    return repr(address)


class NetworkGuard:
    """Refuses non-loopback connections and name lookups while :attr:`active`.

    ``install()`` patches ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``
    for the whole process (every thread: agents often make their requests from worker
    threads); ``uninstall()`` restores what was there. Each refusal raises
    :class:`NetworkBlockedError` *and* is kept in :attr:`violations`.
    """

    def __init__(self, reason: str = "replaying a cassette") -> None:
        self.reason = reason
        self.hint = ""
        self.active = False
        self.violations: list[str] = []
        self._saved: tuple[Any, Any, Any] | None = None
        self._lock = threading.Lock()

    def _block(self, what: str) -> NetworkBlockedError:
        message = (
            f"agui-replay blocked {what} while {self.reason}: a replay never touches the "
            "network. Point the agent's SDK at agui.provider.base_url (or its transports)"
            + (f"; {self.hint}" if self.hint else "")
            + "."
        )
        with self._lock:
            self.violations.append(message)
        return NetworkBlockedError(message)

    def install(self) -> None:
        if self._saved is not None:
            return
        guard = self
        original_connect = socket.socket.connect
        original_connect_ex = socket.socket.connect_ex
        original_getaddrinfo = socket.getaddrinfo
        self._saved = (original_connect, original_connect_ex, original_getaddrinfo)

        def connect(sock: socket.socket, address: Any) -> None:
            if guard.active and not _allowed_address(sock.family, address):
                raise guard._block(f"a connection to {_show_address(address)}")
            return original_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if guard.active and not _allowed_address(sock.family, address):
                raise guard._block(f"a connection to {_show_address(address)}")
            return original_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if guard.active and host is not None:
                name = host.decode("idna") if isinstance(host, bytes) else str(host)
                if name and not _loopback_host(name) and not _ip_literal(name):
                    raise guard._block(f"a name lookup of {name!r}")
            return original_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = getaddrinfo

    def uninstall(self) -> None:
        if self._saved is None:
            return
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = self._saved  # type: ignore[method-assign]
        self._saved = None
        self.active = False

    @contextlib.contextmanager
    def guarding(self, active: bool = True) -> Iterator[NetworkGuard]:
        """Install the guard for the block, refusing connections when ``active``."""
        installed_here = self._saved is None
        self.install()
        before = self.active
        self.active = active or before
        try:
            yield self
        finally:
            self.active = before
            if installed_here:
                self.uninstall()
