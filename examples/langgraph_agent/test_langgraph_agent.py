"""A LangGraph agent behind ag-ui-langgraph, tested with cassettes and snapshots.

The app under test is the real thing: ag-ui-langgraph's ``LangGraphAgent`` with its default
configuration (RAW events and all) in a FastAPI app, its graph calling the model through
LangChain's ``ChatOpenAI`` pointed at ``agui.provider.base_url``. ``agui.arun`` posts each run
to the app in process. Nothing of LangChain or LangGraph is patched: the ids they mint at random
(message ids, run ids, checkpoint ids) are deterministic during every ``agui.arun``, and what
is left random (the provider's ``call_`` ids and ``fp_`` system fingerprints, which LangChain
copies into the state) is normalized in the cassette and in the snapshots.

Recording against OpenAI, with the key kept out of the cassettes::

    OPENAI_API_KEY=sk-... pytest examples/langgraph_agent --agui-record \\
        --agui-upstream=https://api.openai.com/v1 --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` below,
which draws random ids like a real provider (this project has no key and no network). A real
model words its answers its own way, so after recording against one, pin what it said (or
assert looser properties) in place of the texts here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from agui_replay.assertions import assert_event_types, assert_valid_stream, message_text
from agui_replay.client import Session
from agui_replay.normalize import ignore
from agui_replay.providers import (
    FakeProvider,
    LoopbackServer,
    ProviderRequest,
    ToolCallDelta,
    by_word,
)
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import create_app

pytestmark = [
    pytest.mark.anyio,
    # ag-ui-langgraph 0.0.47 still reads the graph's config schema the pre-1.0 way.
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]


@pytest.fixture
def agui_normalizers() -> list[Any]:
    """LangChain stamps each callback event (the RAW events) with the versions of its packages
    (``metadata.lc_versions``): without this rule an upgrade of ``langchain-openai`` would
    read as a change of the agent, and every cassette would need recording again."""
    return [ignore("/**/lc_versions")]


@pytest.fixture
def anyio_backend() -> str:
    # LangGraph runs on asyncio; one backend keeps one cassette per test (no [trio] twin).
    return "asyncio"


# --- the scripted upstream: used only while recording ------------------------------------------

UNITS = {
    "km": "km", "kilometres": "km", "kilometers": "km",
    "mi": "mi", "miles": "mi",
    "kg": "kg", "kilograms": "kg", "kilos": "kg",
    "lb": "lb", "pounds": "lb",
    "m": "m", "metres": "m", "meters": "m",
    "ft": "ft", "feet": "ft",
    "C": "C", "Celsius": "C",
    "F": "F", "Fahrenheit": "F",
}  # fmt: skip
ASKED = re.compile(
    r"(?P<value>\d+(?:\.\d+)?) ?(?P<source>[A-Za-z]+) (?:in|to|into) (?P<target>[A-Za-z]+)"
)


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for the model: asks ``convert`` for the conversion the user names, then says
    what the tool answered. Its ``call_`` ids, like its ``chatcmpl-`` ids, are drawn at random
    (``FakeProvider(ids="random")``), as a real provider's are."""
    last = request.messages[-1]
    if last["role"] == "tool":
        yield from by_word(f"That makes {last['content'].split(' = ')[1]}.")
        return
    asked = ASKED.search(last["content"])
    if asked is None or asked["source"] not in UNITS or asked["target"] not in UNITS:
        yield from by_word("Which value, and from which unit to which?")
        return
    arguments = json.dumps(
        {
            "value": float(asked["value"]),
            "from_unit": UNITS[asked["source"]],
            "to_unit": UNITS[asked["target"]],
        }
    )
    # As OpenAI streams a call: its name (with no id here: the fake draws a call_ id) and no
    # arguments yet, then the arguments in fragments.
    yield ToolCallDelta("", name="convert")
    for start in range(0, len(arguments), 12):
        yield ToolCallDelta(arguments[start : start + 12])


@pytest.fixture
def agui_upstream() -> Iterator[LoopbackServer]:
    """The provider a recording forwards to (here the scripted model; a replay never asks)."""
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as server:
        yield server
    fake.check()


def converter(agui: CassetteSession) -> Any:
    """The app, its model client pointed at the plugin's provider: always, never the internet."""
    return create_app(
        agui.provider.base_url, api_key=os.environ.get("OPENAI_API_KEY", "sk-replay")
    )


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each tool call of a stream: its name and its (streamed) arguments, parsed."""
    names: dict[str, str] = {}
    arguments: dict[str, str] = {}
    for event in events:
        if event["type"] == "TOOL_CALL_START":
            names[event["toolCallId"]] = event["toolCallName"]
            arguments[event["toolCallId"]] = ""
        elif event["type"] == "TOOL_CALL_ARGS":
            arguments[event["toolCallId"]] += event["delta"]
    return [(names[call], json.loads(arguments[call])) for call in names]


def tool_results(events: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]


RANDOM_IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # LangChain, LangGraph
    r"|\b(?:chatcmpl-|call_|fp_)[0-9A-Za-z]{8,}"  # the provider's
)


def assert_stored_without_random_ids(agui: CassetteSession) -> None:
    """What the cassette stores and compares (inputs, events) names no id minted at random."""
    for run in agui.runs:
        stored = json.dumps([run.normalized_input, run.normalized])
        assert RANDOM_IDS.search(stored) is None, f"run {run.index}: {RANDOM_IDS.search(stored)}"


def raw_event(event: dict[str, Any]) -> dict[str, Any]:
    """The LangChain callback event a RAW event passes on."""
    return event["event"]


def model_starts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RAW events that open each model call of the run."""
    return [
        e for e in events if e["type"] == "RAW" and raw_event(e)["event"] == "on_chat_model_start"
    ]


# --- the tests -----------------------------------------------------------------------------------


async def test_a_conversion_calls_the_tool_then_answers(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    events = await agui.arun(
        converter(agui),
        run_input("roads", "run-1", messages=["How much is 10 km in miles?"]),
        path="/agent",
    )

    assert_valid_stream(events, "strict")
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",  # the model asks for convert
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",  # the ToolNode ran it
            "TEXT_MESSAGE_START",  # the chat node again: the answer
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    assert tool_calls(events) == [("convert", {"value": 10.0, "from_unit": "km", "to_unit": "mi"})]
    assert tool_results(events) == ["10 km = 6.21 mi"]
    assert message_text(events) == "That makes 6.21 mi."
    assert "RAW" in {e["type"] for e in events}  # the default config: LangChain's events too
    # LangChain named the answer (lc_run--<uuid7>); the cassette names it after the run.
    (answer,) = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert answer.startswith("lc_run--")
    assert_stored_without_random_ids(agui)
    assert events == agui_snapshot


async def test_a_second_conversion_on_the_same_thread(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    app = converter(agui)  # one app, one checkpointer: the thread lives on between the runs
    first = run_input("kitchen", "run-1", messages=["What is 180 C in Fahrenheit?"])
    converted = await agui.arun(app, first, path="/agent")

    assert_valid_stream(converted, "strict")
    assert tool_results(converted) == ["180 C = 356.00 F"]
    assert message_text(converted) == "That makes 356.00 F."

    # The front end folds the stream it was sent, with the ids it carries (LangChain's
    # message ids, the provider's call ids), and sends the state and the conversation back
    # with the next question, as CopilotKit does.
    client = Session(state=first.state, messages=first.messages)
    client.apply_all(converted).finish()
    said = {"id": "user-2", "role": "user", "content": "And 2.5 kg in pounds?"}
    second = run_input("kitchen", "run-2", state=client.state, messages=[*client.messages, said])
    weighed = await agui.arun(app, second, path="/agent")

    assert_valid_stream(weighed, "strict")
    assert tool_calls(weighed) == [("convert", {"value": 2.5, "from_unit": "kg", "to_unit": "lb"})]
    assert tool_results(weighed) == ["2.5 kg = 5.51 lb"]
    # The model was sent the whole thread (LangChain's on_chat_model_start, a RAW event).
    (asked, _) = [raw_event(e)["data"]["input"]["messages"][0] for e in model_starts(weighed)]
    assert [m["type"] for m in asked] == ["system", "human", "ai", "tool", "ai", "human"]
    assert [m["content"] for m in asked if m["type"] == "tool"] == ["180 C = 356.00 F"]
    # What the front end shows after the second run: both answers, in order.
    shown = Session(state=second.state, messages=second.messages).apply_all(weighed).finish()
    answers = [m["content"] for m in shown.messages if m["role"] == "assistant" and m["content"]]
    assert answers == ["That makes 356.00 F.", "That makes 5.51 lb."]
    assert [m["content"] for m in shown.state["messages"] if m["type"] == "human"] == [
        "What is 180 C in Fahrenheit?",
        "And 2.5 kg in pounds?",
    ]

    # Run 2 sent run 1's ids back; the cassette gives them run 1's names, in run 2 too.
    assert_stored_without_random_ids(agui)
    assert converted == agui_snapshot(name="first")
    assert weighed == agui_snapshot(name="second")
