"""The ordering verifier: run lifecycle, open and closed ids, tool results after their call;
its rules on whole streams and event by event."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import (
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from agui_replay.errors import AguiReplayError, EventDecodeError, ProtocolViolation
from agui_replay.verify import (
    Verifier,
    verify_stream,
)
from tests.support.verify_events import (
    STATE,
    UNORDERED,
    Event,
    chunk,
    feed_all,
    reasoning,
    run_error,
    run_finished,
    run_started,
    step,
    subagent,
    text,
    tool,
    violation,
)

# -- whole streams that pass ----------------------------------------------------------------

FULL_RUN: list[Event] = [
    run_started(),
    *UNORDERED,
    step("STARTED", "plan"),
    reasoning("START", "r-msg-1"),
    reasoning("MESSAGE_START", "r-msg-1"),
    reasoning("MESSAGE_CONTENT", "r-msg-1"),
    reasoning("MESSAGE_END", "r-msg-1"),
    reasoning("END", "r-msg-1"),
    text("START", "r-msg-3"),
    *UNORDERED,  # unordered events inside an open message
    text("CONTENT", "r-msg-3"),
    text("END", "r-msg-3"),
    tool("START", "r-call-1"),
    tool("ARGS", "r-call-1"),
    tool("END", "r-call-1"),
    tool("RESULT", "r-call-1"),
    subagent("STARTED", "s1"),
    subagent("FINISHED", "s1"),
    subagent("STARTED", "s2"),
    subagent("ERROR", "s2"),
    step("FINISHED", "plan"),
    run_finished(),
]


@pytest.mark.parametrize("mode", ["client", "strict"])
def test_a_well_formed_run_passes(mode: str) -> None:
    verifier = Verifier(mode)  # type: ignore[arg-type]
    feed_all(verifier, FULL_RUN)
    verifier.finish()
    assert not verifier.running
    assert verifier.count == len(FULL_RUN)


def test_messages_and_tool_calls_interleave() -> None:
    verify_stream(
        [
            run_started(),
            text("START", "a"),
            tool("START", "c1"),
            text("START", "b"),
            tool("START", "c2"),
            text("CONTENT", "a"),
            tool("ARGS", "c2"),
            text("CONTENT", "b"),
            tool("ARGS", "c1"),
            text("END", "b"),
            tool("END", "c1"),
            text("END", "a"),
            tool("END", "c2"),
            step("STARTED", "one"),
            step("STARTED", "two"),
            step("FINISHED", "one"),
            step("FINISHED", "two"),
            run_finished(),
        ],
        mode="strict",
    )


def test_an_id_may_be_reopened_after_its_end() -> None:
    verify_stream(
        [
            run_started(),
            text("START", "m"),
            text("END", "m"),
            text("START", "m"),
            text("CONTENT", "m"),
            text("END", "m"),
            tool("START", "c"),
            tool("END", "c"),
            tool("START", "c"),
            tool("END", "c"),
            step("STARTED", "s"),
            step("FINISHED", "s"),
            step("STARTED", "s"),
            step("FINISHED", "s"),
            subagent("STARTED", "x"),
            subagent("FINISHED", "x"),
            run_finished(),
            run_started(),
            # Subagent ids are per invocation: one may be used again only in another run.
            subagent("STARTED", "x"),
            subagent("FINISHED", "x"),
            run_finished(),
        ],
        mode="strict",
    )


def test_reasoning_blocks_and_reasoning_messages_are_tracked_apart() -> None:
    # The same id names a block and a message; closing one leaves the other open.
    events = [
        run_started(),
        reasoning("START", "x"),
        reasoning("MESSAGE_START", "x"),
        reasoning("END", "x"),
        reasoning("MESSAGE_CONTENT", "x"),
        reasoning("MESSAGE_END", "x"),
        run_finished(),
    ]
    verify_stream(events, mode="strict")
    error = violation([run_started(), reasoning("START", "x"), reasoning("MESSAGE_CONTENT", "x")])
    assert str(error) == (
        'REASONING_MESSAGE_CONTENT #2 breaks rule not-open: reasoning message "x" was never opened'
    )


def test_models_are_accepted_like_wire_dicts() -> None:
    verify_stream(
        [
            RunStartedEvent(thread_id="t", run_id="r"),
            TextMessageStartEvent(message_id="m"),
            TextMessageContentEvent(message_id="m", delta="hi"),
            TextMessageEndEvent(message_id="m"),
            TextMessageChunkEvent(message_id="n", delta="yo"),
            RunFinishedEvent(thread_id="t", run_id="r"),
        ],
        mode="strict",
    )


# -- run lifecycle rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [text("START", "m"), STATE, run_finished(), step("STARTED", "s"), chunk("TEXT_MESSAGE", "m")],
)
def test_the_first_event_must_start_a_run(first: Event) -> None:
    error = violation([first], mode="client")
    assert error.rule == "not-started"
    assert error.index == 0
    assert error.event_type == first["type"]
    assert str(error).startswith(f"{first['type']} #0 breaks rule not-started: ")
    assert "RUN_STARTED" in error.detail


def test_a_stream_may_open_with_run_error() -> None:
    verifier = Verifier("strict")
    verifier.feed(run_error())
    verifier.finish()
    assert not verifier.running


def test_run_started_inside_a_run() -> None:
    error = violation([run_started("r1"), text("START", "m"), run_started("r2")])
    assert error.rule == "duplicate-run-started"
    assert (error.index, error.ids, error.event_type) == (2, ("r2",), "RUN_STARTED")
    assert str(error) == (
        'RUN_STARTED #2 breaks rule duplicate-run-started: RUN_STARTED while run "r1" is still '
        "active; end it with RUN_FINISHED or RUN_ERROR before starting another"
    )


@pytest.mark.parametrize("late", [text("START", "m"), STATE, run_finished(), step("STARTED", "s")])
def test_after_run_finished_only_run_error_or_run_started(late: Event) -> None:
    error = violation([run_started(), run_finished(), late])
    assert error.rule == "run-ended"
    assert error.index == 2
    assert "already finished with RUN_FINISHED" in str(error)
    verify_stream([run_started(), run_finished(), run_error()], mode="strict")
    verify_stream([run_started(), run_finished(), run_started("r2"), run_finished("r2")])


@pytest.mark.parametrize("late", [run_error(), run_finished(), STATE, tool("RESULT", "c")])
def test_after_run_error_only_run_started(late: Event) -> None:
    error = violation([run_started(), run_error(), late])
    assert error.rule == "run-ended"
    assert str(error).endswith(
        'the run "r" already ended with RUN_ERROR; only a new RUN_STARTED may follow'
    )
    verify_stream([run_started(), run_error(), run_started("r2"), run_finished("r2")], "strict")


def test_run_error_may_leave_things_open() -> None:
    verify_stream(
        [run_started(), text("START", "m"), tool("START", "c"), step("STARTED", "s"), run_error()],
        mode="strict",
    )


OPENERS = [
    (step("STARTED", "plan"), "step", "plan"),
    (text("START", "m1"), "text message", "m1"),
    (reasoning("MESSAGE_START", "rm"), "reasoning message", "rm"),
    (reasoning("START", "rb"), "reasoning block", "rb"),
    (tool("START", "c1"), "tool call", "c1"),
    (subagent("STARTED", "s1"), "subagent", "s1"),
]


@pytest.mark.parametrize(("opener", "name", "ident"), OPENERS, ids=[o[1] for o in OPENERS])
def test_run_finished_while_something_is_open(opener: Event, name: str, ident: str) -> None:
    error = violation([run_started(), opener, run_finished()], mode="client")
    assert error.rule == "open-at-finish"
    assert (error.index, error.ids, error.event_type) == (2, (ident,), "RUN_FINISHED")
    assert str(error) == (
        "RUN_FINISHED #2 breaks rule open-at-finish: RUN_FINISHED while still open: "
        f'{name} "{ident}"; close them first (or end the run with RUN_ERROR)'
    )


def test_open_at_finish_names_everything_open() -> None:
    error = violation(
        [run_started(), tool("START", "c1"), text("START", "a"), text("START", "b"), run_finished()]
    )
    assert error.ids == ("a", "b", "c1")
    assert 'still open: text message "a", "b"; tool call "c1";' in str(error)


# -- keyed blocks ---------------------------------------------------------------------------

STARTS = [
    (text("START", "k"), "text message"),
    (tool("START", "k"), "tool call"),
    (reasoning("START", "k"), "reasoning block"),
    (reasoning("MESSAGE_START", "k"), "reasoning message"),
    (subagent("STARTED", "k"), "subagent"),
    (step("STARTED", "k"), "step"),
]


@pytest.mark.parametrize(("start", "name"), STARTS, ids=[s[1] for s in STARTS])
def test_start_on_an_open_id(start: Event, name: str) -> None:
    error = violation([run_started(), start, STATE, start], mode="client")
    assert error.rule == "duplicate-start"
    assert (error.index, error.ids, error.event_type) == (3, ("k",), start["type"])
    assert str(error) == (
        f'{start["type"]} #3 breaks rule duplicate-start: {name} "k" is already open '
        "(started at #1); end it before starting it again"
    )


CONTINUERS = [
    (text("CONTENT", "k"), text("START", "k"), text("END", "k"), "text message"),
    (text("END", "k"), text("START", "k"), text("END", "k"), "text message"),
    (tool("ARGS", "k"), tool("START", "k"), tool("END", "k"), "tool call"),
    (tool("END", "k"), tool("START", "k"), tool("END", "k"), "tool call"),
    (step("FINISHED", "k"), step("STARTED", "k"), step("FINISHED", "k"), "step"),
    (reasoning("END", "k"), reasoning("START", "k"), reasoning("END", "k"), "reasoning block"),
    (
        reasoning("MESSAGE_CONTENT", "k"),
        reasoning("MESSAGE_START", "k"),
        reasoning("MESSAGE_END", "k"),
        "reasoning message",
    ),
    (
        reasoning("MESSAGE_END", "k"),
        reasoning("MESSAGE_START", "k"),
        reasoning("MESSAGE_END", "k"),
        "reasoning message",
    ),
    (subagent("FINISHED", "k"), subagent("STARTED", "k"), subagent("FINISHED", "k"), "subagent"),
    (subagent("ERROR", "k"), subagent("STARTED", "k"), subagent("ERROR", "k"), "subagent"),
]


@pytest.mark.parametrize(
    ("event", "start", "end", "name"), CONTINUERS, ids=[f"{c[0]['type']}" for c in CONTINUERS]
)
def test_content_and_end_need_an_open_id(event: Event, start: Event, end: Event, name: str) -> None:
    never = violation([run_started(), event], mode="client")
    assert never.rule == "not-open"
    assert (never.index, never.ids, never.event_type) == (1, ("k",), event["type"])
    assert str(never) == f'{event["type"]} #1 breaks rule not-open: {name} "k" was never opened'

    ended = violation([run_started(), start, end, event], mode="client")
    assert ended.rule == "not-open"
    assert (
        str(ended)
        == f'{event["type"]} #3 breaks rule not-open: {name} "k" is not open: it ended at #2'
    )

    verify_stream([run_started(), start, event, *([] if event == end else [end]), run_finished()])


def test_args_for_a_call_never_opened_names_the_rule_the_event_and_the_id() -> None:
    events = [
        run_started(),
        tool("START", "r-call-1"),
        tool("ARGS", "r-call-1"),
        tool("END", "r-call-1"),
        tool("RESULT", "r-call-1"),
        tool("ARGS", "r-call-2"),
    ]
    error = violation(events)
    assert str(error) == (
        'TOOL_CALL_ARGS #5 breaks rule not-open: tool call "r-call-2" was never opened'
    )
    assert (error.rule, error.event_type, error.index, error.ids) == (
        "not-open",
        "TOOL_CALL_ARGS",
        5,
        ("r-call-2",),
    )


@pytest.mark.parametrize("event", UNORDERED, ids=[e["type"] for e in UNORDERED])
def test_unordered_events_follow_only_the_run_rules(event: Event) -> None:
    assert violation([event]).rule == "not-started"
    assert violation([run_started(), run_finished(), event]).rule == "run-ended"
    verify_stream(
        [
            run_started(),
            event,
            text("START", "m"),
            event,
            tool("START", "c"),
            event,
            tool("END", "c"),
            text("END", "m"),
            event,
            run_finished(),
        ],
        mode="strict",
    )


# -- strict-only rules ----------------------------------------------------------------------


def test_result_for_a_call_never_started() -> None:
    events = [run_started(), tool("START", "c1"), tool("END", "c1"), tool("RESULT", "c9")]
    error = violation(events, mode="strict")
    assert error.rule == "unknown-id"
    assert (error.index, error.ids) == (3, ("c9",))
    assert str(error).startswith(
        'TOOL_CALL_RESULT #3 breaks rule unknown-id: tool call "c9" was never started'
    )
    verify_stream([*events, run_finished()], mode="client")


def test_result_before_the_calls_end() -> None:
    events = [run_started(), tool("START", "c1"), tool("ARGS", "c1"), tool("RESULT", "c1")]
    error = violation(events, mode="strict")
    assert error.rule == "out-of-order"
    assert (error.index, error.ids) == (3, ("c1",))
    assert "before its TOOL_CALL_END (the call is open since #1)" in str(error)
    verify_stream([*events, tool("END", "c1"), run_finished()], mode="client")


def test_result_may_answer_a_call_from_an_earlier_run_of_the_stream() -> None:
    verify_stream(
        [
            run_started("r1"),
            tool("START", "c1"),
            tool("END", "c1"),
            run_finished("r1"),
            run_started("r2"),
            tool("RESULT", "c1"),
            run_finished("r2"),
        ],
        mode="strict",
    )


@pytest.mark.parametrize(
    "events",
    [
        [run_started()],
        [run_started(), text("START", "m"), text("END", "m")],
        [run_started(), run_finished(), run_started("r2")],
    ],
)
def test_a_stream_that_ends_inside_a_run_is_incomplete_in_strict_mode(events: list[Event]) -> None:
    verifier = Verifier("strict")
    feed_all(verifier, events)
    with pytest.raises(ProtocolViolation) as info:
        verifier.finish()
    error = info.value
    assert error.rule == "incomplete"
    assert error.event_type is None
    assert error.index == len(events)
    assert str(error).startswith(f"end of stream #{len(events)} breaks rule incomplete: ")
    assert "without RUN_FINISHED or RUN_ERROR" in str(error)
    client = Verifier("client")
    feed_all(client, events)
    client.finish()


def test_incomplete_names_what_is_still_open() -> None:
    verifier = Verifier("strict")
    feed_all(verifier, [run_started("r7"), text("START", "m"), tool("START", "c")])
    with pytest.raises(ProtocolViolation) as info:
        verifier.finish()
    assert str(info.value) == (
        'end of stream #3 breaks rule incomplete: the stream ended inside run "r7" without '
        'RUN_FINISHED or RUN_ERROR (still open: text message "m"; tool call "c")'
    )
    assert info.value.ids == ("m", "c")


def test_an_empty_stream_is_incomplete_in_strict_mode_only() -> None:
    with pytest.raises(ProtocolViolation, match="incomplete"):
        verify_stream([], mode="strict")
    verify_stream([], mode="client")


# -- several runs, assume_running -----------------------------------------------------------


def test_a_new_run_resets_the_books() -> None:
    verifier = Verifier("client")
    feed_all(
        verifier,
        [
            run_started("r1"),
            text("START", "m"),
            step("STARTED", "s"),
            text("CONTENT", "m"),
            run_error(),
        ],
    )
    # What run r1 left open is forgotten: the same ids open afresh in r2.
    feed_all(verifier, [run_started("r2"), text("START", "m"), step("STARTED", "s")])
    assert dict(verifier.open_messages) == {"m": 6}
    assert dict(verifier.open_steps) == {"s": 7}
    assert verifier.run_id == "r2"
    feed_all(verifier, [text("END", "m"), step("FINISHED", "s"), run_finished("r2")])
    # ... and an id that r2 closed is unknown to r3.
    verifier.feed(run_started("r3"))
    with pytest.raises(ProtocolViolation) as info:
        verifier.feed(text("CONTENT", "m"))
    assert (
        str(info.value)
        == 'TEXT_MESSAGE_CONTENT #12 breaks rule not-open: text message "m" was never opened'
    )


def test_assume_running_starts_inside_a_run() -> None:
    verifier = Verifier("strict", assume_running=True)
    assert verifier.running
    feed_all(verifier, [text("START", "m"), text("END", "m"), STATE])
    with pytest.raises(ProtocolViolation) as info:
        verifier.feed(run_started())
    assert info.value.rule == "duplicate-run-started"
    assert info.value.index == 3
    verifier.feed(run_finished())
    verifier.finish()
    assert not verifier.running

    plain = Verifier("strict")
    assert not plain.running
    with pytest.raises(ProtocolViolation, match="not-started"):
        plain.feed(text("START", "m"))


# -- a refused event changes nothing ---------------------------------------------------------


def _views(v: Verifier) -> tuple[Any, ...]:
    return (
        v.running,
        v.run_id,
        dict(v.open_messages),
        dict(v.open_tool_calls),
        dict(v.open_steps),
        dict(v.open_reasoning),
        dict(v.open_reasoning_messages),
        dict(v.open_subagents),
    )


@pytest.mark.parametrize(
    ("prefix", "bad", "after"),
    [
        (
            [run_started(), text("START", "m")],
            text("START", "m"),
            [text("END", "m"), run_finished()],
        ),
        ([run_started(), text("START", "m")], run_finished(), [text("END", "m"), run_finished()]),
        (
            [run_started(), text("START", "m")],
            run_started("r2"),
            [text("END", "m"), run_finished()],
        ),
        (
            [run_started(), tool("START", "c")],
            tool("RESULT", "c"),
            [tool("END", "c"), tool("RESULT", "c"), run_finished()],
        ),
        ([run_started(), run_finished()], STATE, [run_started("r2"), run_finished("r2")]),
        ([], STATE, [run_started(), run_finished()]),
        # A pending chunk message: the END it would get at RUN_FINISHED is taken back too,
        # so the next id-less chunk still continues it.
        (
            [run_started(), step("STARTED", "s"), chunk("TEXT_MESSAGE", "m")],
            run_finished(),
            [chunk("TEXT_MESSAGE", None), step("FINISHED", "s"), run_finished()],
        ),
        # A chunk that opens a new message after closing the pending one, refused.
        (
            [run_started(), text("START", "x"), chunk("TEXT_MESSAGE", "m")],
            chunk("TEXT_MESSAGE", "x"),
            [chunk("TEXT_MESSAGE", None), text("END", "x"), run_finished()],
        ),
    ],
)
def test_state_is_unchanged_after_a_violation(
    prefix: list[Event], bad: Event, after: list[Event]
) -> None:
    verifier = Verifier("strict")
    feed_all(verifier, prefix)
    before = _views(verifier)
    with pytest.raises(ProtocolViolation):
        verifier.feed(bad)
    assert _views(verifier) == before
    feed_all(verifier, after)  # the stream goes on as if the bad event had never come
    verifier.finish()
    # Refused events still count: indexes stay those of the caller's stream.
    assert verifier.count == len(prefix) + 1 + len(after)


def test_the_index_counts_refused_events_too() -> None:
    verifier = Verifier("client")
    verifier.feed(run_started())
    with pytest.raises(ProtocolViolation):
        verifier.feed(text("END", "m"))
    with pytest.raises(ProtocolViolation) as info:
        verifier.feed(text("END", "m"))
    assert info.value.index == 2


# -- malformed events -----------------------------------------------------------------------


def test_unknown_types_are_dropped_with_a_warning_in_client_mode() -> None:
    # The reference client drops an event whose type it does not know, warns, and goes on.
    verifier = Verifier("client")
    verifier.feed(run_started())
    assert verifier.feed_expanded({"type": "X_STATE_SNAPSHOT", "snapshot": {}}) == []
    assert verifier.feed_expanded({"type": "THINKING_START"}) == []
    assert verifier.feed_expanded({"messageId": "m"}) == []
    verifier.feed(run_finished())
    assert verifier.warnings == [
        "X_STATE_SNAPSHOT #1: unknown event type; the reference client drops it",
        "THINKING_START #2: unknown event type (THINKING_* events left the protocol in 1.0: "
        "use REASONING_*); the reference client drops it",
        'event #3 has no "type" string; the reference client drops it',
    ]
    verify_stream([run_started(), {"type": "X_STATE_SNAPSHOT"}, run_finished()], "client")


def test_unknown_type_is_a_decode_error_with_a_hint_in_strict_mode() -> None:
    verifier = Verifier("strict")
    verifier.feed(run_started())
    with pytest.raises(EventDecodeError) as info:
        verifier.feed({"type": "THINKING_START"})
    assert info.value.index == 1
    assert info.value.event_type == "THINKING_START"
    assert "use REASONING_*" in str(info.value)
    with pytest.raises(EventDecodeError, match='no "type" string'):
        verifier.feed({"messageId": "m"})
    assert verifier.warnings == []


@pytest.mark.parametrize(
    "event",
    [
        {"type": "TEXT_MESSAGE_START"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": "x"},
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "content": "x"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": None},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": ["m"]},
    ],
)
def test_missing_or_mistyped_ids_are_decode_errors(event: Event) -> None:
    verifier = Verifier("client")
    verifier.feed(run_started())
    with pytest.raises(EventDecodeError) as info:
        verifier.feed(event)
    assert info.value.index == 1
    assert info.value.event_type == event["type"]
    assert info.value.field in {"messageId", "toolCallId", "delta"}


@pytest.mark.parametrize("event", [None, "RUN_STARTED", 3, ["type"]])
def test_a_non_object_is_a_decode_error(event: Any) -> None:
    with pytest.raises(EventDecodeError, match="must be a JSON object"):
        Verifier().feed(event)


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(AguiReplayError, match='use "client" or "strict"'):
        Verifier("lenient")  # type: ignore[arg-type]
