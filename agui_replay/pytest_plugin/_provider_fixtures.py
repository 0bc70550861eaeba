"""pytest fixtures for the fake providers (re-exported by ``agui_replay.pytest_plugin``).

- ``fake_provider``: a fresh :class:`FakeProvider`, its loopback server stopped after the test.
  When the test body passes, the fake is checked: an error inside the fake (a request beyond the
  script, a replay mismatch) or a scripted turn never requested fails the test. Opt out of the
  unused-turn check with ``@pytest.mark.agui_allow_unused_turns``.
- ``fake_provider_server``: the running :class:`LoopbackServer` of ``fake_provider``.
- ``openai_client`` / ``async_openai_client`` / ``anthropic_client``: the real SDK clients
  pointed at that server with a dummy key and ``max_retries=0`` (so each request consumes
  exactly one scripted turn, scripted 429/500 included).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import anthropic
    import openai

    from agui_replay.providers import FakeProvider, LoopbackServer

__all__ = [
    "anthropic_client",
    "async_openai_client",
    "fake_provider",
    "fake_provider_server",
    "openai_client",
    "pytest_configure",
    "pytest_runtest_call",
]

_DUMMY_KEY = "sk-agui-replay-fake"
_ALLOW_MARKER = "agui_allow_unused_turns"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_ALLOW_MARKER}: the fake_provider may keep scripted turns nobody requested",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    # Checked here rather than in fixture teardown so the test shows as FAILED (not ERROR),
    # and only when the body passed: a failing test already says what went wrong.
    result = yield
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    fake = funcargs.get("fake_provider")
    # This hook runs for every test; the fake's module is loaded only for tests that use it.
    if fake is None:
        return result
    from agui_replay.errors import AguiReplayError
    from agui_replay.providers import FakeProvider

    if isinstance(fake, FakeProvider):
        allow = item.get_closest_marker(_ALLOW_MARKER) is not None
        try:
            fake.check(allow_unused=True if allow else None)
        except AguiReplayError as exc:
            # The script is the test's: name its line, not the plugin's and the fake's frames.
            path, line, name = item.reportinfo()
            where = f"{_shown(path, item)}:{(line or 0) + 1}"
            raise pytest.fail.Exception(
                f"{type(exc).__name__}: {exc}\n(checked when {name} at {where} had passed)",
                pytrace=False,
            ) from None
    return result


def _shown(path: Any, item: pytest.Item) -> str:
    import os

    try:
        return os.path.relpath(str(path), item.config.invocation_params.dir)
    except ValueError:  # another drive (Windows)
        return str(path)


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A fresh FakeProvider; script it with ``fake_provider.reply(...)``."""
    from agui_replay.providers import FakeProvider

    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake_provider_server(fake_provider: FakeProvider) -> Iterator[LoopbackServer]:
    """The fake's loopback server (``.base_url`` for OpenAI, ``.anthropic_base_url``)."""
    with fake_provider.serve() as server:
        yield server


@pytest.fixture
def openai_client(fake_provider_server: LoopbackServer) -> Iterator[openai.OpenAI]:
    """``openai.OpenAI`` talking to ``fake_provider`` over the loopback server."""
    import openai

    with openai.OpenAI(
        base_url=fake_provider_server.base_url, api_key=_DUMMY_KEY, max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def async_openai_client(
    fake_provider_server: LoopbackServer,
) -> AsyncIterator[openai.AsyncOpenAI]:
    """``openai.AsyncOpenAI`` talking to ``fake_provider`` (needs an async test runner)."""
    import openai

    async with openai.AsyncOpenAI(
        base_url=fake_provider_server.base_url, api_key=_DUMMY_KEY, max_retries=0
    ) as client:
        yield client


@pytest.fixture
def anthropic_client(fake_provider_server: LoopbackServer) -> Iterator[anthropic.Anthropic]:
    """``anthropic.Anthropic`` talking to ``fake_provider`` over the loopback server."""
    import anthropic

    with anthropic.Anthropic(
        base_url=fake_provider_server.anthropic_base_url, api_key=_DUMMY_KEY, max_retries=0
    ) as client:
        yield client
