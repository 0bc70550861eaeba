"""The fake provider speaks the OpenAI Responses API, checked with the real openai SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from agui_replay.providers import FakeProvider, Reasoning, Text, ToolCall, Usage

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
]


def test_event_sequence_and_sequence_numbers() -> None:
    fake = FakeProvider()
    fake.turn(Text("Hel", "lo"), ToolCall("get_weather", '{"ci', 'ty": "Paris"}'))
    frames = []
    with (
        httpx2.Client(transport=fake.transport()) as client,
        client.stream(
            "POST", "http://x/v1/responses", json={"model": "gpt-5", "input": "hi", "stream": True}
        ) as response,
    ):
        for chunk in response.iter_raw():
            event_line, data_line = chunk.decode()[:-2].split("\n")
            data = json.loads(data_line.removeprefix("data: "))
            assert event_line == f"event: {data['type']}"
            frames.append(data)
    assert [f["type"] for f in frames] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))
    assert [f["delta"] for f in frames if f["type"].endswith(".delta")] == [
        "Hel",
        "lo",
        '{"ci',
        'ty": "Paris"}',
    ]
    assert {f["output_index"] for f in frames[9:14]} == {1}


def test_sdk_streams_text_and_tool_call(
    fake_provider: FakeProvider, openai_client: openai.OpenAI
) -> None:
    fake_provider.turn(
        Reasoning("think"),
        Text("Hel", "lo"),
        ToolCall("get_weather", '{"ci', 'ty": "Paris"}'),
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    with openai_client.responses.stream(model="gpt-5", input="weather?", tools=TOOLS) as stream:
        text_deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert text_deltas == ["Hel", "lo"]
    assert final.status == "completed"
    assert final.output_text == "Hello"
    kinds = [item.type for item in final.output]
    assert kinds == ["reasoning", "message", "function_call"]
    call = final.output[2]
    assert call.type == "function_call"
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert call.call_id.startswith("call_")
    assert final.usage is not None
    assert final.usage.total_tokens == 7
    assert fake_provider.last_request.api == "openai.responses"
    assert fake_provider.last_request.messages == [{"role": "user", "content": "weather?"}]


def test_sdk_non_streaming(fake_provider: FakeProvider, openai_client: openai.OpenAI) -> None:
    fake_provider.tool_call("get_weather", '{"city": "Rome"}')
    fake_provider.reply("trunc", finish_reason="length")
    first = openai_client.responses.create(model="gpt-5", input="x", tools=TOOLS)
    assert first.output[0].type == "function_call"
    assert first.output[0].arguments == '{"city": "Rome"}'
    second = openai_client.responses.create(model="gpt-5", input="x")
    assert second.status == "incomplete"
    assert second.incomplete_details is not None
    assert second.incomplete_details.reason == "max_output_tokens"
    assert second.output_text == "trunc"
    assert first.id != second.id


@pytest.mark.anyio
async def test_async_sdk(
    fake_provider: FakeProvider, async_openai_client: openai.AsyncOpenAI
) -> None:
    fake_provider.reply("A", "B")
    stream = await async_openai_client.responses.create(model="m", input="x", stream=True)
    deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
    assert deltas == ["A", "B"]
