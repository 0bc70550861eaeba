"""Function-driven turns stream lazily: each yielded delta is on the wire before the next.

The generators below stop after their first delta until the test has *received* that delta, so
a fake that collected the turn first would never answer; every wait has a timeout so such a
regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from agui_replay.errors import ProviderError
from agui_replay.providers import FakeProvider, ProviderRequest, ToolCallDelta, Usage

MESSAGES: Any = [{"role": "user", "content": "hi"}]
WAIT = 10.0  # seconds a generator waits for the test; only reached when streaming is broken


def gated(go: threading.Event, *, asynchronous: bool) -> Any:
    """A turn that yields one word, waits for ``go``, then yields the rest."""

    def words(request: ProviderRequest) -> Iterator[object]:
        yield "first"
        if not go.wait(WAIT):
            raise AssertionError("the first chunk never reached the client")
        yield " second"
        yield " third"

    async def awords(request: ProviderRequest) -> Any:
        for item in words(request):
            yield item

    return awords if asynchronous else words


def content_chunks(stream: Any, go: threading.Event) -> list[str | None]:
    """Read the SDK stream; release the generator once the first text has arrived."""
    seen: list[str | None] = []
    for chunk in stream:
        text = chunk.choices[0].delta.content if chunk.choices else None
        if text == "first":
            # the generator is still blocked: nothing after "first" can have been produced
            assert not go.is_set()
            go.set()
        seen.append(text)
    return seen


@pytest.mark.parametrize("plug", ["loopback, sync generator", "httpx2 transport, async generator"])
def test_openai_sdk_reads_the_first_chunk_before_the_generator_finishes(plug: str) -> None:
    go = threading.Event()
    asynchronous = "async" in plug
    fake = FakeProvider(function=gated(go, asynchronous=asynchronous))
    with fake.serve() as server:
        if plug.startswith("loopback"):
            client = openai.OpenAI(base_url=server.base_url, api_key="k", timeout=WAIT)
        else:
            client = openai.OpenAI(
                base_url="http://fake.invalid/v1",
                api_key="k",
                http_client=httpx2.Client(transport=fake.transport()),
            )
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert content_chunks(stream, go) == ["", "first", " second", " third", None]
        client.close()
    assert go.is_set()
    fake.check()


@pytest.mark.anyio
async def test_async_openai_on_the_async_transport_streams_an_async_generator() -> None:
    go = asyncio.Event()
    progress: list[str] = []

    async def words(request: ProviderRequest) -> Any:
        yield "first"
        progress.append("waiting")
        await asyncio.wait_for(go.wait(), WAIT)
        yield " second"
        yield Usage(input_tokens=3, output_tokens=2)

    fake = FakeProvider()
    fake.generate(words)
    client = openai.AsyncOpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx2.AsyncClient(transport=fake.async_transport()),
    )
    stream = await client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    seen: list[str | None] = []
    usage = None
    async with asyncio.timeout(WAIT):
        async for chunk in stream:
            if chunk.choices:
                seen.append(chunk.choices[0].delta.content)
            usage = chunk.usage or usage
            if seen[-1:] == ["first"] and not go.is_set():
                assert progress == []  # the generator has not run past its first yield
                go.set()
    assert seen == ["", "first", " second", None]
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (3, 2)
    await client.close()
    fake.check()


def test_anthropic_stream_is_lazy_and_usage_yielded_last_still_counts() -> None:
    go = threading.Event()

    def answer(request: ProviderRequest) -> Iterator[object]:
        yield "Let me check."
        assert go.wait(WAIT), "the first chunk never reached the client"
        yield ToolCallDelta('{"city": ', name="get_weather", id="toolu_1")
        yield ToolCallDelta('"Oslo"}')
        yield Usage(input_tokens=7, output_tokens=4)

    fake = FakeProvider()
    fake.generate(answer)
    with fake.serve() as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", timeout=WAIT)
        with client.messages.stream(model="c", max_tokens=9, messages=MESSAGES) as stream:
            for event in stream:
                if event.type == "text" and event.text == "Let me check.":
                    assert not go.is_set()
                    go.set()
            final = stream.get_final_message()
        client.close()
    assert go.is_set()
    assert final.content[0].type == "text"
    tool = final.content[1]
    assert tool.type == "tool_use"
    assert (tool.name, tool.input) == ("get_weather", {"city": "Oslo"})
    assert final.stop_reason == "tool_use"
    # message_start went out before the Usage was yielded; message_delta carries the counts
    assert (final.usage.input_tokens, final.usage.output_tokens) == (7, 4)
    fake.check()


def test_responses_stream_is_lazy_over_the_transport() -> None:
    go = threading.Event()
    fake = FakeProvider()
    fake.generate(gated(go, asynchronous=False))
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx2.Client(transport=fake.transport()),
    )
    deltas = []
    with client.responses.stream(model="m", input="hi") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
                if event.delta == "first":
                    assert not go.is_set()
                    go.set()
        final = stream.get_final_response()
    assert deltas == ["first", " second", " third"]
    assert final.output_text == "first second third"
    client.close()
    fake.check()


def collect_contents(stream: Any, into: list[str | None]) -> None:
    """Append each chunk's content as it arrives (so a later failure keeps what came)."""
    for chunk in stream:
        into.append(chunk.choices[0].delta.content)


async def collect_texts(client: anthropic.AsyncAnthropic, into: list[str]) -> None:
    async with client.messages.stream(model="c", max_tokens=9, messages=MESSAGES) as stream:
        async for event in stream:
            if event.type == "text":
                into.append(event.text)


def broken(request: ProviderRequest) -> Iterator[object]:
    yield "one"
    yield "two"
    raise RuntimeError("boom at three")


def test_a_generator_failing_mid_stream_cuts_the_stream_and_is_reported() -> None:
    fake = FakeProvider(function=broken)
    with fake.serve() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", timeout=WAIT, max_retries=0)
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        received: list[str | None] = []
        with pytest.raises(openai.APIConnectionError):
            collect_contents(stream, received)
        client.close()
    # what was yielded before the failure arrived; no finish chunk, no [DONE]
    assert received == ["", "one", "two"]
    with pytest.raises(ProviderError, match="RuntimeError: boom at three") as info:
        fake.check()
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.anyio
async def test_an_async_generator_failing_mid_stream_on_the_async_transport() -> None:
    async def abroken(request: ProviderRequest) -> Any:
        for item in broken(request):
            yield item

    fake = FakeProvider()
    fake.generate(abroken)
    client = anthropic.AsyncAnthropic(
        base_url="http://fake.invalid",
        api_key="k",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=fake.async_transport()),
    )
    texts: list[str] = []
    # anthropic 2.x lets the transport's error through while iterating (openai wraps it)
    with pytest.raises((anthropic.APIConnectionError, httpx2.RemoteProtocolError)):
        await collect_texts(client, texts)
    assert texts == ["one", "two"]
    await client.close()
    with pytest.raises(ProviderError, match="RuntimeError: boom at three"):
        fake.check()


def test_cut_after_applies_to_a_lazy_turn_and_closes_the_generator() -> None:
    produced: list[str] = []
    closed: list[bool] = []

    def endless(request: ProviderRequest) -> Iterator[object]:
        # long, not infinite, so a fake that collects first fails instead of hanging
        try:
            for n in range(1000):
                produced.append(f"w{n}")
                yield f"w{n}"
        finally:
            closed.append(True)

    fake = FakeProvider()
    fake.generate(endless, cut_after=2)
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=fake.transport()),
    )
    received: list[str | None] = []
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIConnectionError):
        collect_contents(stream, received)
    assert received == ["", "w0", "w1"]
    # the cut stops the generator: it ran one delta past the cut, not to its end
    assert produced == ["w0", "w1", "w2"]
    assert closed == [True]
    client.close()
    fake.check()  # a scripted cut is not a failure of the fake


def test_a_failure_before_the_first_delta_is_still_an_http_500() -> None:
    def refuses(request: ProviderRequest) -> Iterator[object]:
        raise ValueError("no deltas today")
        yield "unreachable"

    fake = FakeProvider()
    fake.generate(refuses)
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=fake.transport()),
    )
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    client.close()
    with pytest.raises(ProviderError, match="ValueError: no deltas today"):
        fake.check()
