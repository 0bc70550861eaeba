"""Normalization: make an event stream deterministic so two runs of one agent compare equal.

Frameworks mint random ids (UUIDs) for messages and tool calls and stamp events with the wall
clock. :func:`normalize_events` renames ids, in order of first appearance, to ids derived from
the run id, the way this package's own emitter names them, and removes (or freezes) timestamps:

=============  ==========================  ============================================
kind           renamed to                  found in
=============  ==========================  ============================================
``msg``        ``{run_id}-msg-{n}``        ``messageId`` of text, reasoning, activity
                                           and tool-result events, ``parentMessageId``,
                                           message ``id`` in MESSAGES_SNAPSHOT and in
                                           RUN_STARTED ``input.messages``, ``entityId``
                                           of a ``message`` REASONING_ENCRYPTED_VALUE
``call``       ``{run_id}-call-{n}``       ``toolCallId``, ``parentToolCallId``,
                                           ``toolCalls[].id`` and tool messages'
                                           ``toolCallId`` in snapshots, interrupts'
                                           ``toolCallId``, ``pendingToolCallIds``,
                                           ``entityId`` of a ``tool-call`` encrypted value
``interrupt``  ``{run_id}-interrupt-{n}``  ``outcome.interrupts[].id``, SUBAGENT_FINISHED
                                           ``outcome.interruptIds``, ``input.resume[]
                                           .interruptId``
``subagent``   ``{run_id}-subagent-{n}``   ``subagentRunId``, ``parentSubagentRunId``
=============  ==========================  ============================================

Reasoning and activity messages share the ``msg`` counter with text messages: they live in the
same message list on the client, and the emitter numbers them from one counter too.

* ``run_id`` defaults to the ``runId`` of the RUN_STARTED that opens each run (``"run"`` when
  there is none); a stream of several runs numbers each run's new ids under its own run id,
  while an id seen in an earlier run keeps the name it got there.
* An id already of the form ``{run_id}-{kind}-{n}`` (for any run id of the stream) is kept,
  and its number is never handed out to another id: normalizing twice equals normalizing once,
  and streams from this package's emitter pass through unchanged.
* ``threadId``, ``runId`` and ``parentRunId`` are kept (the test chooses them). Ids inside
  ``rawEvent``, ``CUSTOM``/``RAW`` payloads and state are not touched.
* ``timestamps="remove"`` (default) drops every event's ``timestamp``; ``"freeze"`` sets
  existing ones to ``frozen_timestamp``; ``"keep"`` leaves them.

The inputs are never modified; :func:`normalize_stream` also returns the raw events and the id
map for those who want the original values.

>>> events = [
...     {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1700000000000},
...     {"type": "TEXT_MESSAGE_START", "messageId": "3f1c9a", "role": "assistant"},
...     {"type": "TEXT_MESSAGE_END", "messageId": "3f1c9a"},
... ]
>>> [e.get("messageId") for e in normalize_events(events)]
[None, 'r-msg-1', 'r-msg-1']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agui_replay.errors import InvalidArgumentError

from .events import EventLike, WireEvent, to_wire

__all__ = [
    "ID_KINDS",
    "NormalizedStream",
    "TimestampMode",
    "copy_json",
    "normalize_events",
    "normalize_stream",
]

ID_KINDS: tuple[str, ...] = ("msg", "call", "interrupt", "subagent")
"""The id namespaces, each with its own counter per run."""

TimestampMode: TypeAlias = Literal["remove", "freeze", "keep"]

_DEFAULT_RUN = "run"  # what the emitter uses for an empty run id

Rename: TypeAlias = Callable[[str, str], str]


@dataclass(frozen=True)
class NormalizedStream:
    """The result of :func:`normalize_stream`."""

    events: list[WireEvent]
    """The normalized events (new dicts)."""
    raw: list[WireEvent]
    """The events as given, copied (ids and timestamps as the framework produced them)."""
    id_map: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per kind (``"msg"``, ``"call"``...), each original id that was renamed -> its new id."""

    def original_id(self, new_id: str) -> str:
        """The id a normalized id stands for (itself when it was not renamed)."""
        for mapping in self.id_map.values():
            for old, new in mapping.items():
                if new == new_id:
                    return old
        return new_id


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts and lists rebuilt; scalars shared)."""
    if isinstance(value, dict):
        # Most events hold only scalars: checking the value types in C and copying with
        # dict() is several times faster than a comprehension that tests each value.
        if _SCALARS.issuperset(map(type, value.values())):
            return dict(value)
        return {k: copy_json(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if _SCALARS.issuperset(map(type, value)):
            return list(value)
        return [copy_json(v) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def normalize_events(
    events: Iterable[EventLike],
    *,
    run_id: str | None = None,
    timestamps: TimestampMode = "remove",
    frozen_timestamp: int = 0,
    preserve: Collection[str] = (),
) -> list[WireEvent]:
    """Normalized copies of ``events`` (see the module docstring).

    ``preserve`` lists ids never to rename (e.g. the ids of the input messages a test wrote).
    """
    return normalize_stream(
        events,
        run_id=run_id,
        timestamps=timestamps,
        frozen_timestamp=frozen_timestamp,
        preserve=preserve,
        keep_raw=False,
    ).events


def normalize_stream(
    events: Iterable[EventLike],
    *,
    run_id: str | None = None,
    timestamps: TimestampMode = "remove",
    frozen_timestamp: int = 0,
    preserve: Collection[str] = (),
    keep_raw: bool = True,
) -> NormalizedStream:
    """Like :func:`normalize_events`, keeping the raw events and the id map."""
    if timestamps not in ("remove", "freeze", "keep"):
        raise InvalidArgumentError(
            f"timestamps must be 'remove', 'freeze' or 'keep', not {timestamps!r}"
        )
    # One walk over the stream copies each event and notes where each id occurs; the renaming
    # then works per distinct id (a stream of 1,000 deltas names a handful), and only ids
    # whose name changes are written back. Order of first appearance, per event in _rewrite's
    # reading order, is the order the ids are named in.
    out: list[WireEvent] = []
    raw: list[WireEvent] = []
    first: dict[tuple[str, str], str] = {}  # (kind, id) -> run id where first seen
    places: dict[tuple[str, str], list[WireEvent]] = {}  # (field, id) -> top-level holders
    nested: list[WireEvent] = []  # events with ids below the top level: rewritten whole
    prefix = run_id or _DEFAULT_RUN
    prefixes: set[str] = set()
    remove, freeze = timestamps == "remove", timestamps == "freeze"
    present_in = _TOP_KEYS.intersection

    def collect(kind: str, value: str) -> str:
        if (kind, value) not in first:
            first[(kind, value)] = prefix
        return value

    for source in events:
        event = copy_json(source) if isinstance(source, dict) else to_wire(source)
        out.append(event)
        if keep_raw:
            raw.append(copy_json(event))
        kind = event.get("type")
        if run_id is None and kind == "RUN_STARTED":
            found = event.get("runId")
            prefix = found if isinstance(found, str) and found else _DEFAULT_RUN
        prefixes.add(prefix)
        if kind in _NESTED:
            nested.append(event)
            _rewrite(event, collect)
        else:
            present = present_in(event)
            for key in present if len(present) < 2 else _in_order(present):
                value = event[key]
                if value.__class__ is str:
                    holders = places.get((key, value))
                    if holders is None:
                        places[(key, value)] = [event]
                        if (_TOP_KIND[key], value) not in first:
                            first[(_TOP_KIND[key], value)] = prefix
                    else:
                        holders.append(event)
        if remove:
            event.pop("timestamp", None)
        elif freeze and "timestamp" in event:
            event["timestamp"] = frozen_timestamp

    derived = _DerivedIds(prefixes or {prefix})
    for kind, value in first:
        derived.note(kind, value)
    renamer = _Renamer(derived, frozenset(preserve))
    names: dict[tuple[str, str], str] = {}
    for ident, where in first.items():
        renamer.prefix = where
        names[ident] = renamer.rename(*ident)
    for (key, value), holders in places.items():
        new = names[(_TOP_KIND[key], value)]
        if new != value:
            for event in holders:
                event[key] = new
    for event in nested:
        _rewrite(event, lambda kind, value: names[(kind, value)])
    return NormalizedStream(events=out, raw=raw, id_map=renamer.id_map)


class _DerivedIds:
    """Ids already of the form ``{run}-{kind}-{n}``, and the numbers they hold."""

    def __init__(self, prefixes: Collection[str]) -> None:
        alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
        self.pattern = re.compile(rf"({alternatives})-({'|'.join(ID_KINDS)})-([1-9][0-9]*)")
        self.taken: dict[tuple[str, str], set[int]] = {}
        # An id recurs in many events (every delta names its message): parse it once.
        self._parsed: dict[str, tuple[str, str, int] | None] = {}

    def parse(self, value: str) -> tuple[str, str, int] | None:
        try:
            return self._parsed[value]
        except KeyError:
            m = self.pattern.fullmatch(value)
            parsed = (m.group(1), m.group(2), int(m.group(3))) if m is not None else None
            self._parsed[value] = parsed
            return parsed

    def match(self, kind: str, value: str) -> bool:
        parsed = self.parse(value)
        return parsed is not None and parsed[1] == kind

    def note(self, kind: str, value: str) -> str:
        parsed = self.parse(value)
        if parsed is not None and parsed[1] == kind:
            self.taken.setdefault((parsed[0], kind), set()).add(parsed[2])
        return value


class _Renamer:
    def __init__(self, derived: _DerivedIds, preserve: frozenset[str]) -> None:
        self.derived = derived
        self.preserve = preserve
        self.prefix = _DEFAULT_RUN
        self.id_map: dict[str, dict[str, str]] = {}
        self.counters: dict[tuple[str, str], int] = {}
        self.seen: dict[tuple[str, str], str] = {}  # (kind, id) -> its final name

    def rename(self, kind: str, value: str) -> str:
        known = self.seen.get((kind, value))
        if known is not None:
            return known
        if value in self.preserve or self.derived.match(kind, value):
            self.seen[(kind, value)] = value
            return value
        mapping = self.id_map.setdefault(kind, {})
        key = (self.prefix, kind)
        taken = self.derived.taken.get(key, set())
        n = self.counters.get(key, 0) + 1
        while n in taken:
            n += 1
        self.counters[key] = n
        new = f"{self.prefix}-{kind}-{n}"
        mapping[value] = new
        self.seen[(kind, value)] = new
        return new


def _field(obj: Any, key: str, kind: str, rename: Rename) -> None:
    if isinstance(obj, dict):
        value = obj.get(key)
        if isinstance(value, str):
            obj[key] = rename(kind, value)


def _list(obj: Any, key: str, kind: str, rename: Rename) -> None:
    if isinstance(obj, dict) and isinstance(obj.get(key), list):
        obj[key] = [rename(kind, v) if isinstance(v, str) else v for v in obj[key]]


_TOP_FIELDS: tuple[tuple[str, str], ...] = (
    ("messageId", "msg"),
    ("parentMessageId", "msg"),
    ("toolCallId", "call"),
    ("parentToolCallId", "call"),
    ("subagentRunId", "subagent"),
    ("parentSubagentRunId", "subagent"),
)


_TOP_KIND: dict[str, str] = dict(_TOP_FIELDS)
_TOP_KEYS = frozenset(_TOP_KIND)


def _in_order(keys: Collection[str]) -> list[str]:
    return [key for key, _ in _TOP_FIELDS if key in keys]


_NESTED = frozenset(
    {
        "REASONING_ENCRYPTED_VALUE",
        "MESSAGES_SNAPSHOT",
        "RUN_STARTED",
        "RUN_FINISHED",
        "SUBAGENT_FINISHED",
    }
)


def _message(message: Any, rename: Rename) -> None:
    _field(message, "id", "msg", rename)
    _field(message, "toolCallId", "call", rename)
    _field(message, "subagentRunId", "subagent", rename)
    calls = message.get("toolCalls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        _field(call, "id", "call", rename)


def _outcome(outcome: Any, rename: Rename) -> None:
    if not isinstance(outcome, dict):
        return
    interrupts = outcome.get("interrupts")
    for interrupt in interrupts if isinstance(interrupts, list) else ():
        _field(interrupt, "id", "interrupt", rename)
        _field(interrupt, "toolCallId", "call", rename)
        _field(interrupt, "subagentRunId", "subagent", rename)
    _list(outcome, "pendingToolCallIds", "call", rename)
    _list(outcome, "interruptIds", "interrupt", rename)


def _rewrite(event: WireEvent, rename: Rename) -> None:
    """Apply ``rename(kind, id)`` to every id of ``event``, in place, in reading order."""
    for key, id_kind in _TOP_FIELDS:
        value = event.get(key)
        if value.__class__ is str:
            event[key] = rename(id_kind, value)
    kind = event.get("type")
    if kind not in _NESTED:
        return
    if kind == "REASONING_ENCRYPTED_VALUE":
        subtype = event.get("subtype")
        entity_kind = {"tool-call": "call", "message": "msg"}.get(
            subtype if isinstance(subtype, str) else "", ""
        )
        if entity_kind:
            _field(event, "entityId", entity_kind, rename)
    elif kind == "MESSAGES_SNAPSHOT":
        messages = event.get("messages")
        for message in messages if isinstance(messages, list) else ():
            _message(message, rename)
    elif kind == "RUN_STARTED":
        run_input = event.get("input")
        if isinstance(run_input, dict):
            messages = run_input.get("messages")
            for message in messages if isinstance(messages, list) else ():
                _message(message, rename)
            resume = run_input.get("resume")
            for entry in resume if isinstance(resume, list) else ():
                _field(entry, "interruptId", "interrupt", rename)
    elif kind in ("RUN_FINISHED", "SUBAGENT_FINISHED"):
        _outcome(event.get("outcome"), rename)
