"""The network guard, one test per route out of the machine.

Every refused call here is made for real while the guard is active; the guard raises before
the system call. Behind it, ``guard_backstop`` stops (and records) anything the guard let
through, so a broken guard fails these tests without a packet leaving. Addresses are
``0.0.0.0`` / ``::`` (not loopback for the guard, and local to Linux anyway) or names whose
lookup the two hooks stop.
"""

from __future__ import annotations

import _socket
import asyncio
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agui_replay.errors import NetworkBlockedError
from agui_replay.recording._guard import NetworkGuard
from tests.support.guard_backstop import backstop

Route = Callable[[], Any]


@pytest.fixture
def guard() -> Iterator[NetworkGuard]:
    guard = NetworkGuard("replaying tests/cassettes/x.json")
    with backstop() as leaks, guard.guarding():
        yield guard
    assert leaks == [], f"the guard let calls through: {leaks}"


def refused(guard: NetworkGuard, route: Route, what: str) -> None:
    before = len(guard.violations)
    with pytest.raises(NetworkBlockedError, match=what) as info:
        route()
    assert isinstance(info.value, ConnectionRefusedError)  # HTTP clients see a failed connect
    assert guard.violations[before:] == [str(info.value)]
    assert "while replaying tests/cassettes/x.json" in str(info.value)


def _udp() -> socket.socket:
    return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def _closing(make: Callable[[], socket.socket], use: Callable[[socket.socket], Any]) -> Route:
    def route() -> Any:
        sock = make()
        try:
            return use(sock)
        finally:
            sock.close()

    return route


# --- name lookups --------------------------------------------------------------------------------


def test_getaddrinfo_of_a_remote_name(guard: NetworkGuard) -> None:
    refused(
        guard, lambda: socket.getaddrinfo("api.openai.com", 443), "name lookup of 'api.openai.com'"
    )


def test_getaddrinfo_bound_before_the_guard_and_the_c_function(guard: NetworkGuard) -> None:
    from socket import getaddrinfo  # a name imported before the guard went up

    refused(guard, lambda: getaddrinfo(b"api.openai.com", 443), "name lookup of 'api.openai.com'")
    refused(guard, lambda: _socket.getaddrinfo("example.org", 80), "name lookup of 'example.org'")


def test_gethostbyname(guard: NetworkGuard) -> None:
    refused(
        guard, lambda: socket.gethostbyname("api.openai.com"), "name lookup of 'api.openai.com'"
    )


def test_gethostbyname_ex(guard: NetworkGuard) -> None:
    refused(guard, lambda: socket.gethostbyname_ex("api.anthropic.com"), "'api.anthropic.com'")


def test_gethostbyaddr(guard: NetworkGuard) -> None:
    refused(guard, lambda: socket.gethostbyaddr("0.0.0.0"), "reverse name lookup of '0.0.0.0'")
    refused(guard, lambda: socket.gethostbyaddr("api.openai.com"), "'api.openai.com'")


def test_getnameinfo(guard: NetworkGuard) -> None:
    # numeric flags: even unguarded this call would resolve nothing
    flags = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    refused(guard, lambda: socket.getnameinfo(("0.0.0.0", 443), flags), r"lookup of 0\.0\.0\.0:443")


def test_asyncio_getaddrinfo(guard: NetworkGuard) -> None:
    async def lookup() -> Any:
        return await asyncio.get_running_loop().getaddrinfo("api.openai.com", 443)

    refused(guard, lambda: asyncio.run(lookup()), "name lookup of 'api.openai.com'")


# --- connections ---------------------------------------------------------------------------------


def test_connect(guard: NetworkGuard) -> None:
    route = _closing(socket.socket, lambda s: s.connect(("0.0.0.0", 9)))
    refused(guard, route, r"a connection to 0\.0\.0\.0:9")


# A host name no lookup is ever made for: IDNA cannot encode it (a label over 63 characters), so
# CPython fails with "encoding of hostname failed" before resolving. The guard must refuse first.
UNRESOLVABLE = "\u00e9" * 70 + ".example"


def test_connect_to_a_name_refused_before_c_resolves_it(guard: NetworkGuard) -> None:
    # CPython resolves a name in the address inside connect(), before its audit event: the
    # guard's Python-level check on socket.socket must refuse before that lookup
    route = _closing(socket.socket, lambda s: s.connect((UNRESOLVABLE, 443)))
    refused(guard, route, "a connection to " + UNRESOLVABLE)
    route = _closing(socket.socket, lambda s: s.connect_ex((UNRESOLVABLE, 443)))
    refused(guard, route, "a connection to " + UNRESOLVABLE)


def test_sendto_and_sendmsg_to_a_name_refused_before_c_resolves_it(guard: NetworkGuard) -> None:
    route = _closing(_udp, lambda s: s.sendto(b"x", (UNRESOLVABLE, 53)))
    refused(guard, route, "data sent to " + UNRESOLVABLE)
    route = _closing(_udp, lambda s: s.sendto(b"x", 0, (UNRESOLVABLE, 53)))
    refused(guard, route, "data sent to " + UNRESOLVABLE)
    route = _closing(_udp, lambda s: s.sendmsg([b"x"], [], 0, (UNRESOLVABLE, 53)))
    refused(guard, route, "data sent to " + UNRESOLVABLE)


def test_the_unresolvable_name_never_reaches_a_resolver() -> None:
    # the premise of the two tests above, unguarded: CPython gives up before any lookup
    sock = socket.socket()
    try:
        with pytest.raises(TypeError, match="encoding of hostname failed"):
            sock.connect((UNRESOLVABLE, 443))
    finally:
        sock.close()


def test_the_python_layer_comes_off_with_the_last_guard() -> None:
    before = {name: socket.socket.__dict__.get(name) for name in ("connect", "sendto")}
    with NetworkGuard().guarding(), NetworkGuard().guarding():
        assert socket.socket.__dict__.get("connect") is not None
    assert {name: socket.socket.__dict__.get(name) for name in ("connect", "sendto")} == before
    assert socket.socket.connect is _socket.socket.connect


def test_connect_ex(guard: NetworkGuard) -> None:
    route = _closing(socket.socket, lambda s: s.connect_ex(("0.0.0.0", 9)))
    refused(guard, route, r"a connection to 0\.0\.0\.0:9")


def test_connect_ipv6(guard: NetworkGuard) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    route = _closing(
        lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM),
        lambda s: s.connect_ex(("::", 9)),
    )
    refused(guard, route, r"a connection to \[::\]:9")


def test_the_c_class_connect_called_directly(guard: NetworkGuard) -> None:
    # _socket.socket is immutable: no monkeypatch reaches it; the audit hook does
    route = _closing(socket.socket, lambda s: _socket.socket.connect(s, ("0.0.0.0", 9)))
    refused(guard, route, r"a connection to 0\.0\.0\.0:9")
    route = _closing(_socket.socket, lambda s: s.connect_ex(("0.0.0.0", 9)))  # type: ignore[arg-type,return-value]
    refused(guard, route, r"a connection to 0\.0\.0\.0:9")


def test_create_connection(guard: NetworkGuard) -> None:
    refused(guard, lambda: socket.create_connection(("0.0.0.0", 9), timeout=1), r"0\.0\.0\.0:9")


def test_asyncio_open_connection(guard: NetworkGuard) -> None:
    async def dial() -> None:
        await asyncio.open_connection("0.0.0.0", 9)

    refused(guard, lambda: asyncio.run(dial()), r"a connection to 0\.0\.0\.0:9")


def test_tcp_sendto_with_fast_open(guard: NetworkGuard) -> None:
    if not hasattr(socket, "MSG_FASTOPEN"):
        pytest.skip("no MSG_FASTOPEN")
    route = _closing(socket.socket, lambda s: s.sendto(b"x", socket.MSG_FASTOPEN, ("0.0.0.0", 9)))
    refused(guard, route, r"data sent to 0\.0\.0\.0:9")


# --- datagrams -----------------------------------------------------------------------------------


def test_udp_sendto(guard: NetworkGuard) -> None:
    route = _closing(_udp, lambda s: s.sendto(b"x", ("0.0.0.0", 9)))
    refused(guard, route, r"data sent to 0\.0\.0\.0:9")


def test_udp_sendto_with_flags(guard: NetworkGuard) -> None:
    route = _closing(_udp, lambda s: s.sendto(b"x", 0, ("0.0.0.0", 53)))
    refused(guard, route, r"data sent to 0\.0\.0\.0:53")


def test_udp_sendmsg_with_an_address(guard: NetworkGuard) -> None:
    route = _closing(_udp, lambda s: s.sendmsg([b"x"], [], 0, ("0.0.0.0", 9)))
    refused(guard, route, r"data sent to 0\.0\.0\.0:9")


def test_udp_connect(guard: NetworkGuard) -> None:
    route = _closing(_udp, lambda s: s.connect(("0.0.0.0", 53)))
    refused(guard, route, r"a connection to 0\.0\.0\.0:53")


# --- every thread --------------------------------------------------------------------------------


def test_a_worker_thread_is_guarded_and_the_violation_kept(guard: NetworkGuard) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _closing(_udp, lambda s: s.sendto(b"x", ("0.0.0.0", 9)))()
        except OSError as error:  # swallowed, as agents do
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert [type(e) for e in errors] == [NetworkBlockedError]
    assert len(guard.violations) == 1
    assert "data sent to 0.0.0.0:9" in guard.violations[0]


# --- what passes ---------------------------------------------------------------------------------


def test_loopback_and_local_routes_pass(guard: NetworkGuard, tmp_path: Any) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with socket.create_connection(("localhost", port), timeout=5):
            pass
        udp = _udp()
        try:
            udp.sendto(b"x", ("127.0.0.1", port))
            udp.sendmsg([b"x"], [], 0, ("127.0.0.1", port))
        finally:
            udp.close()
    finally:
        server.close()
    assert socket.getaddrinfo("localhost", 80)
    assert socket.getaddrinfo(None, 80)
    assert socket.getaddrinfo("0.0.0.0", 80)  # an address literal: no lookup; connect decides
    assert socket.gethostbyname("127.0.0.1") == "127.0.0.1"
    flags = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    assert socket.getnameinfo(("127.0.0.1", 80), flags) == ("127.0.0.1", "80")
    if hasattr(socket, "AF_UNIX"):
        path = str(tmp_path / "s")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(path)
        listener.listen()
        try:
            client = socket.socket(socket.AF_UNIX)
            client.connect(path)
            client.close()
        finally:
            listener.close()
    assert guard.violations == []


def test_an_installed_but_inactive_guard_lets_everything_pass() -> None:
    guard = NetworkGuard()
    flags = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    with guard.guarding(active=False):
        assert not guard.active
        # a remote address, numeric flags: answered here, without a packet
        assert socket.getnameinfo(("192.0.2.1", 443), flags) == ("192.0.2.1", "443")
    assert guard.violations == []


def test_uninstall_disarms() -> None:
    guard = NetworkGuard()
    with guard.guarding():
        assert guard.active
    assert not guard.active
    flags = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
    assert socket.getnameinfo(("0.0.0.0", 443), flags) == ("0.0.0.0", "443")  # numeric: local


# --- proxy variables -----------------------------------------------------------------------------

PROXIES = {
    "HTTP_PROXY": "http://127.0.0.1:3128",
    "HTTPS_PROXY": "http://127.0.0.1:3128",
    "ALL_PROXY": "socks5://127.0.0.1:1080",
    "http_proxy": "http://127.0.0.1:3128",
    "https_proxy": "http://127.0.0.1:3128",
    "all_proxy": "socks5://127.0.0.1:1080",
    "WS_PROXY": "http://127.0.0.1:3128",
}


def test_proxy_variables_are_cleared_while_active_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in PROXIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NO_PROXY", "internal.example")
    monkeypatch.setenv("no_proxy", "internal.example")
    outer, inner = NetworkGuard(), NetworkGuard()
    with outer.guarding():
        assert not any(name in os.environ for name in PROXIES)
        assert os.environ["NO_PROXY"] == os.environ["no_proxy"] == "internal.example"
        import urllib.request

        assert set(urllib.request.getproxies()) <= {"no"}
        with inner.guarding():
            assert not any(name in os.environ for name in PROXIES)
        # the inner guard went down, the outer one is still up: still cleared
        assert not any(name in os.environ for name in PROXIES)
    assert {name: os.environ.get(name) for name in PROXIES} == PROXIES


def test_httpx_built_in_the_span_uses_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    httpx = pytest.importorskip("httpx")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    guard = NetworkGuard()
    with backstop() as leaks, guard.guarding():
        client = httpx.Client(trust_env=True)
        try:
            # Through the proxy it would be a connection to 127.0.0.1:9; without, a name lookup.
            # The class is checked by name: after pytester's in-process runs restore
            # sys.modules, this worker may hold a second copy of httpcore, whose ConnectError
            # then escapes httpx's exception mapping as httpcore's own.
            with pytest.raises(
                Exception, match=r"blocked a name lookup of 'api\.openai\.com'"
            ) as caught:
                client.get("https://api.openai.com/v1/models")
            assert type(caught.value).__name__ == "ConnectError"
        finally:
            client.close()
    assert leaks == []
    assert os.environ["HTTPS_PROXY"] == "http://127.0.0.1:9"
