"""agui_replay: test AG-UI agents offline, deterministically, with readable failures.

The top level holds the pieces most tests touch; each submodule documents the rest:
``agui_replay.server`` (the emitter toolkit), ``agui_replay.providers`` (fake model providers),
``agui_replay.recording`` (record modes, replay outside pytest), ``agui_replay.snapshot``
(syrupy) and ``agui_replay.strategies`` (hypothesis). Importing this package imports none of
pytest, hypothesis, starlette or the HTTP clients, and none of its own submodules: each name
below is imported on first use (``from agui_replay import Session`` works as usual), so the
pytest plugin, loaded in every pytest run, costs nothing until a test uses it.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from .assertions import (
        assert_event_types,
        assert_final_state,
        assert_messages,
        assert_valid_stream,
        event_types,
        message_text,
    )
    from .cassette import Cassette, CassetteRun, load_cassette, save_cassette
    from .client import EventPatchError, Session, apply_events
    from .errors import (
        AgentError,
        AguiReplayError,
        BlockOpenError,
        CassetteError,
        EventDecodeError,
        InvalidArgumentError,
        PatchError,
        ProtocolViolation,
        ProviderError,
        RequestMismatchError,
        ScriptExhaustedError,
        SSEDecodeError,
        StateDecodeError,
    )
    from .events import (
        EventLike,
        WireEvent,
        dump_json,
        event_type,
        parse_event,
        parse_events,
        to_wire,
    )
    from .normalize import normalize_events
    from .patch import apply_patch, diff, json_equal
    from .sse import SSEDecoder, decode_sse, encode_sse
    from .state import (
        Delta,
        Snapshot,
        StateManager,
        StatePublish,
        Unchanged,
        decode_state,
        encode_state,
    )
    from .verify import ChunkExpander, Verifier, verify_stream

__version__ = "0.1.0.dev0"

__all__ = [
    "AgentError",
    "AguiReplayError",
    "BlockOpenError",
    "Cassette",
    "CassetteError",
    "CassetteRun",
    "ChunkExpander",
    "Delta",
    "EventDecodeError",
    "EventLike",
    "EventPatchError",
    "InvalidArgumentError",
    "PatchError",
    "ProtocolViolation",
    "ProviderError",
    "RequestMismatchError",
    "SSEDecodeError",
    "SSEDecoder",
    "ScriptExhaustedError",
    "Session",
    "Snapshot",
    "StateDecodeError",
    "StateManager",
    "StatePublish",
    "Unchanged",
    "Verifier",
    "WireEvent",
    "__version__",
    "apply_events",
    "apply_patch",
    "assert_event_types",
    "assert_final_state",
    "assert_messages",
    "assert_valid_stream",
    "decode_sse",
    "decode_state",
    "diff",
    "dump_json",
    "encode_sse",
    "encode_state",
    "event_type",
    "event_types",
    "json_equal",
    "load_cassette",
    "message_text",
    "normalize_events",
    "parse_event",
    "parse_events",
    "save_cassette",
    "to_wire",
    "verify_stream",
]

# Where each lazy name lives; must match the TYPE_CHECKING imports above (a test checks).
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "assertions": (
        "assert_event_types",
        "assert_final_state",
        "assert_messages",
        "assert_valid_stream",
        "event_types",
        "message_text",
    ),
    "cassette": ("Cassette", "CassetteRun", "load_cassette", "save_cassette"),
    "client": ("EventPatchError", "Session", "apply_events"),
    "errors": (
        "AgentError",
        "AguiReplayError",
        "BlockOpenError",
        "CassetteError",
        "EventDecodeError",
        "InvalidArgumentError",
        "PatchError",
        "ProtocolViolation",
        "ProviderError",
        "RequestMismatchError",
        "ScriptExhaustedError",
        "SSEDecodeError",
        "StateDecodeError",
    ),
    "events": (
        "EventLike",
        "WireEvent",
        "dump_json",
        "event_type",
        "parse_event",
        "parse_events",
        "to_wire",
    ),
    "normalize": ("normalize_events",),
    "patch": ("apply_patch", "diff", "json_equal"),
    "sse": ("SSEDecoder", "decode_sse", "encode_sse"),
    "state": (
        "Delta",
        "Snapshot",
        "StateManager",
        "StatePublish",
        "Unchanged",
        "decode_state",
        "encode_state",
    ),
    "verify": ("ChunkExpander", "Verifier", "verify_stream"),
}
_LAZY = {name: module for module, names in _SUBMODULES.items() for name in names}


def __getattr__(name: str) -> object:
    # PEP 562: runs only for names not yet in the module dict; the first use imports the
    # submodule (client/assertions/cassette pull in ag_ui.core, ~0.4 s of pydantic models).
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
