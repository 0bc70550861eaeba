"""A Python AG-UI server toolkit: the run context, handles, run driver and ASGI endpoint.

An agent streams text, tool calls, steps and shared state through a :class:`RunContext`,
whose handles emit the START and END events around what they stream::

    from agui_replay.server import RunContext, run_input

    ctx, events = RunContext.new(run_input("t", "r"))
    with ctx.assistant_message() as message:
        for word in ["Hello", ", ", "world"]:
            message.delta(word)
    assert len(events.drain()) == 5

Serve an agent with :func:`agui_app`, run it in tests with :func:`run_agent_sync`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agui_replay._facades import claim
from agui_replay.server._cancel import CancellationToken
from agui_replay.server._context import RunContext, run_input
from agui_replay.server._driver import Agent, run_agent, run_agent_sync
from agui_replay.server._handles import MessageHandle, ReasoningHandle, ToolCallHandle
from agui_replay.server._outcome import Interrupt, Interrupted
from agui_replay.server._predictive import PendingConfirmation, PredictState, StateFromArgument
from agui_replay.server._run_ids import MessageId

if TYPE_CHECKING:
    from agui_replay.server._asgi import AguiEndpoint, agui_app

__all__ = [
    "Agent",
    "AguiEndpoint",
    "CancellationToken",
    "Interrupt",
    "Interrupted",
    "MessageHandle",
    "MessageId",
    "PendingConfirmation",
    "PredictState",
    "ReasoningHandle",
    "RunContext",
    "StateFromArgument",
    "ToolCallHandle",
    "agui_app",
    "run_agent",
    "run_agent_sync",
    "run_input",
]


def __getattr__(name: str) -> Any:
    # The HTTP endpoint needs starlette (the `server` extra); the rest of the toolkit does not.
    if name in ("agui_app", "AguiEndpoint"):
        from agui_replay.server import _asgi as asgi

        value = getattr(asgi, name)
        claim(__name__, [value])
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


claim(__name__, [globals()[name] for name in __all__ if name in globals()])
