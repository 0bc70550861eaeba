"""The network guard through real pytest runs (pytester, in process): the span it covers.

While a test replays, the guard is up from the ``agui`` fixture's setup to the end of its
teardown: the fixtures set up after it (the agent's SDK client), the test, their teardown; the
proxy variables are out of the environment for that span and back after it. The
``guard_backstop`` hook stands behind the guard for every run here.
"""

from __future__ import annotations

import os
import socket
import textwrap
import threading
from collections.abc import Iterator

import pytest

import agui_replay.recording  # noqa: F401  (imported here: pytester drops modules first imported inside)
from tests.support.guard_backstop import backstop

AGENT = textwrap.dedent(
    """
    def agent(ctx):
        ctx.say("hi")
    """
)


def run(pytester: pytest.Pytester, *args: str, unguarded: bool = False) -> pytest.RunResult:
    options = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)
    if unguarded or "--agui-record" in args:  # the tests here only dial 0.0.0.0: local
        return pytester.runpytest(*options)
    with backstop() as leaks:
        result = pytester.runpytest(*options)
    assert leaks == [], f"the guard let calls through: {leaks}"
    return result


def recorded(pytester: pytest.Pytester, conftest: str, test: str) -> pytest.Pytester:
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_guarded=AGENT + textwrap.dedent(test))
    # recording is never guarded: the same fixtures pass while it records
    run(pytester, "--agui-record").assert_outcomes(passed=1)
    return pytester


DIAL = """
import socket, pytest

def dial():
    try:
        socket.create_connection(("0.0.0.0", 9), timeout=1).close()
    except OSError:
        pass  # swallowed, as SDKs and agents do
"""


def test_a_fixture_set_up_after_agui_is_guarded(pytester: pytest.Pytester) -> None:
    conftest = DIAL + textwrap.dedent(
        """
        @pytest.fixture
        def client(agui):
            dial()  # e.g. an SDK client that fetches something when it is built
            return object()
        """
    )
    recorded(
        pytester,
        conftest,
        """
        def test_hello(agui, client):
            assert agui.run(agent)[-1]["type"] == "RUN_FINISHED"
        """,
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*NetworkBlockedError: agui-replay blocked a connection to 0.0.0.0:9 while replaying*"]
    )


def test_a_fixture_teardown_is_guarded(pytester: pytest.Pytester) -> None:
    conftest = DIAL + textwrap.dedent(
        """
        @pytest.fixture
        def client(agui):
            yield object()
            dial()  # e.g. a client that reports telemetry when it closes
        """
    )
    recorded(
        pytester,
        conftest,
        """
        def test_hello(agui, client):
            assert agui.run(agent)[-1]["type"] == "RUN_FINISHED"
        """,
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_hello*", "*blocked a connection to 0.0.0.0:9*"]
    )


def test_the_agui_fixture_teardown_is_guarded(pytester: pytest.Pytester) -> None:
    # an ASGI app's lifespan shutdown runs in the agui fixture's own teardown
    test = DIAL + textwrap.dedent(
        """
        import contextlib
        from starlette.applications import Starlette
        from starlette.routing import Route
        from agui_replay.server import agui_app

        @contextlib.asynccontextmanager
        async def lifespan(app):
            yield
            dial()

        app = Starlette(routes=[Route("/", agui_app(agent))], lifespan=lifespan)

        def test_hello(agui):
            assert agui.run(app)[-1]["type"] == "RUN_FINISHED"
        """
    )
    recorded(pytester, "", test)
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*blocked a connection to 0.0.0.0:9*"])


def test_a_worker_thread_of_the_agent_is_guarded(pytester: pytest.Pytester) -> None:
    test = DIAL + textwrap.dedent(
        """
        import threading

        def udp_agent(ctx):
            def work():
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                    try:
                        udp.sendto(b"x", ("0.0.0.0", 9))
                    except OSError:
                        pass
            thread = threading.Thread(target=work)
            thread.start()
            thread.join(10)
            ctx.say("hi")

        def test_hello(agui):
            assert agui.run(udp_agent)[-1]["type"] == "RUN_FINISHED"
        """
    )
    recorded(pytester, "", test)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*blocked data sent to 0.0.0.0:9 while replaying*"])


def test_a_test_without_agui_is_not_guarded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain=DIAL
        + textwrap.dedent(
            """
            def test_plain():
                with pytest.raises(ConnectionRefusedError) as info:
                    socket.create_connection(("0.0.0.0", 9), timeout=1)
                assert type(info.value) is ConnectionRefusedError  # the kernel's, not the guard's
            """
        )
    )
    run(pytester, unguarded=True).assert_outcomes(passed=1)


# --- proxy variables -----------------------------------------------------------------------------


class Proxy:
    """A loopback listener standing in for a local HTTPS proxy: what reached it."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(4096))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.server.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    listener = Proxy()
    try:
        yield listener
    finally:
        listener.close()


def test_proxy_variables_are_cleared_for_the_guarded_span_and_restored(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, proxy: Proxy
) -> None:
    pytest.importorskip("httpx")
    conftest = textwrap.dedent(
        """
        import httpx, pytest

        @pytest.fixture
        def http(agui):
            # built in the guarded span: trust_env finds no proxy variable
            with httpx.Client(trust_env=True, timeout=5) as client:
                yield client
        """
    )
    test = """
        import os, httpx, pytest

        def test_hello(agui, http):
            for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
                assert name not in os.environ
            assert os.environ["NO_PROXY"] == "internal.example"  # NO_PROXY stays
            if os.environ.get("AGUI_TEST_DIAL"):
                # without the proxy: a name lookup, which the guard refuses
                with pytest.raises(httpx.ConnectError):
                    http.get("https://api.openai.com/v1/models")
            assert agui.run(agent)[-1]["type"] == "RUN_FINISHED"

        def test_after():
            for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
                assert os.environ.get(name) == os.environ.get("PROXY_EXPECTED")
        """
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_guarded=AGENT + textwrap.dedent(test))
    monkeypatch.setenv("NO_PROXY", "internal.example")
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    run(pytester, "--agui-record", "-k", "hello").assert_outcomes(passed=1, deselected=1)

    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    monkeypatch.setenv("PROXY_EXPECTED", proxy.url)
    monkeypatch.setenv("AGUI_TEST_DIAL", "1")
    result = run(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*blocked a name lookup of 'api.openai.com' while replaying*"])
    assert proxy.received == []  # no CONNECT api.openai.com:443 reached the proxy
    assert os.environ["HTTPS_PROXY"] == os.environ["ALL_PROXY"] == proxy.url  # and they are back
