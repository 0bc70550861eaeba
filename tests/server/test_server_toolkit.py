"""The server toolkit's ``RunContext`` as an agent author uses it: shared state, streamed text.

Each test drives the context the way an agent does and checks the exact events it emits, then
folds the stream with the client ``Session`` to check what a client rebuilds from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from ag_ui.core import (
    EventType,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from pydantic import BaseModel

from agui_replay.errors import AgentError, AguiReplayError, BlockOpenError, StateDecodeError
from agui_replay.events import to_wire
from agui_replay.server import RunContext, run_input
from agui_replay.server.testing import fold
from agui_replay.state import Delta, Snapshot, StateManager, Unchanged


def types(events: list[object]) -> list[EventType]:
    return [e.type for e in events]  # type: ignore[attr-defined]


# -- shared state ---------------------------------------------------------------------------------


class Doc(BaseModel):
    step: int = 0
    notes: list[str] = []


def test_state_reading_and_writing_gives_a_snapshot_then_a_delta() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), state_type=Doc)

    # Change and publish in one call.
    def edit(doc: Doc) -> None:
        doc.step = 1
        doc.notes.append("the document the user is editing" * 8)

    ctx.update_state(edit)

    # Or change now and publish when ready.
    ctx.state_mut().step = 2
    ctx.publish_state()

    # Nothing to say: nothing emitted.
    ctx.publish_state()

    drained = events.drain()
    assert types(drained) == [EventType.STATE_SNAPSHOT, EventType.STATE_DELTA]
    assert ctx.state().step == 2
    # The delta is the one small field, not the notes that dominate the size.
    assert to_wire(drained[1])["delta"] == [{"op": "replace", "path": "/step", "value": 2}]
    assert fold(drained).state == {"step": 2, "notes": ["the document the user is editing" * 8]}


def test_state_manager_picks_snapshot_delta_or_nothing() -> None:
    states = StateManager()
    notes = "the document the user is editing, at some length"

    # First publish: a snapshot whatever the size.
    assert isinstance(states.publish({"step": 1, "notes": notes}), Snapshot)
    # One field of a large document: the patch is smaller.
    assert states.publish({"step": 2, "notes": notes}) == Delta(
        [{"op": "replace", "path": "/step", "value": 2}]
    )
    # Nothing moved: nothing to send.
    assert states.publish({"step": 2, "notes": notes}) == Unchanged()

    # A small document replaced wholesale: a snapshot again, the patch would be larger.
    small = StateManager()
    small.publish({"a": 1})
    assert small.publish({"b": 2}) == Snapshot({"b": 2})


@dataclass
class Counter:
    clicks: int = 0


def test_state_an_empty_state_is_the_default_and_a_misfit_is_a_serialization_error() -> None:
    # No state yet: the default, not a failure.
    ctx, _events = RunContext.new(run_input("t", "r", state={}), state_type=Counter)
    assert ctx.state().clicks == 0
    ctx, _events = RunContext.new(run_input("t", "r", state=None), state_type=Counter)
    assert ctx.state() == Counter()

    # A state that does not fit.
    with pytest.raises(StateDecodeError) as caught:
        RunContext.new(run_input("t", "r", state={"clicks": "three"}), state_type=Counter)
    assert caught.value.code == "SERIALIZATION"
    assert isinstance(caught.value, AguiReplayError)
    assert "clicks" in str(caught.value)


@dataclass
class Board:
    tasks: list[str] = field(default_factory=list)


def test_state_a_tool_call_publishes_state_while_it_is_open() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), state_type=Board)

    call = ctx.tool_call("add_task")
    call.args_json({"title": "ship it"})

    call.state_mut().tasks.append("ship it")
    call.publish_state()

    call.result_json({"ok": True})

    drained = events.drain()
    assert types(drained) == [
        EventType.TOOL_CALL_START,
        EventType.TOOL_CALL_ARGS,
        # The board moves inside the span the call brackets.
        EventType.STATE_SNAPSHOT,
        EventType.TOOL_CALL_END,
        EventType.TOOL_CALL_RESULT,
    ]
    assert ctx.state().tasks == ["ship it"]
    assert drained[1].delta == '{"title":"ship it"}'  # type: ignore[attr-defined]

    session = fold(drained)
    assert session.state == {"tasks": ["ship it"]}
    call_message, tool_message = session.messages
    assert call_message["toolCalls"][0]["function"] == {
        "name": "add_task",
        "arguments": '{"title":"ship it"}',
    }
    assert tool_message["role"] == "tool"
    assert tool_message["toolCallId"] == "r-call-1"
    assert tool_message["content"] == '{"ok":true}'


# -- text streaming -------------------------------------------------------------------------------


def test_text_say_emits_start_content_end_under_a_run_derived_id() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))

    id = ctx.say("Hello from Python.")

    assert id == "r-msg-1"
    assert id.as_str() == "r-msg-1"
    assert events.drain() == [
        TextMessageStartEvent(message_id="r-msg-1", role="assistant"),
        TextMessageContentEvent(message_id="r-msg-1", delta="Hello from Python."),
        TextMessageEndEvent(message_id="r-msg-1"),
    ]


def test_text_assistant_message_streams_one_content_per_delta() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))

    message = ctx.assistant_message()
    for word in ["Hello", ", ", "world"]:
        message.delta(word)
    message.end()

    drained = events.drain()
    assert drained == [
        TextMessageStartEvent(message_id="r-msg-1", role="assistant"),
        TextMessageContentEvent(message_id="r-msg-1", delta="Hello"),
        TextMessageContentEvent(message_id="r-msg-1", delta=", "),
        TextMessageContentEvent(message_id="r-msg-1", delta="world"),
        TextMessageEndEvent(message_id="r-msg-1"),
    ]
    assert fold(drained).messages == [
        {"id": "r-msg-1", "role": "assistant", "content": "Hello, world"}
    ]


def write_it(ctx: RunContext[dict[str, object]]) -> None:
    with ctx.assistant_message() as message:
        message.delta("Looking that up")
        # The message is still open when this leaves.
        raise AgentError("the weather service is down")


def test_text_a_message_left_by_an_error_still_ends() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with pytest.raises(AgentError, match="the weather service is down"):
        write_it(ctx)

    drained = events.drain()
    assert types(drained) == [
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        # Emitted by the `with` block on the way out of the failing function.
        EventType.TEXT_MESSAGE_END,
    ]
    assert fold(drained).messages[0]["content"] == "Looking that up"


def test_text_two_open_messages_are_refused_at_once() -> None:
    # Only one text block is open at a time: the second open raises at once, not at the end.
    ctx, events = RunContext.new(run_input("t", "r"))
    first = ctx.assistant_message()
    with pytest.raises(BlockOpenError) as caught:
        ctx.assistant_message()
    message = str(caught.value)
    assert 'text message "r-msg-1" is still open' in message
    assert ".end()" in message
    assert "with" in message
    first.delta("a")
    first.end()
    # Nothing of the refused message reached the stream, and it took no id.
    assert [e.message_id for e in events.drain()] == ["r-msg-1"] * 3  # type: ignore[attr-defined]
    assert ctx.assistant_message().id == "r-msg-2"


def test_text_an_open_tool_call_cannot_open_a_message_either() -> None:
    # An open tool call is a block too: a message cannot start inside it.
    ctx, events = RunContext.new(run_input("t", "r"))
    call = ctx.tool_call("search")
    with pytest.raises(BlockOpenError, match='tool call "r-call-1" \\(search\\) is still open'):
        ctx.assistant_message()
    call.args("{}")
    call.end()
    assert types(events.drain()) == [
        EventType.TOOL_CALL_START,
        EventType.TOOL_CALL_ARGS,
        EventType.TOOL_CALL_END,
    ]


@dataclass
class Progress:
    words: int = 0


def test_text_an_open_message_still_reaches_the_state() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), state_type=Progress)

    message = ctx.assistant_message()
    message.delta("Hello")
    message.state_mut().words += 1
    # A STATE_SNAPSHOT with the message open: STATE_* is unordered, so the stream is legal.
    message.publish_state()
    message.end()

    assert ctx.state().words == 1
    drained = events.drain()
    assert len(drained) == 4
    assert types(drained)[2] == EventType.STATE_SNAPSHOT
    session = fold(drained)
    assert session.state == {"words": 1}
    assert session.messages[0]["content"] == "Hello"


def test_text_reasoning_wraps_four_events_around_its_content() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))

    # All at once, like `say`.
    ctx.think("The user wants a title.")

    # Streaming, like `assistant_message`.
    reasoning = ctx.reasoning()
    reasoning.delta("Checking the board first")
    reasoning.end()

    drained = events.drain()
    kinds = types(drained)
    assert len(kinds) == 10
    assert kinds[0] == EventType.REASONING_START
    assert kinds[9] == EventType.REASONING_END
    assert kinds[:5] == [
        EventType.REASONING_START,
        EventType.REASONING_MESSAGE_START,
        EventType.REASONING_MESSAGE_CONTENT,
        EventType.REASONING_MESSAGE_END,
        EventType.REASONING_END,
    ]
    # Two blocks, two ids from the shared message counter.
    assert {e.message_id for e in drained[:5]} == {"r-msg-1"}  # type: ignore[attr-defined]
    assert {e.message_id for e in drained[5:]} == {"r-msg-2"}  # type: ignore[attr-defined]
    reasoning_messages = [m for m in fold(drained).messages if m["role"] == "reasoning"]
    assert [m["content"] for m in reasoning_messages] == [
        "The user wants a title.",
        "Checking the board first",
    ]


def test_text_a_chunk_goes_out_through_emit_as_one_event() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))

    ctx.emit(TextMessageChunkEvent(message_id="chunk-1", delta="a whole update in one event"))

    drained = events.drain()
    assert len(drained) == 1
    assert fold(drained).messages == [
        {"id": "chunk-1", "role": "assistant", "content": "a whole update in one event"}
    ]


# -- ids: "<run id>-msg-<n>" and "<run id>-call-<n>", one counter each ----------------------------


def test_ids_share_one_message_counter_across_reasoning_tool_results_and_messages() -> None:
    ctx, _events = RunContext.new(run_input("t", "r"))
    assert ctx.think("plan") == "r-msg-1"
    call = ctx.tool_call("lookup")
    assert (call.id, call.result_message_id) == ("r-call-1", "r-msg-2")
    assert call.result("done") == "r-msg-2"
    with ctx.assistant_message() as message:
        assert message.id == "r-msg-3"
    # A chosen id does not advance the counter.
    with ctx.message_with_id("mine", role="assistant") as chosen:
        assert chosen.id == "mine"
    second = ctx.tool_call_with_id("call-x", "lookup")
    assert (second.id, second.result_message_id) == ("call-x", "r-msg-4")
    second.end()
    assert ctx.tool_call("again").id == "r-call-2"


def test_an_empty_run_id_gives_run_prefixed_ids() -> None:
    ctx, _events = RunContext.new(run_input("t", ""))
    assert ctx.say("hi") == "run-msg-1"
    assert ctx.tool_call("x").id == "run-call-1"
