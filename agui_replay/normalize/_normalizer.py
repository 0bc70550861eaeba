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

One raw id, one name. Some frameworks use one id in two roles: Agno's TOOL_CALL_RESULT carries
``messageId == toolCallId == "call_..."``. Named per kind, the two would become ``r-msg-2`` and
``r-call-1``, and an agent that stopped reusing the id would normalize to the same stream: the
link, and a change that breaks it, would be invisible to snapshots and replays. So an id keeps
the name of the role it first appeared in, in every other role: that tool result normalizes to
``messageId == toolCallId == "r-call-1"`` (in a stream whose first sight of the id is a message
id, both become ``r-msg-N``), and takes no number of its second kind: the answer after that
tool result is ``r-msg-2``, not ``r-msg-3``. The name says where the id was first seen, and the
equality says the two roles hold one id; a suffix or a combined name would say the same at more
length, and would read as an id of a third kind. Ids that differ always get different names, so
a tool result whose ``messageId`` is its own id now normalizes differently from one that reuses
the call's. This holds across the runs of one :class:`Normalizer` (a cassette), in run inputs,
and for the ids found in payloads, which take the protocol name of the value. It costs one
dictionary look-up per distinct id.

* ``run_id`` defaults to the ``runId`` of the RUN_STARTED that opens each run (``"run"`` when
  there is none); a stream of several runs numbers each run's new ids under its own run id,
  while an id seen in an earlier run keeps the name it got there.
* An id already of the form ``{run_id}-{kind}-{n}`` (for any run id of the stream) is kept,
  in whatever role it appears (a message id ``r-call-1`` too), and its number is never handed
  out to another id of its kind: normalizing twice equals normalizing once, and streams from
  this package's emitter pass through unchanged.
* ``threadId``, ``runId`` and ``parentRunId`` are kept (the test chooses them). Random-looking
  ids inside ``rawEvent``, ``CUSTOM``/``RAW`` payloads and state take the name the protocol
  fields gave them, or a placeholder (see :class:`Normalizer`); ``payload_ids=False`` leaves
  them alone.
* The reports of sibling tool calls that ran concurrently (their ``TOOL_CALL_RESULT`` s, and
  the RAW, state and other events that name one of them) are put in the order the calls
  started before anything is named (:mod:`agui_replay.normalize._order`): however the
  agent's threads or tasks ran, the normalized stream is the same.
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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from agui_replay._eventtypes import TEXT_DELTA_TYPES
from agui_replay._normalizing import (
    ID_KINDS,
    Rule,
    TimestampMode,
    as_rules,
    looks_random,
    replace_ids,
)
from agui_replay.errors import InvalidArgumentError
from agui_replay.events import EventLike, WireEvent, to_wire
from agui_replay.normalize._order import in_canonical_order
from agui_replay.normalize._rules import (
    Replace,
    apply_rules,
    blank,
    ignore,
    map_strings,
    replace,
)

__all__ = [
    "NormalizedStream",
    "Normalizer",
    "blank",
    "copy_json",
    "ignore",
    "normalize_events",
    "normalize_stream",
    "replace",
]

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
        # dict() is faster than a comprehension that tests each value.
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
    rules: Iterable[Rule] = (),
    payload_ids: bool = True,
) -> list[WireEvent]:
    """Normalized copies of ``events`` (see the module docstring).

    ``preserve`` lists ids never to rename (e.g. the ids of the input messages a test wrote);
    ``rules`` are user normalizers (:func:`replace`, :func:`ignore`, :func:`blank`, or any
    callable ``event -> event``) applied after the built-in ones; ``payload_ids=False`` leaves
    ids inside payloads (state, CUSTOM, RAW, ``rawEvent``...) as they are.
    """
    return normalize_stream(
        events,
        run_id=run_id,
        timestamps=timestamps,
        frozen_timestamp=frozen_timestamp,
        preserve=preserve,
        keep_raw=False,
        rules=rules,
        payload_ids=payload_ids,
    ).events


def normalize_stream(
    events: Iterable[EventLike],
    *,
    run_id: str | None = None,
    timestamps: TimestampMode = "remove",
    frozen_timestamp: int = 0,
    preserve: Collection[str] = (),
    keep_raw: bool = True,
    rules: Iterable[Rule] = (),
    payload_ids: bool = True,
) -> NormalizedStream:
    """Like :func:`normalize_events`, keeping the raw events and the id map."""
    normalizer = Normalizer(
        timestamps=timestamps,
        frozen_timestamp=frozen_timestamp,
        rules=rules,
        payload_ids=payload_ids,
    )
    raw: list[WireEvent] = []
    if keep_raw:
        events = [copy_json(e) if isinstance(e, dict) else to_wire(e) for e in events]
        raw = [copy_json(e) for e in events]
    out = normalizer.events(events, run_id=run_id, preserve=preserve)
    return NormalizedStream(events=out, raw=raw, id_map=normalizer.id_map)


class Normalizer:
    """Normalizes the runs of one cassette in order, with one id map for all of them.

    Feed each run's input (:meth:`input`) and then its events (:meth:`events`), run after run:
    an id that run 2 takes from run 1 (a tool call answered in the next run's input, a message
    id in a MESSAGES_SNAPSHOT) gets the name it got in run 1, whether the input was built from
    the raw events or from the normalized ones. Random ids found anywhere else in an event
    (state, CUSTOM and RAW values, ``rawEvent``, tool results, interrupt metadata) become
    ``<id-N>`` placeholders, numbered across the cassette in order of first appearance, with
    a recognised prefix kept (``call_<id-2>``, ``lc_run--<id-3>``); an id the protocol fields
    already named keeps that name there too. See :mod:`agui_replay._normalizing` for the shapes.
    """

    def __init__(
        self,
        *,
        timestamps: TimestampMode = "remove",
        frozen_timestamp: int = 0,
        rules: Iterable[Rule] = (),
        payload_ids: bool = True,
    ) -> None:
        if timestamps not in ("remove", "freeze", "keep"):
            raise InvalidArgumentError(
                f"timestamps must be 'remove', 'freeze' or 'keep', not {timestamps!r}"
            )
        self.timestamps: TimestampMode = timestamps
        self.frozen_timestamp = frozen_timestamp
        self.rules: tuple[Rule, ...] = as_rules(rules)
        self.payload_ids = payload_ids
        self._derived = _DerivedIds(set())
        self._renamer = _Renamer(self._derived, frozenset())
        self._generic: dict[str, str] = {}  # a random token -> its placeholder
        self._generic_count = 0

    @property
    def id_map(self) -> dict[str, dict[str, str]]:
        """Per kind, each original id renamed so far -> its new id (``"payload"``: the rest)."""
        mapping = {kind: dict(names) for kind, names in self._renamer.id_map.items()}
        if self._generic:
            mapping["payload"] = dict(self._generic)
        return mapping

    # -- inputs ---------------------------------------------------------------------------

    def input(self, wire_input: Mapping[str, Any]) -> dict[str, Any]:
        """A normalized copy of a run's wire input (camelCase ``RunAgentInput``).

        Ids the runs so far named keep their names; other random-looking ids get
        placeholders; ids a test wrote by hand (``"user-1"``) stay and are kept in the events.
        """
        data: dict[str, Any] = copy_json(dict(wire_input))
        messages = data.get("messages")
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict):
                continue
            self._input_id(message, "id", "msg")
            self._input_id(message, "toolCallId", "call")
            calls = message.get("toolCalls")
            for call in calls if isinstance(calls, list) else ():
                if isinstance(call, dict):
                    self._input_id(call, "id", "call")
        resume = data.get("resume")
        for entry in resume if isinstance(resume, list) else ():
            if isinstance(entry, dict):
                self._input_id(entry, "interruptId", "interrupt")
        if self.payload_ids:
            for key, value in data.items():
                if key not in _RUN_KEYS:
                    data[key] = self._payload(value)
        for rule in self.rules:
            if isinstance(rule, Replace):
                data = rule.apply(data)
        return data

    def _input_id(self, holder: dict[str, Any], key: str, kind: str) -> None:
        value = holder.get(key)
        if not isinstance(value, str):
            return
        renamer = self._renamer
        known = renamer.seen.get((kind, value))
        if known is None:
            known = renamer.by_value.get(value)
        if known is not None:
            holder[key] = known
        elif self._derived.parse(value) is not None:
            renamer.keep(kind, value)
        elif looks_random(value):
            holder[key] = self._placeholder(value, value)
        else:
            renamer.keep(kind, value)  # chosen by the test: the events keep it too

    # -- events ---------------------------------------------------------------------------

    def events(
        self,
        events: Iterable[EventLike],
        *,
        run_id: str | None = None,
        preserve: Collection[str] = (),
    ) -> list[WireEvent]:
        """Normalized copies of one run's events (or of a whole stream of runs)."""
        # One walk over the stream copies each event and notes where each id occurs; the
        # renaming then works per distinct id (a stream of 1,000 deltas names a handful), and
        # only ids whose name changes are written back. Order of first appearance, per event
        # in _rewrite's reading order, is the order the ids are named in.
        out: list[WireEvent] = []
        first: dict[tuple[str, str], str] = {}  # (kind, id) -> run id where first seen
        places: dict[tuple[str, str], list[WireEvent]] = {}  # (field, id) -> top-level holders
        nested: list[WireEvent] = []  # events with ids below the top level: rewritten whole
        prefix = run_id or _DEFAULT_RUN
        prefixes: set[str] = set()
        remove, freeze = self.timestamps == "remove", self.timestamps == "freeze"
        frozen_timestamp = self.frozen_timestamp
        present_in = _TOP_KEYS.intersection

        def collect(kind: str, value: str) -> str:
            if (kind, value) not in first:
                first[(kind, value)] = prefix
            return value

        for source in in_canonical_order(events if isinstance(events, list) else list(events)):
            event = copy_json(source) if isinstance(source, dict) else to_wire(source)
            out.append(event)
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

        derived = self._derived
        derived.add_prefixes(prefixes or {prefix})
        for _, value in first:
            derived.note(value)
        renamer = self._renamer
        for value in preserve:
            for kind in ID_KINDS:
                renamer.keep(kind, value)
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
        if self.payload_ids:
            for event in out:
                self._event_payload(event)
        if self.rules:
            out = [apply_rules(self.rules, event, index) for index, event in enumerate(out)]
        return out

    def _event_payload(self, event: WireEvent) -> None:
        streamed = event.get("type") in _STREAMED
        for key, value in event.items():
            if key in _NOT_PAYLOAD or value.__class__ in _PLAIN:
                continue
            if streamed and key == "delta":
                # Streamed text is the model's (or the agent's) own words: only ids that were
                # named already are renamed in it (a confirmation's arguments that name the call
                # they confirm); nothing new is taken for an id there.
                if isinstance(value, str):
                    event[key] = replace_ids(value, self._known)
                continue
            event[key] = self._payload(value)

    def _known(self, token: str, part: str) -> str:
        known = self._renamer.by_value.get(token)
        if known is None:
            known = self._generic.get(token)
        return token if known is None else known

    def _payload(self, value: Any) -> Any:
        return map_strings(value, self._string)

    def _string(self, value: str) -> str:
        if value in self._renamer.names:
            return value  # a protocol id this normalizer named (or kept) already
        known = self._renamer.by_value.get(value)
        if known is not None:
            return known
        return replace_ids(value, self._token)

    def _token(self, token: str, part: str) -> str:
        known = self._renamer.by_value.get(token)
        if known is not None:
            return known
        return self._placeholder(token, part)

    def _placeholder(self, token: str, part: str) -> str:
        name = self._generic.get(token)
        if name is None:
            self._generic_count += 1
            name = f"{token[: len(token) - len(part)]}<id-{self._generic_count}>"
            self._generic[token] = name
        return name


_RUN_KEYS = frozenset({"threadId", "runId", "parentRunId"})
_NOT_PAYLOAD = frozenset(
    {"type", "timestamp", "threadId", "runId", "parentRunId", "role", "name", "toolCallName"}
) | frozenset(("messageId", "parentMessageId", "toolCallId", "parentToolCallId"))
_STREAMED = TEXT_DELTA_TYPES
_PLAIN = frozenset({int, float, bool, type(None)})


class _DerivedIds:
    """Ids already of the form ``{run}-{kind}-{n}``, and the numbers they hold."""

    def __init__(self, prefixes: Collection[str]) -> None:
        self.prefixes: set[str] = set()
        self.pattern = re.compile(r"(?!)")
        self.taken: dict[tuple[str, str], set[int]] = {}
        # An id recurs in many events (every delta names its message): parse it once.
        self._parsed: dict[str, tuple[str, str, int] | None] = {}
        self.add_prefixes(prefixes)

    def add_prefixes(self, prefixes: Collection[str]) -> None:
        """Run ids whose derived ids (``{run}-{kind}-{n}``) are recognised from now on."""
        if not prefixes or self.prefixes.issuperset(prefixes):
            return
        self.prefixes.update(prefixes)
        ordered = sorted(self.prefixes, key=len, reverse=True)
        alternatives = "|".join(re.escape(p) for p in ordered)
        self.pattern = re.compile(rf"({alternatives})-({'|'.join(ID_KINDS)})-([1-9][0-9]*)")
        self._parsed = {}

    def parse(self, value: str) -> tuple[str, str, int] | None:
        try:
            return self._parsed[value]
        except KeyError:
            m = self.pattern.fullmatch(value)
            parsed = (m.group(1), m.group(2), int(m.group(3))) if m is not None else None
            self._parsed[value] = parsed
            return parsed

    def note(self, value: str) -> None:
        """Reserve the number a derived id holds, in its own kind, whatever role it is in."""
        parsed = self.parse(value)
        if parsed is not None:
            self.taken.setdefault((parsed[0], parsed[1]), set()).add(parsed[2])


class _Renamer:
    def __init__(self, derived: _DerivedIds, preserve: frozenset[str]) -> None:
        self.derived = derived
        self.preserve = preserve
        self.prefix = _DEFAULT_RUN
        self.id_map: dict[str, dict[str, str]] = {}
        self.counters: dict[tuple[str, str], int] = {}
        self.seen: dict[tuple[str, str], str] = {}  # (kind, id) -> its final name
        self.by_value: dict[str, str] = {}  # id -> its final name, whatever its kind
        self.names: set[str] = set()  # every final name handed out (or kept)

    def keep(self, kind: str, value: str) -> None:
        """Let ``value`` keep its name as a ``kind`` id (unless it was renamed before)."""
        renamed = self.by_value.get(value, value)
        if (kind, value) not in self.seen and renamed == value:
            self.seen[(kind, value)] = value
            self.by_value.setdefault(value, value)
            self.names.add(value)

    def rename(self, kind: str, value: str) -> str:
        known = self.seen.get((kind, value))
        if known is not None:
            return known
        # One raw id, one name: an id already named in another role (a tool result's
        # messageId equal to its toolCallId) takes that name here too, and an id already in
        # the normalized form is a fixed point in every role.
        shared = self.by_value.get(value)
        if shared is None and (value in self.preserve or self.derived.parse(value) is not None):
            shared = value
        if shared is not None:
            self.seen[(kind, value)] = shared
            self.by_value.setdefault(value, shared)
            self.names.add(shared)
            if shared != value:
                self.id_map.setdefault(kind, {})[value] = shared
            return shared
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
        self.by_value.setdefault(value, new)
        self.names.add(new)
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
