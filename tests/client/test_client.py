"""The client Session: each event family applied as the reference client (@ag-ui/client 1.0,
``defaultApplyEvents``) applies it. Expected values are written out by hand from the reference
implementation's rules, not taken from our own output."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from agui_replay.client import Session, apply_events
from agui_replay.errors import (
    AguiReplayError,
    EventDecodeError,
    EventPatchError,
    PatchError,
    ProtocolViolation,
    SchemaViolation,
)

RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def run(*events: dict[str, Any], **kwargs: Any) -> Session:
    return apply_events([RUN, *events, FINISH], **kwargs)


def text(mid: str, *deltas: str, role: str | None = None) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "TEXT_MESSAGE_START", "messageId": mid}
    if role is not None:
        start["role"] = role
    return [
        start,
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": d} for d in deltas),
        {"type": "TEXT_MESSAGE_END", "messageId": mid},
    ]


def tool(call: str, name: str, *args: str, parent: str | None = None) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": name}
    if parent is not None:
        start["parentMessageId"] = parent
    return [
        start,
        *({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": a} for a in args),
        {"type": "TOOL_CALL_END", "toolCallId": call},
    ]


def result(mid: str, call: str, content: str) -> dict[str, Any]:
    return {"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": call, "content": content}


def call(cid: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- text ---------------------------------------------------------------------------------------


def test_text_message_defaults_to_assistant_and_concatenates_deltas() -> None:
    session = run(*text("m1", "Hel", "lo", " wörld 🙂"))
    assert session.messages == [{"id": "m1", "role": "assistant", "content": "Hello wörld 🙂"}]


def test_text_message_keeps_role_and_name() -> None:
    start = {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user", "name": "ann"}
    session = run(
        start,
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "u"},
    )
    assert session.messages == [{"id": "u", "role": "user", "content": "hi", "name": "ann"}]


def test_empty_deltas_and_no_content_events() -> None:
    session = run(*text("a"), *text("b", "", "x", ""))
    assert [m["content"] for m in session.messages] == ["", "x"]


def test_reading_messages_mid_stream_then_appending_more() -> None:
    session = Session()
    session.apply_all([RUN, *text("m", "ab", "cd")[:2]])
    assert session.messages[0]["content"] == "ab"
    session.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "cd"})
    assert session.message("m") == {"id": "m", "role": "assistant", "content": "abcd"}
    session.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "ef"})
    session.apply_all([{"type": "TEXT_MESSAGE_END", "messageId": "m"}, FINISH])
    assert session.messages[0]["content"] == "abcdef"


def test_many_deltas_into_one_message() -> None:
    deltas = [f"{i % 10}" for i in range(20_000)]
    session = run(*text("long", *deltas))
    assert session.messages[0]["content"] == "".join(deltas)


def test_text_start_reuses_the_assistant_message_a_tool_call_created() -> None:
    # TOOL_CALL_START names parent "a1" before that text message starts: the reference client
    # creates assistant "a1" for the call, then TEXT_MESSAGE_START finds and reuses it.
    session = run(*tool("c1", "search", "{}", parent="a1"), *text("a1", "done"))
    assert session.messages == [
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [call("c1", "search", "{}")],
            "content": "done",
        }
    ]


def test_content_for_an_unknown_id_is_a_warning_when_not_verifying() -> None:
    session = run(
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "ghost"},
        verify=False,
    )
    assert session.messages == []
    assert session.warnings == [
        "TEXT_MESSAGE_CONTENT #1: no message with id 'ghost'; ignored",
        "TEXT_MESSAGE_END #2: no message with id 'ghost'; ignored",
    ]
    assert session.errors == []


def test_text_and_reasoning_events_on_an_activity_id_are_warnings_and_change_nothing() -> None:
    activity = {"id": "a", "role": "activity", "activityType": "plan", "content": {"x": 1}}
    session = run(
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "plan",
            "content": {"x": 1},
        },
        *text("a", "x"),
        {"type": "REASONING_START", "messageId": "r1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "a", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_END", "messageId": "a"},
        {"type": "REASONING_END", "messageId": "r1"},
    )
    assert session.messages == [activity]
    assert session.warnings == [
        "TEXT_MESSAGE_START #2: message 'a' is an activity message",
        "TEXT_MESSAGE_CONTENT #3: an activity message with id 'a'; ignored",
        "TEXT_MESSAGE_END #4: an activity message with id 'a'; ignored",
        "REASONING_MESSAGE_START #6: message 'a' is an activity message",
        "REASONING_MESSAGE_END #7: an activity message with id 'a'; ignored",
    ]


# -- tool calls ---------------------------------------------------------------------------------


def test_tool_call_without_parent_gets_an_assistant_message_named_after_the_call() -> None:
    session = run(*tool("c1", "get_weather", '{"city":', '"Oslo"}'))
    assert session.messages == [
        {
            "id": "c1",
            "role": "assistant",
            "toolCalls": [call("c1", "get_weather", '{"city":"Oslo"}')],
        }
    ]


def test_tool_calls_attach_to_an_existing_assistant_parent() -> None:
    session = run(
        *text("a1", "let me look"),
        *tool("c1", "search", "{}", parent="a1"),
        *tool("c2", "fetch", "[1]", parent="a1"),
    )
    assert session.messages == [
        {
            "id": "a1",
            "role": "assistant",
            "content": "let me look",
            "toolCalls": [call("c1", "search", "{}"), call("c2", "fetch", "[1]")],
        }
    ]


def test_tool_call_whose_parent_is_not_an_assistant_message_falls_back_to_its_own_id() -> None:
    session = run(*text("u1", "hi", role="user"), *tool("c1", "search", "{}", parent="u1"))
    assert session.messages == [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "c1", "role": "assistant", "toolCalls": [call("c1", "search", "{}")]},
    ]
    assert any("u1" in w for w in session.warnings)


def test_interleaved_tool_calls_keep_their_own_arguments() -> None:
    session = run(
        {"type": "TOOL_CALL_START", "toolCallId": "x", "toolCallName": "a"},
        {"type": "TOOL_CALL_START", "toolCallId": "y", "toolCallName": "b"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "x", "delta": "[1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "y", "delta": "[2"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "x", "delta": "]"},
        {"type": "TOOL_CALL_END", "toolCallId": "x"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "y", "delta": "]"},
        {"type": "TOOL_CALL_END", "toolCallId": "y"},
    )
    assert [m["toolCalls"][0]["function"]["arguments"] for m in session.messages] == ["[1]", "[2]"]


def test_a_repeated_tool_call_start_updates_instead_of_duplicating() -> None:
    # Run 2 re-sends the START of a call run 1 made (the reference's idempotent path).
    session = apply_events(
        [
            RUN,
            *tool("c1", "search", '{"q":1}'),
            FINISH,
            {**RUN, "runId": "r2"},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "lookup"},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {**FINISH, "runId": "r2"},
        ]
    )
    assert session.messages == [
        {"id": "c1", "role": "assistant", "toolCalls": [call("c1", "lookup", '{"q":1}')]}
    ]


def test_tool_result_goes_right_after_the_assistant_message_that_owns_the_call() -> None:
    session = run(
        *text("u", "weather?", role="user"),
        *tool("c1", "get_weather", "{}", parent="a1"),
        *text("a2", "checking"),
        result("t1", "c1", "sunny"),
    )
    assert [m["id"] for m in session.messages] == ["u", "a1", "t1", "a2"]
    assert session.message("t1") == {
        "id": "t1",
        "toolCallId": "c1",
        "role": "tool",
        "content": "sunny",
    }


def test_parallel_tool_results_keep_their_arrival_order() -> None:
    session = run(
        *text("a1", "two calls"),
        *tool("c1", "f", "{}", parent="a1"),
        *tool("c2", "g", "{}", parent="a1"),
        *text("a2", "after"),
        result("t2", "c2", "second"),
        result("t1", "c1", "first"),
    )
    assert [m["id"] for m in session.messages] == ["a1", "t2", "t1", "a2"]


def test_tool_result_for_an_unknown_call_is_appended() -> None:
    session = run(*text("a", "x"), result("t", "nobody", "?"))
    assert [m["id"] for m in session.messages] == ["a", "t"]


def test_result_content_parts_are_copied() -> None:
    parts = [{"type": "text", "text": "hi"}]
    event = {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": parts}
    session = run(*tool("c", "f", "{}"), event)
    parts[0]["text"] = "changed"
    assert session.messages[1]["content"] == [{"type": "text", "text": "hi"}]


# -- state --------------------------------------------------------------------------------------


def test_state_snapshot_replaces_and_delta_patches() -> None:
    session = run(
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1, "list": [1, 2]}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/list/-", "value": 3}]},
        {"type": "STATE_SNAPSHOT", "snapshot": {"b": True}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/c", "value": 1.0}]},
    )
    assert session.state == {"b": True, "c": 1.0}
    assert isinstance(session.state["c"], float)
    assert session.errors == []
    assert not session.needs_resync


def test_failed_delta_keeps_state_records_the_error_and_needs_resync() -> None:
    session = Session(state={"count": 1})
    session.apply_all(
        [
            RUN,
            # Atomic: the first operation would succeed, the second fails, nothing changes.
            {
                "type": "STATE_DELTA",
                "delta": [
                    {"op": "replace", "path": "/count", "value": 2},
                    {"op": "remove", "path": "/missing"},
                ],
            },
        ]
    )
    assert session.state == {"count": 1}
    assert session.needs_resync
    [error] = session.errors
    assert isinstance(error, EventPatchError)
    assert isinstance(error, PatchError)
    assert isinstance(error, AguiReplayError)
    assert error.index == 1
    assert error.event_type == "STATE_DELTA"
    assert error.op_index == 1
    assert "STATE_DELTA #1" in str(error)
    assert "/missing" in str(error)

    # A later delta that fits is still applied (as the reference does), the flag stays up...
    session.apply({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 0}]})
    assert session.state == {"count": 1, "x": 0}
    assert session.needs_resync
    # ...until a snapshot resynchronizes.
    session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"count": 5}})
    assert not session.needs_resync
    assert session.state == {"count": 5}
    assert len(session.errors) == 1


def test_state_is_never_mutated_in_place_and_snapshots_are_copied() -> None:
    snapshot = {"items": [{"n": 1}]}
    session = Session()
    session.apply_all([RUN, {"type": "STATE_SNAPSHOT", "snapshot": snapshot}])
    snapshot["items"][0]["n"] = 99
    before = session.state
    session.apply(
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/items/0/n", "value": 2}]}
    )
    assert before == {"items": [{"n": 1}]}
    assert session.state == {"items": [{"n": 2}]}


def test_initial_state_and_messages_are_copied() -> None:
    state = {"a": [1]}
    messages = [{"id": "u", "role": "user", "content": "hi"}]
    session = Session(state=state, messages=messages)
    state["a"].append(2)
    messages[0]["content"] = "changed"
    messages.append({"id": "v", "role": "user", "content": "x"})
    assert session.state == {"a": [1]}
    assert session.messages == [{"id": "u", "role": "user", "content": "hi"}]


# -- MESSAGES_SNAPSHOT ---------------------------------------------------------------------------


def local_messages() -> list[dict[str, Any]]:
    return [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "old"},
        {"id": "r1", "role": "reasoning", "content": "thinking"},
        {"id": "p1", "role": "activity", "activityType": "plan", "content": {"s": 1}},
        {"id": "g1", "role": "activity", "activityType": "progress", "content": {"s": 2}},
        {"id": "x", "role": "assistant", "content": "dropped"},
    ]


def snapshot_of(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages), **extra}


def test_messages_snapshot_replaces_in_place_keeps_client_only_and_appends_new() -> None:
    new_a1 = {"id": "a1", "role": "assistant", "content": "new"}
    n1 = {"id": "n1", "role": "user", "content": "next"}
    session = Session(messages=local_messages())
    session.apply_all([RUN, snapshot_of(n1, new_a1)])
    # u1 and x are gone; a1 replaced where it was; reasoning and activity (client-only) kept;
    # n1 appended.
    assert [m["id"] for m in session.messages] == ["a1", "r1", "p1", "g1", "n1"]
    assert session.message("a1") == new_a1


def test_messages_snapshot_with_reasoning_owns_reasoning() -> None:
    session = Session(messages=local_messages())
    session.apply_all([RUN, snapshot_of({"id": "r9", "role": "reasoning", "content": "z"})])
    assert [m["id"] for m in session.messages] == ["p1", "g1", "r9"]


def test_messages_snapshot_with_activity_owns_activity() -> None:
    act = {"id": "p2", "role": "activity", "activityType": "plan", "content": {}}
    session = Session(messages=local_messages())
    session.apply_all([RUN, snapshot_of(act)])
    assert [m["id"] for m in session.messages] == ["r1", "p2"]


def test_messages_snapshot_declared_activity_types() -> None:
    # metadata["@ag-ui/client"].authoritativeActivityTypes: a list owns those types only...
    owns_plan = {"@ag-ui/client": {"authoritativeActivityTypes": ["plan"]}}
    session = Session(messages=local_messages())
    session.apply_all([RUN, snapshot_of(metadata=owns_plan)])
    assert [m["id"] for m in session.messages] == ["r1", "g1"]
    # ...and null owns every type, even with no activity in the snapshot.
    owns_all = {"@ag-ui/client": {"authoritativeActivityTypes": None}}
    session = Session(messages=local_messages())
    session.apply_all([RUN, snapshot_of(metadata=owns_all)])
    assert [m["id"] for m in session.messages] == ["r1"]


def test_messages_snapshot_then_streaming_into_a_replaced_message() -> None:
    session = Session()
    session.apply_all(
        [
            RUN,
            {"type": "TEXT_MESSAGE_START", "messageId": "a"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "par"},
            snapshot_of({"id": "a", "role": "assistant", "content": "from server "}),
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "tail"},
            {"type": "TEXT_MESSAGE_END", "messageId": "a"},
            FINISH,
        ]
    )
    assert session.messages == [{"id": "a", "role": "assistant", "content": "from server tail"}]


# -- reasoning -----------------------------------------------------------------------------------


def test_reasoning_messages_and_encrypted_values() -> None:
    session = run(
        {"type": "REASONING_START", "messageId": "rb"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "hmm, "},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "ok"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm"},
        {"type": "REASONING_END", "messageId": "rb"},
        *tool("c1", "f", "{}"),
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "message",
            "entityId": "rm",
            "encryptedValue": "enc-m",
        },
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": "tool-call",
            "entityId": "c1",
            "encryptedValue": "enc-c",
        },
    )
    assert session.messages == [
        {"id": "rm", "role": "reasoning", "content": "hmm, ok", "encryptedValue": "enc-m"},
        {
            "id": "c1",
            "role": "assistant",
            "toolCalls": [{**call("c1", "f", "{}"), "encryptedValue": "enc-c"}],
        },
    ]


# -- activity ------------------------------------------------------------------------------------


def activity(mid: str, content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": mid,
        "activityType": "plan",
        "content": content,
        **extra,
    }


def test_activity_snapshot_creates_replaces_and_keeps_with_replace_false() -> None:
    session = run(activity("p", {"step": 1}))
    assert session.messages == [
        {"id": "p", "role": "activity", "activityType": "plan", "content": {"step": 1}}
    ]
    session = run(activity("p", {"step": 1}), activity("p", {"other": True}))
    assert session.messages[0]["content"] == {"other": True}
    # replace: false asks the client to leave existing content alone.
    session = run(activity("p", {"step": 1}), activity("p", {"step": 2}, replace=False))
    assert session.messages[0]["content"] == {"step": 1}
    # ...but still creates the message when there is none.
    session = run(activity("q", {"step": 2}, replace=False))
    assert session.messages[0]["content"] == {"step": 2}


def test_activity_delta_patches_content_and_a_bad_patch_is_recorded() -> None:
    delta = {
        "type": "ACTIVITY_DELTA",
        "messageId": "p",
        "activityType": "plan",
        "patch": [{"op": "add", "path": "/steps/-", "value": "b"}],
    }
    bad = {**delta, "patch": [{"op": "replace", "path": "/nope/0", "value": 1}]}
    session = run(activity("p", {"steps": ["a"]}), delta, bad)
    assert session.messages[0]["content"] == {"steps": ["a", "b"]}
    [error] = session.errors
    assert isinstance(error, EventPatchError)
    assert error.event_type == "ACTIVITY_DELTA"
    assert error.index == 3
    assert not session.needs_resync  # only state deltas call for a state resync


def test_activity_delta_for_a_missing_message_is_ignored() -> None:
    delta = {"type": "ACTIVITY_DELTA", "messageId": "none", "activityType": "plan", "patch": []}
    session = run(delta)
    assert session.messages == []
    assert session.errors == []


# -- chunks --------------------------------------------------------------------------------------


@pytest.mark.parametrize("verify", [True, False])
def test_chunks_are_expanded_before_applying(verify: bool) -> None:
    session = run(
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"},
        {"type": "TOOL_CALL_CHUNK", "delta": '{"a"'},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": ":1}"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r", "delta": "why"},
        verify=verify,
    )
    assert session.messages == [
        {
            "id": "m",
            "role": "assistant",
            "content": "Hello",
            "toolCalls": [call("c", "f", '{"a":1}')],
        },
        {"id": "r", "role": "reasoning", "content": "why"},
    ]


# -- runs and interrupts ----------------------------------------------------------------------


def test_interrupt_outcome_sets_pending_interrupts_and_the_next_run_finished_clears_them() -> None:
    interrupted = {
        **FINISH,
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i1", "reason": "confirm", "toolCallId": "c1"}],
        },
    }
    session = Session()
    session.apply_all([RUN, *tool("c1", "delete_all", "{}"), interrupted])
    assert session.pending_interrupts == [{"id": "i1", "reason": "confirm", "toolCallId": "c1"}]
    session.apply({**RUN, "runId": "r2"})
    assert session.run_id == "r2"
    # As in the reference client, RUN_STARTED leaves them; the run's RUN_FINISHED replaces them.
    assert session.pending_interrupts == [{"id": "i1", "reason": "confirm", "toolCallId": "c1"}]
    session.apply({**FINISH, "runId": "r2"})
    assert session.pending_interrupts == []


def test_pending_tool_calls_are_the_unanswered_ones() -> None:
    session = run(*tool("c1", "f", "{}"), *tool("c2", "g", "{}"), result("t1", "c1", "ok"))
    assert session.pending_tool_call_ids == ["c2"]
    assert session.pending_interrupts == []
    named = {**FINISH, "outcome": {"type": "success", "pendingToolCallIds": ["c9"]}}
    session = apply_events([RUN, *tool("c1", "f", "{}"), named])
    assert session.pending_tool_call_ids == ["c9"]


def test_run_started_input_messages_are_added_when_missing() -> None:
    user = {"id": "u1", "role": "user", "content": "hi"}
    started = {
        **RUN,
        "input": {"threadId": "t", "runId": "r", "messages": [user, {**user, "content": "dup"}]},
    }
    session = apply_events([started, *text("a", "hello"), FINISH])
    assert session.messages == [user, {"id": "a", "role": "assistant", "content": "hello"}]


def test_run_error_is_kept() -> None:
    session = apply_events([RUN, {"type": "RUN_ERROR", "message": "boom", "code": "AGENT_ERROR"}])
    assert session.run_error == {"type": "RUN_ERROR", "message": "boom", "code": "AGENT_ERROR"}


def test_metadata_accumulates_key_by_key() -> None:
    session = run(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"a": 1, "b": 1}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"b": 2, "usage": [3]}},
    )
    assert session.messages[0]["metadata"] == {"a": 1, "b": 2, "usage": [3]}


# -- verification and input forms -------------------------------------------------------------


def test_a_violation_raises_from_apply_and_the_event_is_not_applied() -> None:
    session = Session()
    session.apply(RUN)
    with pytest.raises(ProtocolViolation) as info:
        session.apply({"type": "TOOL_CALL_ARGS", "toolCallId": "r-call-2", "delta": "{}"})
    assert info.value.rule == "not-open"
    assert info.value.index == 1
    assert str(info.value) == (
        'TOOL_CALL_ARGS #1 breaks rule not-open: tool call "r-call-2" was never opened'
    )
    assert session.messages == []
    assert session.warnings == []
    # The session goes on after a refused event.
    session.apply_all(text("m", "ok"))
    assert session.messages[0]["content"] == "ok"


def test_events_before_run_started_are_refused_unless_verification_is_off() -> None:
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}
    with pytest.raises(ProtocolViolation) as info:
        Session().apply(snapshot)
    assert info.value.rule == "not-started"
    session = Session(verify=False)
    session.apply(snapshot)
    assert session.state == {"a": 1}


def test_strict_mode_rejects_an_unfinished_stream_at_finish() -> None:
    session = Session(mode="strict")
    session.apply_all([RUN, *text("m", "x")])
    with pytest.raises(ProtocolViolation) as info:
        session.finish()
    assert info.value.rule == "incomplete"
    # Client mode accepts the same stream.
    assert apply_events([RUN, *text("m", "x")]).messages[0]["content"] == "x"


def test_ag_ui_core_models_and_wire_dicts_mix() -> None:
    session = Session()
    session.apply(RunStartedEvent(thread_id="t", run_id="r"))
    session.apply(TextMessageStartEvent(message_id="m", role="assistant"))
    session.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"})
    session.apply(TextMessageContentEvent(message_id="m", delta="b"))
    session.apply(TextMessageEndEvent(message_id="m"))
    assert session.messages == [{"id": "m", "role": "assistant", "content": "ab"}]
    assert session.events_applied == 5


@pytest.mark.parametrize("verify", [True, False])
def test_malformed_events_give_a_decode_error_naming_the_index(verify: bool) -> None:
    session = Session(verify=verify)
    session.apply(RUN)
    session.apply({"type": "TEXT_MESSAGE_START", "messageId": "m"})
    with pytest.raises(EventDecodeError) as info:
        session.apply({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 5})
    assert info.value.index == 2
    assert "delta" in str(info.value)
    with pytest.raises(EventDecodeError):
        session.apply(["not", "an", "event"])  # type: ignore[arg-type]


@pytest.mark.parametrize("verify", [True, False])
def test_unknown_event_types_are_dropped_with_a_warning(verify: bool) -> None:
    # The reference client drops what it does not know, warns, and goes on.
    session = Session(verify=verify)
    session.apply(RUN)
    session.apply({"type": "X_STATE_SNAPSHOT", "snapshot": {"a": 1}})
    session.apply({"type": "THINKING_START"})
    session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"b": 2}})
    session.apply(FINISH)
    session.finish()
    assert session.state == {"b": 2}
    assert len(session.warnings) == 2
    assert session.warnings[0].startswith("X_STATE_SNAPSHOT #1: unknown event type")
    assert session.warnings[1].startswith("THINKING_START #2: unknown event type")
    assert session.events_applied == 5


def test_strict_sessions_refuse_unknown_event_types() -> None:
    session = Session(mode="strict")
    session.apply(RUN)
    with pytest.raises(EventDecodeError) as unknown:
        session.apply({"type": "THINKING_START"})
    assert "REASONING_" in str(unknown.value)
    assert session.warnings == []


def test_a_new_session_holds_an_empty_object_as_the_reference_agent() -> None:
    assert Session().state == {}
    assert apply_events([RUN, FINISH]).state == {}
    assert Session(state=[1]).state == [1]


def test_state_delta_with_a_non_list_delta_is_recorded_not_raised() -> None:
    session = Session(state={"a": 1}, verify=False)
    session.apply({"type": "STATE_DELTA", "delta": {"op": "remove", "path": "/a"}})
    assert session.state == {"a": 1}
    assert session.needs_resync
    assert isinstance(session.errors[0], PatchError)


def test_initial_state_and_messages_may_be_models() -> None:
    from ag_ui.core import AssistantMessage, UserMessage
    from pydantic import BaseModel

    class Counter(BaseModel):
        clicks: int = 0
        label: str | None = None
        ratio: float = 1

    session = Session(
        state=Counter(clicks=2),
        messages=[UserMessage(id="u", content="hi"), AssistantMessage(id="a", content="yo")],
    )
    # As encode_state publishes a model: field names, JSON mode, None kept, 1 -> 1.0 for floats.
    assert session.state == {"clicks": 2, "label": None, "ratio": 1.0}
    assert isinstance(session.state["ratio"], float)
    assert session.messages == [
        {"id": "u", "role": "user", "content": "hi"},
        {"id": "a", "role": "assistant", "content": "yo"},
    ]


def test_importing_the_client_does_not_import_hypothesis() -> None:
    import subprocess
    import sys

    code = "import sys, agui_replay, agui_replay.client; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_null_subagent_run_id_is_a_schema_violation() -> None:
    # The reference client's schema refuses `subagentRunId: null` ("omit it entirely").
    with pytest.raises(SchemaViolation) as info:
        run({"type": "TEXT_MESSAGE_START", "messageId": "n", "subagentRunId": None})
    assert (info.value.rule, info.value.field, info.value.index) == ("schema", "subagentRunId", 1)
    assert "omit" in str(info.value)


def test_message_starts_keep_a_subagent_run_id_and_drop_a_null_one() -> None:
    # Unverified, the applier reads a null subagentRunId as absent, as the reference applier.
    session = run(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": "sub-1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TEXT_MESSAGE_START", "messageId": "n", "subagentRunId": None},
        {"type": "TEXT_MESSAGE_END", "messageId": "n"},
        {"type": "REASONING_START", "messageId": "r"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm", "subagentRunId": "sub-2"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm"},
        {"type": "REASONING_END", "messageId": "r"},
        verify=False,
    )
    assert session.messages == [
        {"id": "m", "role": "assistant", "content": "", "subagentRunId": "sub-1"},
        {"id": "n", "role": "assistant", "content": ""},
        {"id": "rm", "role": "reasoning", "content": "", "subagentRunId": "sub-2"},
    ]
