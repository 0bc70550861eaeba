"""The client-side view of a stream: fold AG-UI events into state, messages and interrupts."""

from agui_replay._lazy import claim
from agui_replay.client._folding import (
    EventPatchError,
    Session,
    apply_events,
)

__all__ = [
    "EventPatchError",
    "Session",
    "apply_events",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
