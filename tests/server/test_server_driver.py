"""The run driver: RUN_STARTED, state decoding, the agent, the terminal event; streaming and
cancellation. Every stream is folded by the client Session (strict mode) as well."""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import pytest
from ag_ui.core import BaseEvent, ResumeEntry, TextMessageStartEvent

from agui_replay.errors import AgentError, UsageError
from agui_replay.events import to_wire
from agui_replay.server import (
    CancellationToken,
    Interrupt,
    Interrupted,
    RunContext,
    run_agent,
    run_agent_sync,
    run_input,
)
from agui_replay.server._cancel import RunCancelled
from agui_replay.server.testing import fold

# A generous bound that only matters if streaming or cancellation is broken (then the test
# fails instead of hanging); no assertion depends on how long anything takes.
DEADLOCK_GUARD = 20.0


def kinds(events: list[BaseEvent]) -> list[str]:
    return [e.type.value for e in events]


def terminal(events: list[BaseEvent]) -> dict[str, Any]:
    return to_wire(events[-1])


def collect(agent: Any, input: Any, **kwargs: Any) -> list[BaseEvent]:
    async def main() -> list[BaseEvent]:
        return [event async for event in run_agent(agent, input, **kwargs)]

    return asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))


# -- the shape of a run ------------------------------------------------------------------------


def greeter(ctx: RunContext[dict[str, Any]]) -> None:
    ctx.say("hello")


@pytest.mark.parametrize("driver", [run_agent_sync, collect], ids=["sync", "async"])
def test_a_run_is_bracketed_by_started_and_finished(driver: Any) -> None:
    events = driver(greeter, run_input("thread-1", "run-1", parent_run_id="run-0"))
    assert kinds(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert to_wire(events[0]) == {
        "type": "RUN_STARTED",
        "threadId": "thread-1",
        "runId": "run-1",
        "parentRunId": "run-0",
    }
    assert terminal(events) == {
        "type": "RUN_FINISHED",
        "threadId": "thread-1",
        "runId": "run-1",
        "outcome": {"type": "success"},
    }
    session = fold(events)
    assert session.messages == [{"id": "run-1-msg-1", "role": "assistant", "content": "hello"}]
    assert session.run_error is None


async def async_greeter(ctx: RunContext[dict[str, Any]]) -> None:
    await asyncio.sleep(0)
    ctx.say("hello")


def test_an_async_agent_and_a_wire_mapping_input() -> None:
    wire_input = {"threadId": "t", "runId": "r", "messages": [], "state": None}
    for events in (run_agent_sync(async_greeter, wire_input), collect(async_greeter, wire_input)):
        assert kinds(events)[0] == "RUN_STARTED"
        assert kinds(events)[-1] == "RUN_FINISHED"
        assert fold(events).messages[0]["content"] == "hello"


@dataclass
class Counter:
    clicks: int = 0


def test_a_state_that_does_not_fit_ends_the_run_before_the_agent_runs() -> None:
    ran: list[bool] = []

    def agent(ctx: RunContext[Counter]) -> None:
        ran.append(True)

    for driver in (run_agent_sync, collect):
        events = driver(agent, run_input("t", "r", state={"clicks": "three"}), state_type=Counter)
        assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
        error = terminal(events)
        assert error["code"] == "SERIALIZATION"
        assert "clicks" in error["message"]
        assert fold(events).run_error is not None
    assert ran == []


def test_an_empty_state_is_the_default_and_the_agent_may_declare_its_state_type() -> None:
    class Clicker:
        state_type = Counter

        def run(self, ctx: RunContext[Counter]) -> None:
            ctx.update_state(lambda counter: setattr(counter, "clicks", counter.clicks + 1))

    for state in (None, {}, {"clicks": 41}):
        events = run_agent_sync(Clicker(), run_input("t", "r", state=state))
        expected = 42 if state else 1
        assert fold(events).state == {"clicks": expected}


# -- errors --------------------------------------------------------------------------------------


def fails_mid_message(ctx: RunContext[dict[str, Any]]) -> None:
    with ctx.assistant_message() as message:
        message.delta("Looking that up")
        raise RuntimeError("the weather service is down")


def test_an_exception_from_agent_code_is_agent_error_after_closing_the_message() -> None:
    # CONTENT, then END from the `with` block on the way out, then the driver's RUN_ERROR.
    events = run_agent_sync(fails_mid_message, run_input("t", "r"))
    assert kinds(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_ERROR",
    ]
    assert terminal(events) == {
        "type": "RUN_ERROR",
        "message": "the weather service is down",
        "code": "AGENT_ERROR",
    }
    assert fold(events).messages[0]["content"] == "Looking that up"


def test_an_agent_error_chooses_its_code() -> None:
    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        raise AgentError("upstream refused", code="BAD_GATEWAY")

    assert terminal(run_agent_sync(agent, run_input())) == {
        "type": "RUN_ERROR",
        "message": "upstream refused",
        "code": "BAD_GATEWAY",
    }


def test_handles_left_open_without_with_are_closed_before_the_terminal_event() -> None:
    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.step("outer")
        message = ctx.assistant_message()
        message.delta("forgot to end")

    events = run_agent_sync(agent, run_input())
    assert kinds(events) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    fold(events)


def test_ordering_mistakes_end_the_run_as_protocol_violation() -> None:
    def opens_two(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.assistant_message().delta("first")
        ctx.assistant_message()

    events = run_agent_sync(opens_two, run_input())
    assert kinds(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert terminal(events)["code"] == "PROTOCOL_VIOLATION"
    assert "still open" in terminal(events)["message"]

    def bad_event(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.emit({"type": "TOOL_CALL_ARGS", "toolCallId": "nope", "delta": "{}"})

    events = run_agent_sync(bad_event, run_input())
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert terminal(events)["code"] == "PROTOCOL_VIOLATION"
    assert "not-open" in terminal(events)["message"]


def test_a_block_opened_by_hand_and_left_open_turns_run_finished_into_run_error() -> None:
    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.emit(TextMessageStartEvent(message_id="manual", role="assistant"))

    events = run_agent_sync(agent, run_input())
    assert kinds(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "RUN_ERROR"]
    assert terminal(events)["code"] == "PROTOCOL_VIOLATION"
    assert "manual" in terminal(events)["message"]


def test_an_agent_may_end_the_run_itself() -> None:
    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.emit({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"n": 1}})

    events = run_agent_sync(agent, run_input("t", "r"))
    assert kinds(events) == ["RUN_STARTED", "RUN_FINISHED"]
    assert fold(events).result == {"n": 1}


@pytest.mark.parametrize(
    "returned",
    [Interrupted([]), "done", 42],
    ids=["empty-interrupt", "string", "number"],
)
def test_an_invalid_outcome_is_a_protocol_error(returned: Any) -> None:
    events = run_agent_sync(lambda ctx: returned, run_input())
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert terminal(events)["code"] == "PROTOCOL"


def test_ctx_interrupt_needs_an_interrupt() -> None:
    events = run_agent_sync(lambda ctx: ctx.interrupt(), run_input())
    assert terminal(events)["code"] == "PROTOCOL"
    assert "at least one" in terminal(events)["message"]


# -- interrupts ------------------------------------------------------------------------------------


def approval_agent(ctx: RunContext[dict[str, Any]]) -> Interrupted | None:
    answer = ctx.resume_for("send-email")
    if answer is None:
        ctx.say("I will send it once you agree.")
        return ctx.interrupt(
            Interrupt(
                "send-email",
                "tool_approval",
                "Send the email?",
                response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
            )
        )
    ctx.say("Sent." if answer.status == "resolved" and answer.payload["approved"] else "Not sent.")
    return None


def test_an_interrupt_pauses_the_run_and_the_next_run_resumes_it() -> None:
    first = run_agent_sync(approval_agent, run_input("t", "r1"))
    assert terminal(first) == {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r1",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "send-email",
                    "reason": "tool_approval",
                    "message": "Send the email?",
                    "responseSchema": {
                        "type": "object",
                        "properties": {"approved": {"type": "boolean"}},
                    },
                }
            ],
        },
    }
    session = fold(first)
    assert [i["id"] for i in session.pending_interrupts] == ["send-email"]

    answer = ResumeEntry(interrupt_id="send-email", status="resolved", payload={"approved": True})
    second = run_agent_sync(
        approval_agent, run_input("t", "r2", messages=session.messages, resume=[answer])
    )
    assert kinds(second)[-1] == "RUN_FINISHED"
    assert to_wire(second[-1])["outcome"] == {"type": "success"}
    resumed = fold(second, messages=session.messages)
    assert resumed.pending_interrupts == []
    assert resumed.messages[-1]["content"] == "Sent."


def test_resume_accessors() -> None:
    entries = [
        {"interruptId": "a", "status": "resolved", "payload": 1},
        {"interruptId": "b", "status": "cancelled"},
    ]
    ctx, _ = RunContext.new(run_input("t", "r", resume=entries))
    assert ctx.is_resume
    assert [e.interrupt_id for e in ctx.resume()] == ["a", "b"]
    found = ctx.resume_for("b")
    assert found is not None
    assert found.status == "cancelled"
    assert ctx.resume_for("c") is None
    fresh, _ = RunContext.new(run_input("t", "r"))
    assert not fresh.is_resume
    assert fresh.resume() == []


# -- streaming -------------------------------------------------------------------------------------


def test_an_async_agents_events_reach_the_iterator_before_it_finishes() -> None:
    finished: list[bool] = []

    async def main() -> list[str]:
        gate = asyncio.Event()

        async def agent(ctx: RunContext[dict[str, Any]]) -> None:
            ctx.say("first")
            await gate.wait()  # only the consumer can open this
            ctx.say("second")
            finished.append(True)

        seen: list[str] = []
        async for event in run_agent(agent, run_input()):
            seen.append(event.type.value)
            if len(seen) == 4:
                assert finished == []
                gate.set()
        return seen

    seen = asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert seen[:4] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    assert seen[-1] == "RUN_FINISHED"
    assert finished == [True]


def test_a_sync_agent_runs_in_a_worker_thread_and_streams_too() -> None:
    gate = threading.Event()
    threads: list[int] = []

    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        threads.append(threading.get_ident())
        ctx.say("first")
        if not gate.wait(DEADLOCK_GUARD):
            raise AgentError("the consumer never saw the first message")
        ctx.say("second")

    async def main() -> list[BaseEvent]:
        seen: list[BaseEvent] = []
        async for event in run_agent(agent, run_input()):
            seen.append(event)
            if len(seen) == 4:
                gate.set()
        return seen

    events = asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert kinds(events)[-1] == "RUN_FINISHED"
    assert threads
    assert threads[0] != threading.get_ident()
    assert [m["content"] for m in fold(events).messages] == ["first", "second"]


# -- cancellation ---------------------------------------------------------------------------------


def test_a_cancelled_run_closes_its_message_and_ends_with_cancelled() -> None:
    token = CancellationToken()

    async def agent(ctx: RunContext[dict[str, Any]]) -> None:
        with ctx.assistant_message() as message:
            for _ in range(100_000):
                message.delta("tick ")  # raises RunCancelled once the token trips
                await asyncio.sleep(0)

    async def main() -> list[BaseEvent]:
        seen: list[BaseEvent] = []
        async for event in run_agent(agent, run_input(), cancellation=token):
            seen.append(event)
            if len(seen) == 5:
                token.cancel()
        return seen

    events = asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert kinds(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert terminal(events)["code"] == "CANCELLED"
    fold(events)


def test_until_cancelled_gives_up_on_a_slow_call() -> None:
    token = CancellationToken()
    answers: list[object] = []

    async def agent(ctx: RunContext[dict[str, Any]]) -> None:
        answer = await ctx.until_cancelled(asyncio.sleep(3600, result="the model's reply"))
        answers.append(answer)
        ctx.check_cancelled()

    async def main() -> list[BaseEvent]:
        seen: list[BaseEvent] = []
        async for event in run_agent(agent, run_input(), cancellation=token):
            seen.append(event)
            token.cancel()
        return seen

    events = asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert answers == [None]
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert terminal(events)["code"] == "CANCELLED"

    async def quick(ctx: RunContext[dict[str, Any]]) -> None:
        answers.append(await ctx.until_cancelled(asyncio.sleep(0, result="fast")))

    run_agent_sync(quick, run_input())
    assert answers[-1] == "fast"


def test_a_consumer_that_stops_reading_cancels_the_run() -> None:
    observed: list[bool] = []

    async def agent(ctx: RunContext[dict[str, Any]]) -> None:
        ctx.say("started")
        try:
            await asyncio.sleep(3600)
        finally:
            observed.append(ctx.cancelled)

    async def main() -> None:
        async with aclosing(run_agent(agent, run_input())) as events:
            async for event in events:
                if event.type.value == "TEXT_MESSAGE_END":
                    break
        while not observed:
            await asyncio.sleep(0.001)

    asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert observed == [True]


def test_a_sync_agent_unwinds_at_its_next_emit_after_the_consumer_left() -> None:
    stopped = threading.Event()
    reason: list[BaseException] = []

    def agent(ctx: RunContext[dict[str, Any]]) -> None:
        try:
            with ctx.assistant_message() as message:
                for _ in range(100_000):
                    message.delta("tick ")
                    stopped.wait(0.001)
        except RunCancelled as error:
            reason.append(error)
            stopped.set()
            raise

    async def main() -> None:
        async with aclosing(run_agent(agent, run_input())) as events:
            async for event in events:
                if event.type.value == "TEXT_MESSAGE_CONTENT":
                    break

    asyncio.run(asyncio.wait_for(main(), DEADLOCK_GUARD))
    assert stopped.wait(DEADLOCK_GUARD)
    assert isinstance(reason[0], RunCancelled)


# -- misuse ----------------------------------------------------------------------------------------


def test_run_agent_sync_refuses_an_async_agent_inside_a_running_loop() -> None:
    async def main() -> None:
        with pytest.raises(UsageError, match="async for"):
            run_agent_sync(async_greeter, run_input())

    asyncio.run(main())


def test_something_that_is_not_an_agent() -> None:
    with pytest.raises(UsageError, match="run"):
        run_agent_sync(object(), run_input())


@dataclass
class Board:
    tasks: list[str] = field(default_factory=list)


def test_a_run_starts_with_an_empty_baseline_so_the_first_publish_is_a_snapshot() -> None:
    def agent(ctx: RunContext[Board]) -> None:
        ctx.publish_state()  # the state as it came in
        ctx.state_mut().tasks.append("one more " * 10)
        ctx.publish_state()

    events = run_agent_sync(agent, run_input(state={"tasks": ["x" * 200]}), state_type=Board)
    assert kinds(events)[1:3] == ["STATE_SNAPSHOT", "STATE_DELTA"]
    assert fold(events).state == {"tasks": ["x" * 200, "one more " * 10]}
