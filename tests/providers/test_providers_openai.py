"""The fake provider speaks OpenAI Chat Completions, checked with the real openai SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
import openai
import pytest

from agui_replay.errors import ProviderError, ScriptExhaustedError
from agui_replay.providers import FakeProvider, Reasoning, Text, ToolCall, Usage

MESSAGES: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def raw_frames(fake: FakeProvider, body: dict[str, Any]) -> list[bytes]:
    """The body of one request as the network chunks the fake wrote (in-process, exact)."""
    with (
        httpx2.Client(transport=fake.transport()) as client,
        client.stream("POST", "http://fake/v1/chat/completions", json=body) as response,
    ):
        return list(response.iter_raw())


def sse_json(frame: bytes) -> Any:
    text = frame.decode()
    assert text.startswith("data: "), text
    assert text.endswith("\n\n"), text
    return json.loads(text[len("data: ") : -2])


# --- wire format ------------------------------------------------------------------------------


def test_text_streams_in_exactly_the_scripted_chunks() -> None:
    fake = FakeProvider()
    fake.reply("Hel", "lo")
    frames = raw_frames(fake, {"model": "gpt-4o", "messages": MESSAGES, "stream": True})
    # role chunk, two content chunks, the finish chunk, [DONE]: one network write each
    assert len(frames) == 5
    assert frames[-1] == b"data: [DONE]\n\n"
    chunks = [sse_json(f) for f in frames[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"gpt-4o"}
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert [c["choices"][0]["delta"] for c in chunks[1:3]] == [
        {"content": "Hel"},
        {"content": "lo"},
    ]
    assert chunks[3]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert all("usage" not in c for c in chunks)  # only sent when include_usage is asked
    assert frames[1] == (
        b'data: {"id":"' + chunks[1]["id"].encode() + b'","object":"chat.completion.chunk",'
        b'"created":' + str(chunks[1]["created"]).encode() + b',"model":"gpt-4o",'
        b'"system_fingerprint":"' + chunks[1]["system_fingerprint"].encode() + b'",'
        b'"choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]}'
        b"\n\n"
    )


def test_tool_call_fragments_carry_the_header_on_the_first_fragment_only() -> None:
    fake = FakeProvider()
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}', id="call_1")
    frames = raw_frames(fake, {"model": "m", "messages": MESSAGES, "stream": True})
    deltas = [sse_json(f)["choices"][0]["delta"] for f in frames[1:3]]
    assert deltas == [
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"ci'},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]},
    ]
    assert sse_json(frames[3])["choices"][0]["finish_reason"] == "tool_calls"


def test_usage_chunk_when_stream_options_include_usage() -> None:
    fake = FakeProvider()
    fake.reply("x", usage=Usage(input_tokens=7, output_tokens=3))
    body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    chunks = [sse_json(f) for f in raw_frames(fake, body)[:-1]]
    assert all("usage" in c for c in chunks)
    assert [c["usage"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_ids_and_created_are_deterministic_per_seed_and_turn() -> None:
    def ids(seed: int) -> list[tuple[str, int]]:
        fake = FakeProvider(seed=seed)
        fake.reply("a")
        fake.reply("b")
        body = {"model": "m", "messages": [], "stream": True}
        firsts = [sse_json(raw_frames(fake, body)[0]) for _ in range(2)]
        return [(c["id"], c["created"]) for c in firsts]

    first, again, other = ids(1), ids(1), ids(2)
    assert first == again
    assert first[0][0] != first[1][0]  # each turn its own id
    assert first[1][1] == first[0][1] + 1  # created advances with the turn number
    assert {i for i, _ in first}.isdisjoint({i for i, _ in other})
    assert all(i.startswith("chatcmpl-") for i, _ in first)


# --- the real SDK over the loopback server (fixtures) -----------------------------------------


def test_sdk_streams_text(fake_provider: FakeProvider, openai_client: openai.OpenAI) -> None:
    fake_provider.reply("Hel", "lo")
    stream = openai_client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    contents = [c.choices[0].delta.content for c in stream if c.choices]
    assert contents == ["", "Hel", "lo", None]
    assert fake_provider.last_request.model == "gpt-4o"
    assert fake_provider.last_request.messages == MESSAGES
    assert fake_provider.last_request.stream is True


def test_sdk_reassembles_tool_call_fragments(
    fake_provider: FakeProvider, openai_client: openai.OpenAI
) -> None:
    fake_provider.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    with openai_client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, tools=TOOLS
    ) as stream:
        fragments = [
            e.arguments_delta for e in stream if e.type == "tool_calls.function.arguments.delta"
        ]
        final = stream.get_final_completion()
    assert fragments == ['{"ci', 'ty": "Paris"}']
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    assert calls[0].function.name == "get_weather"
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    assert calls[0].id.startswith("call_")
    assert fake_provider.last_request.tool_names == ["get_weather"]


def test_sdk_several_tool_calls_in_one_turn(
    fake_provider: FakeProvider, openai_client: openai.OpenAI
) -> None:
    fake_provider.tool_calls(
        ToolCall("get_weather", '{"city": ', '"Paris"}'),
        ToolCall("get_time", '{"tz": "CET"}'),
    )
    with openai_client.chat.completions.stream(model="m", messages=MESSAGES, tools=TOOLS) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"tz": "CET"}),
    ]
    assert calls[0].id != calls[1].id


def test_sdk_non_streaming(fake_provider: FakeProvider, openai_client: openai.OpenAI) -> None:
    fake_provider.reply("Hel", "lo", usage=Usage(input_tokens=5, output_tokens=2))
    fake_provider.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    first = openai_client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert first.object == "chat.completion"
    assert first.choices[0].message.content == "Hello"
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None
    assert first.usage.total_tokens == 7
    second = openai_client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    calls = second.choices[0].message.tool_calls or []
    assert second.choices[0].message.content is None
    assert calls[0].function.arguments == '{"city": "Paris"}'
    assert first.id != second.id


def test_sdk_reasoning_and_finish_reason(
    fake_provider: FakeProvider, openai_client: openai.OpenAI
) -> None:
    fake_provider.turn(Reasoning("Let me ", "think"), Text("Answer"), finish_reason="length")
    chunks = list(openai_client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    reasoning = [
        getattr(c.choices[0].delta, "reasoning_content", None) for c in chunks if c.choices
    ]
    assert [r for r in reasoning if r] == ["Let me ", "think"]
    assert chunks[-1].choices[0].finish_reason == "length"


@pytest.mark.anyio
async def test_async_sdk_streams(
    fake_provider: FakeProvider, async_openai_client: openai.AsyncOpenAI
) -> None:
    fake_provider.reply("Hel", "lo")
    fake_provider.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    stream = await async_openai_client.chat.completions.create(
        model="m", messages=MESSAGES, stream=True
    )
    text = [c.choices[0].delta.content async for c in stream if c.choices]
    assert "".join(t or "" for t in text) == "Hello"
    async with async_openai_client.chat.completions.stream(
        model="m", messages=MESSAGES, tools=TOOLS
    ) as s:
        final = await s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}


# --- in-process transports --------------------------------------------------------------------


def test_httpx2_transport_sync() -> None:
    fake = FakeProvider()
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx2.Client(transport=fake.transport()),
    )
    with client.chat.completions.stream(model="m", messages=MESSAGES, tools=TOOLS) as s:
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert calls[0].function.arguments == '{"city": "Paris"}'
    fake.check()


def test_httpx_transport_sync() -> None:
    fake = FakeProvider()
    fake.reply("Hel", "lo")
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx.Client(transport=fake.httpx_transport()),
    )
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert [c.choices[0].delta.content for c in chunks] == ["", "Hel", "lo", None]
    fake.check()


@pytest.mark.anyio
@pytest.mark.parametrize("library", ["httpx2", "httpx"])
async def test_async_transports(library: str) -> None:
    fake = FakeProvider()
    fake.reply("Hel", "lo")
    http_client: Any
    if library == "httpx2":
        http_client = httpx2.AsyncClient(transport=fake.async_transport())
    else:
        http_client = httpx.AsyncClient(transport=fake.httpx_async_transport())
    client = openai.AsyncOpenAI(
        base_url="http://fake.invalid/v1", api_key="k", http_client=http_client
    )
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert [c.choices[0].delta.content async for c in stream] == ["", "Hel", "lo", None]
    await client.close()
    fake.check()


@pytest.mark.anyio
async def test_async_function_turn_on_async_transport() -> None:
    async def answer(request: Any) -> Any:
        city = json.dumps(request.messages[-1]["content"].split()[-1].rstrip("?"))
        yield "It is sunny in "
        yield json.loads(city)

    fake = FakeProvider()
    fake.generate(answer)
    client = openai.AsyncOpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx2.AsyncClient(transport=fake.async_transport()),
    )
    r = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert r.choices[0].message.content == "It is sunny in Paris"
    await client.close()


def collect_contents(stream: Any, into: list[str | None]) -> None:
    """Append each chunk's content as it arrives (so a later failure keeps what came)."""
    for c in stream:
        into.append(c.choices[0].delta.content)


# --- failures ---------------------------------------------------------------------------------


def test_scripted_http_errors_reach_the_sdk(
    fake_provider: FakeProvider, openai_client: openai.OpenAI
) -> None:
    fake_provider.error(429, "slow down", retry_after=1)
    fake_provider.error(500)
    with pytest.raises(openai.RateLimitError) as rate:
        openai_client.chat.completions.create(model="m", messages=MESSAGES)
    assert rate.value.status_code == 429
    assert "slow down" in str(rate.value)
    assert rate.value.response.headers["retry-after"] == "1"
    with pytest.raises(openai.InternalServerError):
        openai_client.chat.completions.create(model="m", messages=MESSAGES, stream=True)


def test_stream_cut_off_mid_way(fake_provider: FakeProvider, openai_client: openai.OpenAI) -> None:
    fake_provider.reply("one", "two", "three", cut_after=2)
    received: list[str | None] = []
    stream = openai_client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIConnectionError):
        collect_contents(stream, received)
    assert received == ["", "one", "two"]


def test_malformed_frame(fake_provider: FakeProvider, openai_client: openai.OpenAI) -> None:
    fake_provider.reply("one", "two", malformed_after=1)
    stream = openai_client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    received: list[str | None] = []
    with pytest.raises(json.JSONDecodeError):
        collect_contents(stream, received)
    assert received == ["", "one"]


def test_request_beyond_the_script_is_an_error_response_and_is_kept() -> None:
    fake = FakeProvider()
    fake.reply("only one")
    with fake.serve() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError) as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2nd"}])
        client.close()
    assert info.value.response.headers["x-should-retry"] == "false"
    body = info.value.response.json()
    assert "script" in body["error"]["message"]
    assert "2nd" in body["error"]["message"]
    assert len(fake.errors) == 1
    assert isinstance(fake.errors[0], ScriptExhaustedError)
    assert "request #1" in str(fake.errors[0])
    assert "position 1" in str(fake.errors[0])
    with pytest.raises(ScriptExhaustedError):
        fake.check()


def test_check_lists_unserved_turns() -> None:
    fake = FakeProvider()
    fake.reply("used")
    fake.tool_call("never_called", "{}")
    fake.error(429)
    with httpx2.Client(transport=fake.transport()) as c:
        c.post("http://fake/v1/chat/completions", json={"model": "m", "messages": []})
    with pytest.raises(ProviderError) as info:
        fake.check()
    message = str(info.value)
    assert "2 scripted turn(s) were never requested" in message
    assert "turn #1: reply: tool calls never_called" in message
    assert "turn #2: error 429" in message
    fake.check(allow_unused=True)
    FakeProvider(allow_unused_turns=True).reply("x")


def test_bad_scripts_fail_clearly() -> None:
    fake = FakeProvider()
    with pytest.raises(ProviderError, match="pass each chunk as a str"):
        fake.reply("ok", 3)  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="HTTP error status"):
        fake.error(200)
    fake.reply("x", finish_reason="whatever")
    with httpx2.Client(transport=fake.transport()) as c:
        assert c.post("http://fake/v1/chat/completions", json={"model": "m"}).status_code == 500
    with pytest.raises(ProviderError, match="unknown finish_reason 'whatever'"):
        fake.check()
