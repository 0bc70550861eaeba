"""The AG-UI ordering rules (which event may follow which), checked one event at a time."""

from agui_replay._facades import claim, moved_errors
from agui_replay.verify._chunks import ChunkExpander, expand_chunks
from agui_replay.verify._verifier import Mode, Verifier, verify_stream

__all__ = [
    "ChunkExpander",
    "Mode",
    "Verifier",
    "expand_chunks",
    "verify_stream",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
__getattr__ = moved_errors(__name__, ["SchemaViolation"])
