"""Every exception this package raises, in one tree.

Catching :class:`AguiReplayError` catches every error of agui_replay; nothing raised on bad
input escapes as a bare ``KeyError`` or ``RecursionError`` from deep inside. Each class is
defined here, and ``agui_replay.errors`` is the path to document and import.

::

    AguiReplayError
    ├── InvalidArgumentError        a function called with an argument it cannot use
    ├── EventDecodeError            an event that does not parse (unknown type, wrong field)
    │   └── SchemaViolation             ... whose fields break the AG-UI schema (also below)
    ├── SSEDecodeError              an SSE frame that is not JSON, or too large
    ├── ProtocolViolation           an event that breaks an ordering rule (the verifier)
    │   └── SchemaViolation
    ├── PatchError                  a JSON Patch that cannot be applied, or a document too deep
    │   └── EventPatchError             a STATE_DELTA / ACTIVITY_DELTA that did not apply
    ├── StateDecodeError            a state that does not fit the state type, or is not JSON
    ├── InputFileError              a file that is not a cassette, SSE capture or JSON lines
    ├── CassetteError               a cassette that is missing, malformed or of another version
    │   └── MissingCassetteError        replay needs a cassette (or a run) never recorded
    ├── ProviderError               a fake or recorded model provider was used wrongly
    │   ├── ScriptExhaustedError        a request arrived after the script ran out
    │   └── RequestMismatchError        a replayed request differs from the recorded one
    ├── RecordModeError             a record mode other than none / once / rewrite / new
    ├── ReplayMismatchError         the agent's new stream differs from the recording
    ├── NetworkBlockedError         a connection off loopback while replaying
    ├── TargetError                 a run target that is not an agent, ASGI app or URL
    ├── UpstreamError               the real provider could not be reached, or failed
    ├── BlockOpenError              a message, reasoning or tool call opened while one is open
    ├── HandleClosedError           a handle used after it ended
    ├── UsageError                  the run driver called wrongly
    └── AgentError                  raised by agent code to end a run with RUN_ERROR

A cancelled run is not an error: it unwinds the agent's code with an internal exception that,
like ``asyncio.CancelledError``, derives from ``BaseException``, so an agent's ``except
Exception:`` cannot swallow it; the run driver catches it and ends the run.

Several classes also derive from the built-in exception a caller would expect
(``InvalidArgumentError`` is a ``ValueError``, ``NetworkBlockedError`` a
``ConnectionRefusedError``, ``ReplayMismatchError`` an ``AssertionError``). Errors that carry
an AG-UI error code (``SERIALIZATION``, ``AGENT_ERROR``...) expose it as ``.code``; the run
driver copies it into RUN_ERROR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agui_replay._text import short_repr

__all__ = [
    "AgentError",
    "AguiReplayError",
    "BlockOpenError",
    "CassetteError",
    "EventDecodeError",
    "EventPatchError",
    "HandleClosedError",
    "InputFileError",
    "InvalidArgumentError",
    "MissingCassetteError",
    "NetworkBlockedError",
    "PatchError",
    "ProtocolViolation",
    "ProviderError",
    "RecordModeError",
    "ReplayMismatchError",
    "RequestMismatchError",
    "SSEDecodeError",
    "SchemaViolation",
    "ScriptExhaustedError",
    "StateDecodeError",
    "TargetError",
    "UpstreamError",
    "UsageError",
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
    """``RunAgentInput.state`` does not fit the agent's state type, or a state object cannot be
    turned into JSON (AG-UI code SERIALIZATION)."""

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

    ``field`` is the first differing field as a JSON pointer (``/body/messages/0/content``),
    when known.
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


class SchemaViolation(ProtocolViolation, EventDecodeError):
    """An event whose fields do not fit the AG-UI 1.0 schema (rule ``schema``).

    Both a :class:`ProtocolViolation` (the reference client rejects the stream at this event)
    and an :class:`EventDecodeError` (the event is not a valid AG-UI event); ``field`` names the
    offending field, as a dotted path.
    """

    def __init__(self, *, event_type: str, index: int, field: str, detail: str, hint: str) -> None:
        ProtocolViolation.__init__(
            self, rule="schema", event_type=event_type, index=index, detail=detail, hint=hint
        )
        self.field = field
        self.line = None
        self.source = None


class EventPatchError(PatchError):
    """A STATE_DELTA or ACTIVITY_DELTA whose JSON Patch did not apply.

    Recorded on :attr:`Session.errors` rather than raised, as the reference client only warns;
    ``index`` is the event's position in the stream, ``event_type`` its type, and
    ``op_index`` / ``op`` / ``path`` come from the underlying :class:`PatchError`.
    """

    def __init__(self, message: str, *, event_type: str, index: int, cause: PatchError) -> None:
        super().__init__(message)
        self.event_type = event_type
        self.index = index
        self.op_index = cause.op_index
        self.op = cause.op
        self.path = cause.path
        self.cause = cause


class InputFileError(AguiReplayError, ValueError):
    """An input file that cannot be read as a cassette, an SSE capture or JSON lines."""

    code = "INPUT"

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(f"{path}{f':{line}' if line is not None else ''}: {message}")
        self.path = path
        self.line = line


class MissingCassetteError(CassetteError):
    """Replay needs a cassette (or a run in it) that was never recorded."""


class RecordModeError(AguiReplayError, ValueError):
    """A record mode that is not one of ``none``, ``once``, ``rewrite``, ``new``."""

    code = "CONFIG"


class ReplayMismatchError(AguiReplayError, AssertionError):
    """The agent's new stream (or its provider requests) differs from the recording."""

    code = "REPLAY_MISMATCH"


class NetworkBlockedError(AguiReplayError, ConnectionRefusedError):
    """A connection to a non-loopback address was attempted while replaying.

    It is a :class:`ConnectionRefusedError` so the agent's HTTP library treats it as a failed
    connection; the session also remembers it and fails the run even if the agent swallowed it.
    """

    code = "NETWORK_BLOCKED"


class TargetError(AguiReplayError):
    """The run target is not an agent, ASGI app or URL, or its endpoint refused the run."""

    code = "TARGET"


class UpstreamError(AguiReplayError):
    """A recorded run's upstream could not be reached, or answered with a 5xx or a 429.

    Nothing of such a run is stored (the cassette stays as it was) unless the session records
    errors on purpose (``record_errors=True``).
    """

    code = "UPSTREAM"


class HandleClosedError(AguiReplayError, RuntimeError):
    """A handle was used after ``end()`` (or after its ``with`` block closed it)."""

    code = "PROTOCOL_VIOLATION"


class UsageError(AguiReplayError, RuntimeError):
    """The driver was called wrongly (not an agent; an async agent inside a running loop)."""

    code = "AGENT_ERROR"
