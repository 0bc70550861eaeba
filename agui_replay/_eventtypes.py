"""The AG-UI event types, and the families of them that several units treat alike.

``agui_replay.events`` re-exports :data:`EVENT_TYPES`; the families are private. Used by
``events`` (which types exist), ``verify`` and ``client`` (chunks expand into START / CONTENT /
END), ``verify`` and ``normalize`` (whose ``delta`` is streamed text, not a patch) and
``server`` (which events may be sent beside an open message); and :func:`require_stream`, the
check that ``events``, ``verify`` and ``client`` make on an argument that must hold events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ag_ui.core import BaseEvent

from agui_replay.errors import InvalidArgumentError

__all__ = ["CHUNK_TYPES", "EVENT_TYPES", "TEXT_DELTA_TYPES", "UNORDERED_TYPES", "require_stream"]

EVENT_TYPES: frozenset[str] = frozenset(
    {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "RAW",
        "CUSTOM",
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_MESSAGE_CHUNK",
        "REASONING_END",
        "REASONING_ENCRYPTED_VALUE",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
    }
)
"""The 31 event types of AG-UI 1.0 (whichever ``ag-ui-protocol`` release is installed)."""

CHUNK_TYPES: frozenset[str] = frozenset(
    {"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"}
)
"""Self-contained events that a client expands into START / CONTENT / END."""

TEXT_DELTA_TYPES: frozenset[str] = frozenset(
    {
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_CHUNK",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CHUNK",
    }
)
"""Events whose ``delta`` is streamed text (message words, tool arguments), not a patch."""

UNORDERED_TYPES: frozenset[str] = frozenset(
    {
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "CUSTOM",
        "RAW",
        "REASONING_ENCRYPTED_VALUE",
    }
)
"""Events with no ordering rule beyond being inside a run: allowed beside any open block.

Every other type but the chunks is ordered: ``RUN_*``, ``STEP_*``, ``TEXT_MESSAGE_*``,
``TOOL_CALL_*``, ``REASONING_*`` (but the encrypted value) and ``SUBAGENT_*``.
"""


def require_stream(events: Any, what: str, hint: str = "") -> None:
    """Raise :class:`InvalidArgumentError` unless ``events`` is an iterable of events (a list, a
    generator...; a single event, a string or bytes are refused)."""
    if isinstance(events, (str, bytes, bytearray, Mapping, BaseEvent)) or not isinstance(
        events, Iterable
    ):
        raise InvalidArgumentError(
            f"{what} takes a list (or other iterable) of events, not {type(events).__name__}" + hint
        )
