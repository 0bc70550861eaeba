"""One order for what concurrent tool calls report, however their threads or tasks ran.

An assistant message that asks for several tools at once (its sibling tool calls: the calls
that share its ``parentMessageId``, or, without one, the calls started with no result between
them) lets a framework run them concurrently, and each reports when it is done. The protocol
lets those reports arrive in any order, so :func:`in_canonical_order` puts them in one order:
between the siblings' last ``TOOL_CALL_START``/``ARGS``/``END`` and their last
``TOOL_CALL_RESULT``, the events of each call are grouped in the order the calls started,
each call's events keeping their own order. An event is a call's when it is its
``TOOL_CALL_RESULT``, when exactly one sibling's id is among its values (a RAW
``on_tool_end`` carrying the tool message, a ``STATE_DELTA`` naming the call), or when its
``input`` is exactly one sibling's arguments (a RAW ``on_tool_start``). The other events of
that stretch (a state snapshot of all branches, step events) keep their places.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["in_canonical_order"]

_ANNOUNCING = frozenset({"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"})
_WATCHED = frozenset({"RUN_STARTED", "TOOL_CALL_RESULT", "TOOL_CALL_START"})


def in_canonical_order(events: list[Any]) -> list[Any]:
    """``events`` (wire dicts; event models are left where they are) with the reports of each
    set of sibling tool calls in their canonical order (see the module); the same list when
    nothing moves."""
    out = events
    for calls, first, last in _siblings(events):
        out = _ordered(out, calls, first, last)
    return out


def _siblings(events: list[Any]) -> Iterator[tuple[list[str], int, int]]:
    """Each set of two or more sibling calls that have results: their ids in the order they
    started, where the first started and where the last result is."""
    groups: dict[Any, list[str]] = {}
    starts: dict[Any, int] = {}
    answered: dict[Any, int] = {}
    results = runs = 0
    watched = _WATCHED
    for n, event in enumerate(events):
        if type(event) is not dict:  # an event model: left where it is
            continue
        kind = event.get("type")
        if kind not in watched:
            continue
        if kind == "RUN_STARTED":
            runs += 1
        elif kind == "TOOL_CALL_RESULT":
            results += 1
            answered[event.get("toolCallId")] = n
        elif isinstance(event.get("toolCallId"), str):
            parent = event.get("parentMessageId")
            key = (runs, parent) if isinstance(parent, str) else (runs, None, results)
            groups.setdefault(key, []).append(event["toolCallId"])
            starts.setdefault(key, n)
    for key, ids in groups.items():
        calls = list(dict.fromkeys(ids))
        ends = [answered[c] for c in calls if c in answered]
        if len(ends) > 1:
            yield calls, starts[key], max(ends)


def _ordered(events: list[Any], calls: list[str], first: int, last: int) -> list[Any]:
    rank = {call: n for n, call in enumerate(calls)}
    start = end = -1
    arguments: dict[str, str] = {}
    for n in range(first, last + 1):
        event = events[n]
        if not isinstance(event, dict) or event.get("toolCallId") not in rank:
            continue
        kind = event.get("type")
        if kind in _ANNOUNCING:
            start = n
            if kind == "TOOL_CALL_ARGS" and isinstance(event.get("delta"), str):
                call = event["toolCallId"]
                arguments[call] = arguments.get(call, "") + event["delta"]
        elif kind == "TOOL_CALL_RESULT":
            end = n
    if end <= start:
        return events
    inputs = _parsed(arguments)
    places: list[int] = []
    owners: list[int] = []
    for n in range(start + 1, end + 1):
        owner = _owner(events[n], rank, inputs)
        if owner is not None:
            places.append(n)
            owners.append(owner)
    if owners == sorted(owners):
        return events
    moved = sorted(zip(owners, places, strict=True))  # stable: each call's own order kept
    out = list(events)
    for place, (_, source) in zip(places, moved, strict=True):
        out[place] = events[source]
    return out


def _parsed(arguments: dict[str, str]) -> dict[str, Any]:
    """Each call's arguments as JSON; calls whose arguments another sibling shares are left
    out (an ``input`` equal to both names neither)."""
    parsed: dict[str, Any] = {}
    for call, text in arguments.items():
        try:
            parsed[call] = json.loads(text)
        except ValueError:
            continue
    seen = [json.dumps(v, sort_keys=True) for v in parsed.values()]
    return {c: v for (c, v), s in zip(parsed.items(), seen, strict=True) if seen.count(s) == 1}


def _owner(event: Any, rank: dict[str, int], inputs: dict[str, Any]) -> int | None:
    """The rank of the sibling call ``event`` is one of (``None``: none, or several)."""
    if not isinstance(event, dict):
        return None
    if event.get("type") == "TOOL_CALL_RESULT":
        return rank.get(event.get("toolCallId"))  # type: ignore[arg-type]
    if event.get("type") in _ANNOUNCING:
        return None
    named: set[str] = set()
    given: list[Any] = []
    _walk(event, rank, named, given)
    if len(named) == 1:
        return rank[named.pop()]
    if named:
        return None
    matching = {call for call, value in inputs.items() for found in given if found == value}
    return rank[matching.pop()] if len(matching) == 1 else None


def _walk(value: Any, rank: dict[str, int], named: set[str], given: list[Any]) -> None:
    """Collect the sibling ids among ``value``'s strings and the ``input`` values inside it."""
    if isinstance(value, str):
        if value in rank:
            named.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "input":
                given.append(item)
            _walk(item, rank, named, given)
    elif isinstance(value, list):
        for item in value:
            _walk(item, rank, named, given)
