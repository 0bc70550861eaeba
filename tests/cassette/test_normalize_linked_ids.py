"""One raw id, one name: an id used in two roles keeps one normalized name in both.

Agno answers a tool call with a ``TOOL_CALL_RESULT`` whose ``messageId`` is the call's own id.
Normalized per role, the two would become ``run-1-msg-2`` and ``run-1-call-1``, and an agent
that stopped reusing the id would normalize to the very same stream. The second role takes the
name the first role gave, so the link shows, and a broken link shows as a difference.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.normalize import Normalizer, normalize_events, normalize_stream

CALL = "call_AbC12dEf34GhI56jK"


def _agno_run(result_message_id: str, *, run_id: str = "run-1") -> list[dict[str, Any]]:
    """A run the way Agno streams it: the tool result's messageId is the tool call id."""
    answer, reply = str(uuid.uuid4()), str(uuid.uuid4())
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": answer, "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": answer},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": CALL,
            "toolCallName": "get_weather",
            "parentMessageId": answer,
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": CALL, "delta": '{"city": "Paris"}'},
        {"type": "TOOL_CALL_END", "toolCallId": CALL},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": result_message_id,
            "toolCallId": CALL,
            "content": "sunny",
            "role": "tool",
        },
        {"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": "Sunny."},
        {"type": "TEXT_MESSAGE_END", "messageId": reply},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]


def _result(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "TOOL_CALL_RESULT")


def test_a_message_id_equal_to_a_tool_call_id_takes_the_call_s_name() -> None:
    stream = normalize_stream(_agno_run(CALL))
    result = _result(stream.events)
    assert result["messageId"] == result["toolCallId"] == "run-1-call-1"
    # the shared name takes no message number: the reply is the second message
    assert [e.get("messageId") for e in stream.events if e["type"] == "TEXT_MESSAGE_START"] == [
        "run-1-msg-1",
        "run-1-msg-2",
    ]
    assert stream.id_map["call"][CALL] == stream.id_map["msg"][CALL] == "run-1-call-1"
    assert stream.original_id("run-1-call-1") == CALL


def test_a_broken_link_normalizes_differently() -> None:
    linked = normalize_events(_agno_run(CALL))
    broken = normalize_events(_agno_run(str(uuid.uuid4())))
    assert linked != broken
    assert _result(broken)["messageId"] == "run-1-msg-2"
    assert _result(broken)["toolCallId"] == "run-1-call-1"
    differing = [i for i, (a, b) in enumerate(zip(linked, broken, strict=True)) if a != b]
    # the result names another message, and the reply after it moves up a number
    assert [linked[i]["type"] for i in differing] == [
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    # two recordings of the linked agent, with fresh random ids, still compare equal
    assert normalize_events(_agno_run(CALL)) == linked


def test_whichever_role_comes_first_names_the_id() -> None:
    shared = str(uuid.uuid4())
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": shared, "role": "tool", "toolCallId": shared, "content": "ok"}],
        },
        {"type": "TOOL_CALL_START", "toolCallId": shared, "toolCallName": "f"},
        {"type": "TOOL_CALL_START", "toolCallId": str(uuid.uuid4()), "toolCallName": "g"},
    ]
    out = normalize_events(events)
    message = out[1]["messages"][0]
    assert message["id"] == message["toolCallId"] == out[2]["toolCallId"] == "r-msg-1"
    assert out[3]["toolCallId"] == "r-call-1"  # the shared name took no call number


def test_the_link_holds_across_the_runs_of_one_cassette() -> None:
    call = "call_ZyX98wVu76TsR54qP"
    first_events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1"},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "confirm"},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-1"},
    ]
    # the client answers in run 2's input; the agent echoes the result under the call's id
    tool_message = {"id": call, "role": "tool", "toolCallId": call, "content": "yes"}
    second_input = {"threadId": "t", "runId": "run-2", "messages": [tool_message]}
    second_events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"},
        {"type": "TOOL_CALL_RESULT", "messageId": call, "toolCallId": call, "content": "yes"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"answered": [call]}},
        {"type": "CUSTOM", "name": "audit", "value": {"call": call}},
        {"type": "RAW", "event": {"id": call}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-2"},
    ]
    normalizer = Normalizer()
    first = normalizer.events(first_events)
    assert first[1]["toolCallId"] == "run-1-call-1"
    normalized_input = normalizer.input(second_input)
    assert normalized_input["messages"][0]["id"] == "run-1-call-1"
    assert normalized_input["messages"][0]["toolCallId"] == "run-1-call-1"
    second = normalizer.events(second_events)
    assert second[1]["messageId"] == second[1]["toolCallId"] == "run-1-call-1"
    assert second[2]["snapshot"] == {"answered": ["run-1-call-1"]}
    assert second[3]["value"] == {"call": "run-1-call-1"}
    assert second[4]["event"] == {"id": "run-1-call-1"}

    # a second normalizer fed the normalized runs keeps every name (a cassette's replay)
    again = Normalizer()
    assert again.events(first) == first
    assert again.input(normalized_input) == normalized_input
    assert again.events(second) == second


def test_the_run_2_input_built_from_normalized_events_matches_the_raw_one() -> None:
    call = "call_QwE12rTy34uIo56pA"
    run1 = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1"},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "f"},
        {"type": "TOOL_CALL_RESULT", "messageId": call, "toolCallId": call, "content": "ok"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-1"},
    ]
    raw_side, normalized_side = Normalizer(), Normalizer()
    normalized_run1 = raw_side.events(run1)
    assert normalized_side.events(normalized_run1) == normalized_run1
    message = {"id": call, "role": "tool", "toolCallId": call, "content": "ok"}
    named = {**message, "id": "run-1-call-1", "toolCallId": "run-1-call-1"}
    from_raw = raw_side.input({"threadId": "t", "runId": "run-2", "messages": [message]})
    from_normalized = normalized_side.input(
        {"threadId": "t", "runId": "run-2", "messages": [named]}
    )
    assert from_raw == from_normalized


def test_normalized_ids_are_kept_in_any_role() -> None:
    # a stream from the server toolkit whose tool result reuses the call's id passes unchanged
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_RESULT", "messageId": "r-call-1", "toolCallId": "r-call-1"},
        {"type": "TOOL_CALL_START", "toolCallId": "r-call-1", "toolCallName": "f"},
        {"type": "TEXT_MESSAGE_START", "messageId": "abc", "role": "assistant"},
        {"type": "TOOL_CALL_START", "toolCallId": "xyz", "toolCallName": "g"},
    ]
    out = normalize_events(events)
    assert out[1] == events[1]
    assert out[2] == events[2]
    assert out[3]["messageId"] == "r-msg-1"
    assert out[4]["toolCallId"] == "r-call-2"  # r-call-1's number is held


def test_an_id_kept_as_the_test_wrote_it_is_kept_in_its_other_roles_too() -> None:
    normalizer = Normalizer()
    normalizer.input(
        {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "tool-1", "role": "tool", "toolCallId": "tool-1", "content": "ok"}],
        }
    )
    out = normalizer.events(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TOOL_CALL_RESULT", "messageId": "tool-1", "toolCallId": "tool-1"},
        ]
    )
    assert (out[1]["messageId"], out[1]["toolCallId"]) == ("tool-1", "tool-1")


# --- properties over generated streams ---------------------------------------------------------

# A small pool, so that ids recur in different roles; normalized-form ids among them.
_POOL = st.sampled_from(
    [
        "a",
        "b",
        "call_AbC12dEf34GhI56jK",
        "3f1c9a2b-4d5e-4f70-8192-a3b4c5d6e7f8",
        "r1-msg-1",
        "r1-call-1",
        "r2-msg-2",
        "r1-interrupt-1",
    ]
)


@st.composite
def _runs(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for run_id in draw(st.sampled_from([["r1"], ["r1", "r2"]])):
        events.append({"type": "RUN_STARTED", "threadId": "t", "runId": run_id})
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["text", "call", "result", "snapshot", "interrupt"]))
            if kind == "text":
                events.append(
                    {"type": "TEXT_MESSAGE_START", "messageId": draw(_POOL), "role": "assistant"}
                )
            elif kind == "call":
                events.append(
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": draw(_POOL),
                        "toolCallName": "f",
                        "parentMessageId": draw(_POOL),
                    }
                )
            elif kind == "result":
                events.append(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": draw(_POOL),
                        "toolCallId": draw(_POOL),
                    }
                )
            elif kind == "snapshot":
                message = {"id": draw(_POOL), "role": "tool", "toolCallId": draw(_POOL)}
                call = {"id": draw(_POOL), "type": "function"}
                assistant = {"id": draw(_POOL), "role": "assistant", "toolCalls": [call]}
                events.append({"type": "MESSAGES_SNAPSHOT", "messages": [assistant, message]})
            else:
                interrupt = {"id": draw(_POOL), "toolCallId": draw(_POOL)}
                events.append(
                    {
                        "type": "RUN_FINISHED",
                        "threadId": "t",
                        "runId": run_id,
                        "outcome": {"type": "interrupt", "interrupts": [interrupt]},
                    }
                )
    return events


_ID_KEYS = frozenset({"messageId", "parentMessageId", "toolCallId", "id"})


def _ids(value: Any, key: str | None = None) -> list[str]:
    """Every protocol id of the stream, in reading order."""
    if isinstance(value, dict):
        return [i for k, v in value.items() for i in _ids(v, k)]
    if isinstance(value, list):
        return [i for v in value for i in _ids(v, key)]
    return [value] if key in _ID_KEYS and isinstance(value, str) else []


@settings(max_examples=150, deadline=None)
@given(_runs())
def test_equal_raw_ids_stay_equal_and_different_ones_stay_different(
    events: list[dict[str, Any]],
) -> None:
    out = normalize_events(events)
    pairs = set(zip(_ids(events), _ids(out), strict=True))
    names: dict[str, str] = {}
    for raw, new in pairs:
        assert names.setdefault(raw, new) == new, f"{raw!r} got two names"
    assert len(set(names.values())) == len(names), f"two raw ids share a name: {names}"
    assert normalize_events(out) == out
