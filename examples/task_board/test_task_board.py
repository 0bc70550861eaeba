"""The task board's flows, in the spirit of the Rust example's tests/flows.rs.

Every run goes through the real run driver (and one through real HTTP); every stream is folded
by the client ``Session``, which carries the board and the conversation from run to run exactly
as a client would.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agui_replay.client import Session
from agui_replay.events import to_wire
from agui_replay.server import run_agent_sync, run_input
from agui_replay.server.testing import fold, serve
from agui_replay.sse import decode_sse

from .agent import CLEAR_INTERRUPT, TaskBoard, app
from .board import TOOLS, Board, Task


class Conversation:
    """One thread: the board and the messages a client keeps between runs."""

    def __init__(self, thread: str) -> None:
        self.thread = thread
        self.runs = 0
        self.state: Any = None
        self.messages: list[dict[str, Any]] = []
        self.last: Session | None = None

    def send(self, said: str | None, resume: list[dict[str, Any]] | None = None) -> list[Any]:
        """Send a user line (or only answers to interrupts) and fold the run's events."""
        self.runs += 1
        history = list(self.messages)
        if said is not None:
            history.append(
                {"id": f"{self.thread}-user-{self.runs}", "role": "user", "content": said}
            )
        events = run_agent_sync(
            TaskBoard(),
            run_input(
                self.thread,
                f"{self.thread}-run-{self.runs}",
                state=self.state,
                messages=history,
                tools=TOOLS,
                resume=resume,
            ),
        )
        self.last = fold(events, state=self.state, messages=history)
        assert self.last.run_error is None, self.last.run_error
        self.state = self.last.state
        self.messages = list(self.last.messages)
        return [to_wire(e) for e in events]

    def board(self) -> Board:
        return Board.model_validate(self.state)

    def reply(self) -> str:
        content: str = [m for m in self.messages if m["role"] == "assistant"][-1]["content"]
        return content


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_the_event_stream_is_ordered_as_the_protocol_requires() -> None:
    """The one test that reads the wire itself, over real HTTP."""
    body = run_input("wire", "r1", messages=["add ship the SDK"], tools=TOOLS)
    with serve(app) as url:
        response = httpx.post(
            url,
            json=body.model_dump(by_alias=True, mode="json"),
            headers={"accept": "text/event-stream"},
            timeout=20.0,
        )
    assert response.status_code == 200
    events = decode_sse(response.content)

    # "Added #1 ship the SDK. 1 open · 0 done": one delta per word.
    reply_words = 10
    assert types(events) == [
        "RUN_STARTED",
        "STEP_STARTED",
        # One ctx.think().
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        # add_task, executed and answered here; the board moves inside the call.
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        # The first publish of a run is always a snapshot.
        "STATE_SNAPSHOT",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * reply_words,
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert events[-1]["threadId"] == "wire"
    assert events[-1]["runId"] == "r1"
    # Ids follow the shared counter: reasoning r1-msg-1, call r1-call-1 with result r1-msg-2,
    # the reply r1-msg-3.
    assert events[2]["messageId"] == "r1-msg-1"
    assert (events[7]["toolCallId"], events[11]["messageId"]) == ("r1-call-1", "r1-msg-2")
    assert events[12]["messageId"] == "r1-msg-3"

    session = fold(events)
    assert session.state == {
        "tasks": [{"id": 1, "title": "ship the SDK", "estimate_minutes": None, "done": False}],
        "next_id": 1,
    }
    reply = [m for m in session.messages if m["role"] == "assistant" and "content" in m][-1]
    assert reply["content"] == "Added #1 ship the SDK. 1 open · 0 done"


def state_events(said: str) -> list[dict[str, Any]]:
    events = run_agent_sync(TaskBoard(), run_input("encodings", "r1", messages=[said], tools=TOOLS))
    return [to_wire(e) for e in events if e.type.value.startswith("STATE_")]


def second_add_sizes(first: str, second: str) -> tuple[int, int]:
    """(patch bytes, board bytes) for the second of two adds, worked out by hand: the patch
    adds the task at /tasks/1 and replaces /next_id."""
    board = Board()
    board.add(first)
    task = board.add(second)
    state = board.model_dump(mode="json")
    patch = [
        {"op": "add", "path": "/tasks/1", "value": task.model_dump(mode="json")},
        {"op": "replace", "path": "/next_id", "value": 2},
    ]
    return _size(patch), _size(state)


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_two_tasks_in_one_message_give_a_snapshot_then_a_delta_only_when_smaller() -> None:
    # A board of two one-letter tasks is cheaper to resend than to patch...
    patch, board = second_add_sizes("a", "b")
    assert patch >= board
    assert types(state_events("add a, b")) == ["STATE_SNAPSHOT", "STATE_SNAPSHOT"]

    # ...and with realistic titles the patch is the smaller of the two.
    first = "write the workshop agenda and circulate it"
    second = "book the large meeting room for thursday"
    patch, board = second_add_sizes(first, second)
    assert patch < board
    roomy = state_events(f"add {first}, {second}")
    assert types(roomy) == ["STATE_SNAPSHOT", "STATE_DELTA"]
    assert {op["path"] for op in roomy[1]["delta"]} == {"/tasks/1", "/next_id"}

    # Whichever went out, the client lands in the same place.
    for said in ("add a, b", f"add {first}, {second}"):
        conversation = Conversation("encodings")
        conversation.send(said)
        titles = [t.title for t in conversation.board().tasks]
        assert titles == [t.strip() for t in said.removeprefix("add ").split(",")]
        assert conversation.board().next_id == 2


def test_adding_estimating_and_completing_moves_the_board() -> None:
    conversation = Conversation("happy")
    conversation.send("add draft the agenda, book the room")
    assert conversation.reply() == "Added #1 draft the agenda, #2 book the room. 2 open · 0 done"
    conversation.send("estimate 2 45")
    assert conversation.reply() == "#2 is 45m. 2 open · 0 done · 45m to go"
    conversation.send("complete 1")
    assert conversation.reply() == "Done: #1 draft the agenda. 1 open · 1 done · 45m to go"
    conversation.send("list")
    assert conversation.reply() == "2 task(s) on the board — 1 open · 1 done · 45m to go."

    board = conversation.board()
    assert board.tasks == [
        Task(id=1, title="draft the agenda", done=True),
        Task(id=2, title="book the room", estimate_minutes=45),
    ]
    # The conversation carried: four user lines and one tool result per mutation.
    roles = [m["role"] for m in conversation.messages]
    assert roles.count("user") == 4
    assert roles.count("tool") == 4
    tool_results = [json.loads(m["content"]) for m in conversation.messages if m["role"] == "tool"]
    assert tool_results[0] == {"id": 1, "title": "draft the agenda"}
    assert tool_results[-1] == {"id": 1, "title": "draft the agenda", "done": True}


def test_clearing_asks_a_human_first_and_the_answer_decides() -> None:
    conversation = Conversation("hitl")
    conversation.send("add write the retro notes")

    # The clear pauses: RUN_FINISHED with an interrupt outcome, and nothing touched.
    paused = conversation.send("clear")
    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert "STATE_SNAPSHOT" not in types(paused)
    assert "TOOL_CALL_START" not in types(paused)
    assert conversation.last is not None
    (interrupt,) = conversation.last.pending_interrupts
    assert interrupt["id"] == CLEAR_INTERRUPT
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["message"] == "Clear the board? 1 task(s) will be removed."
    assert interrupt["responseSchema"]["required"] == ["confirm"]
    assert conversation.reply() == "Clearing drops 1 task(s) and cannot be undone."

    # Declined: the resumed run answers no tool call and leaves the board.
    declined = conversation.send(
        None, resume=[{"interruptId": CLEAR_INTERRUPT, "status": "cancelled"}]
    )
    assert declined[-1]["outcome"] == {"type": "success"}
    assert "TOOL_CALL_START" not in types(declined)
    assert conversation.reply() == "Left the board alone. 1 open · 0 done"
    assert conversation.last is not None
    assert conversation.last.pending_interrupts == []
    assert [t.title for t in conversation.board().tasks] == ["write the retro notes"]

    # Asked again and approved: clear_board runs, with the board emptied inside the call.
    conversation.send("clear")
    approved = conversation.send(
        None,
        resume=[
            {"interruptId": CLEAR_INTERRUPT, "status": "resolved", "payload": {"confirm": True}}
        ],
    )
    calls = [e for e in approved if e["type"] == "TOOL_CALL_START"]
    assert [c["toolCallName"] for c in calls] == ["clear_board"]
    kinds = types(approved)
    assert (
        kinds.index("TOOL_CALL_START")
        < kinds.index("STATE_SNAPSHOT")
        < kinds.index("TOOL_CALL_END")
    )
    assert conversation.reply() == "Cleared 1 task(s). The board is empty."
    assert conversation.board().tasks == []
    # Ids keep counting past a clear.
    assert conversation.board().next_id == 1


def test_an_agent_that_is_not_offered_its_tools_says_so() -> None:
    events = run_agent_sync(TaskBoard(), run_input("t", "r", messages=["add milk"]))
    error = to_wire(events[-1])
    assert error["type"] == "RUN_ERROR"
    assert error["code"] == "AGENT_ERROR"
    assert "add_task" in error["message"]
    # The step and the reasoning it had opened were closed before the error.
    assert types([to_wire(e) for e in events])[-2] == "STEP_FINISHED"
