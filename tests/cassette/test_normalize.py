"""Normalization of ids and timestamps."""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.events import parse_event, to_wire
from agui_replay.normalize import NormalizedStream, normalize_events, normalize_stream
from agui_replay.verify import verify_stream


def _u() -> str:
    return str(uuid.uuid4())


def _rich_stream(ids: dict[str, str]) -> list[dict[str, Any]]:
    """A stream that mentions each id in every place the protocol allows."""
    m1, m2, tr, c1, c2, i1, sa, act = (
        ids[k] for k in ("m1", "m2", "tr", "c1", "c2", "i1", "sa", "act")
    )
    return [
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "timestamp": 1,
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                "resume": [{"interruptId": i1, "status": "resolved"}],
            },
        },
        {"type": "REASONING_START", "messageId": m1, "timestamp": 2},
        {"type": "REASONING_MESSAGE_START", "messageId": m1, "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": m1, "delta": "hmm"},
        {"type": "REASONING_MESSAGE_END", "messageId": m1},
        {"type": "REASONING_END", "messageId": m1},
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "message",
            "entityId": m1,
            "encryptedValue": "x",
        },
        {"type": "TEXT_MESSAGE_START", "messageId": m2, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": m2, "delta": "Let me check."},
        {"type": "TEXT_MESSAGE_END", "messageId": m2},
        {"type": "TOOL_CALL_START", "toolCallId": c1, "toolCallName": "w", "parentMessageId": m2},
        {"type": "TOOL_CALL_ARGS", "toolCallId": c1, "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": c1},
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "tool-call",
            "entityId": c1,
            "encryptedValue": "y",
        },
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": tr,
            "toolCallId": c1,
            "content": "sunny",
            "role": "tool",
        },
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": act,
            "activityType": "plan",
            "content": {"steps": []},
        },
        {
            "type": "SUBAGENT_STARTED",
            "subagentRunId": sa,
            "name": "helper",
            "parentToolCallId": c1,
            "parentMessageId": m2,
        },
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": sa,
            "outcome": {"type": "suspended", "interruptIds": [i1]},
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "u1", "role": "user", "content": "hi"},
                {
                    "id": m2,
                    "role": "assistant",
                    "content": "Let me check.",
                    "toolCalls": [
                        {
                            "id": c1,
                            "type": "function",
                            "function": {"name": "w", "arguments": "{}"},
                        },
                        {
                            "id": c2,
                            "type": "function",
                            "function": {"name": "w", "arguments": "{}"},
                        },
                    ],
                },
                {"id": tr, "role": "tool", "content": "sunny", "toolCallId": c1},
            ],
        },
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "timestamp": 99,
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": i1, "reason": "approval", "toolCallId": c2}],
            },
        },
    ]


_KEYS = ("m1", "m2", "tr", "c1", "c2", "i1", "sa", "act")

# Worked out by hand from the order of first appearance in _rich_stream:
# i1 is first seen in RUN_STARTED.input.resume; u1 (input message) before m1; m2; c1; tr; act;
# sa; c2 first appears in the MESSAGES_SNAPSHOT.
_EXPECTED = {
    "u1": "r-msg-1",
    "m1": "r-msg-2",
    "m2": "r-msg-3",
    "tr": "r-msg-4",
    "act": "r-msg-5",
    "c1": "r-call-1",
    "c2": "r-call-2",
    "i1": "r-interrupt-1",
    "sa": "r-subagent-1",
}


def test_every_reference_is_renamed_consistently() -> None:
    ids = {k: _u() for k in _KEYS}
    out = normalize_events(_rich_stream(ids))
    expected = _rich_stream({k: _EXPECTED[k] for k in _KEYS})
    for event in expected:
        event.pop("timestamp", None)
    u1 = _EXPECTED["u1"]
    expected[0]["input"]["messages"][0]["id"] = u1
    expected[-2]["messages"][0]["id"] = u1
    assert out == expected


def test_every_normalized_event_still_parses() -> None:
    for event in normalize_events(_rich_stream({k: _u() for k in _KEYS})):
        parse_event(event)


def test_two_runs_with_different_random_ids_normalize_equal() -> None:
    a = _rich_stream({k: _u() for k in _KEYS})
    b = _rich_stream({k: f"pyd_ai_{uuid.uuid4().hex}" for k in _KEYS})
    assert a != b
    assert normalize_events(a) == normalize_events(b)


def test_input_is_untouched_and_raw_values_stay_available() -> None:
    ids = {k: _u() for k in _KEYS}
    events = _rich_stream(ids)
    before = copy.deepcopy(events)
    result = normalize_stream(events)
    assert events == before
    assert isinstance(result, NormalizedStream)
    assert result.raw == before
    assert result.raw is not events
    assert result.id_map["msg"][ids["m2"]] == "r-msg-3"
    assert result.id_map["call"][ids["c2"]] == "r-call-2"
    assert result.original_id("r-call-1") == ids["c1"]
    assert result.original_id("unchanged") == "unchanged"
    # mutating the result does not reach the input either
    result.events[-1]["outcome"]["interrupts"][0]["id"] = "zzz"
    assert events == before


def test_idempotent_on_the_rich_stream() -> None:
    once = normalize_events(_rich_stream({k: _u() for k in _KEYS}))
    assert normalize_events(once) == once


def test_derived_ids_are_kept_and_their_numbers_skipped() -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "abc", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": "abc"},
        {"type": "TEXT_MESSAGE_START", "messageId": "r-msg-1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r-msg-1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "r-msg-01", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r-msg-01"},
        {"type": "TOOL_CALL_START", "toolCallId": "r-msg-3", "toolCallName": "x"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    ids = [e.get("messageId") or e.get("toolCallId") for e in normalize_events(events)]
    # "abc" may not take r-msg-1 (held by the emitter-style id); "r-msg-01" is not canonical;
    # "r-msg-3" is a message-shaped id used as a tool call id: a normalized id is kept in any
    # role (one raw id, one name), and its number stays reserved among the messages.
    assert ids == [
        None,
        "r-msg-2",
        "r-msg-2",
        "r-msg-1",
        "r-msg-1",
        "r-msg-4",
        "r-msg-4",
        "r-msg-3",
        None,
    ]


def test_timestamps_removed_frozen_or_kept() -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1_700_000_000_123},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    assert all("timestamp" not in e for e in normalize_events(events))
    frozen = normalize_events(events, timestamps="freeze", frozen_timestamp=42)
    assert frozen[0]["timestamp"] == 42
    assert "timestamp" not in frozen[1]
    assert normalize_events(events, timestamps="keep")[0]["timestamp"] == 1_700_000_000_123
    with pytest.raises(ValueError, match="timestamps"):
        normalize_events(events, timestamps="zap")  # type: ignore[arg-type]


def test_each_run_numbers_under_its_own_run_id() -> None:
    shared = _u()
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "a"},
        {"type": "TEXT_MESSAGE_START", "messageId": shared, "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": shared},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "a"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "b"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": shared, "role": "assistant", "content": ""}],
        },
        {"type": "TEXT_MESSAGE_START", "messageId": _u(), "role": "assistant"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "b"},
    ]
    out = normalize_events(events)
    assert out[1]["messageId"] == "a-msg-1"
    assert out[5]["messages"][0]["id"] == "a-msg-1"  # an earlier run's id keeps its name
    assert out[6]["messageId"] == "b-msg-1"
    explicit = normalize_events(events, run_id="x")
    assert explicit[1]["messageId"] == "x-msg-1"
    assert explicit[6]["messageId"] == "x-msg-2"


def test_no_run_started_uses_run_and_preserve_keeps_ids() -> None:
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "keep-me", "role": "assistant"},
        {"type": "TEXT_MESSAGE_START", "messageId": "rename-me", "role": "assistant"},
    ]
    out = normalize_events(events, preserve={"keep-me"})
    assert [e["messageId"] for e in out] == ["keep-me", "run-msg-1"]


def test_only_the_run_ids_of_the_stream_make_an_id_derived() -> None:
    # "run" is the fallback run id, but this stream's only run is "r": "run-msg-1" is a
    # framework's id like any other, and an explicit empty run id falls back to "run".
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "run-msg-1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_START", "messageId": "r-msg-2", "role": "assistant"},
    ]
    assert [e.get("messageId") for e in normalize_events(events)] == [None, "r-msg-1", "r-msg-2"]
    explicit = normalize_events(events, run_id="")
    assert [e.get("messageId") for e in explicit] == [None, "run-msg-1", "run-msg-2"]


def test_names_follow_reading_order_within_and_across_events() -> None:
    a, b, c, d = _u(), _u(), _u(), _u()
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        # first seen nested (a snapshot), then at the top level: keeps its first name
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": c, "role": "user", "content": "x"}]},
        # messageId is read before parentMessageId in one event
        {"type": "TOOL_CALL_START", "toolCallId": d, "toolCallName": "f", "parentMessageId": a},
        {"type": "TOOL_CALL_RESULT", "messageId": b, "toolCallId": d, "content": "ok"},
        {"type": "TEXT_MESSAGE_START", "messageId": c, "role": "assistant", "parentMessageId": b},
    ]
    out = normalize_events(events)
    assert out[1]["messages"][0]["id"] == "r-msg-1"
    assert out[2]["parentMessageId"] == "r-msg-2"
    assert out[3]["messageId"] == "r-msg-3"
    assert (out[4]["messageId"], out[4]["parentMessageId"]) == ("r-msg-1", "r-msg-3")
    both = normalize_events(
        [{"type": "TEXT_MESSAGE_START", "parentMessageId": a, "messageId": b, "role": "user"}]
    )
    assert (both[0]["messageId"], both[0]["parentMessageId"]) == ("run-msg-1", "run-msg-2")


def test_nested_values_of_the_output_are_copies() -> None:
    events = [
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "x",
            "rawEvent": {"a": [1, {"b": 2}]},
        },
        {"type": "STATE_SNAPSHOT", "snapshot": {"items": [1, 2]}},
    ]
    before = copy.deepcopy(events)
    result = normalize_stream(events)
    for produced in (result.events, result.raw):
        produced[0]["rawEvent"]["a"][1]["b"] = 3
        produced[1]["snapshot"]["items"].append(3)
    assert events == before


def test_models_are_accepted() -> None:
    model = parse_event({"type": "TEXT_MESSAGE_START", "messageId": "q", "role": "assistant"})
    assert normalize_events([model])[0]["messageId"] == "run-msg-1"


# --- properties over generated streams ---------------------------------------------------------

_ID = st.one_of(
    st.uuids().map(str), st.sampled_from(["r-msg-1", "r-msg-2", "r-call-1", "a", "b", "r-msg-9"])
)


@st.composite
def _streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "tool", "snapshot"]))
        if kind == "text":
            mid = draw(_ID)
            events += [
                {
                    "type": "TEXT_MESSAGE_START",
                    "messageId": mid,
                    "role": "assistant",
                    "timestamp": draw(st.integers(0, 10**13)),
                },
                {
                    "type": "TEXT_MESSAGE_CONTENT",
                    "messageId": mid,
                    "delta": draw(st.text(min_size=1, max_size=5)),
                },
                {"type": "TEXT_MESSAGE_END", "messageId": mid},
            ]
        elif kind == "tool":
            cid, parent, result = draw(_ID), draw(_ID), draw(_ID)
            events += [
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": cid,
                    "toolCallName": "f",
                    "parentMessageId": parent,
                },
                {"type": "TOOL_CALL_END", "toolCallId": cid},
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": result,
                    "toolCallId": cid,
                    "content": "ok",
                },
            ]
        else:
            events.append(
                {
                    "type": "MESSAGES_SNAPSHOT",
                    "messages": [{"id": draw(_ID), "role": "assistant", "content": "x"}],
                }
            )
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return events


def _rename_all(events: list[dict[str, Any]], mapping: dict[str, str]) -> list[dict[str, Any]]:
    """The same stream with every non-derived id replaced through ``mapping`` (a bijection)."""

    def sub(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: sub(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [sub(v) for v in value]
        if key in ("messageId", "toolCallId", "parentMessageId", "id") and isinstance(value, str):
            return mapping.get(value, value)
        return value

    return [sub(e) for e in events]


@settings(max_examples=60, deadline=None)
@given(_streams())
def test_normalizing_twice_equals_once(events: list[dict[str, Any]]) -> None:
    once = normalize_events(events)
    assert normalize_events(once) == once


@settings(max_examples=60, deadline=None)
@given(_streams(), st.data())
def test_random_ids_do_not_change_the_normalized_stream(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    random_ids = sorted(
        {
            v
            for e in events
            for v in (e.get("messageId"), e.get("toolCallId"), e.get("parentMessageId"))
            if isinstance(v, str) and len(v) == 36
        }
        | {m["id"] for e in events for m in e.get("messages", []) if len(m["id"]) == 36}
    )
    fresh = data.draw(
        st.lists(
            st.uuids().map(str), min_size=len(random_ids), max_size=len(random_ids), unique=True
        ).filter(lambda xs: not set(xs) & set(random_ids))
    )
    renamed = _rename_all(events, dict(zip(random_ids, fresh, strict=True)))
    assert normalize_events(renamed) == normalize_events(events)


@settings(max_examples=40, deadline=None)
@given(_streams())
def test_normalizing_keeps_a_valid_stream_valid(events: list[dict[str, Any]]) -> None:
    try:
        verify_stream(events, "client")
    except Exception:
        return  # generated ids may collide into an invalid stream; only valid ones matter here
    verify_stream(normalize_events(events), "client")


# --- a real framework ----------------------------------------------------------------------------


def _pydantic_ai_run() -> list[dict[str, Any]]:
    from ag_ui.core import RunAgentInput, UserMessage
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    async def stream_fn(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            yield "The weather "
            yield "is sunny."
        else:
            yield {0: DeltaToolCall(name="get_weather", json_args='{"city": ')}
            yield {0: DeltaToolCall(json_args='"Paris"}')}

    agent = Agent(FunctionModel(stream_function=stream_fn))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    run_input = RunAgentInput(
        thread_id="t",
        run_id="run-1",
        state={},
        messages=[UserMessage(id="u1", role="user", content="weather?")],
        tools=[],
        context=[],
        forwarded_props={},
    )

    async def collect() -> list[dict[str, Any]]:
        return [
            to_wire(e) async for e in AGUIAdapter(agent=agent, run_input=run_input).run_stream()
        ]

    return asyncio.run(collect())


def test_pydantic_ai_streams_become_identical() -> None:
    first, second = _pydantic_ai_run(), _pydantic_ai_run()
    assert first != second  # the framework's ids (and timestamps) are random
    a, b = normalize_events(first), normalize_events(second)
    assert a == b
    assert "timestamp" not in str(a)
    call = next(e for e in a if e["type"] == "TOOL_CALL_START")
    result = next(e for e in a if e["type"] == "TOOL_CALL_RESULT")
    assert call["toolCallId"] == result["toolCallId"] == "run-1-call-1"
    assert call["parentMessageId"] == "run-1-msg-1"
    assert result["messageId"] == "run-1-msg-2"
    verify_stream(a, "strict")
