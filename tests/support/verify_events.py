"""Tiny AG-UI events (wire dicts) and helpers for the verifier's tests (test_verify*.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from agui_replay.errors import ProtocolViolation
from agui_replay.verify import Verifier

Event = dict[str, Any]


# -- tiny event builders (wire dicts) ------------------------------------------------------


def run_started(run: str = "r") -> Event:
    return {"type": "RUN_STARTED", "threadId": "t", "runId": run}


def run_finished(run: str = "r") -> Event:
    return {"type": "RUN_FINISHED", "threadId": "t", "runId": run}


def run_error(message: str = "boom") -> Event:
    return {"type": "RUN_ERROR", "message": message}


def step(kind: str, name: str) -> Event:
    return {"type": f"STEP_{kind}", "stepName": name}


def _event(family: str, kind: str, key: str, ident: str, extra: dict[str, Event]) -> Event:
    """``{family}_{kind}`` for ``ident`` under ``key``, with the members ``extra`` gives
    that kind."""
    return {"type": f"{family}_{kind}", key: ident, **extra.get(kind, {})}


def text(kind: str, mid: str, delta: str = "hi") -> Event:
    extra = {"CONTENT": {"delta": delta}, "START": {"role": "assistant"}}
    return _event("TEXT_MESSAGE", kind, "messageId", mid, extra)


def tool(kind: str, cid: str) -> Event:
    extra = {
        "START": {"toolCallName": "search"},
        "ARGS": {"delta": "{}"},
        "RESULT": {"messageId": f"{cid}-result", "content": "ok"},
    }
    return _event("TOOL_CALL", kind, "toolCallId", cid, extra)


def reasoning(kind: str, mid: str) -> Event:
    extra = {"MESSAGE_START": {"role": "reasoning"}, "MESSAGE_CONTENT": {"delta": "hmm"}}
    return _event("REASONING", kind, "messageId", mid, extra)


def subagent(kind: str, sid: str) -> Event:
    extra = {"STARTED": {"name": "helper"}, "ERROR": {"message": "failed"}}
    return _event("SUBAGENT", kind, "subagentRunId", sid, extra)


def chunk(kind: str, ident: str | None = None, delta: str | None = "x", **extra: Any) -> Event:
    event: Event = {"type": f"{kind}_CHUNK"}
    if ident is not None:
        event["toolCallId" if kind == "TOOL_CALL" else "messageId"] = ident
    if delta is not None:
        event["delta"] = delta
    event.update(extra)
    return event


STATE = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}
UNORDERED: list[Event] = [
    {"type": "STATE_SNAPSHOT", "snapshot": {}},
    STATE,
    {"type": "MESSAGES_SNAPSHOT", "messages": []},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "PLAN", "content": {}},
    {"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "PLAN", "patch": []},
    {"type": "CUSTOM", "name": "n", "value": 1},
    {"type": "RAW", "event": {}},
    {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "m",
        "encryptedValue": "e",
    },
]


def feed_all(verifier: Verifier, events: Iterable[Any]) -> None:
    for event in events:
        verifier.feed(event)


def violation(events: list[Any], mode: str = "strict", **kwargs: Any) -> ProtocolViolation:
    """The violation raised by the last event of `events` (all earlier ones must pass)."""
    verifier = Verifier(mode, **kwargs)  # type: ignore[arg-type]
    feed_all(verifier, events[:-1])
    with pytest.raises(ProtocolViolation) as info:
        verifier.feed(events[-1])
    return info.value
