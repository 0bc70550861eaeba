"""The task-board agent: deterministic, so every run is assertable to the event.

What one run emits, in order::

    STEP_STARTED board
      REASONING_*                       what the agent made of the message
      TOOL_CALL_START/ARGS              once per mutation
        STATE_SNAPSHOT | STATE_DELTA    the board moving, with the call open
      TOOL_CALL_END/RESULT
      TEXT_MESSAGE_START/CONTENT*/END   the reply, a word per delta
    STEP_FINISHED board

``clear`` is destructive, so the agent pauses the run with an interrupt and acts on the answer
that comes back on the next request, in ``RunAgentInput.resume``.

Serve it: ``uvicorn examples.task_board.agent:app``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agui_replay.errors import AgentError
from agui_replay.server import (
    Interrupt,
    Interrupted,
    RunContext,
    ToolCallHandle,
    agui_app,
)

from .board import ADD_TASK, CLEAR_BOARD, COMPLETE_TASK, ESTIMATE, Board

CLEAR_INTERRUPT = "confirm-clear"
"""The interrupt id the clear confirmation round-trips on."""

HELP = (
    "I keep a task board. Try: add draft the agenda, book the room · complete 1 · "
    "estimate 2 45 · list · clear"
)


@dataclass(frozen=True)
class Command:
    """What the user asked for: ``verb`` plus its arguments."""

    verb: str  # add | complete | estimate | list | clear | help
    titles: tuple[str, ...] = ()
    task: str = ""
    minutes: int = 0

    @staticmethod
    def parse(said: str) -> Command:
        verb, _, rest = said.strip().partition(" ")
        verb, rest = verb.lower(), rest.strip()
        if verb in ("add", "todo") and rest:
            titles = tuple(t.strip() for t in rest.split(",") if t.strip())
            return Command("add", titles=titles)
        if verb in ("complete", "done", "finish") and rest:
            return Command("complete", task=rest)
        if verb in ("estimate", "est"):
            task, _, minutes = rest.rpartition(" ")
            if task and minutes.rstrip("m").isdigit():
                return Command("estimate", task=task.strip(), minutes=int(minutes.rstrip("m")))
            return Command("help")
        if verb in ("list", "board", "show"):
            return Command("list")
        if verb in ("clear", "reset"):
            return Command("clear")
        return Command("help")

    def plan(self, approved: bool | None) -> str:
        """The one line of reasoning the run publishes about the command."""
        if self.verb == "add":
            return f"adding {len(self.titles)} task(s)"
        if self.verb == "complete":
            return f'looking for the task matching "{self.task}"'
        if self.verb == "estimate":
            return f'putting {self.minutes}m on "{self.task}"'
        if self.verb == "list":
            return "reading the board back"
        if self.verb == "clear":
            if approved:
                return "a human approved clearing the board"
            return "a human declined, so the board stays"
        return "that is not a command I know"


class TaskBoard:
    """The agent. ``state_type`` tells the run driver what to decode the input state into."""

    state_type = Board

    def run(self, ctx: RunContext[Board]) -> Interrupted | None:
        command = Command.parse(ctx.last_user_text() or "")
        # Only this request's answer counts.
        answer = ctx.resume_for(CLEAR_INTERRUPT)
        if command.verb == "clear" and answer is None:
            return ask_before_clearing(ctx)
        approved = None
        if answer is not None:
            confirmed = not isinstance(answer.payload, dict) or answer.payload.get("confirm", True)
            approved = answer.status == "resolved" and confirmed is True

        with ctx.step("board") as step:
            step.think(command.plan(approved))
            reply = apply(ctx, command, approved)
            stream(ctx, reply)
        return None


def offered(ctx: RunContext[Board], name: str) -> ToolCallHandle[Board]:
    """Open a call to a tool the client offered (these tools move the client's board)."""
    if ctx.tool(name) is None:
        raise AgentError(f"the client offered no {name} tool")
    return ctx.tool_call(name)


def apply(ctx: RunContext[Board], command: Command, approved: bool | None) -> str:
    """Run the command: one tool call and one state publish per mutation, the publish made
    while the call is open (STATE_* is unordered, so a client watches the call land)."""
    if command.verb == "add":
        added = []
        for title in command.titles:
            with offered(ctx, ADD_TASK) as call:
                call.args_json({"title": title})
                task = call.state_mut().add(title)
                # One publish per task: the first of a run is a snapshot, the second a delta
                # only when the patch is smaller than the board.
                call.publish_state()
                call.result_json({"id": task.id, "title": task.title})
            added.append(f"#{task.id} {task.title}")
        return f"Added {', '.join(added)}. {ctx.state().summary()}"

    if command.verb in ("complete", "estimate"):
        name = COMPLETE_TASK if command.verb == "complete" else ESTIMATE
        with offered(ctx, name) as call:
            arguments: dict[str, object] = {"task": command.task}
            if command.verb == "estimate":
                arguments["minutes"] = command.minutes
            call.args_json(arguments)
            task = call.state_mut().find(command.task)
            if task is None:
                call.result_json({"error": "no such task", "task": command.task})
                return f'Nothing on the board matches "{command.task}".'
            if command.verb == "complete":
                task.done = True
            else:
                task.estimate_minutes = command.minutes
            call.publish_state()
            call.result_json(task.model_dump(exclude_none=True))
        if command.verb == "complete":
            return f"Done: {task.label()}. {ctx.state().summary()}"
        return f"#{task.id} is {command.minutes}m. {ctx.state().summary()}"

    if command.verb == "clear":  # only reached on a resumed run
        if not approved:
            return f"Left the board alone. {ctx.state().summary()}"
        with offered(ctx, CLEAR_BOARD) as call:
            call.args_json({})
            removed = call.state_mut().clear()
            call.publish_state()
            call.result_json({"removed": removed})
        return f"Cleared {removed} task(s). The board is empty."

    if command.verb == "list":
        count = len(ctx.state().tasks)
        if count == 0:
            return "The board is empty. Try: add draft the agenda"
        return f"{count} task(s) on the board — {ctx.state().summary()}."
    return HELP


def ask_before_clearing(ctx: RunContext[Board]) -> Interrupted:
    """Pause the run on the one destructive command."""
    count = len(ctx.state().tasks)
    with ctx.step("confirm") as step:
        step.think("clearing cannot be undone, so a human decides")
        stream(ctx, f"Clearing drops {count} task(s) and cannot be undone.")
    return ctx.interrupt(
        Interrupt(
            CLEAR_INTERRUPT,
            "tool_approval",
            f"Clear the board? {count} task(s) will be removed.",
            response_schema={
                "type": "object",
                "properties": {"confirm": {"type": "boolean"}},
                "required": ["confirm"],
            },
        )
    )


def stream(ctx: RunContext[Board], text: str) -> None:
    """One assistant message, a word (with its trailing space) per TEXT_MESSAGE_CONTENT."""
    words = text.split(" ")
    with ctx.assistant_message() as message:
        for index, word in enumerate(words):
            last = index == len(words) - 1
            message.delta(word if last else word + " ")


app = agui_app(TaskBoard())
"""The agent as an ASGI app: POST a RunAgentInput, read an event stream."""
