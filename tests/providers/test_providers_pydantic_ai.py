"""A real agent framework (pydantic-ai with its AG-UI adapter) runs against the fake provider."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from ag_ui.core import RunAgentInput, UserMessage

from agui_replay.providers import FakeProvider
from agui_replay.sse import SSEParser

pydantic_ai = pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.ui.ag_ui import AGUIAdapter  # noqa: E402


async def run_agent(fake: FakeProvider, question: str) -> list[dict[str, Any]]:
    """Run a pydantic-ai agent behind AGUIAdapter; return the AG-UI events it streamed."""
    with fake.serve() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-dummy", max_retries=0)
        agent = Agent(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client)))

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"sunny in {city}"

        run_input = RunAgentInput(
            thread_id="thread-1",
            run_id="run-1",
            state=None,
            messages=[UserMessage(id="u1", content=question)],
            tools=[],
            context=[],
            forwarded_props=None,
        )
        adapter = AGUIAdapter(agent=agent, run_input=run_input)
        parser = SSEParser()
        frames = []
        async for text in adapter.encode_stream(adapter.run_stream()):
            frames.extend(parser.feed(text.encode()))
        await client.close()
    return [json.loads(f.data) for f in frames]


@pytest.mark.anyio
async def test_pydantic_ai_agent_streams_the_fakes_chunks_as_ag_ui_events() -> None:
    fake = FakeProvider()
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    fake.reply("It is sunny", " in Paris")

    events = await run_agent(fake, "Weather in Paris?")
    fake.check()

    # pydantic-ai opens an empty assistant message to parent the tool call; a message with no
    # content says nothing about the provider, so compare the stream without it
    with_content = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"}
    shown = [
        e
        for e in events
        if not (e["type"].startswith("TEXT_MESSAGE_") and e["messageId"] not in with_content)
    ]
    assert [e["type"] for e in shown] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    start = shown[1]
    assert start["toolCallName"] == "get_weather"
    # the scripted fragments arrive one AG-UI event each, and the call id is the fake's
    assert [e["delta"] for e in shown if e["type"] == "TOOL_CALL_ARGS"] == ['{"ci', 'ty": "Paris"}']
    assert start["toolCallId"].startswith("call_")
    assert shown[5]["content"] == "sunny in Paris"
    assert [e["delta"] for e in shown if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "It is sunny",
        " in Paris",
    ]
    assert shown[-1]["threadId"] == "thread-1"
    assert shown[-1]["runId"] == "run-1"

    # what the agent sent the provider: the question, then the tool result on the second turn
    first, second = fake.requests
    assert first.messages[-1] == {"role": "user", "content": "Weather in Paris?"}
    assert first.tool_names == ["get_weather"]
    assert second.messages[-1]["role"] == "tool"
    assert second.messages[-1]["tool_call_id"] == start["toolCallId"]
    assert second.messages[-1]["content"] == "sunny in Paris"
