"""Zero-config routing of ``aiohttp`` clients, through real pytest runs (pytester), and the
in-memory connection that answers them.

``google-genai``'s async client sends its requests with ``aiohttp`` whenever aiohttp is installed
(Google ADK agents call it that way). During a run the routing gives a request to a provider host
an in-memory connection from aiohttp's own connector (``BaseConnector.connect``): aiohttp writes
the request to it and parses the planned response with its own parser, with no socket. The agents
below build their clients with no base URL; the upstream is a FakeProvider on 127.0.0.1 while
recording, stopped before the replay, which has no network at all (the guard refuses every
non-loopback connection).
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from google import genai  # noqa: F401  (imported once here: pytester drops modules first imported inside)

import agui_replay.providers
import agui_replay.providers._transport._routing
import agui_replay.recording
import agui_replay.server
from agui_replay.providers import FakeProvider, LoopbackServer
from agui_replay.providers._plan import Plan, Request
from agui_replay.providers._transport import _aiohttp
from agui_replay.providers._transport._aiohttp import parse_request
from agui_replay.providers._transport._routing import HostTable, Router
from tests.support.echo_upstream import echo

GEMINI_KEY = "AIzaSyAiohttpRoute-live-key-0123456789ab"
OPENAI_KEY = "sk-proj-aiohttp0route0live0key0abcdef"


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with FakeProvider(function=echo).serve() as server:
        yield server


def _record_then_replay(
    pytester: pytest.Pytester, upstream: LoopbackServer, passed: int
) -> dict[str, Any]:
    # the async tests run on asyncio (aiohttp's loop), as a user's conftest says
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    record = pytester.runpytest("--agui-record", "--agui-upstream", upstream.base_url)
    record.assert_outcomes(passed=passed)
    cassettes = {
        path.relative_to(pytester.path / "cassettes").as_posix(): json.loads(path.read_text())
        for path in sorted((pytester.path / "cassettes").rglob("*.json"))
    }
    text = json.dumps(cassettes)
    assert GEMINI_KEY not in text
    assert OPENAI_KEY not in text
    upstream.close()  # the replay has nowhere to go but the cassettes
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=passed)
    assert f"0 cassette(s) recorded, {passed} replayed" in replay.stdout.str()
    return cassettes


def test_google_genai_async_client_over_aiohttp_records_and_replays(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytester.makepyfile(
        agents=textwrap.dedent(
            f"""
            from google import genai

            # built at import time, no base URL; its async half sends through aiohttp
            GEMINI = genai.Client(api_key="{GEMINI_KEY}")


            async def gemini(ctx):
                with ctx.assistant_message() as message:
                    stream = await GEMINI.aio.models.generate_content_stream(
                        model="gemini-2.0-flash", contents=ctx.last_user_text()
                    )
                    async for chunk in stream:
                        if chunk.text:
                            message.delta(chunk.text)
            """
        )
    )
    pytester.makepyfile(
        test_agents=textwrap.dedent(
            """
            import pytest
            from agents import gemini

            @pytest.mark.anyio
            async def test_gemini(agui):
                from agents import GEMINI
                assert GEMINI._api_client._use_aiohttp()  # the SDK's own choice, unchanged
                events = await agui.arun(gemini, "hallo async gemini")
                assert "".join(e.get("delta", "") for e in events) == "[echo] hallo async gemini"
            """
        )
    )
    cassettes = _record_then_replay(pytester, upstream, 1)
    (call,) = cassettes["test_agents/test_gemini.json"]["runs"][0]["interactions"]
    assert call["provider"] == "gemini"
    assert call["request"]["path"].endswith(
        "/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    )
    assert call["request"]["headers"]["x-goog-api-key"] == "<scrubbed>"
    # every streamed chunk kept as it came: one per text piece, then the finish
    texts = [
        json.loads(chunk["data"].removeprefix("data: "))["candidates"][0]["content"]["parts"][0][
            "text"
        ]
        for chunk in call["response"]["chunks"]
    ]
    assert texts == ["[echo]", " hallo", " async", " gemini", ""]


def _openai_agent(session: str, post: str) -> str:
    """The source of an agent that streams a chat completion from api.openai.com with a plain
    aiohttp session (``session``: the ClientSession arguments, ``post``: more post ones)."""
    return textwrap.dedent(
        f"""
        import json
        import aiohttp
        import pytest

        async def agent(ctx):
            body = {{
                "model": "gpt-4o", "stream": True,
                "messages": [{{"role": "user", "content": ctx.last_user_text()}}],
            }}
            headers = {{"authorization": "Bearer {OPENAI_KEY}"}}
            async with aiohttp.ClientSession({session}) as session:
                async with session.post(
                    "https://api.openai.com/v1/chat/completions", json=body, headers=headers,
                    {post}
                ) as response:
                    assert response.status == 200, await response.text()
                    with ctx.assistant_message() as message:
                        async for line in response.content:
                            if line.startswith(b"data: {{"):
                                delta = json.loads(line[6:])["choices"][0]["delta"]
                                if delta.get("content"):
                                    message.delta(delta["content"])
        """
    )


def test_plain_aiohttp_session_to_openai_keeps_every_chunk(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    # a dead proxy: the routing goes around it
    agent = _openai_agent("", 'proxy="http://127.0.0.1:9",')
    pytester.makepyfile(
        test_raw=agent
        + textwrap.dedent(
            """
            @pytest.mark.anyio
            async def test_raw(agui):
                events = await agui.arun(agent, "one two three")
                assert "".join(e.get("delta", "") for e in events) == "[echo] one two three"
                # the same whether this run records or replays
                (call,) = agui.runs[0].interactions
                assert (call["provider"], call["request"]["path"]) == (
                    "openai", "/v1/chat/completions"
                )
            """
        )
    )
    cassettes = _record_then_replay(pytester, upstream, 1)
    (call,) = cassettes["test_raw/test_raw.json"]["runs"][0]["interactions"]
    assert call["provider"] == "openai"
    assert call["request"]["path"] == "/v1/chat/completions"
    assert call["request"]["headers"]["authorization"] == "<scrubbed>"


def test_a_trust_env_session_behind_a_proxy_records_and_replays(
    pytester: pytest.Pytester, upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recording behind a proxy: HTTP(S)_PROXY point at one (dead here), NO_PROXY exempts only
    # the upstream, and the agent's session reads them (trust_env). The routed requests are
    # answered in process, never through that proxy; while replaying, the guard has the
    # variables out anyway.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", f"127.0.0.1:{upstream.port}")
    monkeypatch.delenv("no_proxy", raising=False)
    pytester.makepyfile(
        test_proxied=_openai_agent("trust_env=True", "")
        + textwrap.dedent(
            """
            @pytest.mark.anyio
            async def test_proxied(agui):
                events = await agui.arun(agent, "behind a proxy")
                assert "".join(e.get("delta", "") for e in events) == "[echo] behind a proxy"
            """
        )
    )
    cassettes = _record_then_replay(pytester, upstream, 1)
    (call,) = cassettes["test_proxied/test_proxied.json"]["runs"][0]["interactions"]
    assert call["provider"] == "openai"


# --- the patch --------------------------------------------------------------------------------


def _router(*extra: str) -> Router:
    def unused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    return Router(HostTable(extra), unused, unused, own=("127.0.0.1", 4321))


def test_outside_a_run_aiohttp_is_untouched() -> None:
    """The patch lives only for the span of a run: before and after, the connector is aiohttp's."""
    original = aiohttp.BaseConnector.connect
    with agui_replay.providers._transport._routing.intercepting(_router()):
        assert aiohttp.BaseConnector.connect is not original
        assert aiohttp.BaseConnector.connect.__wrapped__ is original  # type: ignore[attr-defined]
    assert aiohttp.BaseConnector.connect is original


# --- the in-memory connection ----------------------------------------------------------------


def _answering(plan: Plan, seen: list[tuple[Any, ...]]) -> Router:
    """A router with no loopback server at all: what it answers can only come in process."""

    async def ahandle(request: Request) -> Plan:
        where = {"provider": request.provider, "origin": request.origin}
        seen.append((request.method, request.target, request.headers, request.body, where))
        return plan

    def unused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    return Router(HostTable(["gateway=llm.internal:8443"]), unused, ahandle)


def _chunks(url: str, **post: Any) -> tuple[list[bytes], int]:
    """The response's chunks as ``iter_chunks()`` reads them, and how many connections the
    session's connector then keeps in its pool."""

    async def go() -> tuple[list[bytes], int]:
        connector = aiohttp.TCPConnector()
        try:
            session = aiohttp.ClientSession(
                connector=connector, connector_owner=False, timeout=aiohttp.ClientTimeout(20)
            )
            if "data" not in post:
                post["json"] = {"q": 1}
            async with session, session.post(url, **post) as response:
                assert response.status == 200
                assert response.headers["x-kind"] == "fake"
                out = [chunk async for chunk, _ in response.content.iter_chunks()]
            return out, sum(len(kept) for kept in connector._conns.values())
        finally:
            await connector.close()

    return asyncio.run(go())


def test_a_provider_request_is_answered_in_process_chunk_by_chunk() -> None:
    pieces = [b"data: one\n\n", b"data: t", b"wo\n\n", b"data: [DONE]\n\n"]
    plan = Plan(200, [("x-kind", "fake")], [(0.0, piece) for piece in pieces], streaming=True)
    seen: list[tuple[Any, ...]] = []
    with agui_replay.providers._transport._routing.intercepting(_answering(plan, seen)):
        # a dead proxy and https: neither is reached, nothing is
        got, pooled = _chunks(
            "https://api.openai.com/v1/chat/completions?x=1",
            headers={"Authorization": "Bearer sk-test"},
            proxy="http://127.0.0.1:9",
        )
    assert got == pieces  # each piece its own read, as recorded (a split SSE line included)
    ((method, target, headers, body, kw),) = seen
    assert (method, target, body) == ("POST", "/v1/chat/completions?x=1", b'{"q": 1}')
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["content-type"] == "application/json"
    assert kw == {"provider": "openai", "origin": "https://api.openai.com"}
    assert pooled == 0  # never pooled, so no later request can be handed it


def test_a_user_added_host_keeps_its_port_in_the_origin() -> None:
    plan = Plan(200, [("x-kind", "fake")], [(0.0, b"whole")], streaming=False)
    seen: list[tuple[Any, ...]] = []
    with agui_replay.providers._transport._routing.intercepting(_answering(plan, seen)):
        got, _ = _chunks("http://llm.internal:8443/v1/chat")
    assert b"".join(got) == b"whole"
    assert seen[0][4] == {"provider": "gateway", "origin": "http://llm.internal:8443"}


def test_a_cut_stream_and_a_router_error_reach_the_aiohttp_caller() -> None:
    cut = Plan(200, [("x-kind", "fake")], [(0.0, b"data: half")], streaming=True, cut=True)
    with (
        agui_replay.providers._transport._routing.intercepting(_answering(cut, [])),
        pytest.raises(aiohttp.ClientPayloadError),
    ):
        _chunks("https://api.anthropic.com/v1/messages")

    class Refused(Exception):
        pass

    async def refuse(*args: Any, **kwargs: Any) -> Plan:
        raise Refused("no recorded interaction matches")

    router = Router(HostTable(), refuse, refuse)
    with (
        agui_replay.providers._transport._routing.intercepting(router),
        pytest.raises(Refused, match="no recorded interaction"),
    ):
        _chunks("https://api.anthropic.com/v1/messages")


def test_a_body_in_pieces_and_an_expect_100_continue_reach_the_router() -> None:
    plan = Plan(200, [("x-kind", "fake")], [(0.0, b"ok")], streaming=False)
    seen: list[tuple[Any, ...]] = []

    async def pieces() -> Any:  # a streamed upload: aiohttp sends it chunked, piece by piece
        for i in range(300):
            yield b"%03d" % i * 100

    with agui_replay.providers._transport._routing.intercepting(_answering(plan, seen)):
        got, _ = _chunks("https://api.openai.com/v1/files", data=pieces())
        assert got == [b"ok"]
        got, _ = _chunks("https://api.openai.com/v1/files", data=b"z" * 5000, expect100=True)
        assert got == [b"ok"]
    streamed, expected = seen
    assert streamed[3] == b"".join(b"%03d" % i * 100 for i in range(300))
    assert streamed[2]["transfer-encoding"] == "chunked"
    assert (expected[2]["expect"], expected[3]) == ("100-continue", b"z" * 5000)


def test_a_reader_slower_than_the_response_pauses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 MB of listed chunks leave in 1 MB batches; aiohttp pauses reading past its buffer's
    # high-water mark, and each batch waits for the reader to resume it
    pieces = [b"%06d" % i * 1000 for i in range(500)]
    plan = Plan(200, [("x-kind", "fake")], [(0.0, piece) for piece in pieces], streaming=True)
    pauses: list[int] = []
    original = _aiohttp._MemoryTransport.pause_reading

    def counted(self: Any) -> None:
        pauses.append(1)
        original(self)

    monkeypatch.setattr(_aiohttp._MemoryTransport, "pause_reading", counted)

    async def slowly() -> bytes:
        async with (
            aiohttp.ClientSession() as session,
            session.get("https://api.openai.com/v1/big") as response,
        ):
            got = []
            async for chunk in response.content.iter_chunked(1 << 16):
                got.append(chunk)
                await asyncio.sleep(0)
            return b"".join(got)

    with agui_replay.providers._transport._routing.intercepting(_answering(plan, [])):
        body = asyncio.run(asyncio.wait_for(slowly(), 30))
    assert body == b"".join(pieces)
    assert pauses  # the flow control was used, and the whole body still came


def test_the_request_parser_takes_what_aiohttp_writes() -> None:
    chunked = b"POST /v1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n"
    assert parse_request(chunked) is None  # no last chunk yet
    assert parse_request(chunked + b"0\r\n\r\n") == (
        "POST",
        "/v1",
        {"transfer-encoding": "chunked"},
        b"abcde",
    )
    absolute = b"GET http://llm.internal:8443 HTTP/1.1\r\nHost: llm.internal\r\n\r\n"
    assert parse_request(absolute) == ("GET", "/", {"host": "llm.internal"}, b"")
