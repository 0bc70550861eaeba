"""The fake provider speaks Anthropic Messages, checked with the real anthropic SDK."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from agui_replay.providers import FakeProvider, Reasoning, Text, ToolCall, Usage

MESSAGES: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def raw_events(fake: FakeProvider, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(event name, data) per network chunk, checking each chunk is exactly one SSE frame."""
    out = []
    with (
        httpx2.Client(transport=fake.transport()) as client,
        client.stream("POST", "http://fake/v1/messages", json=body) as response,
    ):
        for chunk in response.iter_raw():
            text = chunk.decode()
            assert text.endswith("\n\n"), text
            assert text.count("\n\n") == 1, text
            event_line, data_line = text[:-2].split("\n")
            assert event_line.startswith("event: ")
            assert data_line.startswith("data: ")
            data = json.loads(data_line[len("data: ") :])
            assert data["type"] == event_line[len("event: ") :]
            out.append((data["type"], data))
    return out


def test_event_sequence_for_text_then_tool_call() -> None:
    fake = FakeProvider()
    fake.turn(Text("Hel", "lo"), ToolCall("get_weather", '{"ci', 'ty": "Paris"}', id="toolu_1"))
    events = raw_events(fake, {"model": "claude-x", "messages": MESSAGES, "stream": True})
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["content"] == []
    assert start["model"] == "claude-x"
    assert start["stop_reason"] is None
    assert events[1][1] == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    assert [e[1]["delta"] for e in events[3:5]] == [
        {"type": "text_delta", "text": "Hel"},
        {"type": "text_delta", "text": "lo"},
    ]
    assert events[6][1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": {},
    }
    assert [e[1]["delta"] for e in events[7:9]] == [
        {"type": "input_json_delta", "partial_json": '{"ci'},
        {"type": "input_json_delta", "partial_json": 'ty": "Paris"}'},
    ]
    assert {e[1]["index"] for e in events[6:10]} == {1}
    assert events[10][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


def test_sdk_streams_text(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.reply("Hel", "lo", usage=Usage(input_tokens=12, output_tokens=2))
    with anthropic_client.messages.stream(
        model="claude-x", max_tokens=100, messages=MESSAGES
    ) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert texts == ["Hel", "lo"]
    assert final.content[0].type == "text"
    assert final.content[0].text == "Hello"
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == 12
    assert final.usage.output_tokens == 2
    assert final.id.startswith("msg_")
    assert fake_provider.last_request.api == "anthropic.messages"
    assert fake_provider.last_request.messages == MESSAGES


def test_sdk_reassembles_tool_input(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.tool_calls(
        ToolCall("get_weather", '{"ci', 'ty": "Paris"}'), ToolCall("get_time", "{}")
    )
    with anthropic_client.messages.stream(
        model="claude-x", max_tokens=100, messages=MESSAGES, tools=TOOLS
    ) as stream:
        partials = [e.partial_json for e in stream if e.type == "input_json"]
        final = stream.get_final_message()
    assert partials == ['{"ci', 'ty": "Paris"}', "{}"]
    blocks = [b for b in final.content if b.type == "tool_use"]
    assert [(b.name, b.input) for b in blocks] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {}),
    ]
    assert final.stop_reason == "tool_use"
    assert fake_provider.last_request.tool_names == ["get_weather"]


def test_sdk_thinking_blocks(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.turn(Reasoning("Let me ", "think", signature="sig-1"), Text("42"))
    with anthropic_client.messages.stream(
        model="claude-x", max_tokens=100, messages=MESSAGES
    ) as stream:
        thinking = [e.thinking for e in stream if e.type == "thinking"]
        final = stream.get_final_message()
    assert thinking == ["Let me ", "think"]
    first, second = final.content
    assert first.type == "thinking"
    assert first.thinking == "Let me think"
    assert first.signature == "sig-1"
    assert second.type == "text"
    assert second.text == "42"


def test_sdk_non_streaming(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.turn(
        Reasoning("hm"), Text("Hel", "lo"), ToolCall("get_weather", '{"city":', '"Rome"}')
    )
    message = anthropic_client.messages.create(
        model="claude-x", max_tokens=100, messages=MESSAGES, tools=TOOLS
    )
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[1].type == "text"
    assert message.content[1].text == "Hello"
    tool = message.content[2]
    assert tool.type == "tool_use"
    assert tool.input == {"city": "Rome"}
    assert message.stop_reason == "tool_use"


def test_max_tokens_finish_maps_to_anthropic_stop_reason(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.reply("trunc", finish_reason="length")
    message = anthropic_client.messages.create(model="c", max_tokens=1, messages=MESSAGES)
    assert message.stop_reason == "max_tokens"


def test_errors_use_the_anthropic_error_shape(
    fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic
) -> None:
    fake_provider.error(429, "too many")
    fake_provider.error(529, "busy")
    with pytest.raises(anthropic.RateLimitError) as info:
        anthropic_client.messages.create(model="c", max_tokens=1, messages=MESSAGES)
    assert info.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "too many"},
    }
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        anthropic_client.messages.create(model="c", max_tokens=1, messages=MESSAGES)
    assert overloaded.value.status_code == 529


def test_stream_cut(fake_provider: FakeProvider, anthropic_client: anthropic.Anthropic) -> None:
    fake_provider.reply("a", "b", "c", cut_after=1)
    seen: list[str] = []
    # anthropic 2.x lets the transport error through from text_stream; openai wraps it
    cut_errors = (anthropic.APIConnectionError, httpx2.RemoteProtocolError)
    with (
        anthropic_client.messages.stream(model="c", max_tokens=5, messages=MESSAGES) as stream,
        pytest.raises(cut_errors),
    ):
        _collect_texts(stream.text_stream, seen)
    assert seen == ["a"]


def _collect_texts(texts: Any, seen: list[str]) -> None:
    for text in texts:
        seen.append(text)


@pytest.mark.anyio
async def test_async_sdk_over_httpx2_transport() -> None:
    fake = FakeProvider()
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    client = anthropic.AsyncAnthropic(
        base_url="http://fake.invalid",
        api_key="k",
        http_client=httpx2.AsyncClient(transport=fake.async_transport()),
    )
    async with client.messages.stream(
        model="c", max_tokens=5, messages=MESSAGES, tools=TOOLS
    ) as stream:
        final = await stream.get_final_message()
    await client.close()
    tool = final.content[0]
    assert tool.type == "tool_use"
    assert tool.input == {"city": "Paris"}
    fake.check()


def test_base_url_with_v1_also_routes() -> None:
    # a user who passes the OpenAI-style base_url gets /v1/v1/messages; still served
    fake = FakeProvider()
    fake.reply("ok")
    with fake.serve() as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        message = client.messages.create(model="c", max_tokens=5, messages=MESSAGES)
        client.close()
    assert message.content[0].type == "text"
    assert message.content[0].text == "ok"
    assert fake.last_request.path == "/v1/v1/messages"
