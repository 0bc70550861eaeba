"""One default SSL context for the clients built while a test replays (``recording/tls.py``).

Unit tests of ``sharing_default_tls`` (what is shared, what is left alone, what is put back),
of the guard span that enters it, and pytester runs of the plugin: two replayed tests that
build ``openai.OpenAI(api_key=...)`` see one context; recorded, or with ``agui_share_tls =
false``, each builds its own.
"""

from __future__ import annotations

import ssl
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import Any

import certifi
import httpcore2
import httpx
import httpx._transports.default as httpx_default
import httpx2
import httpx2._transports.default as httpx2_default
import openai  # noqa: F401  (imported here: pytester drops modules first imported inside)
import pytest

from agui_replay.recording._guard import NetworkGuard
from agui_replay.recording._tls import sharing_default_tls

CLIENTS: list[Callable[..., Any]] = [httpx2.Client, httpx2.AsyncClient, httpx.Client]
CLIENT_IDS = ["httpx2.Client", "httpx2.AsyncClient", "httpx.Client"]


def context_of(client: Any) -> ssl.SSLContext:
    pool = client._transport._pool
    context = pool._ssl_context
    assert isinstance(context, ssl.SSLContext)
    return context


@pytest.fixture(autouse=True)
def _originals_back() -> Iterator[None]:
    """Every test here leaves the three functions as it found them."""
    before = (
        httpcore2.default_ssl_context,
        httpx2_default.create_ssl_context,
        httpx_default.create_ssl_context,
    )
    yield
    after = (
        httpcore2.default_ssl_context,
        httpx2_default.create_ssl_context,
        httpx_default.create_ssl_context,
    )
    assert all(a is b for a, b in zip(after, before, strict=True))


# --- the span ------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", CLIENTS, ids=CLIENT_IDS)
def test_clients_built_in_the_span_share_one_context(make: Callable[..., Any]) -> None:
    with sharing_default_tls():
        first, second = make(), make()
        assert context_of(first) is context_of(second)
    third, fourth = make(), make()
    assert context_of(third) is not context_of(fourth)
    assert context_of(third) is not context_of(first)


def test_httpx2_and_httpx_keep_their_own_contexts() -> None:
    with sharing_default_tls():
        assert context_of(httpx2.Client()) is not context_of(httpx.Client())
        assert context_of(httpx2.Client()) is context_of(httpx2.AsyncClient())


def test_the_originals_are_back_after_the_last_exit() -> None:
    originals = (httpx2_default.create_ssl_context, httpx_default.create_ssl_context)
    default_ssl_context = httpcore2.default_ssl_context
    with sharing_default_tls():
        assert httpx2_default.create_ssl_context is not originals[0]
        assert httpx_default.create_ssl_context is not originals[1]
        # The public factories are never replaced: their callers own (and may change) what
        # they get, so nothing they return is shared.
        assert httpcore2.default_ssl_context is default_ssl_context
        assert httpx2.create_ssl_context() is not httpx2.create_ssl_context()
        assert httpx.create_ssl_context() is not httpx.create_ssl_context()
    assert httpx2_default.create_ssl_context is originals[0]
    assert httpx_default.create_ssl_context is originals[1]
    assert httpcore2.default_ssl_context is default_ssl_context


def test_the_span_nests() -> None:
    original = httpx2_default.create_ssl_context
    with sharing_default_tls():
        outer = context_of(httpx2.Client())
        with sharing_default_tls():
            assert context_of(httpx2.Client()) is outer
        assert httpx2_default.create_ssl_context is not original  # the outer span is open
        assert context_of(httpx2.Client()) is outer
    assert httpx2_default.create_ssl_context is original
    with sharing_default_tls():  # built once per process: a later span gets it again
        assert context_of(httpx2.Client()) is outer


def test_other_settings_are_not_shared() -> None:
    custom = ssl.create_default_context()
    with sharing_default_tls():
        shared = context_of(httpx2.Client())
        for make in (httpx2.Client, httpx.Client):
            unverified = context_of(make(verify=False))
            assert unverified is not shared
            assert unverified.verify_mode == ssl.CERT_NONE
            assert unverified is not context_of(make(verify=False))
            assert context_of(make(verify=custom)) is custom
        assert context_of(httpx2.Client(trust_env=False)) is not shared
        assert context_of(httpx2.Client(trust_env=False)) is context_of(
            httpx2.Client(trust_env=False)
        )


def test_the_certificate_variables_are_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with sharing_default_tls():
        plain = context_of(httpx.Client())
        monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
        with_file = context_of(httpx.Client())
        assert with_file is not plain
        assert context_of(httpx.Client()) is with_file
        monkeypatch.delenv("SSL_CERT_FILE")
        assert context_of(httpx.Client()) is plain


def test_the_shared_context_verifies_like_the_original() -> None:
    for make, original in (
        (httpx2.Client, httpx2_default.create_ssl_context),
        (httpx.Client, httpx_default.create_ssl_context),
    ):
        fresh = original(verify=True)
        with sharing_default_tls():
            shared = context_of(make())
        assert shared is not fresh
        assert shared.verify_mode == ssl.CERT_REQUIRED
        assert shared.check_hostname
        assert shared.protocol == fresh.protocol
        assert shared.cert_store_stats() == fresh.cert_store_stats()
        if fresh.cert_store_stats()["x509_ca"]:
            assert shared.cert_store_stats()["x509_ca"] > 0


class Spy:
    """A stand-in for ``create_ssl_context``: counts its calls, returns a new context each."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> ssl.SSLContext:
        with self.lock:
            self.calls.append((args, kwargs))
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@pytest.fixture
def spy() -> Iterator[Spy]:
    # Set and put back by hand, not with monkeypatch: its undo would run after our span's exit.
    original = httpx2_default.create_ssl_context
    spy = Spy()
    httpx2_default.create_ssl_context = spy  # type: ignore[assignment]
    try:
        yield spy
    finally:
        httpx2_default.create_ssl_context = original


def test_anything_but_the_default_reaches_the_original_as_given(spy: Spy) -> None:
    with sharing_default_tls():
        create = httpx2_default.create_ssl_context
        assert create is not spy
        create(verify=True, cert="client.pem", trust_env=True)
        create(False)
        create(verify="ca.pem")
        create(True, None, False, "extra")
    assert spy.calls == [
        ((), {"verify": True, "cert": "client.pem", "trust_env": True}),
        ((False,), {}),
        ((), {"verify": "ca.pem"}),
        ((True, None, False, "extra"), {}),
    ]
    assert httpx2_default.create_ssl_context is spy


def test_the_default_is_built_once_across_threads(spy: Spy) -> None:
    seen: list[ssl.SSLContext] = []
    with sharing_default_tls():
        start = threading.Barrier(8)

        def build() -> None:
            start.wait()
            seen.append(context_of(httpx2.Client()))

        threads = [threading.Thread(target=build) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(seen) == 8
    assert all(context is seen[0] for context in seen)
    assert spy.calls == [((), {"verify": True, "cert": None, "trust_env": True})]


def test_a_name_replaced_inside_the_span_is_left_to_its_owner(spy: Spy) -> None:
    with sharing_default_tls():
        ours = httpx2_default.create_ssl_context
        theirs = Spy()
        httpx2_default.create_ssl_context = theirs  # type: ignore[assignment]
    assert httpx2_default.create_ssl_context is theirs
    httpx2_default.create_ssl_context = ours
    # Left behind, ours calls its original once no span is open: nothing is shared.
    assert ours() is not ours()
    assert len(spy.calls) == 2


def test_modules_not_imported_are_not_imported_nor_patched() -> None:
    script = textwrap.dedent(
        """
        import sys
        from agui_replay.recording._tls import sharing_default_tls

        names = ("httpx", "httpx2", "httpcore2")
        with sharing_default_tls():
            assert not any(name in sys.modules for name in names)
            import httpx2  # imported inside the span: patched from the next entry on
            import httpx2._transports.default as default
            original = default.create_ssl_context
            with sharing_default_tls():
                assert default.create_ssl_context is not original
                client = httpx2.Client()
                assert client._transport._pool._ssl_context is (
                    httpx2.Client()._transport._pool._ssl_context
                )
        assert default.create_ssl_context is original
        assert "httpx" not in sys.modules
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


# --- the guard's span ----------------------------------------------------------------------------


def test_a_refusing_guard_span_shares_and_a_recording_one_does_not() -> None:
    guard = NetworkGuard("replaying tests/cassettes/x.json")
    with guard.guarding(True):
        assert context_of(httpx2.Client()) is context_of(httpx2.Client())
    with guard.guarding(False):
        assert context_of(httpx2.Client()) is not context_of(httpx2.Client())
    guard.share_tls = False
    with guard.guarding(True):
        assert guard.active
        assert context_of(httpx2.Client()) is not context_of(httpx2.Client())


# --- through the plugin --------------------------------------------------------------------------

PROJECT = textwrap.dedent(
    """
    import os
    import openai

    SEEN = []

    def agent(ctx):
        ctx.say("hi")

    def built(agui):
        client = openai.OpenAI(api_key="sk-test")  # no base_url, no http_client
        SEEN.append(client._client._transport._pool._ssl_context)  # kept: no id() reuse
        agui.run(agent, "hello")

    def test_one(agui):
        built(agui)

    def test_two(agui):
        built(agui)

    def test_zz_seen():
        assert len(SEEN) == 2
        assert (SEEN[0] is SEEN[1]) == (os.environ["EXPECT_SHARED"] == "1")
    """
)


def run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, shared: bool, *args: str
) -> None:
    monkeypatch.setenv("EXPECT_SHARED", "1" if shared else "0")
    result = pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=3)


def test_replayed_tests_share_one_context_and_recorded_ones_do_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile(test_clients=PROJECT)
    run(pytester, monkeypatch, False, "--agui-record")
    run(pytester, monkeypatch, True)
    run(pytester, monkeypatch, True, "--agui-refresh")  # offline too
    pytester.makeini("[pytest]\nagui_share_tls = false\n")
    run(pytester, monkeypatch, False)
