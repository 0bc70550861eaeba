"""How a run ends: success, or a pause waiting for a human (an interrupt).

An agent returns ``None`` for success, or an :class:`Interrupted` outcome — most easily through
``ctx.interrupt(...)``. The run driver turns it into ``RUN_FINISHED`` with
``outcome: {"type": "interrupt", "interrupts": [...]}``; the client answers on the next run in
``RunAgentInput.resume``, which the agent reads with ``ctx.resume_for(id)``.

>>> Interrupt("confirm-clear", "tool_approval", "Clear the board?").model_dump(by_alias=True)
{'id': 'confirm-clear', 'reason': 'tool_approval', 'message': 'Clear the board?'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ag_ui.core import Interrupt as _CoreInterrupt
from ag_ui.core import RunFinishedInterruptOutcome, RunFinishedSuccessOutcome

from agui_replay._compat import RunFinishedCancelledOutcome

__all__ = ["Interrupt", "Interrupted", "RunOutcome", "Success"]


class Interrupt(_CoreInterrupt):
    """An ``ag_ui.core.Interrupt`` that can be built positionally.

    ``Interrupt(id, reason, message=None, tool_call_id=None, response_schema=None)``; it is an
    ``ag_ui.core.Interrupt`` in every other respect.
    """

    def __init__(
        self,
        id: str,
        reason: str,
        message: str | None = None,
        tool_call_id: str | None = None,
        response_schema: Mapping[str, Any] | None = None,
        *,
        expires_at: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(
            id=id,
            reason=reason,
            message=message,
            tool_call_id=tool_call_id,
            response_schema=dict(response_schema) if response_schema is not None else None,
            expires_at=expires_at,
            metadata=dict(metadata) if metadata is not None else None,
            **extra,
        )


class Interrupted:
    """The run pauses on these interrupts (at least one); the next run resumes it."""

    __slots__ = ("interrupts",)

    def __init__(self, interrupts: Iterable[_CoreInterrupt]) -> None:
        self.interrupts: tuple[_CoreInterrupt, ...] = tuple(interrupts)

    def to_outcome(self) -> RunFinishedInterruptOutcome:
        """The ``RUN_FINISHED.outcome`` model (pydantic refuses an empty list)."""
        return RunFinishedInterruptOutcome(interrupts=list(self.interrupts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interrupted) and other.interrupts == self.interrupts

    def __hash__(self) -> int:
        return hash(tuple(i.id for i in self.interrupts))

    def __repr__(self) -> str:
        return f"Interrupted({list(self.interrupts)!r})"


@dataclass(frozen=True)
class Success:
    """The run completed; the same as returning ``None``."""

    def to_outcome(self) -> RunFinishedSuccessOutcome:
        """The ``RUN_FINISHED.outcome`` model."""
        return RunFinishedSuccessOutcome()


RunOutcome: TypeAlias = (
    "Success | Interrupted | RunFinishedSuccessOutcome | RunFinishedInterruptOutcome "
    "| RunFinishedCancelledOutcome | None"
)
"""What an agent may return."""
