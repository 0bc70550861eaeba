"""The wire layer: AG-UI events as ``ag_ui.core`` models and as wire dicts.

Everything else in the package works on *wire dicts* (camelCase keys, optional fields left
out), because that is what a stream, a cassette and the reference client hold. This module turns
models into wire dicts and back, and names the event types AG-UI has (:data:`EVENT_TYPES`).

>>> to_wire(parse_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}))
{'type': 'TEXT_MESSAGE_CONTENT', 'messageId': 'm', 'delta': 'hi'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from ag_ui.core import BaseEvent, Event, EventType
from pydantic import TypeAdapter, ValidationError

from agui_replay._compat import LEGACY_PROTOCOL, LIBRARY_EVENT_TYPES, WireEventModel, dump
from agui_replay._eventtypes import EVENT_TYPES, require_stream
from agui_replay._limits import JSONLimitError, loads_json
from agui_replay.errors import EventDecodeError

__all__ = [
    "EVENT_TYPES",
    "EventLike",
    "WireEvent",
    "event_type",
    "parse_event",
    "parse_events",
    "to_wire",
]

WireEvent: TypeAlias = dict[str, Any]
"""An event as it travels: a JSON object with camelCase keys."""

EventLike: TypeAlias = "Mapping[str, Any] | BaseEvent"
"""What the public functions accept: a wire dict or an ``ag_ui.core`` event model."""

_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def event_type(event: EventLike) -> str:
    """The ``type`` of a wire dict or model, as a plain string (``""`` when it has none)."""
    if isinstance(event, BaseEvent):
        model_kind = event.type
        return model_kind.value if isinstance(model_kind, EventType) else str(model_kind)
    kind = event.get("type") if isinstance(event, Mapping) else None
    return kind if isinstance(kind, str) else ""


def parse_event(
    data: EventLike | str | bytes,
    *,
    index: int | None = None,
    line: int | None = None,
    source: str | None = None,
) -> BaseEvent:
    """Validate one event into its ``ag_ui.core`` model.

    Raises :class:`EventDecodeError` that names the position, the claimed type and the field.
    """
    if isinstance(data, BaseEvent):
        return data
    where: dict[str, Any] = {"index": index, "line": line, "source": source}
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = loads_json(data)
        except JSONLimitError as exc:
            raise EventDecodeError(f"not valid JSON ({exc})", **where) from None
    if not isinstance(data, Mapping):
        raise EventDecodeError(
            f"an event must be a JSON object, got {type(data).__name__}", **where
        )
    kind = data.get("type")
    if not isinstance(kind, str):
        raise EventDecodeError(
            'the event has no "type" string; every AG-UI event names its type, '
            'e.g. {"type": "RUN_STARTED", ...}',
            field="type",
            **where,
        )
    if kind not in EVENT_TYPES:
        hint = ""
        if kind.startswith("THINKING_"):
            hint = " (THINKING_* events left the protocol in 1.0: use REASONING_*)"
        raise EventDecodeError(
            f"unknown event type {kind!r}{hint}", event_type=kind, field="type", **where
        )
    if kind not in LIBRARY_EVENT_TYPES:  # a 1.0 type that ag-ui-protocol 0.1.x has no model for
        return WireEventModel.model_validate(dict(data))
    try:
        model = _EVENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        if LEGACY_PROTOCOL and _cancelled_outcome(data):
            return WireEventModel.model_validate(dict(data))
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"][1:]]
        field = ".".join(loc) or None
        raise EventDecodeError(
            f"{kind}: field {field or '(event)'!s}: {first['msg']}",
            event_type=kind,
            field=field,
            **where,
        ) from None
    assert isinstance(model, BaseEvent)
    return model


def _cancelled_outcome(data: Mapping[str, Any]) -> bool:
    outcome = data.get("outcome")
    return (
        data.get("type") == "RUN_FINISHED"
        and isinstance(outcome, Mapping)
        and outcome.get("type") == "cancelled"
        and set(outcome) == {"type"}
    )


def parse_events(
    events: Iterable[EventLike | str | bytes], *, source: str | None = None
) -> list[BaseEvent]:
    """Validate a whole stream; errors name the index of the first bad event."""
    require_stream(events, "parse_events", "; for one event use parse_event")
    return [parse_event(e, index=i, source=source) for i, e in enumerate(events)]


def to_wire(event: EventLike) -> WireEvent:
    """The wire dict of an event: a model is dumped camelCase; a mapping is copied as it is."""
    if isinstance(event, BaseEvent):
        return dump(event)
    if not isinstance(event, Mapping):
        raise EventDecodeError(
            f"an event is a JSON object (a mapping) or an ag_ui.core event, not "
            f"{type(event).__name__}"
        )
    return dict(event)
