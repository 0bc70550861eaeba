"""The client-side view of a stream: fold AG-UI events into state, messages and interrupts."""

from agui_replay._facades import claim, moved_errors
from agui_replay.client._folding import Session, apply_events

__all__ = [
    "Session",
    "apply_events",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
__getattr__ = moved_errors(__name__, ["EventPatchError"])
