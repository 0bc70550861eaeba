"""Chunk expansion: ``*_CHUNK`` events expanded into the start, content and end events
they stand for, as the reference client does, alone and inside the verifier."""

from __future__ import annotations

import pytest

from agui_replay.errors import ProtocolViolation
from agui_replay.verify import (
    ChunkExpander,
    Verifier,
    expand_chunks,
    verify_stream,
)
from agui_replay.verify._chunks import CHUNK_PASSTHROUGH_TYPES
from tests.support.verify_events import (
    STATE,
    UNORDERED,
    Event,
    chunk,
    reasoning,
    run_error,
    run_finished,
    run_started,
    step,
    text,
    tool,
    violation,
)

# -- chunk expansion ------------------------------------------------------------------------


def test_text_chunks_expand_like_the_reference_client() -> None:
    x = ChunkExpander()
    assert x.feed(chunk("TEXT_MESSAGE", "m1", "Hel")) == [
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
    ]
    assert x.pending == ("text", "m1")
    assert x.feed(chunk("TEXT_MESSAGE", None, "lo")) == [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"}
    ]
    assert x.feed(chunk("TEXT_MESSAGE", "m1", None)) == []  # same id, nothing to add
    assert x.feed(chunk("TEXT_MESSAGE", "m2", "!", role="user", name="ann")) == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "user", "name": "ann"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "!"},
    ]
    finished = run_finished()
    out = x.feed(finished)
    assert out == [{"type": "TEXT_MESSAGE_END", "messageId": "m2"}, finished]
    assert out[1] is finished
    assert x.pending is None
    assert x.close() == []


def test_tool_and_reasoning_chunks() -> None:
    x = ChunkExpander()
    assert x.feed(
        chunk("TOOL_CALL", "c1", '{"q":', toolCallName="search", parentMessageId="m0")
    ) == [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "search",
            "parentMessageId": "m0",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
    ]
    assert x.feed(chunk("TOOL_CALL", None, '"x"}')) == [
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"x"}'}
    ]
    # A chunk of another kind closes the pending one of the same owner...
    assert x.feed(chunk("REASONING_MESSAGE", "rm0", "hm")) == [
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm0", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm0", "delta": "hm"},
    ]
    # ...but a subagent's chunk streams in the subagent's own lane, beside the parent's.
    assert x.feed(chunk("REASONING_MESSAGE", "rm", "think", subagentRunId="s1")) == [
        {
            "type": "REASONING_MESSAGE_START",
            "messageId": "rm",
            "role": "reasoning",
            "subagentRunId": "s1",
        },
        {
            "type": "REASONING_MESSAGE_CONTENT",
            "messageId": "rm",
            "delta": "think",
            "subagentRunId": "s1",
        },
    ]
    assert x.lanes == {None: ("reasoning", "rm0"), "s1": ("reasoning", "rm")}
    assert x.close() == [
        {"type": "REASONING_MESSAGE_END", "messageId": "rm0"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm", "subagentRunId": "s1"},
    ]
    assert x.pending is None


@pytest.mark.parametrize(
    "event",
    [*UNORDERED, step("STARTED", "s"), tool("RESULT", "c"), run_error()],
    ids=lambda e: e["type"],
)
def test_which_events_end_a_pending_chunk(event: Event) -> None:
    x = ChunkExpander()
    x.feed(chunk("TEXT_MESSAGE", "m"))
    out = x.feed(event)
    if event["type"] in CHUNK_PASSTHROUGH_TYPES:
        assert out == [event]
        assert x.pending == ("text", "m")
    else:
        # The reference client ends the message on STATE_*, MESSAGES_SNAPSHOT and CUSTOM too.
        assert out == [{"type": "TEXT_MESSAGE_END", "messageId": "m"}, event]
        assert x.pending is None


def test_passthrough_set_is_raw_activity_encrypted_and_subagents() -> None:
    assert {
        "RAW",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "REASONING_ENCRYPTED_VALUE",
    } <= CHUNK_PASSTHROUGH_TYPES
    assert {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"} <= CHUNK_PASSTHROUGH_TYPES
    assert "STATE_DELTA" not in CHUNK_PASSTHROUGH_TYPES


@pytest.mark.parametrize("kind", ["TEXT_MESSAGE", "TOOL_CALL", "REASONING_MESSAGE"])
def test_a_first_chunk_without_id(kind: str) -> None:
    x = ChunkExpander()
    x.feed(run_started())
    with pytest.raises(ProtocolViolation) as info:
        x.feed(chunk(kind, None))
    error = info.value
    assert (error.rule, error.index, error.event_type) == ("chunk-without-id", 1, f"{kind}_CHUNK")
    field = "toolCallId" if kind == "TOOL_CALL" else "messageId"
    assert f"must carry {field}" in str(error)
    # In the verifier: after a STATE_DELTA ended the pending message, an id-less chunk is a
    # first chunk again.
    error = violation(
        [run_started(), chunk("TEXT_MESSAGE", "m"), STATE, chunk("TEXT_MESSAGE", None)], "client"
    )
    assert (error.rule, error.index) == ("chunk-without-id", 3)


def test_a_first_tool_chunk_without_name() -> None:
    error = violation([run_started(), chunk("TOOL_CALL", "c1", "{}")], mode="client")
    assert (error.rule, error.index, error.ids) == ("chunk-without-name", 1, ("c1",))
    assert "must carry toolCallName" in str(error)


@pytest.mark.parametrize(
    ("start", "kind", "name"),
    [
        (text("START", "k"), "TEXT_MESSAGE", "text message"),
        (tool("START", "k"), "TOOL_CALL", "tool call"),
        (reasoning("MESSAGE_START", "k"), "REASONING_MESSAGE", "reasoning message"),
    ],
)
def test_chunk_after_an_explicit_start(start: Event, kind: str, name: str) -> None:
    extra = {"toolCallName": "search"} if kind == "TOOL_CALL" else {}
    bad = chunk(kind, "k", **extra)
    for error in (
        violation([run_started(), start, STATE, bad], mode="client"),
        _expander_error([run_started(), start, STATE, bad]),
    ):
        assert error.rule == "chunk-after-start"
        assert (error.index, error.ids, error.event_type) == (3, ("k",), f"{kind}_CHUNK")
        assert str(error).startswith(
            f'{kind}_CHUNK #3 breaks rule chunk-after-start: {name} "k" was opened by an '
            f"explicit {start['type']} at #1"
        )
        assert "ag-ui issue 161" in str(error)
    # Once the explicit one has ended, a chunk may reopen the id.
    end = {**start, "type": start["type"].replace("START", "END")}
    end.pop("role", None)
    end.pop("toolCallName", None)
    verify_stream([run_started(), start, end, bad, run_finished()], mode="strict")
    expand_chunks([run_started(), start, end, bad, run_finished()])


def _expander_error(events: list[Event]) -> ProtocolViolation:
    x = ChunkExpander()
    for event in events[:-1]:
        x.feed(event)
    with pytest.raises(ProtocolViolation) as info:
        x.feed(events[-1])
    return info.value


def test_expander_is_unchanged_after_its_own_violation() -> None:
    x = ChunkExpander()
    x.feed(chunk("TEXT_MESSAGE", "m"))
    with pytest.raises(ProtocolViolation):
        x.feed(chunk("TOOL_CALL", None))  # would close m first in the reference client
    assert x.pending == ("text", "m")
    assert x.feed(chunk("TEXT_MESSAGE", None, "y")) == [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "y"}
    ]


def test_expand_chunks_normalizes_a_whole_stream() -> None:
    stream = [
        run_started(),
        chunk("TEXT_MESSAGE", "m", "a"),
        {"type": "RAW", "event": 1},
        chunk("TEXT_MESSAGE", None, "b"),
        chunk("TOOL_CALL", "c", "{}", toolCallName="f"),
    ]
    assert [e["type"] for e in expand_chunks(stream)] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "RAW",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",  # from close(): the reference client drops it, a normal stream wants it
    ]


def test_verifier_checks_chunk_streams_and_reports_the_chunk() -> None:
    stream = [
        run_started(),
        chunk("TEXT_MESSAGE", "m", "a"),
        chunk("TEXT_MESSAGE", None, "b"),
        chunk("TOOL_CALL", "c", "{}", toolCallName="f"),
        chunk("TOOL_CALL", None, "{}"),
        chunk("REASONING_MESSAGE", "r"),
        run_finished(),
    ]
    verify_stream(stream, mode="strict")
    verifier = Verifier("strict")
    expanded = [e for event in stream for e in verifier.feed_expanded(event)]
    assert expanded == expand_chunks(stream)
    # A chunk after the run ended is refused under its own name and index.
    error = violation([*stream, chunk("TEXT_MESSAGE", "z")])
    assert (error.rule, error.event_type, error.index) == ("run-ended", "TEXT_MESSAGE_CHUNK", 7)


def test_explicit_end_of_a_chunk_message_is_not_open() -> None:
    # The END closes the pending chunk message first (as in the reference client), so the
    # explicit END then names a message that is no longer open.
    error = violation([run_started(), chunk("TEXT_MESSAGE", "m"), text("END", "m")], "client")
    assert (
        str(error)
        == 'TEXT_MESSAGE_END #2 breaks rule not-open: text message "m" is not open: it ended at #2'
    )
