"""Assertion helpers and the stream diff explanation."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay._jsondiff import differences
from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_messages,
    assert_valid_stream,
    event_types,
    explain_stream_diff,
    final_messages,
    json_equal,
    message_text,
)


def _stream() -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"count": 0, "items": []}},
        {"type": "TEXT_MESSAGE_START", "messageId": "r-msg-1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r-msg-1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r-msg-1", "delta": "lo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "r-msg-1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "r-call-1",
            "toolCallName": "add",
            "parentMessageId": "r-msg-1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "r-call-1", "delta": '{"n": 1}'},
        {"type": "TOOL_CALL_END", "toolCallId": "r-call-1"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "r-msg-2",
            "toolCallId": "r-call-1",
            "content": "added",
            "role": "tool",
        },
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/count", "value": 1},
                {"op": "add", "path": "/items/-", "value": "a"},
            ],
        },
        {"type": "TEXT_MESSAGE_START", "messageId": "r-msg-3", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r-msg-3", "delta": "Done."},
        {"type": "TEXT_MESSAGE_END", "messageId": "r-msg-3"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]


# --- final state ---------------------------------------------------------------------------------


def test_final_state_passes_and_fails_json_strictly() -> None:
    assert_final_state(_stream(), {"count": 1, "items": ["a"]})
    with pytest.raises(AssertionError) as info:
        assert_final_state(_stream(), {"count": 1.0, "items": ["a"]})
    message = str(info.value)
    assert "/count" in message
    assert "1 (int)" in message
    assert "1.0 (float)" in message
    assert "event #10 (STATE_DELTA)" in message
    with pytest.raises(AssertionError, match="/count"):
        assert_final_state(_stream(), {"count": True, "items": ["a"]})


def test_final_state_with_initial_state_and_no_state_events() -> None:
    stream = [e for e in _stream() if not e["type"].startswith("STATE_")]
    assert_final_state(stream, {"x": 1}, initial_state={"x": 1})
    with pytest.raises(AssertionError, match="no STATE_SNAPSHOT / STATE_DELTA"):
        assert_final_state(stream, {"x": 2}, initial_state={"x": 1})


# --- messages ------------------------------------------------------------------------------------


def test_assert_messages_subset_and_exact() -> None:
    assert_messages(
        _stream(),
        [
            {"role": "assistant", "content": "Hello"},
            {"role": "tool", "content": "added", "toolCallId": "r-call-1"},
            {"role": "assistant", "content": "Done."},
        ],
    )
    messages = final_messages(_stream())
    assert_messages(_stream(), messages, exact=True)
    with pytest.raises(AssertionError, match=r"message #0 .* at /toolCalls"):
        assert_messages(
            _stream(),
            [
                {k: v for k, v in m.items() if k != "toolCalls"} | {"toolCalls": []}
                for m in messages[:1]
            ]
            + messages[1:],
            exact=True,
        )


def test_assert_messages_names_the_message_and_field() -> None:
    with pytest.raises(AssertionError) as info:
        assert_messages(
            _stream(),
            [
                {"role": "assistant", "content": "Hello"},
                {"role": "tool", "content": "nope"},
                {"role": "assistant", "content": "Done."},
                {"role": "assistant", "content": "more"},
            ],
        )
    message = str(info.value)
    assert 'message #1 (tool \'r-msg-2\') at /content: got "added", expected "nope"' in message
    assert "message #3: missing" in message
    with pytest.raises(AssertionError, match=r"message #1: unexpected"):
        assert_messages(_stream(), [{"content": "Hello"}])


def test_message_text() -> None:
    assert message_text(_stream()) == "Done."
    assert message_text(_stream(), "r-msg-1") == "Hello"
    with pytest.raises(AssertionError, match=r"no message with id 'zz'.*'r-msg-1' \(assistant\)"):
        message_text(_stream(), "zz")
    with pytest.raises(AssertionError, match="no assistant message"):
        message_text([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}])


def test_message_text_of_chunk_events() -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "role": "assistant", "delta": "a"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "b"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    assert message_text(events) == "ab"


def _langgraph_turn_two() -> list[dict[str, Any]]:
    """Run 2 of a thread as ag-ui-langgraph (0.0.47) streams it: this run's tool call and answer,
    then a MESSAGES_SNAPSHOT of the whole thread, turn 1's messages included. The client keeps
    the streamed messages where they are and appends the rest, so turn 1's answer ends up last."""
    call = {
        "id": "call-2",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    turn_one = [
        {"id": "user-1", "role": "user", "content": "Weather in Paris?"},
        {
            "id": "lc-1",
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {
                    **call,
                    "id": "call-1",
                    "function": {**call["function"], "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"id": "tool-1", "role": "tool", "content": "sunny, 24°C", "toolCallId": "call-1"},
        {"id": "lc-2", "role": "assistant", "content": "Paris: sunny, 24°C."},
        {"id": "user-2", "role": "user", "content": "And in Oslo?"},
    ]
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"},
        {"type": "STEP_STARTED", "stepName": "chat"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "call-2",
            "toolCallName": "get_weather",
            "parentMessageId": "lc-3",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "call-2", "delta": '{"city": "Oslo"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "call-2"},
        {"type": "STEP_FINISHED", "stepName": "chat"},
        {"type": "STEP_STARTED", "stepName": "tools"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "call-2",
            "toolCallId": "call-2",
            "content": "rain, 8°C",
            "role": "tool",
        },
        {"type": "STEP_FINISHED", "stepName": "tools"},
        {"type": "STEP_STARTED", "stepName": "chat"},
        {"type": "TEXT_MESSAGE_START", "messageId": "lc-4", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "lc-4", "delta": "Oslo: "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "lc-4", "delta": "rain, 8°C."},
        {"type": "TEXT_MESSAGE_END", "messageId": "lc-4"},
        {"type": "STEP_FINISHED", "stepName": "chat"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                *turn_one,
                {"id": "lc-3", "role": "assistant", "content": "", "toolCalls": [call]},
                {"id": "tool-2", "role": "tool", "content": "rain, 8°C", "toolCallId": "call-2"},
                {"id": "lc-4", "role": "assistant", "content": "Oslo: rain, 8°C."},
            ],
        },
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-2"},
    ]


def test_message_text_is_the_answer_this_run_streamed() -> None:
    events = _langgraph_turn_two()
    # What the user saw: the client's list ends with turn 1's answer.
    texts = [m["content"] for m in final_messages(events) if m["role"] == "assistant"]
    assert texts[-1] == "Paris: sunny, 24°C."
    assert message_text(events) == "Oslo: rain, 8°C."
    # A run that streams no text (its answer only in a snapshot): the last one the client holds.
    snapshot_only = [e for e in events if not e["type"].startswith("TEXT_MESSAGE")]
    assert message_text(snapshot_only) == "Oslo: rain, 8°C."


def test_a_broken_stream_fails_with_the_rule_not_a_traceback() -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"},
    ]
    with pytest.raises(AssertionError) as info:
        message_text(events)
    assert "#1" in str(info.value)
    assert "not-open" in str(info.value)


# --- event types ---------------------------------------------------------------------------------


def test_event_types_and_assert_event_types() -> None:
    types = event_types(_stream())
    assert types[:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START"]
    assert_event_types(_stream(), types)
    assert_event_types(
        _stream(),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ],
        ignore={"STATE_SNAPSHOT", "STATE_DELTA", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"},
    )
    assert_event_types(
        _stream(), ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"], in_order=True
    )


def test_assert_event_types_failure_names_index_and_context() -> None:
    expected = event_types(_stream())
    expected[7] = "TOOL_CALL_END"
    with pytest.raises(AssertionError) as info:
        assert_event_types(_stream(), expected)
    lines = str(info.value).splitlines()
    assert lines[0] == "event types differ at event #7: got TOOL_CALL_ARGS, expected TOOL_CALL_END"
    assert any(line.startswith("  > #7 ") and "TOOL_CALL_ARGS" in line for line in lines)
    assert any("#5 " in line for line in lines)
    assert any("#9 " in line for line in lines)
    with pytest.raises(AssertionError, match="got 1 more event"):
        assert_event_types(_stream(), event_types(_stream())[:-1])
    with pytest.raises(AssertionError, match=r"the stream ended, expected RUN_ERROR"):
        assert_event_types(_stream(), [*event_types(_stream()), "RUN_ERROR"])
    with pytest.raises(AssertionError, match=r"'RUN_ERROR'.*never came after 'TOOL_CALL_RESULT'"):
        assert_event_types(_stream(), ["TOOL_CALL_RESULT", "RUN_ERROR"], in_order=True)


# --- verifier ------------------------------------------------------------------------------------


def test_assert_valid_stream_modes() -> None:
    assert_valid_stream(_stream())
    assert_valid_stream(_stream(), mode="strict")
    unfinished = _stream()[:-1]
    assert_valid_stream(unfinished, mode="client")
    with pytest.raises(AssertionError, match="strict mode"):
        assert_valid_stream(unfinished, mode="strict")


def test_assert_valid_stream_shows_the_offending_event() -> None:
    events = _stream()
    events.insert(4, {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{}"})
    with pytest.raises(AssertionError) as info:
        assert_valid_stream(events)
    text = str(info.value)
    assert "TOOL_CALL_ARGS #4" in text
    assert "not-open" in text
    assert "ghost" in text
    assert "  > #4 " in text
    # The fix comes right after the violation, before the context events.
    lines = text.splitlines()
    assert lines[1] == (
        '  fix: emit TOOL_CALL_START for "ghost" before its arguments, or use the id of a call '
        "that is open"
    )
    assert lines[2].startswith("    #2 ")


# --- explain_stream_diff -------------------------------------------------------------------------


def test_equal_streams_have_no_explanation() -> None:
    assert explain_stream_diff(_stream(), copy.deepcopy(_stream())) == []


def test_changed_field_is_named_with_context() -> None:
    right = _stream()
    right[4]["delta"] = "LO"
    lines = explain_stream_diff(_stream(), right, left_name="recorded", right_name="replayed")
    assert lines[0] == "event streams differ at event #4 (TEXT_MESSAGE_CONTENT): field /delta"
    assert lines[1] == '  /delta: recorded "lo" != replayed "LO"'
    assert "1 event(s) differ" in lines[2]
    recorded = lines[lines.index("recorded:") + 1 : lines.index("replayed:")]
    assert [line.split("{")[0].split()[-1] for line in recorded] == ["#2", "#3", "#4", "#5", "#6"]
    assert recorded[2].startswith("  > #4 ")


def test_type_change_and_length_change() -> None:
    right = _stream()
    right[3] = {"type": "TOOL_CALL_START", "toolCallId": "x", "toolCallName": "y"}
    assert explain_stream_diff(_stream(), right)[0] == (
        "event streams differ at event #3: type TEXT_MESSAGE_CONTENT != TOOL_CALL_START"
    )
    longer = [*_stream(), {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"}]
    lines = explain_stream_diff(_stream(), longer)
    assert (
        lines[0]
        == "event streams differ at event #15: right has 1 more event(s), the first is RUN_STARTED"
    )
    assert explain_stream_diff(longer, _stream())[0].startswith(
        "event streams differ at event #15: left has"
    )


def test_number_types_count_as_changes() -> None:
    right = _stream()
    right[1]["snapshot"]["count"] = 0.0
    lines = explain_stream_diff(_stream(), right)
    assert lines[0].endswith("field /snapshot/count")
    assert "0 (int) != right 0.0 (float)" in lines[1]


def test_pytest_explains_an_inequality_of_event_streams_only() -> None:
    from agui_replay.pytest_plugin import pytest_assertrepr_compare as explain

    right = copy.deepcopy(_stream())
    right[1]["snapshot"]["count"] = 1
    assert explain(None, "==", _stream(), right)[0].startswith("event streams differ at event #1")
    for other in ([], [{"no": "type"}], "RUN_STARTED", [*_stream(), {"no": "type"}]):
        assert explain(None, "==", _stream(), other) is None
        assert explain(None, "==", other, _stream()) is None


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)  # NaN and infinity are not JSON
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(_JSON, _JSON)
def test_json_equal_agrees_with_canonical_json(a: Any, b: Any) -> None:
    import json

    def canonical(v: Any) -> str:
        # repr of floats keeps 1 and 1.0 apart; sort_keys ignores dict order like JSON does
        return json.dumps(v, sort_keys=True)

    assert json_equal(a, copy.deepcopy(a))
    assert json_equal(a, b) == (canonical(a) == canonical(b))
    assert (differences(a, b) == []) == json_equal(a, b)


def test_a_diff_lists_both_sides_in_one_key_order_and_counts_an_insertion_once() -> None:
    # An unchanged event prints the same on both sides whatever its key order, and one
    # inserted event counts as one difference, not as every event after it.
    left = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "A"}, {"type": "B"}]
    right = [
        {"type": "RUN_STARTED", "runId": "r", "threadId": "t"},
        {"type": "NEW", "b": {"z": 1, "a": 2}},
        {"type": "A"},
        {"type": "B"},
    ]
    lines = explain_stream_diff(left, right)
    assert lines[1] == "1 event(s) differ; left has 3 events, right has 4"
    started = '#0 {"type": "RUN_STARTED", "runId": "r", "threadId": "t"}'
    assert [line.strip() for line in lines if "RUN_STARTED" in line] == [started, started]
    assert any('{"type": "NEW", "b": {"a": 2, "z": 1}}' in line for line in lines)
    changed = explain_stream_diff([{"type": "A", "x": 1}] * 3, [{"type": "A", "x": 2}] * 3)
    assert changed[2].startswith("3 event(s) differ")
