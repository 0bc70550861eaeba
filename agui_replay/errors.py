"""Every error this package raises, under one base class.

Catching :class:`AguiReplayError` catches all of them; nothing raised on bad input
escapes as a bare ``KeyError`` or ``RecursionError`` from deep inside.

::

    AguiReplayError
    ├── InvalidArgumentError    a function of this package called with an unusable argument
    ├── EventDecodeError        an event that does not parse (unknown type, wrong field)
    ├── SSEDecodeError          an SSE frame that is not JSON, or too large
    ├── ProtocolViolation       an event that breaks an ordering rule (verifier)
    ├── PatchError              a JSON Patch that cannot be applied, or a document too deep
    ├── StateDecodeError        RunAgentInput.state that does not fit the state type
    ├── BlockOpenError          a second message / reasoning / tool call opened while one is open
    ├── AgentError              raised by agent code to end a run with RUN_ERROR
    ├── ProviderError           a fake or recorded model provider was used wrongly
    │   ├── ScriptExhaustedError    a request arrived after the script ran out
    │   └── RequestMismatchError    a replayed request differs from the recorded one
    └── CassetteError           a cassette file that is missing, malformed or of another version

Errors that carry an AG-UI error code (``SERIALIZATION``, ``AGENT_ERROR``...) expose it as
``.code``; the run driver copies it into RUN_ERROR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agui_replay._limits import short_repr

__all__ = [
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
    "SSEDecodeError",
    "ScriptExhaustedError",
    "StateDecodeError",
]


class AguiReplayError(Exception):
    """Base class of every error raised by agui_replay."""

    code: str = "AGUI_REPLAY"


class InvalidArgumentError(AguiReplayError, ValueError):
    """A function of this package was called with an argument it cannot use (a bad mode, a
    size below its minimum, a value of the wrong kind); the message says what it accepts."""


class EventDecodeError(AguiReplayError, ValueError):
    """An event that is not a valid AG-UI 1.0 event.

    ``index`` is the event's position in its stream (or ``None``), ``line`` its line in a file
    (or ``None``), ``event_type`` the ``type`` it claimed and ``field`` the offending field.
    """

    code = "PROTOCOL"

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        line: int | None = None,
        event_type: str | None = None,
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if index is not None:
            where.append(f"event #{index}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)
        self.index = index
        self.line = line
        self.event_type = event_type
        self.field = field
        self.source = source


class SSEDecodeError(AguiReplayError, ValueError):
    """A server-sent-events frame that could not be decoded; ``offset`` is its byte offset."""

    code = "PROTOCOL"

    def __init__(self, message: str, *, offset: int, frame: bytes | None = None) -> None:
        super().__init__(f"SSE frame at byte {offset}: {message}")
        self.offset = offset
        self.frame = frame


class ProtocolViolation(AguiReplayError):
    """An event that breaks one of the AG-UI ordering rules.

    The message reads like
    ``TOOL_CALL_ARGS #5 breaks rule not-open: tool call "r-call-2" was never opened``;
    ``.hint`` says how to fix the stream or its emitter, e.g. ``emit TOOL_CALL_START for
    "r-call-2" before its arguments, or use the id of a call that is open`` (kept out of the
    message, which is pinned; ``""`` when the raiser has no advice).
    """

    code = "PROTOCOL_VIOLATION"

    def __init__(
        self,
        *,
        rule: str,
        event_type: str | None,
        index: int | None,
        detail: str,
        ids: Sequence[str] = (),
        hint: str = "",
    ) -> None:
        where = f"{event_type or 'end of stream'}" + (f" #{index}" if index is not None else "")
        super().__init__(f"{where} breaks rule {rule}: {detail}")
        self.rule = rule
        self.event_type = event_type
        self.index = index
        self.ids = tuple(ids)
        self.detail = detail
        self.hint = hint


class PatchError(AguiReplayError, ValueError):
    """A JSON Patch that cannot be applied (or diffed); the document is left untouched."""

    code = "PATCH"

    def __init__(
        self,
        message: str,
        *,
        op_index: int | None = None,
        op: Any = None,
        path: str | None = None,
    ) -> None:
        where = f"operation #{op_index}" if op_index is not None else ""
        if op_index is not None and isinstance(op, dict) and "op" in op:
            shown = short_repr(path if path is not None else op.get("path"), 200)
            where += f" ({short_repr(op.get('op')).strip(chr(39))} {shown})"
        super().__init__(f"{where}: {message}" if where else message)
        self.op_index = op_index
        self.op = op
        self.path = path


class StateDecodeError(AguiReplayError, ValueError):
    """``RunAgentInput.state`` does not fit the agent's state type (AG-UI code SERIALIZATION)."""

    code = "SERIALIZATION"


class BlockOpenError(AguiReplayError, RuntimeError):
    """A message, reasoning block or tool call was opened while another one is still open."""

    code = "PROTOCOL_VIOLATION"


class AgentError(AguiReplayError):
    """Raise from agent code to end the run with RUN_ERROR (default code ``AGENT_ERROR``)."""

    def __init__(self, message: str, *, code: str = "AGENT_ERROR") -> None:
        super().__init__(message)
        self.code = code


class ProviderError(AguiReplayError):
    """A fake or recorded model provider was used in a way its script does not allow."""

    code = "PROVIDER"


class ScriptExhaustedError(ProviderError):
    """A request arrived after every scripted (or recorded) turn was served."""


class RequestMismatchError(ProviderError):
    """A request made during replay differs from the one recorded at that position.

    ``field`` is the first differing field (``body.messages[0].content``), when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class CassetteError(AguiReplayError):
    """A cassette that is missing, malformed, or written by an unknown format version."""

    code = "CASSETTE"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = str(path) + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + message)
        self.path = path
        self.line = line
