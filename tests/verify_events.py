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


def text(kind: str, mid: str, delta: str = "hi") -> Event:
    event: Event = {"type": f"TEXT_MESSAGE_{kind}", "messageId": mid}
    if kind == "CONTENT":
        event["delta"] = delta
    if kind == "START":
        event["role"] = "assistant"
    return event


def tool(kind: str, cid: str) -> Event:
    event: Event = {"type": f"TOOL_CALL_{kind}", "toolCallId": cid}
    if kind == "START":
        event["toolCallName"] = "search"
    if kind == "ARGS":
        event["delta"] = "{}"
    if kind == "RESULT":
        event.update(messageId=f"{cid}-result", content="ok")
    return event


def reasoning(kind: str, mid: str) -> Event:
    event: Event = {"type": f"REASONING_{kind}", "messageId": mid}
    if kind == "MESSAGE_CONTENT":
        event["delta"] = "hmm"
    return event


def subagent(kind: str, sid: str) -> Event:
    event: Event = {"type": f"SUBAGENT_{kind}", "subagentRunId": sid}
    if kind == "STARTED":
        event["name"] = "helper"
    if kind == "ERROR":
        event["message"] = "failed"
    return event


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
