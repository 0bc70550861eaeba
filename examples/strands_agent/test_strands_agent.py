"""A Strands agent behind ag-ui-strands, as cassette tests: recorded once, replayed offline.

The app is ag-ui-strands' FastAPI endpoint around a Strands ``Agent`` on ``BedrockModel`` with
a ``requests`` tool (a weather API) and an MCP server's tool over streamable HTTP. The test points
nothing at the recorder: boto3's ``bedrock-runtime`` client calls
``bedrock-runtime.us-east-1.amazonaws.com``, a known provider host, and the tool's and the MCP
client's requests to the two services go through ``requests`` (urllib3) and ``httpx2``, which the
plugin intercepts from the ``agui`` fixture's setup to its teardown. While a test records, the
model's requests go to the scripted Bedrock of ``conftest.py`` and the services' to the stand-ins
it starts; every exchange is stored, chunk by chunk. A plain ``pytest`` serves them all back,
with the stand-ins stopped, no network (the guard refuses anything but loopback) and no AWS
credentials.

What the cassette holds besides the AG-UI events: the ConverseStream requests and their event
streams (the SigV4 headers never stored), the weather API's ``GET /forecast`` exchanges, and the
MCP client's ``POST``s — ``server/discover`` and ``tools/list`` when Strands builds the agent,
``tools/call`` when the model asks for ``whats_on``. (mcp 2.1's client and server agree on the
2026-07-28 protocol, which keeps no session: no ``GET`` stream, no ``DELETE``. An older protocol's
session, its stream and its end are taped and replayed as well.)

Recording against Bedrock itself, the services up and your credentials kept out of the cassette::

    .venv-strands/bin/python -m pytest examples/strands_agent --agui-record \\
        --agui-upstream bedrock=https://bedrock-runtime.us-east-1.amazonaws.com --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` of
``conftest.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip(
    "ag_ui_strands",
    reason="strands-agents and ag-ui-strands are not installed here (they pin mcp<2.2): run "
    "this example in .venv-strands (see .ci/run)",
)

from agui_replay.assertions import (
    assert_event_types,
    assert_valid_stream,
    final_messages,
    message_text,
)
from agui_replay.normalize import ignore
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import create_app
from .events_server import whats_on
from .scripted_model import answer_for
from .weather_api import FORECASTS

# The plugin freezes the clock during each run, but not for botocore's SigV4 signing (AWS
# refuses a request signed minutes away from its own clock): recording from AWS needs no
# change to it.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    # Strands runs on asyncio; one backend keeps one cassette per test (no [trio] twin).
    return "asyncio"


@pytest.fixture
def agui_normalizers() -> list[Any]:
    # Strands passes Bedrock's metadata on as RAW events; AWS's latency changes every time.
    return [ignore("/**/latencyMs")]


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each tool call of a stream, as the client holds it: its name and its arguments, parsed."""
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in final_messages(events)
        for call in message.get("toolCalls", [])
    ]


def tool_results(events: list[dict[str, Any]]) -> list[Any]:
    """The content of each tool message of a stream, parsed: ag-ui-strands sends each tool's
    result as JSON (a dict as an object, a string as a JSON string)."""
    return [json.loads(m["content"]) for m in final_messages(events) if m["role"] == "tool"]


def lisbon() -> dict[str, Any]:
    return {"status": "ok", "city": "Lisbon", **FORECASTS["lisbon"]}


async def test_the_agent_asks_the_api_and_the_mcp_server_then_answers(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    events = await agui.arun(
        create_app(), run_input("plans", "run-1", messages=["What can I do in Lisbon tomorrow?"])
    )

    assert_valid_stream(events, "strict")
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",  # the model asked for forecast
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",  # the tool called the weather API with requests
            "TOOL_CALL_START",  # the model asked for whats_on
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",  # Strands called the MCP server's tool
            "TEXT_MESSAGE_START",  # the answer
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    assert tool_calls(events) == [
        ("forecast", {"city": "Lisbon"}),
        ("whats_on", {"city": "Lisbon"}),
    ]
    said = whats_on("Lisbon")
    assert tool_results(events) == [lisbon(), said]
    assert message_text(events) == answer_for(lisbon(), said)
    assert message_text(events) == (
        "Tomorrow in Lisbon: sunny, 16 to 24 °C. Tomorrow in Lisbon: a fado night in Alfama at "
        "21:00; the Feira da Ladra flea market from 09:00."
    )
    assert events == agui_snapshot


async def test_a_city_the_weather_api_does_not_know(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    events = await agui.arun(
        create_app(), run_input("plans", "run-1", messages=["Plans for Atlantis tomorrow?"])
    )

    assert_valid_stream(events, "strict")
    assert tool_calls(events) == [("forecast", {"city": "Atlantis"})]
    missing = {"status": "error", "error": "no forecast for Atlantis"}
    assert tool_results(events) == [missing]
    assert message_text(events) == "Sorry: no forecast for Atlantis."
    assert events == agui_snapshot
