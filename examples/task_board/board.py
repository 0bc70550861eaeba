"""The board: the shared state and the tools that change it. Nothing here knows AG-UI."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

ADD_TASK = "add_task"
COMPLETE_TASK = "complete_task"
ESTIMATE = "estimate"
CLEAR_BOARD = "clear_board"


class Task(BaseModel):
    id: int
    title: str
    estimate_minutes: int | None = None
    done: bool = False

    def label(self) -> str:
        estimate = f" · {self.estimate_minutes}m" if self.estimate_minutes is not None else ""
        return f"#{self.id} {self.title}{estimate}"


class Board(BaseModel):
    """The shared state. The client keeps it between runs and sends it back in each request."""

    tasks: list[Task] = Field(default_factory=list)
    # Ids keep counting past a clear, so a stale reference cannot resolve to a new task.
    next_id: int = 0

    def add(self, title: str) -> Task:
        self.next_id += 1
        task = Task(id=self.next_id, title=title)
        self.tasks.append(task)
        return task

    def find(self, needle: str) -> Task | None:
        needle = needle.strip()
        if needle.isdigit():
            for task in self.tasks:
                if task.id == int(needle):
                    return task
        lowered = needle.lower()
        if not lowered:
            return None
        return next((t for t in self.tasks if lowered in t.title.lower()), None)

    def clear(self) -> int:
        removed = len(self.tasks)
        self.tasks.clear()
        return removed

    def open_count(self) -> int:
        return sum(1 for task in self.tasks if not task.done)

    def done_count(self) -> int:
        return sum(1 for task in self.tasks if task.done)

    def summary(self) -> str:
        if not self.tasks:
            return "nothing on the board"
        summary = f"{self.open_count()} open · {self.done_count()} done"
        minutes = sum(t.estimate_minutes or 0 for t in self.tasks if not t.done)
        return summary + (f" · {minutes}m to go" if minutes else "")


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


TOOLS = [
    _tool(
        ADD_TASK,
        "Add one task to the board.",
        {"title": {"type": "string", "description": "What has to be done."}},
        ["title"],
    ),
    _tool(
        COMPLETE_TASK,
        "Mark a task done, by id or by a piece of its title.",
        {"task": {"type": "string"}},
        ["task"],
    ),
    _tool(
        ESTIMATE,
        "Put a minute estimate on a task.",
        {"task": {"type": "string"}, "minutes": {"type": "integer", "minimum": 1}},
        ["task", "minutes"],
    ),
    _tool(CLEAR_BOARD, "Remove every task. Destructive: ask the human first.", {}, []),
]
"""The tools a client offers this agent (what ``run_input(tools=...)`` takes)."""
