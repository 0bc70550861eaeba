"""The network guard: no connection leaves the machine while a session only replays.

The guard is a CPython audit hook (PEP 578, ``sys.addaudithook``), added once, the first time a
guard is installed, and inert while no guard is active. CPython raises its ``socket.*`` audit
events inside the C functions themselves, before any system call, so one hook sees every
route a Python program has to the network, however it was reached: ``socket.socket`` methods,
the C class ``_socket.socket`` called directly, a name imported with ``from socket import
getaddrinfo`` before the guard went up, asyncio, ssl. Refused, to anything but loopback:

- ``connect`` / ``connect_ex`` (event ``socket.connect``),
- ``sendto`` (UDP, and TCP with ``MSG_FASTOPEN``) and ``sendmsg`` with an address
  (``socket.sendto``, ``socket.sendmsg``),
- name lookups of anything but ``localhost``: ``getaddrinfo``, ``gethostbyname``,
  ``gethostbyname_ex`` (``socket.getaddrinfo``, ``socket.gethostbyname``), and reverse
  lookups of a non-loopback address: ``gethostbyaddr``, ``getnameinfo``.

An explicit proxy on loopback is no way out either: while a guard is active, a request an
HTTP library writes to a proxy for a host beyond loopback (``CONNECT api.example.com:443``,
or a request line naming the whole URL, ``GET http://api.example.com/ HTTP/1.1``) is refused
before its first byte is sent (``socket.send`` / ``sendall``), whatever the proxy's address.
(The provider routing and the tape of the pytest plugin answer their requests before any
proxy is reached; this is for the rest.)

While a guard is active, the proxy variables (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
any other ``*_PROXY`` but ``NO_PROXY``, in either case) are removed from ``os.environ`` and put
back when the last active guard goes down, so a client built in the guarded span cannot
tunnel out through a proxy on loopback (a ``CONNECT api.openai.com:443`` to 127.0.0.1 would
pass the address check).

What a Python-level guard cannot stop: a subprocess (its own interpreter, no hook), raw
system calls (``ctypes``, ``os.system``), C extensions that open their own sockets (libuv in
uvloop, gRPC's core, libcurl), and a proxy that is not spoken in plain HTTP on the socket
(SOCKS, a proxy reached over TLS). For a hard guarantee, replay in CI without a network
(see ``docs/plugin.md``).

A span that refuses traffic (``guarding(True)``) also shares one default SSL context among the
``httpx2`` / ``httpx`` clients built in it (:func:`.tls.sharing_default_tls`): no TLS can happen
there, so loading a CA bundle per client is wasted. ``NetworkGuard.share_tls = False`` turns
that off (the plugin's ini ``agui_share_tls``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agui_replay.recording._modes import NetworkBlockedError
from agui_replay.recording._tls import sharing_default_tls

__all__ = ["NetworkGuard"]

_log = logging.getLogger("agui_replay.guard")

_LOCAL_FAMILIES = frozenset(
    family
    for family in (getattr(socket, "AF_UNIX", None), getattr(socket, "AF_NETLINK", None))
    if family is not None
)
"""Address families that never leave the machine (unix sockets, the kernel's netlink)."""

_LOCALHOST_NAMES = ("localhost", "localhost.", "ip6-localhost", "ip6-loopback")


def _loopback_host(host: str) -> bool:
    if host.lower() in _LOCALHOST_NAMES:
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


def _host_text(host: Any) -> str:
    if isinstance(host, (bytes, bytearray)):
        try:
            return bytes(host).decode("idna")
        except UnicodeError:
            return bytes(host).decode("utf-8", "replace")
    return str(host)


def _allowed_address(family: Any, address: Any) -> bool:
    if family in _LOCAL_FAMILIES:
        return True
    if isinstance(address, (str, bytes)):  # a unix socket path
        return True
    if isinstance(address, tuple) and address and isinstance(address[0], (str, bytes)):
        return _loopback_host(_host_text(address[0]))
    return False


def _show_address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = _host_text(address[0])
        return f"[{host}]:{address[1]}" if ":" in host else f"{host}:{address[1]}"
    return repr(address)


# --- what each audit event may do ----------------------------------------------------------------
# Each check returns what was refused ("a connection to 192.0.2.1:443"), or None to let it pass.


def _check_connect(args: tuple[Any, ...]) -> str | None:
    sock, address = args[0], args[1]
    if _allowed_address(getattr(sock, "family", None), address):
        return None
    return f"a connection to {_show_address(address)}"


def _check_send(args: tuple[Any, ...]) -> str | None:
    sock, address = args[0], args[1]
    if address is None:  # sendmsg on a connected socket: its connect() was checked
        return None
    if _allowed_address(getattr(sock, "family", None), address):
        return None
    return f"data sent to {_show_address(address)}"


def _check_lookup(args: tuple[Any, ...]) -> str | None:
    host = args[0] if args else None
    if host is None:
        return None
    name = _host_text(host)
    if not name or _loopback_host(name) or _ip_literal(name):
        return None
    return f"a name lookup of {name!r}"


def _check_reverse(args: tuple[Any, ...]) -> str | None:
    target = args[0] if args else None
    host = target[0] if isinstance(target, tuple) and target else target
    if host is not None and _loopback_host(_host_text(host)):
        return None
    shown = _show_address(target) if isinstance(target, tuple) else repr(target)
    return f"a reverse name lookup of {shown}"


_CHECKS: dict[str, Callable[[tuple[Any, ...]], str | None]] = {
    "socket.connect": _check_connect,  # connect() and connect_ex()
    "socket.sendto": _check_send,
    "socket.sendmsg": _check_send,
    "socket.getaddrinfo": _check_lookup,
    "socket.gethostbyname": _check_lookup,  # gethostbyname() and gethostbyname_ex()
    "socket.gethostbyaddr": _check_reverse,
    "socket.getnameinfo": _check_reverse,
}


# --- process-wide state --------------------------------------------------------------------------

_lock = threading.RLock()
_installed: list[NetworkGuard] = []  # in install order; the last active one reports
_armed = False  # some installed guard is active: read by the hook without the lock
_hook_added = False
_saved_proxies: dict[str, str] | None = None


def _proxy_variable(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith("_proxy") and lowered != "no_proxy"


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _armed:
        return
    check = _CHECKS.get(event)
    if check is None:
        return
    guard = _reporting_guard()
    if guard is None:
        return
    what = check(args)
    if what is not None:
        raise guard._block(what)


def _reporting_guard() -> NetworkGuard | None:
    for guard in reversed(_installed):
        if guard._active:
            return guard
    return None


def _refresh() -> None:
    """Arm or disarm the hook, and clear or restore the proxy variables, after a change."""
    global _armed, _saved_proxies
    with _lock:
        armed = any(guard._active for guard in _installed)
        if armed and _saved_proxies is None:
            _saved_proxies = {k: v for k, v in os.environ.items() if _proxy_variable(k)}
            for name in _saved_proxies:
                os.environ.pop(name, None)
        elif not armed and _saved_proxies is not None:
            saved, _saved_proxies = _saved_proxies, None
            os.environ.update(saved)
        _armed = armed


def _add_hook() -> None:
    global _hook_added
    with _lock:
        if not _hook_added:
            sys.addaudithook(_audit)  # for the life of the process; inert while disarmed
            _hook_added = True


# --- the Python-level layer ----------------------------------------------------------------------
# CPython resolves a host *name* in an address tuple (connect(("api.openai.com", 443))) inside
# connect()/sendto()/sendmsg() before it raises their audit event: the lookup would leave
# before the hook could refuse. So while a guard is installed, socket.socket's methods check
# the address first. (The C class _socket.socket called directly has no such layer.)


_PROXY_METHODS = tuple(
    b"%s " % m for m in b"CONNECT GET POST PUT PATCH DELETE HEAD OPTIONS".split()
)


def _proxied_host(data: Any) -> str | None:
    """The host a proxy is asked to reach by ``data``, when it starts an HTTP request to a
    proxy: ``CONNECT host:port HTTP/1.1`` or ``METHOD http(s)://host/... HTTP/1.1``."""
    try:
        head = bytes(memoryview(data)[:512])
    except TypeError:
        return None
    if not head.startswith(_PROXY_METHODS):
        return None
    line = head.split(b"\r\n", 1)[0].split(b" ")
    if len(line) < 2:
        return None
    target = line[1].decode("latin-1")
    if line[0] != b"CONNECT":
        scheme, sep, rest = target.partition("://")
        if not sep or scheme.lower() not in ("http", "https", "ws", "wss"):
            return None  # origin form: a request to the server itself
        target = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    if target.startswith("["):
        return target[1:].partition("]")[0]
    host, sep, port = target.rpartition(":")
    return host if sep and port.isdigit() else target


def _refuse_proxied(sock: Any, data: Any) -> None:
    if not _armed:
        return
    host = _proxied_host(data)
    if host is None or _loopback_host(host):
        return
    guard = _reporting_guard()
    if guard is None:
        return
    error = guard._block(f"a request through a proxy to {host!r}")
    # Some clients (httpcore) take a failed write for a server that answers early and go on
    # to read: with the socket shut, that read ends at once instead of waiting for a timeout.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    raise error


def _refuse_early(sock: Any, address: Any, what: str) -> None:
    if not _armed or address is None:
        return
    guard = _reporting_guard()
    if guard is not None and not _allowed_address(getattr(sock, "family", None), address):
        raise guard._block(f"{what} {_show_address(address)}")


def _guarded_methods(cls: type[socket.socket]) -> dict[str, Any]:
    connect, connect_ex, sendto, sendmsg = cls.connect, cls.connect_ex, cls.sendto, cls.sendmsg
    send, sendall = cls.send, cls.sendall

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        _refuse_early(sock, address, "a connection to")
        return connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        _refuse_early(sock, address, "a connection to")
        return connect_ex(sock, address)

    def guarded_sendto(sock: socket.socket, data: Any, *rest: Any) -> int:
        _refuse_early(sock, rest[-1] if rest else None, "data sent to")
        return sendto(sock, data, *rest)

    def guarded_sendmsg(sock: socket.socket, *args: Any) -> int:
        _refuse_early(sock, args[3] if len(args) > 3 else None, "data sent to")
        return sendmsg(sock, *args)

    def guarded_send(sock: socket.socket, data: Any, *rest: Any) -> int:
        _refuse_proxied(sock, data)
        return send(sock, data, *rest)

    def guarded_sendall(sock: socket.socket, data: Any, *rest: Any) -> None:
        _refuse_proxied(sock, data)
        return sendall(sock, data, *rest)

    return {
        "connect": guarded_connect,
        "connect_ex": guarded_connect_ex,
        "sendto": guarded_sendto,
        "sendmsg": guarded_sendmsg,
        "send": guarded_send,
        "sendall": guarded_sendall,
    }


_METHODS = ("connect", "connect_ex", "sendto", "sendmsg", "send", "sendall")
_originals: dict[str, Any] = {}  # what socket.socket's own __dict__ held (None: inherited)
_patches: dict[str, Any] = {}


def _patch_socket_class() -> None:
    if _patches:
        return
    cls = socket.socket
    _originals.update({name: cls.__dict__.get(name) for name in _METHODS})
    _patches.update(_guarded_methods(cls))
    for name, method in _patches.items():
        setattr(cls, name, method)


def _unpatch_socket_class() -> None:
    cls = socket.socket
    for name, patch in _patches.items():
        if cls.__dict__.get(name) is not patch:
            continue  # patched over since: not ours to undo
        original = _originals.get(name)
        if original is None:
            delattr(cls, name)  # inherited from _socket.socket again
        else:
            setattr(cls, name, original)
    _originals.clear()
    _patches.clear()


class NetworkGuard:
    """Refuses traffic to anything but loopback, and name lookups, while :attr:`active`.

    ``install()`` registers the guard with the process-wide audit hook (every thread: agents
    often make their requests from worker threads); ``uninstall()`` takes it out again. While
    an installed guard is active, the proxy variables are out of ``os.environ``. Each refusal
    raises :class:`NetworkBlockedError` *and* is kept in :attr:`violations`, so a test fails
    even when the agent swallowed the error.
    """

    def __init__(self, reason: str = "replaying a cassette") -> None:
        self.reason = reason
        self.hint = ""
        self.violations: list[str] = []
        self.share_tls = True
        """Whether a refusing :meth:`guarding` span shares one default SSL context among the
        clients built in it (see :mod:`agui_replay.recording._tls`)."""
        self._active = False
        self._installed = False
        self._violation_lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether the guard refuses traffic now (only once installed)."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = bool(value)
        if self._installed:
            _refresh()

    def _block(self, what: str) -> NetworkBlockedError:
        message = (
            f"agui-replay blocked {what} while {self.reason}: a replay never touches the "
            "network. Point the agent's SDK at agui.provider.base_url (or its transports)"
            + (f"; {self.hint}" if self.hint else "")
            + "."
        )
        with self._violation_lock:
            self.violations.append(message)
        _log.debug("refused %s while %s", what, self.reason)
        return NetworkBlockedError(message)

    def install(self) -> None:
        with _lock:
            if self._installed:
                return
            _add_hook()
            _patch_socket_class()
            _installed.append(self)
            self._installed = True
            _refresh()

    def uninstall(self) -> None:
        with _lock:
            if not self._installed:
                return
            _installed.remove(self)
            self._installed = False
            self._active = False
            _refresh()
            if not _installed:
                _unpatch_socket_class()

    @contextlib.contextmanager
    def guarding(self, active: bool = True) -> Iterator[NetworkGuard]:
        """Install the guard for the block, refusing traffic when ``active``; an active block
        also shares the default SSL context (unless :attr:`share_tls` is false)."""
        installed_here = not self._installed
        self.install()
        before = self._active
        self.active = active or before
        try:
            with sharing_default_tls() if active and self.share_tls else contextlib.nullcontext():
                yield self
        finally:
            self.active = before
            if installed_here:
                self.uninstall()
