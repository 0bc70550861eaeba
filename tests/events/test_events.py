"""The wire layer: wire dicts <-> ag_ui.core models, families, and the errors bad events get."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    EventType,
    TextMessageContentEvent,
    TextMessageStartEvent,
    ToolCallStartEvent,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay._eventtypes import CHUNK_TYPES, TEXT_DELTA_TYPES, UNORDERED_TYPES
from agui_replay.errors import AguiReplayError, EventDecodeError
from agui_replay.events import (
    EVENT_TYPES,
    event_type,
    parse_event,
    parse_events,
    to_wire,
)

# One valid event of each AG-UI 1.0 type, written as it travels (camelCase, optional fields
# either given or left out; never null). Written by hand from the 1.0 schema.
WIRE_EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approve"}]},
    },
    {"type": "RUN_ERROR", "message": "boom", "code": "AGENT_ERROR"},
    {"type": "STEP_STARTED", "stepName": "plan"},
    {"type": "STEP_FINISHED", "stepName": "plan"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "héllo 😀"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m2", "delta": "x"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a":'},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c2", "toolCallName": "g", "delta": "{}"},
    {"type": "TOOL_CALL_RESULT", "messageId": "m3", "toolCallId": "c1", "content": "42"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1, "f": 1.0, "b": True, "z": None}},
    {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    },
    {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "a1",
        "activityType": "PLAN",
        "content": {"steps": []},
    },
    {
        "type": "ACTIVITY_DELTA",
        "messageId": "a1",
        "activityType": "PLAN",
        "patch": [{"op": "add", "path": "/steps/-", "value": "x"}],
    },
    {"type": "RAW", "event": {"anything": [1, 2]}, "source": "openai"},
    {"type": "CUSTOM", "name": "ping", "value": None},
    {"type": "REASONING_START", "messageId": "rm1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "hmm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
    {"type": "REASONING_MESSAGE_CHUNK", "messageId": "rm2", "delta": "hm"},
    {"type": "REASONING_END", "messageId": "rm1"},
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "rm1",
        "encryptedValue": "b64==",
    },
    {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"},
    {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
    {"type": "SUBAGENT_ERROR", "subagentRunId": "s2", "message": "failed"},
]


def _ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_the_samples_cover_every_event_type_once() -> None:
    assert sorted(_ids(WIRE_EVENTS)) == sorted(t.value for t in EventType)
    assert len(EVENT_TYPES) == 31


def test_the_families_are_event_types_and_chunks_are_never_unordered() -> None:
    assert UNORDERED_TYPES | CHUNK_TYPES | TEXT_DELTA_TYPES <= EVENT_TYPES
    assert not UNORDERED_TYPES & CHUNK_TYPES
    assert CHUNK_TYPES <= TEXT_DELTA_TYPES
    assert "REASONING_ENCRYPTED_VALUE" in UNORDERED_TYPES
    ordered = EVENT_TYPES - UNORDERED_TYPES - CHUNK_TYPES
    assert {"RUN_STARTED", "SUBAGENT_STARTED", "REASONING_START", "TOOL_CALL_RESULT"} <= ordered


@pytest.mark.parametrize("wire", WIRE_EVENTS, ids=_ids(WIRE_EVENTS))
def test_parse_then_dump_gives_the_wire_dict_back(wire: dict[str, Any]) -> None:
    model = parse_event(wire)
    assert isinstance(model, BaseEvent)
    assert event_type(model) == wire["type"]
    assert to_wire(model) == wire


def test_parse_accepts_json_text_and_bytes() -> None:
    text = '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"é"}'
    for data in (text, text.encode("utf-8")):
        model = parse_event(data)
        assert isinstance(model, TextMessageContentEvent)
        assert model.delta == "é"


def test_a_model_is_returned_as_it_is() -> None:
    model = TextMessageStartEvent(message_id="m", role="user")
    assert parse_event(model) is model
    assert to_wire(model) == {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "user"}


def test_snake_case_input_dumps_camel_case_and_omits_unset_optionals() -> None:
    model = parse_event({"type": "TOOL_CALL_START", "tool_call_id": "c", "tool_call_name": "f"})
    assert isinstance(model, ToolCallStartEvent)
    assert to_wire(model) == {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}


def test_to_wire_copies_a_mapping() -> None:
    wire = {"type": "STEP_STARTED", "stepName": "s"}
    copied = to_wire(wire)
    assert copied == wire
    assert copied is not wire
    assert [to_wire(e) for e in [wire, parse_event(wire)]] == [wire, wire]


def test_event_type_of_things_without_a_type() -> None:
    assert event_type({"type": 5}) == ""
    assert event_type({}) == ""
    assert event_type(TextMessageStartEvent(message_id="m")) == "TEXT_MESSAGE_START"


def test_unknown_type_names_index_type_and_field() -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event({"type": "TEXT_MESSAGE_BEGIN", "messageId": "m"}, index=3)
    error = info.value
    assert error.index == 3
    assert error.event_type == "TEXT_MESSAGE_BEGIN"
    assert error.field == "type"
    assert str(error) == "event #3: unknown event type 'TEXT_MESSAGE_BEGIN'"


def test_thinking_events_get_a_hint_towards_reasoning() -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event({"type": "THINKING_START"}, index=0)
    assert "THINKING_* events left the protocol in 1.0: use REASONING_*" in str(info.value)
    assert info.value.event_type == "THINKING_START"


def test_wrong_field_type_names_the_field() -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event(
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": "x"},
            index=7,
            line=8,
            source="run.jsonl",
        )
    error = info.value
    assert (error.index, error.line, error.source) == (7, 8, "run.jsonl")
    assert error.event_type == "TEXT_MESSAGE_CONTENT"
    assert error.field == "messageId"
    assert str(error).startswith(
        "run.jsonl, line 8, event #7: TEXT_MESSAGE_CONTENT: field messageId"
    )


def test_missing_required_field_names_the_field() -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event({"type": "TOOL_CALL_START", "toolCallId": "c"})
    assert info.value.field == "toolCallName"
    assert "toolCallName" in str(info.value)


@pytest.mark.parametrize("value", [[1, 2], "just text", 3, None])
def test_non_object_is_refused(value: Any) -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event(json.dumps(value), index=2)
    assert "must be a JSON object" in str(info.value)
    assert info.value.index == 2


@pytest.mark.parametrize("event", [{}, {"type": None}, {"type": 7}, {"messageId": "m"}])
def test_missing_type_is_refused(event: dict[str, Any]) -> None:
    with pytest.raises(EventDecodeError) as info:
        parse_event(event, index=1)
    assert info.value.field == "type"
    assert 'no "type" string' in str(info.value)


def test_invalid_json_text_is_a_decode_error() -> None:
    with pytest.raises(EventDecodeError, match="not valid JSON"):
        parse_event('{"type": "RUN_STARTED",', line=4)
    with pytest.raises(EventDecodeError, match="not valid JSON"):
        parse_event(b"\xff\xfe{}")


def test_parse_events_names_the_first_bad_index() -> None:
    good = {"type": "STEP_STARTED", "stepName": "s"}
    with pytest.raises(EventDecodeError) as info:
        parse_events([good, good, {"type": "NOPE"}, {"type": "NOPE2"}], source="x.json")
    assert info.value.index == 2
    assert str(info.value).startswith("x.json, event #2:")


# -- fuzzing: nothing but this package's own errors ----------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_field_names = st.sampled_from(
    [
        "messageId",
        "delta",
        "toolCallId",
        "toolCallName",
        "runId",
        "threadId",
        "stepName",
        "role",
        "snapshot",
        "outcome",
        "content",
        "subagentRunId",
        "name",
        "value",
        "x",
    ]
)
_typed_events = st.builds(
    lambda kind, fields: {"type": kind, **fields},
    st.sampled_from([*sorted(EVENT_TYPES), "THINKING_START", "", "run_started"]),
    st.dictionaries(_field_names, _json, max_size=5),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_json, _typed_events))
def test_parse_event_raises_only_its_own_errors(value: Any) -> None:
    for data in (value, json.dumps(value)):
        try:
            model = parse_event(data)
        except AguiReplayError:
            continue
        assert isinstance(model, BaseEvent)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_parse_event_on_random_bytes_raises_only_its_own_errors(data: bytes) -> None:
    with contextlib.suppress(AguiReplayError):
        parse_event(data)
