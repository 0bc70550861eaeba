"""Normalization puts what concurrent sibling tool calls report in one order: the order the
calls started, whatever order their threads or tasks finished in."""

from __future__ import annotations

import itertools
from typing import Any

from agui_replay.normalize import normalize_events
from agui_replay.snapshot import AGUISnapshotExtension


def _announced(*calls: tuple[str, str], parent: str | None = "m1") -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for call, args in calls:
        start = {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "get_weather"}
        if parent is not None:
            start["parentMessageId"] = parent
        events += [
            start,
            {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args},
            {"type": "TOOL_CALL_END", "toolCallId": call},
        ]
    return events


def _branch(call: str, city: str) -> list[dict[str, Any]]:
    """What one tool reports as it runs: a RAW start (naming its input only), a RAW end (naming
    the call), its result."""
    return [
        {"type": "RAW", "event": {"event": "on_tool_start", "data": {"input": {"city": city}}}},
        {"type": "RAW", "event": {"event": "on_tool_end", "data": {"tool_call_id": call}}},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"r-{call}",
            "toolCallId": call,
            "content": city,
            "role": "tool",
        },
    ]


def _stream(order: tuple[int, ...], *, parent: str | None = "m1") -> list[dict[str, Any]]:
    cities = ["Paris", "Oslo", "Rome"]
    calls = [(f"call_{c.lower()}", f'{{"city": "{c}"}}') for c in cities]
    branches = [_branch(call, city) for (call, _), city in zip(calls, cities, strict=True)]
    starts = [branches[n][0] for n in order]
    rest = [e for n in reversed(order) for e in branches[n][1:]]  # finished the other way
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        *_announced(*calls, parent=parent),
        {"type": "STEP_STARTED", "stepName": "tools"},
        *starts,
        *rest,
        {"type": "STEP_FINISHED", "stepName": "tools"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]


def test_every_finishing_order_normalizes_to_the_calls_order() -> None:
    seen = {repr(normalize_events(_stream(order))) for order in itertools.permutations(range(3))}
    assert len(seen) == 1
    events = normalize_events(_stream((2, 0, 1)))
    kinds = [(e["type"], e.get("toolCallId")) for e in events[11:-2]]
    assert kinds == [
        ("RAW", None), ("RAW", None), ("TOOL_CALL_RESULT", "r-call-1"),
        ("RAW", None), ("RAW", None), ("TOOL_CALL_RESULT", "r-call-2"),
        ("RAW", None), ("RAW", None), ("TOOL_CALL_RESULT", "r-call-3"),
    ]  # fmt: skip
    assert [e["event"]["data"] for e in events[11:14] if e["type"] == "RAW"] == [
        {"input": {"city": "Paris"}},
        {"tool_call_id": "r-call-1"},
    ]


def test_calls_without_a_parent_message_are_siblings_until_a_result() -> None:
    seen = {
        repr(normalize_events(_stream(order, parent=None)))
        for order in itertools.permutations(range(3))
    }
    assert len(seen) == 1


def test_events_naming_several_calls_keep_their_places() -> None:
    stream = _stream((0, 1, 2))
    at = next(n for n, e in enumerate(stream) if e["type"] == "TOOL_CALL_RESULT") + 1
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"calls": ["call_paris", "call_rome"]}}
    stream.insert(at, snapshot)
    normalized = normalize_events(stream)
    assert normalized[at]["type"] == "STATE_SNAPSHOT"
    results = [e["toolCallId"] for e in normalized if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["r-call-1", "r-call-2", "r-call-3"]


def test_a_stream_in_the_calls_order_is_left_as_it_is() -> None:
    events = [*_announced(("a", "{}"), ("b", "{}"))]
    events += [
        {"type": "TOOL_CALL_RESULT", "messageId": "ra", "toolCallId": "a", "content": "1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "rb", "toolCallId": "b", "content": "2"},
    ]
    assert [e["content"] for e in normalize_events(events)[-2:]] == ["1", "2"]
    swapped = events[:-2] + events[-2:][::-1]
    assert [e["content"] for e in normalize_events(swapped)[-2:]] == ["1", "2"]


def test_a_call_after_another_calls_result_is_not_its_sibling() -> None:
    events = [
        *_announced(("a", "{}"), parent=None),
        {"type": "TOOL_CALL_RESULT", "messageId": "ra", "toolCallId": "a", "content": "1"},
        *_announced(("b", "{}"), parent=None),
        {"type": "TOOL_CALL_RESULT", "messageId": "rb", "toolCallId": "b", "content": "2"},
    ]
    assert [e.get("content") for e in normalize_events(events)] == [
        None, None, None, "1", None, None, None, "2"
    ]  # fmt: skip


def test_snapshots_store_the_canonical_order() -> None:
    extension = AGUISnapshotExtension()
    texts = {extension.serialize(_stream(order)) for order in itertools.permutations(range(3))}
    assert len(texts) == 1
