"""Streams a user met where our client mode and ``@ag-ui/client`` 1.0 disagreed.

* REASONING_MESSAGE_START without ``role``: the reference schema requires
  ``role: "reasoning"`` (no default), so the reference client rejects the stream at that
  event. Ours now rejects it too, naming the event index and the field.
* RUN_FINISHED with ``outcome: null``: the reference client's inbound compatibility
  boundary (always part of ``HttpAgent.runAgent``) reads this pre-1.0 null as an absent
  field, with a warning, and accepts the stream. Ours accepts it the same way (an outcome of
  success). Only ``enforceEvents`` on its own, without the boundary, rejects it.

* A run that ends in an interrupt, then a run that starts and never finishes (its RUN_FINISHED
  lost): the reference client changes ``pendingInterrupts`` only at RUN_FINISHED, so the first
  run's interrupt is still pending at the end. Ours reports it too (it used to clear it at
  RUN_STARTED).

The agreement is checked against the reference itself where Node is installed (the pinned
packages of tests/js/package.json); our side is checked everywhere. Our own emitters never
produce either shape.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agui_replay.client import Session, apply_events
from agui_replay.errors import EventDecodeError, ProtocolViolation, SchemaViolation
from agui_replay.events import to_wire
from agui_replay.server import run_agent_sync, run_input
from agui_replay.verify import verify_stream
from tests.support.js_packages import installed_js_packages

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}

NO_ROLE = [
    START,
    {"type": "REASONING_MESSAGE_START", "messageId": "m"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "m", "delta": "hmm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "m"},
    FINISH,
]
NULL_OUTCOME = [START, {**FINISH, "outcome": None}]
WITH_ROLE = [NO_ROLE[0], {**NO_ROLE[1], "role": "reasoning"}, *NO_ROLE[2:]]
INTERRUPT = {"id": "i-1", "reason": "confirm"}
INTERRUPTED_THEN_BROKEN = [
    START,
    {**FINISH, "outcome": {"type": "interrupt", "interrupts": [INTERRUPT]}},
    {**START, "runId": "r-2"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m-2", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-2", "delta": "Working"},
]


def test_a_reasoning_message_without_role_is_rejected_at_its_index() -> None:
    with pytest.raises(SchemaViolation) as caught:
        Session().apply_all(NO_ROLE)
    error = caught.value
    assert isinstance(error, ProtocolViolation)
    assert isinstance(error, EventDecodeError)
    assert (error.index, error.field) == (1, "role")
    assert "REASONING_MESSAGE_START #1" in str(error)
    assert "field role is missing" in str(error)
    assert error.hint == "add role (one of 'reasoning') to this REASONING_MESSAGE_START"


@pytest.mark.parametrize("mode", ["client", "strict"])
def test_the_verifier_rejects_it_in_both_modes(mode: Any) -> None:
    with pytest.raises(SchemaViolation, match=r"REASONING_MESSAGE_START #1 .*field role"):
        verify_stream(NO_ROLE, mode)


def test_with_its_role_the_same_stream_is_accepted() -> None:
    session = apply_events(WITH_ROLE)
    assert session.messages == [{"id": "m", "role": "reasoning", "content": "hmm"}]


def test_a_null_outcome_reads_as_absent_as_the_reference_boundary_reads_it() -> None:
    session = apply_events(NULL_OUTCOME)
    assert session.events_applied == 2
    verify_stream(NULL_OUTCOME, "client")


def test_an_interrupt_stays_pending_through_a_run_that_never_finishes() -> None:
    session = apply_events(INTERRUPTED_THEN_BROKEN)
    assert session.run_id == "r-2"
    assert session.pending_interrupts == [INTERRUPT]
    # The next RUN_FINISHED says what is pending: here, nothing.
    session.apply({"type": "TEXT_MESSAGE_END", "messageId": "m-2"})
    session.apply({**FINISH, "runId": "r-2"})
    assert session.pending_interrupts == []


def test_our_emitter_never_sends_either_shape() -> None:
    def agent(ctx: Any) -> None:
        ctx.think("a thought")
        ctx.say("done")

    events = [to_wire(e) for e in run_agent_sync(agent, run_input("t", "r"))]
    starts = [e for e in events if e.get("type") == "REASONING_MESSAGE_START"]
    assert starts
    assert all(e.get("role") == "reasoning" for e in starts)
    finished = [e for e in events if e.get("type") == "RUN_FINISHED"]
    assert finished
    assert all("outcome" not in e or e["outcome"] is not None for e in finished)
    Session().apply_all(events)


def _reference(folder: Path, streams: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["node", "reference_verdicts.mjs"],
        cwd=folder,
        input=json.dumps(streams),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    verdicts: list[dict[str, Any]] = json.loads(done.stdout)
    return verdicts


def _ours(stream: list[dict[str, Any]]) -> tuple[bool, int | None]:
    try:
        Session().apply_all(stream)
    except ProtocolViolation as error:
        return False, error.index
    return True, None


def test_the_reference_client_agrees_on_these_streams() -> None:
    folder = installed_js_packages("reference_verdicts.mjs")
    streams = [NO_ROLE, NULL_OUTCOME, WITH_ROLE, INTERRUPTED_THEN_BROKEN]
    verdicts = _reference(folder, streams)
    theirs = [(v["ok"], v["index"]) for v in verdicts]
    assert theirs == [(False, 1), (True, None), (True, None), (True, None)]
    assert [_ours(s) for s in streams] == theirs
    assert verdicts[3]["pendingInterrupts"] == [INTERRUPT]
    assert Session().apply_all(INTERRUPTED_THEN_BROKEN).pending_interrupts == [INTERRUPT]
