"""agui_replay: test AG-UI agents offline, deterministically, with readable failures."""

from __future__ import annotations

from .errors import (
    AgentError,
    AguiReplayError,
    BlockOpenError,
    CassetteError,
    EventDecodeError,
    PatchError,
    ProtocolViolation,
    ProviderError,
    RequestMismatchError,
    ScriptExhaustedError,
    SSEDecodeError,
    StateDecodeError,
)
from .events import dump_json, parse_event, parse_events, to_wire

__version__ = "0.1.0.dev0"

__all__ = [
    "AgentError",
    "AguiReplayError",
    "BlockOpenError",
    "CassetteError",
    "EventDecodeError",
    "PatchError",
    "ProtocolViolation",
    "ProviderError",
    "RequestMismatchError",
    "SSEDecodeError",
    "ScriptExhaustedError",
    "StateDecodeError",
    "__version__",
    "dump_json",
    "parse_event",
    "parse_events",
    "to_wire",
]
