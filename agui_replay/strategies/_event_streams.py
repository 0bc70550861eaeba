"""Random valid AG-UI event streams: :func:`event_streams` of :mod:`agui_replay.strategies`,
which re-exports every public name. Importing this module imports ``hypothesis``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import strategies as st

from agui_replay.errors import InvalidArgumentError
from agui_replay.events import to_wire
from agui_replay.state import StateManager
from agui_replay.strategies._documents import (
    chunk_splits,
    json_documents,
    json_values,
    mutation_sequences,
)

__all__ = ["STREAM_ITEM_KINDS", "SUBAGENT_STEP", "event_streams"]

# -- event streams --------------------------------------------------------------------------

STREAM_ITEM_KINDS: tuple[str, ...] = (
    "text",
    "tool",
    "step",
    "reasoning",
    "custom",
    "raw",
    "activity",
    "messages_snapshot",
    "text_chunks",
    "tool_chunks",
    "reasoning_chunks",
)
"""What a run of :func:`event_streams` is made of."""

_words = st.text(max_size=12)


class _Ids:
    """Ids derived from the run id, as the server's run context makes them: ``run-1-msg-3``."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.counts: dict[str, int] = {}

    def __call__(self, what: str) -> str:
        n = self.counts[what] = self.counts.get(what, 0) + 1
        return f"{self.run_id}-{what}-{n}"


Thread = tuple[list[dict[str, Any]], bool]  # (events in order, must stay contiguous)


def _text_thread(draw: st.DrawFn, ids: _Ids, chunks: bool) -> Thread:
    mid = ids("msg")
    pieces = draw(chunk_splits(draw(_words), allow_empty=True, max_chunks=4))
    if chunks:
        first: dict[str, Any] = {"type": "TEXT_MESSAGE_CHUNK", "messageId": mid}
        if draw(st.booleans()):
            first["role"] = "assistant"
        events = [first]
        for i, piece in enumerate(pieces or [""]):
            if i == 0:
                first["delta"] = piece
                continue
            chunk = {"type": "TEXT_MESSAGE_CHUNK", "delta": piece}
            if draw(st.booleans()):
                chunk["messageId"] = mid  # repeating the id continues the same message
            events.append(chunk)
        return events, True
    role = draw(st.sampled_from(["assistant", "assistant", "user", "system", "developer"]))
    start = {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": role}
    content = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": piece} for piece in pieces
    ]
    return [start, *content, {"type": "TEXT_MESSAGE_END", "messageId": mid}], False


def _encrypted_value(draw: st.DrawFn, subtype: str, entity: str) -> dict[str, Any]:
    return {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": subtype,
        "entityId": entity,
        "encryptedValue": draw(st.text(alphabet="abcdef0123456789", min_size=1)),
    }


def _tool_thread(draw: st.DrawFn, ids: _Ids, parents: list[str], chunks: bool) -> Thread:
    call_id = ids("call")
    name = draw(st.sampled_from(["search", "get_weather", "write_file", "ask_user"]))
    args = orjson.dumps(draw(json_documents(max_depth=2, max_leaves=4))).decode()
    pieces = draw(chunk_splits(args, max_chunks=4))
    parent = draw(st.sampled_from([None, *parents, *parents])) if parents else None
    result: list[dict[str, Any]] = []
    if draw(st.booleans()):
        result.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": ids("msg"),
                "toolCallId": call_id,
                "content": draw(_words),
                "role": "tool",
            }
        )
    if chunks:
        first: dict[str, Any] = {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": call_id,
            "toolCallName": name,
            "delta": pieces[0] if pieces else "",
        }
        if parent is not None:
            first["parentMessageId"] = parent
        rest = [{"type": "TOOL_CALL_CHUNK", "delta": p} for p in pieces[1:]]
        return [first, *rest, *result], True
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent is not None:
        start["parentMessageId"] = parent
    events = [start]
    if draw(st.booleans()):
        events.append(_encrypted_value(draw, "tool-call", call_id))
    events += [{"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": p} for p in pieces]
    events.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
    return events + result, False


def _reasoning_thread(draw: st.DrawFn, ids: _Ids, chunks: bool) -> Thread:
    block = ids("msg")
    # A reasoning block and the message inside it may share one id: both forms are drawn.
    mid = block if draw(st.booleans()) else ids("msg")
    pieces = draw(chunk_splits(draw(_words), max_chunks=3))
    events: list[dict[str, Any]] = [{"type": "REASONING_START", "messageId": block}]
    if chunks:
        events.append({"type": "REASONING_MESSAGE_CHUNK", "messageId": mid, "delta": ""})
        events += [{"type": "REASONING_MESSAGE_CHUNK", "delta": p} for p in pieces]
    else:
        events.append({"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"})
        events += [
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": p} for p in pieces
        ]
        events.append({"type": "REASONING_MESSAGE_END", "messageId": mid})
        if draw(st.booleans()):
            events.append(_encrypted_value(draw, "message", mid))
    events.append({"type": "REASONING_END", "messageId": block})
    return events, chunks


def _state_thread(draw: st.DrawFn, max_steps: int) -> Thread:
    manager = StateManager()
    events: list[dict[str, Any]] = []
    for doc in draw(
        mutation_sequences(json_documents(max_depth=2, max_leaves=9), max_steps=max_steps)
    ):
        event = manager.publish(doc).to_event()
        if event is not None:
            events.append(to_wire(event))
    return events, False


def _run_end(
    draw: st.DrawFn, ids: _Ids, thread_id: str, run_errors: bool, interrupts: bool
) -> dict[str, Any]:
    choices = ["success", "success", "plain"]
    if interrupts:
        choices.append("interrupt")
    if run_errors:
        choices.append("error")
    how = draw(st.sampled_from(choices))
    if how == "error":
        return {"type": "RUN_ERROR", "message": "the agent failed", "code": "AGENT_ERROR"}
    end: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": ids.run_id}
    if how == "success":
        end["outcome"] = {"type": "success"}
        end["result"] = draw(json_values(max_depth=1, max_leaves=3))
    elif how == "interrupt":
        end["outcome"] = {
            "type": "interrupt",
            "interrupts": [
                {"id": ids("interrupt"), "reason": "confirm"}
                for _ in range(draw(st.integers(1, 2)))
            ],
        }
    return end


Units = list[list[dict[str, Any]]]  # events in order, cut where others may come between


def _units(thread: Thread) -> Units:
    events, atomic = thread
    return [events] if atomic else [[event] for event in events]


def _interleave(draw: st.DrawFn, threads: list[Units]) -> Units:
    """The units of every thread, each thread's in its own order, mixed at random."""
    slots = [i for i, units in enumerate(threads) for _ in units]
    positions = [0] * len(threads)
    out: Units = []
    for i in draw(st.permutations(slots)):
        out.append(threads[i][positions[i]])
        positions[i] += 1
    return out


def _item(
    draw: st.DrawFn, ids: _Ids, kind: str, parents: list[str], step_names: list[str]
) -> Thread:
    """One item of a run: a thread of events (``parents``: text messages a call may join;
    ``step_names``: names a step may take once, besides a fresh one)."""
    if kind in ("text", "text_chunks"):
        thread = _text_thread(draw, ids, kind == "text_chunks")
        if kind == "text":
            parents.append(thread[0][0]["messageId"])
        return thread
    if kind in ("tool", "tool_chunks"):
        return _tool_thread(draw, ids, parents, kind == "tool_chunks")
    if kind in ("reasoning", "reasoning_chunks"):
        return _reasoning_thread(draw, ids, kind == "reasoning_chunks")
    if kind == "step":
        name = draw(st.sampled_from([*step_names, ids("step")]))
        if name in step_names:
            step_names.remove(name)
        return (
            [
                {"type": "STEP_STARTED", "stepName": name},
                {"type": "STEP_FINISHED", "stepName": name},
            ],
            False,
        )
    if kind == "custom":
        value = draw(json_values(max_depth=1, max_leaves=3))
        return ([{"type": "CUSTOM", "name": ids("custom"), "value": value}], False)
    if kind == "raw":
        event = draw(json_values(max_depth=1, max_leaves=3))
        return ([{"type": "RAW", "event": event, "source": "provider"}], False)
    if kind == "activity":
        mid = ids("activity")
        kind_name = draw(st.sampled_from(["progress", "plan"]))
        return (
            [
                {
                    "type": "ACTIVITY_SNAPSHOT",
                    "messageId": mid,
                    "activityType": kind_name,
                    "content": {"done": 0},
                },
                {
                    "type": "ACTIVITY_DELTA",
                    "messageId": mid,
                    "activityType": kind_name,
                    "patch": [{"op": "replace", "path": "/done", "value": 1}],
                },
            ],
            False,
        )
    user = {"id": ids("user"), "role": "user", "content": draw(_words)}
    return ([{"type": "MESSAGES_SNAPSHOT", "messages": [user]}], False)


# What a subagent's own events may be: everything but a MESSAGES_SNAPSHOT (the parent's).
_SUBAGENT_KINDS = frozenset(STREAM_ITEM_KINDS) - {"messages_snapshot"}
SUBAGENT_STEP = "work"
"""The step name every subagent may use: steps are keyed by owner and name, so two subagents
(and the parent) may run a step of the same name at once."""


def _subagent(
    draw: st.DrawFn,
    ids: _Ids,
    kinds: Sequence[str],
    max_items: int,
    parent: str | None,
    depth: int,
) -> Units:
    """SUBAGENT_STARTED, the subagent's own items (every event tagged with its
    ``subagentRunId``) and maybe a nested subagent, interleaved, then SUBAGENT_FINISHED or
    SUBAGENT_ERROR."""
    sid = ids("sub")
    start: dict[str, Any] = {
        "type": "SUBAGENT_STARTED",
        "subagentRunId": sid,
        "name": draw(st.sampled_from(["researcher", "writer", "critic"])),
    }
    if parent is not None:
        start["parentSubagentRunId"] = parent
    own = [k for k in kinds if k in _SUBAGENT_KINDS] or ["text"]
    parents: list[str] = []
    step_names = [SUBAGENT_STEP]
    threads: list[Units] = []
    for kind in draw(st.lists(st.sampled_from(own), min_size=1, max_size=max(1, max_items))):
        events, atomic = _item(draw, ids, kind, parents, step_names)
        threads.append(_units(([{**e, "subagentRunId": sid} for e in events], atomic)))
    if depth < 2 and draw(st.integers(0, 3)) == 0:
        threads.append(_subagent(draw, ids, kinds, max_items, sid, depth + 1))
    body = _interleave(draw, threads)
    if draw(st.booleans()) and SUBAGENT_STEP in step_names:
        # A step around the subagent's whole work: it overlaps its siblings' steps of the same
        # name, which is fine (steps are keyed by owner and name).
        step = {"type": "STEP_STARTED", "stepName": SUBAGENT_STEP, "subagentRunId": sid}
        body = [[step], *body, [{**step, "type": "STEP_FINISHED"}]]
    end: dict[str, Any]
    if draw(st.integers(0, 4)) == 0:
        end = {"type": "SUBAGENT_ERROR", "subagentRunId": sid, "message": "the subagent failed"}
    else:
        end = {"type": "SUBAGENT_FINISHED", "subagentRunId": sid}
        if draw(st.booleans()):
            end["outcome"] = {"type": "success"}
    return [[start], *body, [end]]


@st.composite
def event_streams(
    draw: st.DrawFn,
    *,
    max_runs: int = 3,
    min_items: int = 0,
    max_items: int = 8,
    kinds: Sequence[str] | None = None,
    chunks: bool = True,
    state: bool = True,
    interrupts: bool = True,
    run_errors: bool = True,
    subagents: int = 0,
    thread_id: str = "thread-1",
) -> list[dict[str, Any]]:
    """Random VALID AG-UI streams (wire dicts), accepted by the verifier in both modes.

    One to ``max_runs`` runs in one stream; in each, up to ``max_items`` text messages, tool
    calls (with arguments, results, parents), steps, reasoning blocks, activity, CUSTOM / RAW
    and MESSAGES_SNAPSHOT events, interleaved at random (a chunked message is sent
    contiguously, as the chunk rules need), plus a STATE_SNAPSHOT / STATE_DELTA sequence from
    a real :class:`~agui_replay.state.StateManager`. A run ends with RUN_FINISHED (success,
    plain or interrupt outcome) or RUN_ERROR.

    ``kinds`` picks the items a run is made of, from :data:`STREAM_ITEM_KINDS` (default: all;
    ``chunks=False`` leaves out the ``*_chunks`` ones); every run has ``min_items`` to
    ``max_items`` of them.

    ``subagents`` (default 0): up to that many subagent invocations per run, each between its
    SUBAGENT_STARTED and SUBAGENT_FINISHED (or SUBAGENT_ERROR), with its own items of the same
    kinds, every event tagged with its ``subagentRunId``, sometimes with a nested subagent
    (``parentSubagentRunId``), steps named :data:`SUBAGENT_STEP` by several owners at once, and
    chunks streaming beside the parent's. Subagent ids are fresh in every invocation.
    """
    if kinds is None:
        kinds = [k for k in STREAM_ITEM_KINDS if chunks or not k.endswith("_chunks")]
    unknown = set(kinds) - set(STREAM_ITEM_KINDS)
    if unknown or not kinds:
        raise InvalidArgumentError(
            f"event_streams(kinds=...) takes a non-empty selection of {STREAM_ITEM_KINDS}, "
            f"got {sorted(unknown) or 'nothing'}"
        )
    if subagents < 0:
        raise InvalidArgumentError(f"event_streams(subagents=...) must be >= 0, got {subagents}")
    stream: list[dict[str, Any]] = []
    for run in range(draw(st.integers(1, max_runs))):
        ids = _Ids(f"run-{run + 1}")
        parents: list[str] = []
        threads: list[Units] = []
        items = st.lists(st.sampled_from(list(kinds)), min_size=min_items, max_size=max_items)
        step_names = [SUBAGENT_STEP] if subagents else []
        for kind in draw(items):
            threads.append(_units(_item(draw, ids, kind, parents, step_names)))
        if state and draw(st.booleans()):
            threads.append(_units(_state_thread(draw, max_steps=4)))
        for _ in range(draw(st.integers(0, subagents))):
            threads.append(_subagent(draw, ids, kinds, max(1, max_items // 2), None, 0))
        stream.append({"type": "RUN_STARTED", "threadId": thread_id, "runId": ids.run_id})
        for unit in _interleave(draw, threads):
            stream.extend(unit)
        stream.append(_run_end(draw, ids, thread_id, run_errors, interrupts))
    return stream
