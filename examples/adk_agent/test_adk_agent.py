"""A Google ADK agent behind ag-ui-adk, as cassette tests: recorded once, replayed offline.

The app is ag-ui-adk's FastAPI endpoint around an ``ADKAgent`` wrapping an ADK ``LlmAgent``
on ``gemini-2.5-flash`` with one function tool. The test points nothing at the recorder: ADK
builds its google-genai client itself, from ``GOOGLE_API_KEY``, with no base URL, and the
plugin's zero-config routing sends its requests to ``generativelanguage.googleapis.com`` to the
recorder for the span of each ``agui.arun``. While a test records, the recorder forwards them to
the upstream and stores each streamed chunk; a plain ``pytest`` serves the stored chunks back,
with no network (the guard refuses anything but loopback) and no key.

Nothing of ADK is patched: the ids it and ag-ui-adk mint with ``uuid4`` (session ids, event and
message ids, the ``adk-<uuid>`` function-call ids) come out the same on every replay because the
plugin makes the uuid generators deterministic during each run, and the ``responseId`` Gemini
draws per response stays inside the recorded chunks.

Recording against Gemini, the key kept out of the cassettes::

    GOOGLE_API_KEY=... .venv-adk/bin/python -m pytest examples/adk_agent \\
        --agui-record --agui-upstream=gemini=https://generativelanguage.googleapis.com \\
        --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` of
``conftest.py``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

pytest.importorskip(
    "ag_ui_adk",
    reason="google-adk and ag-ui-adk are not installed here: run this example in .venv-adk "
    "(see .ci/run)",
)

from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_valid_stream,
    final_messages,
    message_text,
)
from agui_replay.client import Session
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import FORECASTS, create_app
from .scripted_model import answer_for

# What ag-ui-adk publishes as the thread's state (a STATE_SNAPSHOT before RUN_FINISHED).
ADK_STATE = {
    "_ag_ui_app_name": "weather_app",
    "_ag_ui_thread_id": "trip",
    "_ag_ui_user_id": "demo-user",
}

pytestmark = [
    pytest.mark.anyio,
    # ag-ui-adk builds ADK's in-memory credential service, which ADK flags as experimental.
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning"),
    # google-genai's async client subclasses aiohttp.ClientSession, which aiohttp discourages.
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    # ADK runs on asyncio; one backend keeps one cassette per test (no [trio] twin).
    return "asyncio"


@pytest.fixture(autouse=True)
def google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK's client needs a key to be built; a replay sends it nowhere. A real key in the
    environment (to record against Gemini) is kept, and scrubbed from the cassette. The stand-in
    is as long as a key: a shorter value is not scrubbed, and the plugin warns about it."""
    key = os.environ.get("GOOGLE_API_KEY", "adk-example-placeholder")
    monkeypatch.setenv("GOOGLE_API_KEY", key)


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each tool call of a stream, as the client holds it: its name and its arguments, parsed."""
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in final_messages(events)
        for call in message.get("toolCalls", [])
    ]


def tool_results(events: list[dict[str, Any]]) -> list[Any]:
    """The content of each tool message of a stream, parsed."""
    return [json.loads(m["content"]) for m in final_messages(events) if m["role"] == "tool"]


def lisbon() -> dict[str, Any]:
    return {"status": "ok", "city": "Lisbon", **FORECASTS["lisbon"]}


async def test_the_agent_looks_the_weather_up_then_answers(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    events = await agui.arun(
        create_app(),
        run_input("trip", "run-1", messages=["What's the weather in Lisbon tomorrow?"]),
    )

    assert_valid_stream(events, "strict")
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",  # Gemini asked for city_weather
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",  # ADK ran the function
            "TEXT_MESSAGE_START",  # Gemini again: the answer
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    assert tool_calls(events) == [("city_weather", {"city": "Lisbon"})]
    assert tool_results(events) == [lisbon()]
    assert message_text(events) == "Tomorrow in Lisbon: sunny, 16 to 24 °C."
    assert message_text(events) == answer_for(lisbon())
    assert_final_state(events, ADK_STATE)
    # ADK names the call itself (Gemini sends none); the result answers that call.
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert start["toolCallId"].startswith("adk-")
    assert result["toolCallId"] == start["toolCallId"]
    assert events == agui_snapshot


async def test_a_second_question_on_the_same_thread(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    app = create_app()  # one app, one in-memory ADK session service: the thread lives on
    first = run_input("trip", "run-1", messages=["Weather in Oslo tomorrow?"])
    snowy = await agui.arun(app, first)

    assert_valid_stream(snowy, "strict")
    assert tool_calls(snowy) == [("city_weather", {"city": "Oslo"})]
    assert message_text(snowy) == "Tomorrow in Oslo: light snow, -7 to -2 °C."

    # The front end folds the stream it was sent and sends the conversation back with the
    # next question; ag-ui-adk keeps the thread in its ADK session and adds the new message.
    client = Session(state=first.state, messages=first.messages).apply_all(snowy).finish()
    said = {"id": "user-2", "role": "user", "content": "And in Atlantis?"}
    second = run_input("trip", "run-2", state=client.state, messages=[*client.messages, said])
    unknown = await agui.arun(app, second)

    assert_valid_stream(unknown, "strict")
    assert tool_calls(unknown) == [("city_weather", {"city": "Atlantis"})]
    missing = {"status": "error", "error": "no forecast for Atlantis"}
    assert tool_results(unknown) == [missing]
    assert message_text(unknown) == "Sorry: no forecast for Atlantis."
    assert_final_state(unknown, ADK_STATE, initial_state=client.state)
    # ADK sent Gemini the whole thread from its session (both questions, the Oslo call and its
    # answer); a replay checks each request ADK sends against the recorded one, so a thread
    # that lost its history would fail here with the first differing field.

    assert snowy == agui_snapshot(name="first")
    assert unknown == agui_snapshot(name="second")
