"""The AG-UI ordering rules (which event may follow which), checked one event at a time."""

from agui_replay._lazy import claim
from agui_replay.verify._verifier import (
    CHUNK_PASSTHROUGH_TYPES,
    ChunkExpander,
    Mode,
    SchemaViolation,
    Verifier,
    expand_chunks,
    verify_stream,
)

__all__ = [
    "CHUNK_PASSTHROUGH_TYPES",
    "ChunkExpander",
    "Mode",
    "SchemaViolation",
    "Verifier",
    "expand_chunks",
    "verify_stream",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
