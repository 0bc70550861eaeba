"""The task board as cassette tests: record each run once, replay it offline on every `pytest`.

The board calls no model, so its cassettes hold only what the runs were asked and the events
they answered with; a replay runs the agent again on the same input and fails if the stream
changed. Record again after an intended change::

    pytest examples/task_board/test_task_board_cassettes.py --agui-record --snapshot-update
"""

from __future__ import annotations

from typing import Any

from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_valid_stream,
    message_text,
)
from agui_replay.client import Session
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import CLEAR_INTERRUPT, TaskBoard
from .board import TOOLS


class Board:
    """A front end on one thread: it keeps the board and the conversation between runs."""

    def __init__(self, agui: CassetteSession, thread: str) -> None:
        self.agui = agui
        self.thread = thread
        self.state: Any = None
        self.messages: list[dict[str, Any]] = []
        self.client = Session()

    def send(
        self, said: str | None = None, *, resume: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """One run: a user line (or only an answer to an interrupt); returns the run's events."""
        n = len(self.agui.runs) + 1
        history = list(self.messages)
        if said is not None:
            history.append({"id": f"{self.thread}-user-{n}", "role": "user", "content": said})
        body = run_input(
            self.thread,
            f"{self.thread}-run-{n}",
            state=self.state,
            messages=history,
            tools=TOOLS,
            resume=resume,
        )
        events = self.agui.run(TaskBoard(), body)
        # The board names everything after its run id, so the raw stream is the same on every
        # replay and the next input built from it is too (the pydantic-ai example, whose ids
        # are random, folds agui.runs[-1].normalized instead).
        self.client = Session(state=self.state, messages=history).apply_all(events).finish()
        self.state, self.messages = self.client.state, list(self.client.messages)
        return events


def task(id: int, title: str, *, done: bool = False, minutes: int | None = None) -> dict[str, Any]:
    return {"id": id, "title": title, "estimate_minutes": minutes, "done": done}


def test_adding_two_tasks(agui: CassetteSession, agui_snapshot: Any) -> None:
    said = "add draft the agenda, book the room"
    events = agui.run(TaskBoard(), run_input("workshop", "run-1", messages=[said], tools=TOOLS))

    assert_valid_stream(events, "strict")
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "TOOL_CALL_START",
            "STATE_SNAPSHOT",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_START",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "STEP_FINISHED",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    assert message_text(events) == "Added #1 draft the agenda, #2 book the room. 2 open · 0 done"
    assert_final_state(
        events, {"tasks": [task(1, "draft the agenda"), task(2, "book the room")], "next_id": 2}
    )
    assert events == agui_snapshot


def test_a_week_of_work_across_runs(agui: CassetteSession, agui_snapshot: Any) -> None:
    board = Board(agui, "week")
    board.send("add draft the agenda, book the room")
    estimated = board.send("estimate 2 45")
    completed = board.send("complete 1")

    assert message_text(estimated) == "#2 is 45m. 2 open · 0 done · 45m to go"
    assert message_text(completed) == "Done: #1 draft the agenda. 1 open · 1 done · 45m to go"
    # Each run starts from the board the previous one left.
    tasks = [task(1, "draft the agenda", done=True), task(2, "book the room", minutes=45)]
    assert_final_state(
        completed, {"tasks": tasks, "next_id": 2}, initial_state=agui.runs[2].input["state"]
    )
    assert [r.input["runId"] for r in agui.runs] == ["week-run-1", "week-run-2", "week-run-3"]
    assert estimated == agui_snapshot(name="estimate")
    assert completed == agui_snapshot(name="complete")


def test_clearing_is_declined_then_approved(agui: CassetteSession, agui_snapshot: Any) -> None:
    board = Board(agui, "hitl")
    board.send("add write the retro notes")

    # A clear pauses the run on an interrupt; nothing is touched yet.
    paused = board.send("clear")
    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert "TOOL_CALL_START" not in [e["type"] for e in paused]
    (interrupt,) = board.client.pending_interrupts
    assert (interrupt["id"], interrupt["reason"]) == (CLEAR_INTERRUPT, "tool_approval")

    # Declined: the next run only carries the answer, and the board stays.
    declined = board.send(resume=[{"interruptId": CLEAR_INTERRUPT, "status": "cancelled"}])
    assert message_text(declined) == "Left the board alone. 1 open · 0 done"
    assert board.state["tasks"] == [task(1, "write the retro notes")]

    # Asked again and approved: clear_board runs and the board empties inside the call.
    board.send("clear")
    approved = board.send(
        resume=[
            {"interruptId": CLEAR_INTERRUPT, "status": "resolved", "payload": {"confirm": True}}
        ]
    )
    assert_valid_stream(approved, "strict")
    assert_event_types(
        approved,
        ["TOOL_CALL_START", "STATE_SNAPSHOT", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_FINISHED"],
        in_order=True,
    )
    assert message_text(approved) == "Cleared 1 task(s). The board is empty."
    assert board.state == {"tasks": [], "next_id": 1}
    assert len(agui.runs) == 5

    assert paused == agui_snapshot(name="paused")
    assert declined == agui_snapshot(name="declined")
    assert approved == agui_snapshot(name="approved")
