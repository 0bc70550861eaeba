"""One-event corruptions of valid streams, each with the verdict the reference client gives.

Shared by tests/verify/test_subagent_properties.py (our verdicts against this table) and
tests/verify/test_reference_client.py (the table against @ag-ui/client itself, under Node).

``REFERENCE_RULES`` is the table: corruption kind -> the rule our client mode must raise at
the corrupted event (``None``: the reference accepts the stream). The rules are read from
@ag-ui/client 1.0 (verify/verify.ts, chunks/transform.ts, enforce/enforce.ts).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

Event = dict[str, Any]

REFERENCE_RULES: dict[str, str | None] = {
    # a closer / content / step end naming another subagent than its opener's
    "closer-owner": "subagent-mismatch",
    # a tool call tagged with another owner than its parent message's
    "tool-parent-owner": "subagent-mismatch",
    # SUBAGENT_STARTED again for an id that finished in this run
    "subagent-reused": "subagent-reused",
    # parentSubagentRunId naming nothing started in this run
    "unknown-parent-subagent": "unknown-subagent",
    # an id-less chunk tagged to a subagent with nothing pending
    "idless-tagged-chunk": "chunk-without-id",
    # `subagentRunId: null` on any event that has the field
    "null-subagent": "schema",
    # a field of the wrong type, or a required one missing
    "schema": "schema",
    # a continuing chunk with another role (text) or tool name (tool)
    "chunk-role": "chunk-mismatch",
    "chunk-tool-name": "chunk-mismatch",
    # an event type the protocol does not know: dropped with a warning
    "unknown-type": None,
}

CLOSERS = {
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
    "ACTIVITY_DELTA",
    "STEP_FINISHED",
}
NO_SUBAGENT_FIELD = {"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"}
SCHEMA_BREAKS: dict[str, list[tuple[str, Any]]] = {
    # type -> (field, new value; `...` removes the field)
    "TOOL_CALL_START": [("toolCallName", 7), ("toolCallId", ...)],
    "TEXT_MESSAGE_START": [("role", None), ("role", "robot"), ("name", 3)],
    "TEXT_MESSAGE_CONTENT": [("delta", 5)],
    "RUN_STARTED": [("runId", ...), ("threadId", 1)],
    "STATE_DELTA": [("delta", None), ("delta", {"op": "add"})],
    "STATE_SNAPSHOT": [("snapshot", ...)],
    "TOOL_CALL_RESULT": [("content", 7), ("messageId", ...)],
    "CUSTOM": [("name", ...)],
    "STEP_STARTED": [("stepName", None)],
    "ACTIVITY_SNAPSHOT": [("content", [1]), ("replace", "yes")],
    "SUBAGENT_STARTED": [("name", ...), ("description", None)],
    "SUBAGENT_ERROR": [("message", ...)],
    "SUBAGENT_FINISHED": [("subagentRunId", 5)],
    # (an outcome of an unknown type is stripped, and the event accepted: not a break)
    "RUN_FINISHED": [("outcome", {"type": "interrupt", "interrupts": []})],
}
WRONG = "s-wrong"


def _candidates(stream: list[Event], kind: str) -> list[int]:
    """Where a corruption of ``kind`` can be made in ``stream`` (indexes)."""
    found: list[int] = []
    known: set[str] = set()  # message ids the run has opened so far (owners are per run)
    for i, event in enumerate(stream):
        t = event["type"]
        if t == "RUN_STARTED":
            known = set()
        elif t in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK") and "messageId" in event:
            known.add(event["messageId"])
        if kind == "closer-owner":
            ok = t in CLOSERS and event.get("subagentRunId") != WRONG
        elif kind == "tool-parent-owner":
            # (a parent not opened yet has no owner to disagree with)
            ok = (
                t in ("TOOL_CALL_START", "TOOL_CALL_CHUNK")
                and event.get("parentMessageId") in known
            )
        elif kind == "subagent-reused":
            ok = t in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")
        elif kind in ("unknown-parent-subagent", "idless-tagged-chunk"):
            ok = t == "SUBAGENT_STARTED"
        elif kind == "null-subagent":
            ok = t not in NO_SUBAGENT_FIELD
        elif kind == "schema":
            ok = t in SCHEMA_BREAKS
        elif kind == "chunk-role":
            ok = t == "TEXT_MESSAGE_CHUNK" and "messageId" not in event
        elif kind == "chunk-tool-name":
            ok = t == "TOOL_CALL_CHUNK" and "toolCallId" not in event
        else:  # unknown-type: anywhere inside a run
            ok = t != "RUN_STARTED" or i > 0
            ok = ok and i > 0
        if ok:
            found.append(i)
    return found


def corrupt(stream: list[Event], kind: str, at: int, variant: int = 0) -> tuple[list[Event], int]:
    """The stream with one corruption of ``kind`` at candidate index ``at``; returns it and
    the index of the event the reference refuses (or the inserted event, for accepted ones)."""
    out = copy.deepcopy(stream)
    event = out[at]
    if kind in ("closer-owner", "tool-parent-owner"):
        event["subagentRunId"] = WRONG
        return out, at
    if kind == "subagent-reused":
        again = {"type": "SUBAGENT_STARTED", "subagentRunId": event["subagentRunId"], "name": "x"}
        out.insert(at + 1, again)
        return out, at + 1
    if kind == "unknown-parent-subagent":
        event["parentSubagentRunId"] = "s-none"
        return out, at
    if kind == "idless-tagged-chunk":
        chunk = {"type": "TOOL_CALL_CHUNK", "subagentRunId": event["subagentRunId"], "delta": "x"}
        out.insert(at + 1, chunk)
        return out, at + 1
    if kind == "null-subagent":
        event["subagentRunId"] = None
        return out, at
    if kind == "schema":
        breaks = SCHEMA_BREAKS[event["type"]]
        field, value = breaks[variant % len(breaks)]
        if value is ...:
            event.pop(field, None)
        else:
            event[field] = value
        return out, at
    if kind == "chunk-role":
        event["role"] = "user"
        return out, at
    if kind == "chunk-tool-name":
        event["toolCallName"] = "another_tool"
        return out, at
    out.insert(at, {"type": "X_STATE_SNAPSHOT", "snapshot": {"x": 1}})
    return out, at


@st.composite
def corruptions(
    draw: st.DrawFn, streams: st.SearchStrategy[list[Event]], kind: str | None = None
) -> tuple[list[Event], str, int]:
    """(corrupted stream, corruption kind, index of the refused / inserted event); ``kind``
    fixes the kind (streams with no room for it are rejected)."""
    stream = draw(streams)
    if kind is None:
        kind = draw(st.sampled_from([k for k in REFERENCE_RULES if _candidates(stream, k)]))
    candidates = _candidates(stream, kind)
    if not candidates:
        reject()
    at = draw(st.sampled_from(candidates))
    corrupted, index = corrupt(stream, kind, at, draw(st.integers(0, 3)))
    return corrupted, kind, index
