"""A pydantic-ai agent behind its AG-UI adapter, tested with cassettes and snapshots.

The app under test is the real thing: pydantic-ai's ``AGUIAdapter`` in a Starlette app, its
model called through the real ``openai`` SDK pointed at ``agui.provider.base_url``. The tests
are async because the app is; ``agui.arun`` posts the run to the app in process.

Recording against OpenAI, with the key kept out of the cassettes::

    OPENAI_API_KEY=sk-... pytest examples/pydantic_ai_agent --agui-record \\
        --agui-upstream=https://api.openai.com/v1 --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` below
(this project has no key and no network). A real model words its answers its own way, so after
recording against one, pin what it said (or assert looser properties) in place of the texts here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_valid_stream,
    message_text,
)
from agui_replay.client import Session
from agui_replay.providers import (
    FakeProvider,
    LoopbackServer,
    ProviderRequest,
    ToolCallDelta,
    by_size,
    by_word,
)
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import create_app

pytestmark = pytest.mark.anyio

ASK = "I'm off to Oslo for the weekend. What should I pack?"
RAINY = ["rain jacket", "umbrella", "wool sweater"]


@pytest.fixture
def anyio_backend() -> str:
    # pydantic-ai runs on asyncio; one backend keeps one cassette per test (no [trio] twin).
    return "asyncio"


# --- the scripted upstream: used only while recording ------------------------------------------

GEAR = {"rain": RAINY, "sunny": ["sunglasses", "sunscreen"], "sleet": ["gloves", "wool hat"]}
EXTRAS = ("passport", "charger", "adapter")


def _call(name: str, arguments: dict[str, Any], number: int) -> Iterator[ToolCallDelta]:
    """One tool call, its JSON arguments streamed in 10-character fragments."""
    fragments = by_size(json.dumps(arguments), 10)
    yield ToolCallDelta(fragments[0], name=name, id=f"call_{number}")
    for fragment in fragments[1:]:
        yield ToolCallDelta(fragment)


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for the model that answers from the conversation it is sent: the forecast
    for the city the user names, gear for that weather, extras the user asks for by name."""
    messages = request.messages
    last = messages[-1]
    number = sum(1 for m in messages if m["role"] == "tool") + 1
    if last["role"] == "user":
        text = last["content"]
        extras = [e for e in EXTRAS if e in text.lower()]
        if extras:
            system = " ".join(m["content"] for m in messages if m["role"] == "system")
            where = re.search(r"Destination: ([^.]+)\.", system)
            destination = where.group(1) if where else "unknown"
            yield from _call("pack", {"destination": destination, "items": extras}, number)
            return
        city = re.search(r"\bto ([A-Z][a-z]+)", text)
        if city is None:
            yield from by_word("Where are you going?")
            return
        yield from _call("get_forecast", {"city": city.group(1)}, number)
        return
    (call,) = messages[-2]["tool_calls"]
    name = call["function"]["name"]
    arguments = json.loads(call["function"]["arguments"])
    if name == "get_forecast":
        forecast = last["content"]
        gear = next((g for word, g in GEAR.items() if word in forecast), None)
        if gear is None:
            yield from by_word(f"I found no forecast for {arguments['city']}; pack for anything.")
            return
        yield from _call("pack", {"destination": arguments["city"], "items": gear}, number)
        return
    packed = ", ".join(arguments["items"])
    yield from by_word(f"Packed for {arguments['destination']}: {packed}. Have a good trip!")


@pytest.fixture
def agui_upstream() -> Iterator[LoopbackServer]:
    """The provider a recording forwards to (here the scripted model; a replay never asks)."""
    fake = FakeProvider(function=scripted_model)
    with fake.serve() as server:
        yield server
    fake.check()


@pytest.fixture
async def model_client(agui: CassetteSession) -> AsyncIterator[AsyncOpenAI]:
    """The OpenAI client the agent's model uses: always ``agui.provider``, never the internet."""
    async with AsyncOpenAI(
        base_url=agui.provider.base_url,
        api_key=os.environ.get("OPENAI_API_KEY", "sk-replay"),  # scrubbed from cassettes
        max_retries=0,
    ) as client:
        yield client


# --- the tests -----------------------------------------------------------------------------------


async def test_packing_for_a_rainy_weekend_then_adding_the_passport(
    agui: CassetteSession, model_client: AsyncOpenAI, agui_snapshot: Any
) -> None:
    app = create_app(model_client)
    first = run_input("trip", "run-1", messages=[ASK])
    planned = await agui.arun(app, first, path="/agent")

    assert_valid_stream(planned)
    assert_event_types(
        planned,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",  # get_forecast
            "TOOL_CALL_RESULT",
            "TOOL_CALL_START",  # pack
            "TOOL_CALL_RESULT",
            "STATE_SNAPSHOT",  # the list, from the tool's metadata
            "TEXT_MESSAGE_CONTENT",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    calls = [e["toolCallName"] for e in planned if e["type"] == "TOOL_CALL_START"]
    assert calls == ["get_forecast", "pack"]
    assert_final_state(planned, {"destination": "Oslo", "items": RAINY})
    assert message_text(planned) == f"Packed for Oslo: {', '.join(RAINY)}. Have a good trip!"

    # The next request carries the list and the conversation back, as a front end would. It is
    # built from the stream as the cassette stores it: pydantic-ai names its messages with
    # random UUIDs, which normalization turned into run-id-derived ids, the same on every run.
    client = Session(state=first.state, messages=first.messages)
    client.apply_all(agui.runs[-1].normalized).finish()
    said = {"id": "user-2", "role": "user", "content": "Please add my passport too."}
    second = run_input("trip", "run-2", state=client.state, messages=[*client.messages, said])
    added = await agui.arun(app, second, path="/agent")

    assert_valid_stream(added)
    assert [e["toolCallName"] for e in added if e["type"] == "TOOL_CALL_START"] == ["pack"]
    assert_final_state(
        added, {"destination": "Oslo", "items": [*RAINY, "passport"]}, initial_state=client.state
    )
    assert message_text(added) == "Packed for Oslo: passport. Have a good trip!"

    assert planned == agui_snapshot(name="planned")
    assert added == agui_snapshot(name="passport")


async def test_a_city_without_a_forecast_packs_nothing(
    agui: CassetteSession, model_client: AsyncOpenAI, agui_snapshot: Any
) -> None:
    events = await agui.arun(
        create_app(model_client),
        run_input("trip", "run-1", messages=["Flying to Tokyo on Monday, what do I need?"]),
        path="/agent",
    )

    assert_valid_stream(events)
    assert [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"] == ["get_forecast"]
    assert "STATE_SNAPSHOT" not in [e["type"] for e in events]
    assert message_text(events) == "I found no forecast for Tokyo; pack for anything."
    assert events == agui_snapshot
