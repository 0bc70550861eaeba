"""Streams with subagents, and attribution / schema corruptions of them, against a table of
the reference client's rules (tests/support/corruptions.py: REFERENCE_RULES).

Valid streams come from ``event_streams(subagents=...)``: nested subagents, every event of a
subagent tagged with its ``subagentRunId``, steps of one name under several owners, chunks
streaming in several lanes. Each must pass both modes and fold into a Session. A corrupted one
must be refused at the corrupted event with the table's rule, by ``verify_stream``, by
``Session`` and by ``assert_valid_stream`` (strict mode refuses it too, at the same event);
the kinds the reference accepts (an unknown event type) pass in client mode with a warning.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay.assertions import assert_valid_stream
from agui_replay.client import Session, apply_events
from agui_replay.errors import EventDecodeError, ProtocolViolation
from agui_replay.strategies import event_streams
from agui_replay.strategies._event_streams import STREAM_ITEM_KINDS, SUBAGENT_STEP
from agui_replay.verify import Verifier, verify_stream
from tests.support.corruptions import REFERENCE_RULES, corrupt, corruptions

# Every kind of item, with more text messages and tool calls (so calls often have parents).
KINDS = [*STREAM_ITEM_KINDS, "text", "text", "tool", "tool"]
STREAMS = event_streams(subagents=3, min_items=1, max_items=4, max_runs=2, kinds=KINDS)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(STREAMS)
def test_streams_with_subagents_pass_both_modes_and_fold(stream: list[dict[str, Any]]) -> None:
    verify_stream(stream, "client")
    verify_stream(stream, "strict")
    session = apply_events(stream)
    assert not [w for w in session.warnings if "unknown event type" in w]
    owners = {e["subagentRunId"] for e in stream if e["type"] == "SUBAGENT_STARTED"}
    tagged = {e.get("subagentRunId") for e in stream} - {None}
    assert tagged <= owners  # every tag names a subagent of the stream


def test_the_streams_have_what_the_rules_are_about() -> None:
    seen: dict[str, int] = dict.fromkeys(["nested", "shared-step", "tagged-chunk", "error"], 0)

    @settings(max_examples=150, deadline=None, database=None)
    @given(STREAMS)
    def look(stream: list[dict[str, Any]]) -> None:
        seen["nested"] += any("parentSubagentRunId" in e for e in stream)
        seen["tagged-chunk"] += any(
            e["type"].endswith("_CHUNK") and "subagentRunId" in e for e in stream
        )
        seen["error"] += any(e["type"] == "SUBAGENT_ERROR" for e in stream)
        verifier = Verifier("client")
        for event in stream:
            verifier.feed(event)
            open_work = [k for k in verifier.open_steps if k.startswith(SUBAGENT_STEP)]
            seen["shared-step"] += len(open_work) > 1

    look()
    assert all(count > 0 for count in seen.values()), seen


@pytest.mark.parametrize("kind", sorted(REFERENCE_RULES))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_corruptions_get_the_reference_verdict(kind: str, data: st.DataObject) -> None:
    stream, _, index = data.draw(corruptions(STREAMS, kind), label="corrupted")
    rule = REFERENCE_RULES[kind]
    if rule is None:
        verify_stream(stream, "client")
        session = apply_events(stream)
        dropped = [w for w in session.warnings if "unknown event type" in w]
        assert len(dropped) == 1
        with pytest.raises(EventDecodeError) as strict:
            verify_stream(stream, "strict")
        assert strict.value.index == index
        return
    for mode in ("client", "strict"):
        with pytest.raises(ProtocolViolation) as info:
            verify_stream(stream, mode)
        assert (info.value.rule, info.value.index) == (rule, index), (mode, str(info.value))
        assert info.value.hint
    with pytest.raises(ProtocolViolation) as applied:
        Session().apply_all(stream)
    assert (applied.value.rule, applied.value.index) == (rule, index)
    with pytest.raises(AssertionError, match=f"breaks rule {rule}"):
        assert_valid_stream(stream, "client")


# Minimal streams for each subagent rule, pinned.

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def _rule(events: list[dict[str, Any]]) -> tuple[str, int | None]:
    with pytest.raises(ProtocolViolation) as info:
        verify_stream(events, "client")
    return info.value.rule, info.value.index


def test_a_closer_must_name_its_openers_subagent() -> None:
    end = {"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": "s9"}
    assert _rule([RS, {"type": "TEXT_MESSAGE_START", "messageId": "m"}, end]) == (
        "subagent-mismatch",
        2,
    )
    # Leaving the tag out inherits the opener's owner.
    sub = {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "n"}
    start = {"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": "s1"}
    verify_stream(
        [
            RS,
            sub,
            start,
            {"type": "TEXT_MESSAGE_END", "messageId": "m"},
            {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
            RF,
        ],
        "client",
    )


def test_steps_are_keyed_by_owner_and_name() -> None:
    def step(kind: str, **tag: str) -> dict[str, Any]:
        return {"type": f"STEP_{kind}", "stepName": "a", **tag}

    sub = {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "n"}
    done = {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"}
    verify_stream(
        [
            RS,
            sub,
            step("STARTED"),
            step("STARTED", subagentRunId="s1"),
            step("FINISHED", subagentRunId="s1"),
            step("FINISHED"),
            done,
            RF,
        ],
        "strict",
    )
    assert _rule([RS, sub, step("STARTED", subagentRunId="s1"), step("FINISHED")]) == (
        "subagent-mismatch",
        3,
    )


def test_a_tool_call_belongs_to_the_message_that_carries_it() -> None:
    sub = {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "n"}
    parent = [
        {"type": "TEXT_MESSAGE_START", "messageId": "p"},
        {"type": "TEXT_MESSAGE_END", "messageId": "p"},
    ]
    call = {
        "type": "TOOL_CALL_START",
        "toolCallId": "c",
        "toolCallName": "f",
        "parentMessageId": "p",
        "subagentRunId": "s1",
    }
    assert _rule([RS, sub, *parent, call]) == ("subagent-mismatch", 4)
    # Untagged, the call takes its parent message's owner; a later tagged ARGS must agree.
    untagged = {k: v for k, v in call.items() if k != "subagentRunId"}
    args = {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}", "subagentRunId": "s1"}
    assert _rule([RS, sub, *parent, untagged, args]) == ("subagent-mismatch", 5)


def test_subagent_ids_are_per_invocation_and_parents_must_exist() -> None:
    sub = {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "n"}
    done = {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"}
    assert _rule([RS, sub, done, sub]) == ("subagent-reused", 3)
    child = {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": "s2",
        "name": "n",
        "parentSubagentRunId": "s0",
    }
    assert _rule([RS, child]) == ("unknown-subagent", 1)
    # A parent that already finished in this run is known.
    verify_stream(
        [
            RS,
            sub,
            done,
            {**child, "parentSubagentRunId": "s1"},
            {"type": "SUBAGENT_FINISHED", "subagentRunId": "s2"},
            RF,
        ],
        "client",
    )


def test_an_id_less_chunk_tagged_to_a_subagent_needs_a_pending_chunk_of_it() -> None:
    sub = {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "n"}
    first = {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": "{"}
    tagged = {"type": "TOOL_CALL_CHUNK", "subagentRunId": "s1", "delta": "}"}
    assert _rule([RS, sub, first, tagged]) == ("chunk-without-id", 3)


def test_chunk_continuation_keeps_role_and_tool_name() -> None:
    text = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "a"}
    assert _rule([RS, text, {"type": "TEXT_MESSAGE_CHUNK", "role": "user", "delta": "b"}]) == (
        "chunk-mismatch",
        2,
    )
    tool = {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": "{"}
    again = {"type": "TOOL_CALL_CHUNK", "toolCallName": "g", "delta": "}"}
    assert _rule([RS, tool, again]) == ("chunk-mismatch", 2)
    # Repeating the opener's value is fine.
    verify_stream(
        [RS, text, {"type": "TEXT_MESSAGE_CHUNK", "role": "assistant", "delta": "b"}, RF], "client"
    )


@pytest.mark.parametrize(
    "event",
    [
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": 7},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": None},
        {"type": "STATE_DELTA", "delta": None},
        {"type": "TOOL_CALL_RESULT", "messageId": "x", "toolCallId": "c", "content": 7},
        {"type": "CUSTOM", "value": 1},
        {"type": "STEP_STARTED", "stepName": "s", "subagentRunId": None},
    ],
    ids=lambda e: e["type"],
)
def test_fields_must_fit_the_schema(event: dict[str, Any]) -> None:
    assert _rule([RS, event]) == ("schema", 1)
    assert _rule([{k: v for k, v in RS.items() if k != "runId"}]) == ("schema", 0)


def test_an_outcome_of_an_unknown_type_is_stripped_not_refused() -> None:
    session = apply_events([RS, {**RF, "outcome": {"type": "later"}}])
    assert session.pending_interrupts == []


@pytest.mark.parametrize("kind", sorted(REFERENCE_RULES))
def test_each_corruption_kind_on_a_fixed_stream(kind: str) -> None:
    # A hand-made stream with room for every kind, corrupted at its first candidate.
    from tests.support.corruptions import _candidates

    sub = "run-1-sub-1"
    stream = [
        RS,
        {"type": "SUBAGENT_STARTED", "subagentRunId": sub, "name": "n"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": sub},
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": sub},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TOOL_CALL_RESULT", "messageId": "r", "toolCallId": "c", "content": "ok"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "t", "delta": "a"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "b"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "d", "toolCallName": "f", "delta": "{"},
        {"type": "TOOL_CALL_CHUNK", "delta": "}"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": sub},
        {"type": "CUSTOM", "name": "n", "value": 1},
        RF,
    ]
    verify_stream(stream, "strict")
    corrupted, index = corrupt(stream, kind, _candidates(stream, kind)[0])
    rule = REFERENCE_RULES[kind]
    if rule is None:
        verify_stream(corrupted, "client")
    else:
        assert _rule(corrupted) == (rule, index)


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_strict_mode_knows_the_tool_calls_a_runs_input_names(data: st.DataObject) -> None:
    # A result answering a call made in an earlier run passes strict mode when this run's input
    # names the call (an assistant message's toolCalls[].id, or a tool message's toolCallId).
    call = data.draw(st.sampled_from(["run-1-call-1", "c-9"]))
    named_by = data.draw(st.sampled_from(["toolCalls", "toolCallId"]))
    if named_by == "toolCalls":
        message = {
            "id": "a",
            "role": "assistant",
            "toolCalls": [
                {"id": call, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    else:
        message = {"id": "t", "role": "tool", "toolCallId": call, "content": "asked"}
    run_input = {
        "threadId": "t",
        "runId": "r2",
        "messages": [message],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    result = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": call, "content": "ok"}
    stream = [{**RS, "runId": "r2", "input": run_input}, result, {**RF, "runId": "r2"}]
    verify_stream(stream, "strict")
    assert_valid_stream(stream, "strict")
    # Without the input it is still unknown.
    with pytest.raises(ProtocolViolation, match="unknown-id"):
        verify_stream([RS, result, RF], "strict")
