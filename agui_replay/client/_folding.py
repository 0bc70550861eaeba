"""The client-side view of a stream: fold AG-UI events into state, messages and interrupts.

:class:`Session` applies events the way the reference TypeScript client (``defaultApplyEvents``
in ``@ag-ui/client`` 1.0) does, so a test can assert on what a real front end would show:

>>> session = apply_events([
...     {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
...     {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
...     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
...     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo"},
...     {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
...     {"type": "STATE_SNAPSHOT", "snapshot": {"count": 1}},
...     {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/count", "value": 2}]},
...     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
... ])
>>> session.messages
[{'id': 'm1', 'role': 'assistant', 'content': 'Hello'}]
>>> session.state
{'count': 2}

Messages are wire-shaped dicts (camelCase), exactly as the reference client holds them.
Events are verified in ``client`` mode first (see :mod:`agui_replay.verify`); an event that
breaks an ordering rule raises :class:`~agui_replay.errors.ProtocolViolation` and is not applied.
Problems the reference client only logs (a STATE_DELTA that does not apply, an id nobody opened
when verification is off) are kept in :attr:`Session.errors` and :attr:`Session.warnings`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

import orjson
from ag_ui.core import BaseEvent

from agui_replay._eventtypes import CHUNK_TYPES, require_stream
from agui_replay._limits import (
    MAX_JSON_DEPTH,
    depth_within,
    dumps_within_json_depth,
    finite_throughout,
)
from agui_replay._text import short_repr
from agui_replay.client._messages import ABSENT, MessageList
from agui_replay.errors import (
    AguiReplayError,
    EventDecodeError,
    EventPatchError,
    InvalidArgumentError,
    PatchError,
)
from agui_replay.events import EVENT_TYPES, EventLike, parse_event, to_wire
from agui_replay.patch import apply_patch, apply_patch_in_place
from agui_replay.state import encode_state
from agui_replay.verify import ChunkExpander, Mode, Verifier

__all__ = ["EventPatchError", "Session", "apply_events"]

# The metadata key under which the reference client reads which activity types a
# MESSAGES_SNAPSHOT speaks for (activity-history.ts in @ag-ui/client).
_ACTIVITY_HISTORY_KEY = "@ag-ui/client"


class _NotJSON(ValueError):
    """A value an event carries that is no JSON value (too deep, NaN); the applier names the
    event."""


_TOO_DEEP = f"is nested deeper than MAX_JSON_DEPTH={MAX_JSON_DEPTH} arrays/objects"
_NOT_FINITE = "holds NaN or infinity, which JSON cannot represent (write null or a string)"


def _json_copy(value: Any) -> Any:
    """An independent copy of a JSON value, through orjson (faster than deepcopy) when it fits.

    Raises :class:`_NotJSON` for a value nested deeper than ``MAX_JSON_DEPTH`` or holding NaN
    or infinity (orjson would write those as null: silently changed data).
    """
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON(_NOT_FINITE)
        return value
    try:
        encoded = dumps_within_json_depth(value)
    except (TypeError, orjson.JSONEncodeError):
        # Non-string keys, >64-bit integers, or nesting deeper than the limit.
        if not depth_within(value, MAX_JSON_DEPTH):
            raise _NotJSON(_TOO_DEEP) from None
        if not finite_throughout(value):
            raise _NotJSON(_NOT_FINITE) from None
        try:
            return copy.deepcopy(value)
        except Exception as exc:  # an object that is no JSON value and cannot be copied
            raise _NotJSON(f"is not a JSON value ({type(exc).__name__}: {exc})") from None
    out = orjson.loads(encoded)
    # A NaN comes back as null; Python == tells (tuples and subclasses too, then walked).
    if b"null" in encoded and out != value and not finite_throughout(value):
        raise _NotJSON(_NOT_FINITE)
    return out


def _plain(value: Any) -> Any:
    """An ``ag_ui.core`` message model as its wire dict; a dict is copied."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, mode="json", exclude_none=True)
    return _json_copy(value)


def _r(value: Any) -> str:
    """``repr`` for a warning: ids are strings, but unverified events may carry anything."""
    return short_repr(value, 200)


def _initial_messages(messages: Any) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise InvalidArgumentError(
            f"Session(messages=...) takes a list of messages, not {type(messages).__name__}"
        )
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) and not callable(getattr(message, "model_dump", None)):
            raise InvalidArgumentError(
                f"Session(messages=...): message #{i} is of type {type(message).__name__}; a "
                'message is a wire dict ({"id": ..., "role": ..., ...}) or an ag_ui.core message'
            )
        try:
            out.append(_plain(message))
        except _NotJSON as exc:
            raise InvalidArgumentError(f"Session(messages=...): message #{i} {exc}") from None
    return out


def _merge_metadata(target: dict[str, Any] | None, event: Mapping[str, Any]) -> None:
    """Fold an event's metadata into a message or tool call, key by key, last write winning."""
    incoming = event.get("metadata")
    if target is None or incoming is None:
        return
    existing = target.get("metadata")
    merged = dict(existing) if isinstance(existing, dict) else {}
    if isinstance(incoming, Mapping):
        merged.update(_json_copy(dict(incoming)))
    target["metadata"] = merged


def _without_null_subagent(item: Any) -> Any:
    """The reference client treats ``subagentRunId: null`` as absent and never stores it."""
    if isinstance(item, dict) and "subagentRunId" in item and item["subagentRunId"] is None:
        item = dict(item)
        del item["subagentRunId"]
    return item


class _Pending:
    """Streamed text not yet joined into its message (or tool-call arguments).

    Appending to a string held in a dict copies it every time, so 100,000 deltas into one
    message would be quadratic; the parts are kept here and joined once, when read.
    """

    __slots__ = ("key", "parts", "target")

    def __init__(self, target: dict[str, Any], key: str) -> None:
        self.target = target
        self.key = key
        self.parts: list[str] = []

    def flush(self) -> None:
        base = self.target.get(self.key)
        if not isinstance(base, str):
            base = ""
        self.target[self.key] = base + "".join(self.parts)
        self.parts = []


class Session:
    """Folds an AG-UI event stream into ``state``, ``messages`` and ``pending_interrupts``.

    ``state`` and ``messages`` give the starting point (what the client sent in
    ``RunAgentInput``); both are copied. ``verify`` checks every event against the ordering rules
    in ``mode`` (``"client"``: what the reference client accepts; ``"strict"``: the stricter rules
    of the server verifier) before it is applied. Events may be wire dicts or ``ag_ui.core``
    models, chunk events included.

    The attributes are live views: read them, do not mutate them.
    """

    def __init__(
        self,
        *,
        state: Any = None,
        messages: Iterable[Any] | None = None,
        verify: bool = True,
        mode: Mode = "client",
    ) -> None:
        # The reference agent starts from `initialState ?? {}`.
        try:
            self._state: Any = {} if state is None else _json_copy(encode_state(state))
        except _NotJSON as exc:
            raise InvalidArgumentError(f"Session(state=...): the state {exc}") from None
        # Ids of state containers deltas may change in place; None: all (nothing handed out).
        self._owned: set[int] | None = None
        self._store = MessageList(_initial_messages(messages))
        self._pending: dict[int, _Pending] = {}
        self._verifier: Verifier | None = Verifier(mode) if verify else None
        self._strict = mode == "strict"
        # The verifier expands chunks itself; this one serves only when verification is off.
        self._expander = ChunkExpander(track_starts=False)
        self._count = 0
        self._run_tool_calls: dict[str, None] = {}
        self._answered: set[str] = set()

        self.pending_interrupts: list[dict[str, Any]] = []
        """The interrupts of the last RUN_FINISHED if its outcome is ``interrupt`` (wire dicts).
        As in the reference client only RUN_FINISHED changes them, not RUN_STARTED."""
        self.pending_tool_call_ids: list[str] = []
        """After RUN_FINISHED: the tool calls the run started but did not answer (or the ids its
        success outcome named), i.e. the calls a client must execute."""
        self.errors: list[AguiReplayError] = []
        """Failures recorded without raising, e.g. an :class:`EventPatchError` per failed delta."""
        self.warnings: list[str] = []
        """What the reference client would ``console.warn`` about (unknown ids and the like)."""
        self.needs_resync = False
        """True after a STATE_DELTA failed to apply, until the next STATE_SNAPSHOT."""
        self.run_id: str | None = None
        self.thread_id: str | None = None
        self.run_error: dict[str, Any] | None = None
        """The RUN_ERROR event that ended the current run, if one did."""
        self.result: Any = None
        """The ``result`` of the last RUN_FINISHED."""

    # -- public views ---------------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The current state (a new object after every snapshot or delta, never mutated)."""
        # Handed out: the next deltas copy what they change (once) instead of writing in place.
        self._owned = set()
        return self._state

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the reference client holds it: a list of wire-shaped dicts."""
        self._flush_all()
        return self._store.as_list()

    @property
    def events_applied(self) -> int:
        """How many events were fed, refused ones included (the next event's index)."""
        return self._count

    def message(self, message_id: str) -> dict[str, Any] | None:
        """The first message with this id, or ``None``."""
        self._flush_all()
        return self._store.find(message_id)

    # -- feeding --------------------------------------------------------------------------

    def apply(self, event: EventLike) -> None:
        """Verify (unless disabled) and apply one event.

        Raises :class:`~agui_replay.errors.ProtocolViolation` when the event breaks an ordering
        rule, :class:`~agui_replay.errors.EventDecodeError` when it is not a valid event.
        """
        index = self._count
        wire: Mapping[str, Any]
        if type(event) is dict:
            wire = event
        elif isinstance(event, BaseEvent):
            wire = to_wire(event)
        elif isinstance(event, Mapping):
            wire = event
        else:
            raise EventDecodeError(
                f"an event must be a JSON object or an ag_ui.core event, "
                f"got {type(event).__name__}",
                index=index,
            )
        # A refused event still takes its index, as in the verifier.
        self._count = index + 1
        verifier = self._verifier
        if verifier is not None:
            expanded = verifier.feed_expanded(wire)
            if not expanded and verifier.warnings:
                # An unknown event type, dropped (client mode), as the reference client does.
                self.warnings.extend(verifier.warnings)
                verifier.warnings.clear()
                return
        else:
            kind = wire.get("type")
            if not self._strict and (type(kind) is not str or kind not in EVENT_TYPES):
                self.warnings.append(
                    f"{kind if type(kind) is str else 'event'} #{index}: unknown event type; "
                    "the reference client drops it"
                )
                return
            expanded = self._expander.feed(wire)
        if len(expanded) == 1:
            # The usual case, inlined: one event, a handler for its type.
            kind = wire.get("type")
            handler = _HANDLERS.get(kind) if type(kind) is str else None
            if handler is not None:
                try:
                    handler(self, wire, index)
                except (KeyError, TypeError, AttributeError) as exc:
                    _malformed(wire, index, exc)
                except _NotJSON as exc:
                    _not_json(wire, index, exc)
                return
        for item in expanded:
            self._apply_one(item, index)

    def apply_all(self, events: Iterable[EventLike]) -> Session:
        """Apply every event in order; returns the session for chaining."""
        require_stream(events, "apply_all")
        apply = self.apply
        for event in events:
            apply(event)
        return self

    def finish(self) -> Session:
        """Declare the stream over: close chunk streams left open and run end-of-stream checks.

        In ``strict`` mode a stream without RUN_FINISHED / RUN_ERROR raises
        :class:`~agui_replay.errors.ProtocolViolation` here.
        """
        if self._verifier is not None:
            # Its expander's pending END changes nothing a session holds: text is joined on read.
            self._verifier.finish()
        else:
            for item in self._expander.close():
                self._apply_one(item, self._count)
        return self

    # -- application ----------------------------------------------------------------------

    def _apply_one(self, event: Mapping[str, Any], index: int) -> None:
        kind = event.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            if isinstance(kind, str) and kind in CHUNK_TYPES:
                raise EventDecodeError(
                    f"{kind} reached the applier unexpanded", index=index, event_type=str(kind)
                )
            # parse_event explains what is wrong with the type (unknown, THINKING_*, missing).
            parse_event(event, index=index)
            return
        try:
            handler(self, event, index)
        except (KeyError, TypeError, AttributeError) as exc:
            _malformed(event, index, exc)
        except _NotJSON as exc:
            _not_json(event, index, exc)

    def _warn(self, index: int, kind: str, text: str) -> None:
        self.warnings.append(f"{kind} #{index}: {text}")

    def _flush_all(self) -> None:
        if self._pending:
            for pending in self._pending.values():
                pending.flush()
            self._pending.clear()

    def _flush(self, target: dict[str, Any]) -> None:
        pending = self._pending.pop(id(target), None)
        if pending is not None:
            pending.flush()

    def _append_text(self, target: dict[str, Any], key: str, delta: Any) -> None:
        if delta.__class__ is not str:
            raise TypeError(f"delta must be a string, got {type(delta).__name__}")
        pending = self._pending.get(id(target))
        if pending is None:
            pending = self._pending[id(target)] = _Pending(target, key)
        pending.parts.append(delta)

    def _push(self, message: dict[str, Any]) -> None:
        self._store.append(message)

    def _ignore(self, event: Mapping[str, Any], index: int, target: dict[str, Any] | None) -> None:
        what = "no message" if target is None else "an activity message"
        self._warn(index, str(event["type"]), f"{what} with id {_r(event['messageId'])}; ignored")

    # text messages

    def _text_start(self, event: Mapping[str, Any], index: int) -> None:
        role = event.get("role") or "assistant"
        self._start_message(event, index, role, ("name", "subagentRunId"))

    def _start_message(
        self, event: Mapping[str, Any], index: int, role: str, optional: tuple[str, ...]
    ) -> None:
        """Open (or, for a known id, re-open) a text or reasoning message, as the reference."""
        mid = event["messageId"]
        target = self._store.find(mid)
        if target is not None and target.get("role") == "activity":
            self._warn(index, str(event["type"]), f"message {_r(mid)} is an activity message")
            return
        if target is None:
            target = {"id": mid, "role": role, "content": ""}
            for key in optional:
                if event.get(key) is not None:
                    target[key] = event[key]
            self._push(target)
        _merge_metadata(target, event)

    def _content(self, event: Mapping[str, Any], index: int) -> None:
        mid = event["messageId"]
        delta = event["delta"]
        target = self._store.find(mid)
        if target is None or target.get("role") == "activity":
            self._ignore(event, index, target)
            return
        self._append_text(target, "content", delta)
        if "metadata" in event:
            _merge_metadata(target, event)

    def _message_end(self, event: Mapping[str, Any], index: int) -> None:
        mid = event["messageId"]
        target = self._store.find(mid)
        if target is None or target.get("role") == "activity":
            self._ignore(event, index, target)
            return
        self._flush(target)
        _merge_metadata(target, event)

    # tool calls

    def _tool_start(self, event: Mapping[str, Any], index: int) -> None:
        call_id = event["toolCallId"]
        name = event["toolCallName"]
        parent_id = event.get("parentMessageId")
        self._run_tool_calls[call_id] = None
        found = self._store.call(call_id)
        if found is not None:
            # Idempotent, as in the reference: a replayed START updates rather than duplicates.
            call = found[1]
            function = call.get("function")
            if isinstance(function, dict) and function.get("name") != name:
                self._warn(
                    index, "TOOL_CALL_START", f"tool call {_r(call_id)} renamed to {_r(name)}"
                )
                function["name"] = name
            _merge_metadata(call, event)
            return
        existing = self._store.find(parent_id) if parent_id else None
        if existing is not None and existing.get("role") == "assistant":
            owner = existing
        else:
            if existing is not None:
                self._warn(
                    index,
                    "TOOL_CALL_START",
                    f"parentMessageId {_r(parent_id)} is a {_r(existing.get('role'))} message, "
                    f"not assistant; the call gets its own message {_r(call_id)}",
                )
            # Named after the parent it names, unless that id is taken (or there is none).
            owner_id = parent_id if parent_id and existing is None else call_id
            owner = {"id": owner_id, "role": "assistant", "toolCalls": []}
            self._push(owner)
            if event.get("subagentRunId") is not None:
                owner.setdefault("subagentRunId", event["subagentRunId"])
        tool_calls = owner.get("toolCalls")
        if not isinstance(tool_calls, list):
            tool_calls = owner["toolCalls"] = []
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        tool_calls.append(call)
        self._store.add_call(call_id, owner, call)
        _merge_metadata(call, event)

    def _tool_args(self, event: Mapping[str, Any], index: int) -> None:
        call_id = event["toolCallId"]
        delta = event["delta"]
        found = self._store.call(call_id)
        if found is None:
            self._warn(index, "TOOL_CALL_ARGS", f"no tool call with id {_r(call_id)}; ignored")
            return
        call = found[1]
        self._append_text(call["function"], "arguments", delta)
        if "metadata" in event:
            _merge_metadata(call, event)

    def _tool_end(self, event: Mapping[str, Any], index: int) -> None:
        call_id = event["toolCallId"]
        found = self._store.call(call_id)
        if found is None:
            self._warn(index, "TOOL_CALL_END", f"no tool call with id {_r(call_id)}; ignored")
            return
        function = found[1].get("function")
        if isinstance(function, dict):
            self._flush(function)
        _merge_metadata(found[1], event)

    def _owner_of(self, call_id: str) -> dict[str, Any] | None:
        """The first *assistant* message holding the call (TOOL_CALL_RESULT's rule)."""
        found = self._store.call(call_id)
        if found is None:
            return None
        if found[0].get("role") == "assistant":
            return found[0]
        for message in self._store.as_list():
            calls = message.get("toolCalls")
            if (
                message.get("role") == "assistant"
                and isinstance(calls, list)
                and any(isinstance(c, dict) and c.get("id") == call_id for c in calls)
            ):
                return message
        return None

    def _tool_result(self, event: Mapping[str, Any], index: int) -> None:
        call_id = event["toolCallId"]
        mid = event["messageId"]
        self._answered.add(call_id)
        message: dict[str, Any] = {
            "id": mid,
            "toolCallId": call_id,
            "role": event.get("role") or "tool",
            "content": _json_copy(event["content"]),
        }
        if event.get("subagentRunId") is not None:
            message["subagentRunId"] = event["subagentRunId"]
        _merge_metadata(message, event)
        owner = self._owner_of(call_id)
        if owner is None:
            self._push(message)
            return
        # Results of parallel calls keep their order behind the same assistant message.
        self._store.insert_after_tools(owner, message)

    # state

    def _state_snapshot(self, event: Mapping[str, Any], index: int) -> None:
        self._state = _json_copy(event["snapshot"])
        self._owned = None
        self.needs_resync = False

    def _state_delta(self, event: Mapping[str, Any], index: int) -> None:
        ops = event["delta"]
        try:
            # In place with an undo log: time proportional to the delta, and a delta that
            # fails leaves the state as it was.
            self._state = apply_patch_in_place(self._state, ops, owned=self._owned)
        except PatchError as exc:
            self.needs_resync = True
            self.errors.append(
                EventPatchError(
                    f"STATE_DELTA #{index} did not apply, the previous state is kept until the "
                    f"next STATE_SNAPSHOT: {exc}",
                    event_type="STATE_DELTA",
                    index=index,
                    cause=exc,
                )
            )

    # messages snapshot

    def _messages_snapshot(self, event: Mapping[str, Any], index: int) -> None:
        self._flush_all()
        incoming = [_without_null_subagent(m) for m in _json_copy(list(event["messages"]))]
        owned = _authoritative_activity_types(event)
        self._store.merge(incoming, ABSENT if owned is _ABSENT else owned)

    # reasoning

    def _reasoning_message_start(self, event: Mapping[str, Any], index: int) -> None:
        self._start_message(event, index, "reasoning", ("subagentRunId",))

    def _encrypted_value(self, event: Mapping[str, Any], index: int) -> None:
        entity = event["entityId"]
        value = event["encryptedValue"]
        if event["subtype"] == "tool-call":
            owner = self._owner_of(entity)
            if owner is not None:
                for call in owner.get("toolCalls") or ():
                    if isinstance(call, dict) and call.get("id") == entity:
                        call["encryptedValue"] = value
                        return
            self._warn(index, "REASONING_ENCRYPTED_VALUE", f"no tool call with id {_r(entity)}")
        else:
            message = self._store.find(entity)
            if message is not None and message.get("role") != "activity":
                message["encryptedValue"] = value
            else:
                self._warn(index, "REASONING_ENCRYPTED_VALUE", f"no message with id {_r(entity)}")

    # activity

    def _activity_snapshot(self, event: Mapping[str, Any], index: int) -> None:
        mid = event["messageId"]
        activity_type = event["activityType"]
        content = _json_copy(event["content"])
        subagent = event.get("subagentRunId")
        replace = event.get("replace")
        replace = True if replace is None else bool(replace)
        existing = self._store.find(mid)
        target: dict[str, Any] | None = None
        if existing is None:
            target = {"id": mid, "role": "activity", "activityType": activity_type}
            target["content"] = content
            if subagent is not None:
                target["subagentRunId"] = subagent
            self._push(target)
        elif existing.get("role") == "activity":
            target = existing
            if replace:
                # A replacing snapshot re-mints the activity: it takes the event's owner too.
                # The reference puts a new object in its place, so a message a snapshot left
                # in two places (one id named twice) keeps the old content in the other.
                target = dict(existing)
                target["activityType"] = activity_type
                target["content"] = content
                if subagent is None:
                    target.pop("subagentRunId", None)
                else:
                    target["subagentRunId"] = subagent
                self._store.replace(existing, target)
        elif replace:
            target = {"id": mid, "role": "activity", "activityType": activity_type}
            target["content"] = content
            if subagent is not None:
                target["subagentRunId"] = subagent
            self._flush(existing)
            self._store.replace(existing, target)
        _merge_metadata(target, event)

    def _activity_delta(self, event: Mapping[str, Any], index: int) -> None:
        mid = event["messageId"]
        existing = self._store.find(mid)
        if existing is None:
            return
        if existing.get("role") != "activity":
            self._warn(index, "ACTIVITY_DELTA", f"message {_r(mid)} is not an activity message")
            return
        _merge_metadata(existing, event)
        base = existing.get("content")
        try:
            content = apply_patch({} if base is None else base, event.get("patch") or [])
        except PatchError as exc:
            self.errors.append(
                EventPatchError(
                    f"ACTIVITY_DELTA #{index} for {_r(mid)} did not apply, content kept: {exc}",
                    event_type="ACTIVITY_DELTA",
                    index=index,
                    cause=exc,
                )
            )
            return
        existing["content"] = content
        existing["activityType"] = event["activityType"]

    # runs

    def _run_started(self, event: Mapping[str, Any], index: int) -> None:
        self.run_id = event.get("runId")
        self.thread_id = event.get("threadId")
        # pending_interrupts stays: the reference client sets it at RUN_FINISHED only.
        self.pending_tool_call_ids = []
        self.run_error = None
        self._run_tool_calls = {}
        self._answered = set()
        run_input = event.get("input")
        if isinstance(run_input, Mapping):
            for message in run_input.get("messages") or ():
                if isinstance(message, Mapping) and self._store.find(message.get("id")) is None:
                    self._push(_without_null_subagent(_json_copy(dict(message))))

    def _run_finished(self, event: Mapping[str, Any], index: int) -> None:
        outcome = event.get("outcome")
        outcome_type = outcome.get("type") if isinstance(outcome, Mapping) else None
        if outcome_type not in _OUTCOMES:
            # The reference client strips an outcome of a type it does not know: success.
            outcome, outcome_type = None, None
        self.result = _json_copy(event.get("result"))
        if outcome_type == "interrupt":
            assert isinstance(outcome, Mapping)
            self.pending_interrupts = [
                _without_null_subagent(i) for i in _json_copy(list(outcome["interrupts"]))
            ]
        else:
            self.pending_interrupts = []
        named = outcome.get("pendingToolCallIds") if isinstance(outcome, Mapping) else None
        if outcome_type in (None, "success") and named:
            self.pending_tool_call_ids = list(named)
        elif outcome_type in (None, "success"):
            self.pending_tool_call_ids = [
                c for c in self._run_tool_calls if c not in self._answered
            ]
        else:
            self.pending_tool_call_ids = []

    def _run_error(self, event: Mapping[str, Any], index: int) -> None:
        self.run_error = _json_copy(dict(event))

    def _nothing(self, event: Mapping[str, Any], index: int) -> None:
        """Steps, reasoning blocks, subagents, CUSTOM and RAW change no client state."""


_ABSENT: Any = object()
_OUTCOMES = frozenset({"success", "interrupt", "cancelled"})


def _malformed(event: Mapping[str, Any], index: int, exc: Exception) -> NoReturn:
    """Only malformed events get here; let the model say which field is wrong."""
    parse_event(event, index=index)
    raise EventDecodeError(
        f"{event.get('type')}: cannot be applied ({type(exc).__name__}: {exc})",
        index=index,
        event_type=str(event.get("type")),
    ) from None


def _not_json(event: Mapping[str, Any], index: int, exc: _NotJSON) -> NoReturn:
    kind = str(event.get("type"))
    raise EventDecodeError(
        f"{kind}: a value it carries {exc}; the event cannot be applied",
        index=index,
        event_type=kind,
    ) from None


def _authoritative_activity_types(event: Mapping[str, Any]) -> Any:
    """Which activity types a MESSAGES_SNAPSHOT declares complete (``activity-history.ts``).

    ``_ABSENT``: no declaration (infer from the snapshot); ``None``: all types; a list: those.
    """
    metadata = event.get("metadata")
    if not isinstance(metadata, Mapping) or _ACTIVITY_HISTORY_KEY not in metadata:
        return _ABSENT
    value = metadata[_ACTIVITY_HISTORY_KEY]
    if not isinstance(value, Mapping):
        return []
    if "authoritativeActivityTypes" not in value:
        return _ABSENT
    types = value["authoritativeActivityTypes"]
    if types is None:
        return None
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return types
    return []


_Handler = Callable[[Session, Mapping[str, Any], int], None]

_HANDLERS: dict[str, _Handler] = {
    "TEXT_MESSAGE_START": Session._text_start,
    "TEXT_MESSAGE_CONTENT": Session._content,
    "TEXT_MESSAGE_END": Session._message_end,
    "TOOL_CALL_START": Session._tool_start,
    "TOOL_CALL_ARGS": Session._tool_args,
    "TOOL_CALL_END": Session._tool_end,
    "TOOL_CALL_RESULT": Session._tool_result,
    "STATE_SNAPSHOT": Session._state_snapshot,
    "STATE_DELTA": Session._state_delta,
    "MESSAGES_SNAPSHOT": Session._messages_snapshot,
    "ACTIVITY_SNAPSHOT": Session._activity_snapshot,
    "ACTIVITY_DELTA": Session._activity_delta,
    "REASONING_MESSAGE_START": Session._reasoning_message_start,
    "REASONING_MESSAGE_CONTENT": Session._content,
    "REASONING_MESSAGE_END": Session._message_end,
    "REASONING_ENCRYPTED_VALUE": Session._encrypted_value,
    "RUN_STARTED": Session._run_started,
    "RUN_FINISHED": Session._run_finished,
    "RUN_ERROR": Session._run_error,
    "STEP_STARTED": Session._nothing,
    "STEP_FINISHED": Session._nothing,
    "REASONING_START": Session._nothing,
    "REASONING_END": Session._nothing,
    "SUBAGENT_STARTED": Session._nothing,
    "SUBAGENT_FINISHED": Session._nothing,
    "SUBAGENT_ERROR": Session._nothing,
    "CUSTOM": Session._nothing,
    "RAW": Session._nothing,
}


def apply_events(
    events: Iterable[EventLike],
    *,
    state: Any = None,
    messages: Iterable[Any] | None = None,
    verify: bool = True,
    mode: Mode = "client",
) -> Session:
    """Apply a whole stream to a new :class:`Session` and close it (see :meth:`Session.finish`).

    >>> apply_events([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    ...               {"type": "STATE_SNAPSHOT", "snapshot": [1]},
    ...               {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]).state
    [1]
    """
    session = Session(state=state, messages=messages, verify=verify, mode=mode)
    return session.apply_all(events).finish()
