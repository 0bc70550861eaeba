"""*_CHUNK expansion, as the reference client's ``transformChunks`` does it.

Chunks stream in *lanes*, one per owner: the parent agent and each subagent (``subagentRunId``)
may have one chunk message pending at a time. A chunk with an id joins the lane that holds that
id, or its own owner's lane; an id-less chunk continues its owner's lane (or, untagged, the one
lane with a pending message of its kind). An ordered event closes only its own owner's lane;
RUN_* and MESSAGES_SNAPSHOT close them all; RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE and
SUBAGENT_STARTED pass; SUBAGENT_FINISHED / SUBAGENT_ERROR close their subagent's lane.

:mod:`agui_replay.verify` re-exports :class:`ChunkExpander` and :func:`expand_chunks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ag_ui.core import BaseEvent

from agui_replay._eventtypes import CHUNK_TYPES
from agui_replay.errors import EventDecodeError, ProtocolViolation
from agui_replay.events import EventLike, WireEvent, to_wire

__all__ = ["ChunkExpander", "expand_chunks"]

CHUNK_PASSTHROUGH_TYPES: frozenset[str] = frozenset(
    {
        "RAW",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "REASONING_ENCRYPTED_VALUE",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
    }
)
"""Events that pass a pending chunk message without closing it (the reference client's list;
SUBAGENT_FINISHED / SUBAGENT_ERROR do close their own subagent's lane).

Every other event, STATE_* and CUSTOM included, ends the pending message of its owner first
(RUN_* and MESSAGES_SNAPSHOT end every owner's).
"""

_CLOSE_ALL = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})
_CLOSE_OWN_LANE = frozenset({"SUBAGENT_FINISHED", "SUBAGENT_ERROR"})

_CHUNK_KIND = {
    "TEXT_MESSAGE_CHUNK": "text",
    "TOOL_CALL_CHUNK": "tool",
    "REASONING_MESSAGE_CHUNK": "reasoning",
}
_KIND_ID = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
_KIND_START = {
    "text": "TEXT_MESSAGE_START",
    "tool": "TOOL_CALL_START",
    "reasoning": "REASONING_MESSAGE_START",
}
_KIND_CONTENT = {
    "text": "TEXT_MESSAGE_CONTENT",
    "tool": "TOOL_CALL_ARGS",
    "reasoning": "REASONING_MESSAGE_CONTENT",
}
_KIND_END = {
    "text": "TEXT_MESSAGE_END",
    "tool": "TOOL_CALL_END",
    "reasoning": "REASONING_MESSAGE_END",
}
_KIND_NAME = {"text": "text message", "tool": "tool call", "reasoning": "reasoning message"}
# The opener's fields a continuing chunk may repeat but not change.
_KIND_AGREE = {"text": ("role", "name"), "tool": ("toolCallName", "parentMessageId")}
_START_KIND = {v: k for k, v in _KIND_START.items()}
_END_KIND = {v: k for k, v in _KIND_END.items()}

ABSENT: Any = object()
UndoLog = list[tuple[Any, Any, Any]]

# A lane: (kind, id, the START event it opened with).
_Lane = tuple[str, str, WireEvent]


def wire_of(event: object, index: int) -> Mapping[str, Any]:
    if type(event) is dict:
        return event
    if isinstance(event, BaseEvent):
        return to_wire(event)
    if isinstance(event, Mapping):
        return event
    raise EventDecodeError(
        f"an event must be a JSON object (a dict) or an ag_ui.core event, "
        f"got {type(event).__name__}",
        index=index,
    )


def str_field(event: Mapping[str, Any], field: str, kind: str, index: int) -> str:
    value = event.get(field)
    if type(value) is not str:
        what = "has no" if value is None else f"has a {type(value).__name__} in"
        raise EventDecodeError(
            f'{kind} {what} "{field}"; it must be a string',
            index=index,
            event_type=kind,
            field=field,
        )
    return value


def restore(container: Any, key: Any, old: Any) -> None:
    if isinstance(container, dict):
        if old is ABSENT:
            container.pop(key, None)
        else:
            container[key] = old
    else:
        setattr(container, key, old)


def _owner_label(owner: str | None) -> str:
    return "the parent agent" if owner is None else f'subagent "{owner}"'


class ChunkExpander:
    """Turns *_CHUNK events into START / CONTENT (ARGS) / END, as the reference client does.

    A first chunk carries its id (tool chunks also ``toolCallName``) and implies a START;
    later chunks without an id continue it; a chunk with another id, or an event that closes
    its owner's lane (see the module text), ends it first. Other events come back unchanged
    (the same objects). :meth:`close` returns the END of every message still pending at the
    end of the stream (the reference client drops them; a normalized stream wants them).

    >>> x = ChunkExpander()
    >>> [e["type"] for e in x.feed({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "a"})]
    ['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT']
    >>> [e["type"] for e in x.feed({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})]
    ['TEXT_MESSAGE_END', 'RUN_FINISHED']

    Errors (``ProtocolViolation``): ``chunk-without-id``, ``chunk-without-name``,
    ``chunk-mismatch`` (a continuing chunk names another role, name, tool name, parent message
    or subagent than its opener), ``chunk-ambiguous`` (an untagged, id-less chunk while two
    owners have one pending), and ``chunk-after-start`` for a chunk on an id opened with an
    explicit START (ag-ui issue 161). After an error the expander is as before the bad event.
    """

    def __init__(self, *, track_starts: bool = True) -> None:
        # The Verifier keeps its own open ids and turns off this tracking to save the work.
        self._track = track_starts
        self._count = 0
        self._lanes: dict[str | None, _Lane] = {}
        self._explicit: dict[str, dict[str, int]] = {"text": {}, "tool": {}, "reasoning": {}}
        self._undo: tuple[Any, ...] = (None, None)

    @property
    def pending(self) -> tuple[str, str] | None:
        """``(kind, id)`` of the chunk message opened last and not closed yet (any owner)."""
        if not self._lanes:
            return None
        kind, ident, _ = next(reversed(self._lanes.values()))
        return (kind, ident)

    @property
    def lanes(self) -> Mapping[str | None, tuple[str, str]]:
        """Pending chunk messages by owner (``None``: the parent agent): ``(kind, id)``."""
        return {owner: (lane[0], lane[1]) for owner, lane in self._lanes.items()}

    def feed(self, event: EventLike) -> list[WireEvent]:
        """Expand one event; returns the wire events it stands for (possibly none)."""
        index = self._count
        wire = wire_of(event, index)
        kind = wire.get("type")
        out = self._expand(wire, kind if type(kind) is str else "", index)
        self._count = index + 1
        return out

    def close(self) -> list[WireEvent]:
        """End of stream: the END of every pending chunk message."""
        out = [self._end_event(lane) for lane in self._lanes.values()]
        self._lanes = {}
        return out

    @staticmethod
    def _end_event(lane: _Lane) -> WireEvent:
        kind, ident, start = lane
        end: WireEvent = {"type": _KIND_END[kind], _KIND_ID[kind]: ident}
        owner = start.get("subagentRunId")
        if owner is not None:
            end["subagentRunId"] = owner
        return end

    def _close_lane(self, owner: str | None, out: list[WireEvent]) -> None:
        lane = self._lanes.pop(owner, None)
        if lane is not None:
            out.append(self._end_event(lane))

    def _expand(self, event: Mapping[str, Any], kind: str, index: int) -> list[WireEvent]:
        if kind in CHUNK_TYPES:
            return self._chunk(event, kind, index)
        out: list[WireEvent] = []
        lanes = self._lanes
        self._undo = (lanes, None)
        if lanes and kind not in CHUNK_PASSTHROUGH_TYPES:
            self._lanes = dict(lanes)
            if kind in _CLOSE_ALL:
                out.extend(self.close())
            else:
                self._close_lane(event.get("subagentRunId"), out)
        elif lanes and kind in _CLOSE_OWN_LANE:
            owner = event.get("subagentRunId")
            if owner is not None and owner in lanes:
                self._lanes = dict(lanes)
                self._close_lane(owner, out)
        out.append(event)  # type: ignore[arg-type]  # a Mapping passes through as given
        if self._track:
            self._track_explicit(event, kind, index)
        return out

    def _track_explicit(self, event: Mapping[str, Any], kind: str, index: int) -> None:
        block = _START_KIND.get(kind)
        if block is not None:
            ident = event.get(_KIND_ID[block])
            if type(ident) is str:
                opened = self._explicit[block]
                self._undo = (self._undo[0], (opened, ident, opened.get(ident, ABSENT)))
                opened[ident] = index
            return
        block = _END_KIND.get(kind)
        if block is not None:
            ident = event.get(_KIND_ID[block])
            opened = self._explicit[block]
            if type(ident) is str and ident in opened:
                self._undo = (self._undo[0], (opened, ident, opened.pop(ident)))
            return
        if kind == "RUN_STARTED":
            self._undo = (self._undo[0], (self, "_explicit", self._explicit))
            self._explicit = {"text": {}, "tool": {}, "reasoning": {}}

    def _resolve_lane(
        self, block: str, ident: str | None, tag: str | None, kind: str, index: int
    ) -> str | None:
        """Which owner's lane a chunk belongs to (``resolveLane`` in the reference)."""
        lanes = self._lanes
        if ident is not None:
            for owner, (lane_kind, lane_id, _) in lanes.items():
                if lane_kind == block and lane_id == ident:
                    if tag is not None and tag != owner:
                        raise _mismatch(
                            kind, index, block, ident, "subagentRunId", tag, owner, owner_label=True
                        )
                    return owner
            return tag
        if tag is not None:
            return tag
        parent = lanes.get(None)
        if parent is not None and parent[0] == block:
            return None
        candidates = [owner for owner, lane in lanes.items() if lane[0] == block]
        if len(candidates) > 1:
            raise ProtocolViolation(
                rule="chunk-ambiguous",
                event_type=kind,
                index=index,
                detail=f"this {kind} carries neither {_KIND_ID[block]} nor subagentRunId, but "
                f"{len(candidates)} owners have a {_KIND_NAME[block]} pending "
                f"({', '.join(_owner_label(c) for c in candidates)})",
                hint=f"add subagentRunId (or {_KIND_ID[block]}) to this {kind} to say which "
                f"{_KIND_NAME[block]} it continues",
            )
        return candidates[0] if candidates else None

    def _chunk(self, event: Mapping[str, Any], kind: str, index: int) -> list[WireEvent]:
        block = _CHUNK_KIND[kind]
        id_field = _KIND_ID[block]
        ident = event.get(id_field)
        if ident is not None and type(ident) is not str:
            str_field(event, id_field, kind, index)
        delta = event.get("delta", ABSENT)
        if delta is not ABSENT and type(delta) is not str:
            # The reference client rejects `"delta": null` too, rather than reading it as absent.
            str_field(event, "delta", kind, index)
        tag = event.get("subagentRunId")
        lane_owner = self._resolve_lane(block, ident, tag, kind, index)
        lanes = self._lanes
        self._undo = (lanes, None)
        open_lane = lanes.get(lane_owner)
        out: list[WireEvent] = []
        if open_lane is not None and open_lane[0] == block and ident in (None, open_lane[1]):
            start = open_lane[2]
            for field in _KIND_AGREE.get(block, ()):
                incoming = event.get(field)
                if incoming is not None and incoming != start.get(field):
                    raise _mismatch(
                        kind, index, block, open_lane[1], field, incoming, start.get(field)
                    )
            ident = open_lane[1]
        else:
            start = self._open(event, kind, block, ident, tag, index)
            self._lanes = lanes = dict(lanes)
            self._close_lane(lane_owner, out)
            lanes[lane_owner] = (block, start[id_field], start)
            out.append(start)
            ident = start[id_field]
        raw = event.get("rawEvent")
        metadata = event.get("metadata")
        if delta is not ABSENT or raw is not None or (metadata is not None and not out):
            content: WireEvent = {
                "type": _KIND_CONTENT[block],
                id_field: ident,
                "delta": "" if delta is ABSENT else delta,
            }
            owner = tag if tag is not None else start.get("subagentRunId")
            if owner is not None:
                content["subagentRunId"] = owner
            if metadata is not None:
                content["metadata"] = metadata
            if raw is not None:
                content["rawEvent"] = raw
            out.append(content)
        return out

    def _open(
        self,
        event: Mapping[str, Any],
        kind: str,
        block: str,
        ident: str | None,
        tag: str | None,
        index: int,
    ) -> WireEvent:
        id_field = _KIND_ID[block]
        if ident is None:
            raise ProtocolViolation(
                rule="chunk-without-id",
                event_type=kind,
                index=index,
                detail=f"the first {kind} of a {_KIND_NAME[block]} must carry {id_field} "
                "(only the chunks that continue it may leave it out"
                + (f'; none is pending for subagent "{tag}"' if tag is not None else "")
                + ")",
                hint=f"add {id_field} to this {kind}, or send it straight after a chunk of "
                f"the {_KIND_NAME[block]} it continues"
                + (" (with the same subagentRunId)" if tag is not None else ""),
            )
        start: WireEvent = {"type": _KIND_START[block], id_field: ident}
        if block == "tool":
            name = event.get("toolCallName")
            if name is None:
                raise ProtocolViolation(
                    rule="chunk-without-name",
                    event_type=kind,
                    index=index,
                    ids=(ident,),
                    detail=f'the first TOOL_CALL_CHUNK of tool call "{ident}" must carry '
                    "toolCallName",
                    hint=f'add toolCallName to the first TOOL_CALL_CHUNK of tool call "{ident}"',
                )
            start["toolCallName"] = str_field(event, "toolCallName", kind, index)
            if event.get("parentMessageId") is not None:
                start["parentMessageId"] = event["parentMessageId"]
        elif block == "text":
            start["role"] = event.get("role") or "assistant"
            if event.get("name") is not None:
                start["name"] = event["name"]
        else:
            start["role"] = "reasoning"
        if tag is not None:
            start["subagentRunId"] = tag
        if event.get("metadata") is not None:
            start["metadata"] = event["metadata"]
        if self._track and ident in self._explicit[block]:
            raise chunk_after_start(kind, index, block, ident, self._explicit[block][ident])
        return start

    def _rollback(self) -> None:
        """Forget the last :meth:`_expand` (the verifier refused what it produced)."""
        lanes, change = self._undo
        if lanes is not None:
            self._lanes = lanes
        if change is not None:
            restore(*change)
        self._undo = (None, None)


def _mismatch(
    kind: str,
    index: int,
    block: str,
    ident: str,
    field: str,
    incoming: Any,
    established: Any,
    *,
    owner_label: bool = False,
) -> ProtocolViolation:
    if owner_label:
        opened = _owner_label(established)
    else:
        opened = "(absent)" if established is None else repr(established)
    return ProtocolViolation(
        rule="chunk-mismatch",
        event_type=kind,
        index=index,
        ids=(ident,),
        detail=f'this chunk continues {_KIND_NAME[block]} "{ident}" with {field} {incoming!r}, '
        f"but the open stream's {field} is {opened}",
        hint=f"drop {field} from this {kind} or give it the opener's value; to start another "
        f"{_KIND_NAME[block]}, give the chunk a new {_KIND_ID[block]}",
    )


def chunk_after_start(
    kind: str, index: int, block: str, ident: str, started: int
) -> ProtocolViolation:
    return ProtocolViolation(
        rule="chunk-after-start",
        event_type=kind,
        index=index,
        ids=(ident,),
        detail=f'{_KIND_NAME[block]} "{ident}" was opened by an explicit {_KIND_START[block]} '
        f"at #{started}; send its content with {_KIND_CONTENT[block]}, not {kind} "
        "(mixing the two forms on one id breaks the reference client: ag-ui issue 161)",
        hint=f"use either {_KIND_START[block]}/{_KIND_CONTENT[block].rsplit('_', 1)[1]}/END or "
        f'{kind} events for {_KIND_NAME[block]} "{ident}", not both (ag-ui issue 161)',
    )


def expand_chunks(events: Iterable[EventLike]) -> list[WireEvent]:
    """A whole stream with its chunks expanded (see :class:`ChunkExpander`)."""
    expander = ChunkExpander()
    out: list[WireEvent] = []
    for event in events:
        out.extend(expander.feed(event))
    out.extend(expander.close())
    return out


CHUNK_BLOCK = {"_messages": "text", "_tools": "tool", "_reasoning_messages": "reasoning"}
