"""Handles and the context's emitters: what is refused, what is closed, which events go out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from ag_ui.core import (
    CustomEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
)
from pydantic import BaseModel

from agui_replay.errors import (
    AgentError,
    BlockOpenError,
    HandleClosedError,
    ProtocolViolation,
    StateDecodeError,
)
from agui_replay.events import to_wire
from agui_replay.server import CancellationToken, RunContext, run_input
from agui_replay.server._cancel import RunCancelled
from agui_replay.server.testing import fold


def kinds(events: list[object]) -> list[str]:
    return [e.type.value for e in events]  # type: ignore[attr-defined]


# -- one block at a time --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "open_second",
    [
        lambda ctx: ctx.assistant_message(),
        lambda ctx: ctx.message("user"),
        lambda ctx: ctx.message_with_id("other"),
        lambda ctx: ctx.say("hi"),
        lambda ctx: ctx.reasoning(),
        lambda ctx: ctx.think("hmm"),
        lambda ctx: ctx.tool_call("search"),
        lambda ctx: ctx.tool_call_with_id("c-9", "search"),
        lambda ctx: ctx.step("inner"),
    ],
    ids=[
        "assistant_message",
        "message",
        "message_with_id",
        "say",
        "reasoning",
        "think",
        "tool_call",
        "tool_call_with_id",
        "step",
    ],
)
@pytest.mark.parametrize("first", ["message", "reasoning", "tool_call"])
def test_a_second_block_is_refused_while_one_is_open(first: str, open_second: object) -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    opened = {
        "message": ctx.assistant_message,
        "reasoning": ctx.reasoning,
        "tool_call": lambda: ctx.tool_call("lookup"),
    }[first]()
    before = len(events)
    with pytest.raises(BlockOpenError) as caught:
        open_second(ctx)  # type: ignore[operator]
    assert opened.describe() in str(caught.value)
    assert caught.value.code == "PROTOCOL_VIOLATION"
    assert len(events) == before, "a refused open emits nothing"
    opened.end()
    # Once it ended, the next block opens.
    ctx.say("after")
    fold(events.drain())


def test_a_handle_used_after_end_says_so() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    message = ctx.assistant_message()
    message.end()
    with pytest.raises(HandleClosedError, match='text message "r-msg-1" already ended'):
        message.delta("late")
    with pytest.raises(HandleClosedError, match=r"end\(\) has nothing to act on"):
        message.end()
    with pytest.raises(HandleClosedError, match="the state methods"):
        message.publish_state()
    call = ctx.tool_call("lookup")
    call.result("done")
    emitted = len(events)
    with pytest.raises(HandleClosedError, match="lookup"):
        call.args("{}")
    with pytest.raises(HandleClosedError, match=r"result\(\) has nothing to act on"):
        call.result("again")
    assert len(events) == emitted, "a refused call on an ended handle emits nothing"
    assert kinds(events.drain()).count("TEXT_MESSAGE_END") == 1


def test_unordered_events_pass_an_open_handle_and_ordered_ones_do_not() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    message = ctx.assistant_message()
    message.emit(CustomEvent(name="progress", value=1))
    message.emit({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}})
    # The context may emit unordered events beside the open message too.
    ctx.emit(CustomEvent(name="progress", value=2))
    with pytest.raises(BlockOpenError, match="only unordered events"):
        message.emit(TextMessageStartEvent(message_id="second", role="assistant"))
    with pytest.raises(BlockOpenError, match="still open"):
        ctx.emit(TextMessageStartEvent(message_id="second", role="assistant"))
    message.end()
    drained = events.drain()
    assert kinds(drained) == [
        "TEXT_MESSAGE_START",
        "CUSTOM",
        "STATE_SNAPSHOT",
        "CUSTOM",
        "TEXT_MESSAGE_END",
    ]
    assert fold(drained).state == {"a": 1}


def test_the_verifier_refuses_a_bad_event_at_emit_time_and_queues_nothing() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with pytest.raises(ProtocolViolation) as caught:
        ctx.emit(TextMessageContentEvent(message_id="never-opened", delta="x"))
    assert caught.value.rule == "not-open"
    assert "never-opened" in str(caught.value)
    assert events.drain() == []
    # The verifier was left as it was: the run goes on.
    ctx.say("fine")
    drained = events.drain()
    assert len(drained) == 3
    assert fold(drained).messages[0]["content"] == "fine"


def test_a_duplicate_step_name_is_a_violation() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.step("plan"), pytest.raises(ProtocolViolation, match="plan"):
        ctx.step("plan")
    drained = events.drain()
    assert kinds(drained) == ["STEP_STARTED", "STEP_FINISHED"]
    fold(drained)


# -- closing on the way out ----------------------------------------------------------------------


def _fail_inside_reasoning(ctx: RunContext[dict[str, object]]) -> None:
    with ctx.reasoning() as reasoning:
        reasoning.delta("thinking")
        raise ValueError("boom")


def _fail_inside_call(ctx: RunContext[dict[str, object]]) -> None:
    with ctx.tool_call("search") as call:
        call.args('{"q":')
        raise ValueError("bang")


def test_with_closes_every_kind_of_block_when_an_error_leaves_it() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with pytest.raises(ValueError, match="boom"):
        _fail_inside_reasoning(ctx)
    with pytest.raises(ValueError, match="bang"):
        _fail_inside_call(ctx)
    drained = events.drain()
    session = fold(drained)
    assert [m["role"] for m in session.messages] == ["reasoning", "assistant"]
    assert kinds(drained) == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ]


def _cancel_mid_message(ctx: RunContext[dict[str, object]], token: CancellationToken) -> None:
    with ctx.assistant_message() as message:
        message.delta("one")
        token.cancel()
        message.delta("two")  # refused: the run is cancelled


def test_closing_never_hides_the_original_error() -> None:
    token = CancellationToken()
    ctx, events = RunContext.new(run_input("t", "r"), cancellation=token)
    with pytest.raises(RunCancelled):
        _cancel_mid_message(ctx, token)
    # The terminator still went out, so the stream is balanced.
    drained = events.drain()
    assert kinds(drained) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    assert fold(drained).messages[0]["content"] == "one"
    with pytest.raises(RunCancelled):
        ctx.say("after cancel")
    assert events.drain() == []


def test_a_step_closes_what_was_left_open_inside_it() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.step("outer") as outer:
        outer.think("plan")
        ctx.step("inner")  # never ended by hand
        message = outer.assistant_message()
        message.delta("half")
        with pytest.raises(BlockOpenError, match='cannot finish step "outer"'):
            outer.end()
    drained = events.drain()
    assert fold(drained).messages[-1]["content"] == "half"
    assert kinds(drained)[-4:] == [
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "STEP_FINISHED",
    ]
    assert message.ended


def test_step_guard_reads_like_the_context() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.step("research") as step:
        step.say("looking it up")
    # STEP_STARTED, the three events of say, STEP_FINISHED.
    drained = events.drain()
    assert len(drained) == 5
    assert kinds(drained)[0] == "STEP_STARTED"
    assert drained[0].step_name == "research"  # type: ignore[attr-defined]
    assert fold(drained).messages[0]["content"] == "looking it up"
    step = ctx.step("explicit")
    step.finish()
    assert step.ended
    with pytest.raises(HandleClosedError, match='step "explicit" already finished'):
        step.end()
    assert kinds(events.drain()) == ["STEP_STARTED", "STEP_FINISHED"]


# -- tool calls and reasoning ----------------------------------------------------------------------


class Query(BaseModel):
    city: str


def test_tool_call_arguments_stream_and_parse() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    call = ctx.tool_call("get_weather", parent_message_id="r-msg-0")
    call.args('{"city":')
    call.args('"Seoul"}')
    assert call.raw_args == '{"city":"Seoul"}'
    assert call.parse_args(Query.model_validate).city == "Seoul"
    call.encrypted_value("sig")
    result_id = call.result('{"tempC":21}')
    drained = events.drain()
    assert to_wire(drained[0]) == {
        "type": "TOOL_CALL_START",
        "toolCallId": "r-call-1",
        "toolCallName": "get_weather",
        "parentMessageId": "r-msg-0",
    }
    assert to_wire(drained[3]) == {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "tool-call",
        "entityId": "r-call-1",
        "encryptedValue": "sig",
    }
    assert to_wire(drained[-1]) == {
        "type": "TOOL_CALL_RESULT",
        "messageId": result_id,
        "toolCallId": "r-call-1",
        "content": '{"tempC":21}',
        "role": "tool",
    }
    assert kinds(drained)[-2] == "TOOL_CALL_END"
    (holder, tool_message) = fold(drained).messages
    assert holder["id"] == "r-msg-0"
    assert holder["toolCalls"][0]["encryptedValue"] == "sig"
    assert tool_message["content"] == '{"tempC":21}'


def test_end_leaves_a_call_unanswered_for_the_client() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.tool_call("confirm") as call:
        call.args_json({"question": "sure?", "emoji": "✓"})
        call.end()
    drained = events.drain()
    assert kinds(drained) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert to_wire(drained[1])["delta"] == '{"question":"sure?","emoji":"✓"}'
    session = fold(drained)
    assert session.pending_tool_call_ids == ["r-call-1"]


def test_reasoning_encrypted_value_names_the_block() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.reasoning_with_id("thought-1") as reasoning:
        reasoning.encrypted_value("opaque")
    wire = [to_wire(e) for e in events.drain()]
    assert wire[2] == {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "thought-1",
        "encryptedValue": "opaque",
    }
    assert [w["type"] for w in wire[3:]] == ["REASONING_MESSAGE_END", "REASONING_END"]
    assert fold(wire).messages[0]["encryptedValue"] == "opaque"


def test_message_roles() -> None:
    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.message("user") as replayed:
        replayed.delta("from the history")
    with pytest.raises(AgentError, match="role"):
        ctx.message("tool")
    drained = events.drain()
    assert to_wire(drained[0])["role"] == "user"
    assert fold(drained).messages == [
        {"id": "r-msg-1", "role": "user", "content": "from the history"}
    ]


# -- state ----------------------------------------------------------------------------------------


@dataclass
class Notes:
    items: list[str] = field(default_factory=list)
    count: int = 0


def test_set_state_replaces_and_copies_and_refuses_a_misfit() -> None:
    ctx, events = RunContext.new(run_input("t", "r", state={"items": ["a"], "count": 1}), Notes)
    assert ctx.state() == Notes(items=["a"], count=1)
    mine = Notes(items=["x"], count=5)
    ctx.set_state(mine)
    mine.items.append("changed after publishing")
    assert ctx.state() == Notes(items=["x"], count=5), "the context keeps its own copy"
    with pytest.raises(StateDecodeError):
        ctx.set_state({"items": "not a list"})  # type: ignore[arg-type]
    drained = events.drain()
    assert drained == [StateSnapshotEvent(snapshot={"items": ["x"], "count": 5})]
    assert fold(drained).state == {"items": ["x"], "count": 5}


def test_update_state_may_return_a_new_value() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), state_type=int)
    ctx.update_state(lambda n: n + 1)
    ctx.update_state(lambda n: n + 1)
    assert ctx.state() == 2
    assert [to_wire(e) for e in events.drain()] == [
        {"type": "STATE_SNAPSHOT", "snapshot": 1},
        {"type": "STATE_SNAPSHOT", "snapshot": 2},
    ]


def test_publishing_stops_once_the_run_is_cancelled() -> None:
    big = ["a long note that makes a patch worth sending " * 4]
    token = CancellationToken()
    ctx, events = RunContext.new(
        run_input("t", "r", state={"items": big}), Notes, cancellation=token
    )
    ctx.publish_state()
    ctx.state_mut().count = 1
    ctx.publish_state()
    assert kinds(events.drain()) == ["STATE_SNAPSHOT", "STATE_DELTA"]

    token.cancel()
    ctx.state_mut().count = 2
    with pytest.raises(RunCancelled):
        ctx.publish_state()
    assert events.drain() == []


def test_state_methods_on_every_handle() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), state_type=Notes)
    with ctx.reasoning() as reasoning:
        reasoning.update_state(lambda notes: notes.items.append("from reasoning"))
    with ctx.tool_call("add") as call:
        call.set_state(Notes(items=["from the call"], count=1))
        assert call.state().count == 1
    with ctx.step("s") as step:
        step.state_mut().count = 2
        step.publish_state()
    session = fold(events.drain())
    assert session.state == {"items": ["from the call"], "count": 2}
