"""Properties (hypothesis): state sync round trips, valid streams pass the verifier, corrupted
ones fail with the right rule, and the user-facing helpers of ``agui_replay.strategies``."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal, TypedDict

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, field_serializer

from agui_replay.client import Session, apply_events
from agui_replay.errors import ProtocolViolation
from agui_replay.events import EVENT_TYPES
from agui_replay.state import StateManager
from agui_replay.strategies import (
    _state_models,
    assert_state_round_trip,
    check_state_round_trip,
    chunk_splits,
    event_streams,
    mutations,
)
from agui_replay.strategies._documents import (
    AWKWARD_KEYS,
    json_documents,
    json_values,
    mutation_sequences,
    resplit,
)
from agui_replay.verify import verify_stream
from tests.support.state_rule import compact_json

FAST = settings(max_examples=150, deadline=None, database=None)
FEW = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def strict_bytes(value: Any) -> bytes:
    """Canonical JSON: 1, 1.0 and true serialize differently, so equal bytes = equal JSON."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def node_count(value: Any) -> int:
    if isinstance(value, list):
        return 1 + sum(node_count(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(node_count(v) for v in value.values())
    return 1


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


# -- (1) state sync round trip ----------------------------------------------------------------


@FAST
@given(mutation_sequences(allow_root_replace=True))
def test_publishing_then_applying_rebuilds_every_document(docs: list[Any]) -> None:
    manager = StateManager()
    session = Session()
    session.apply({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    sent = []
    for doc in docs:
        event = manager.publish(doc).to_event()
        if event is not None:
            session.apply(event)
            sent.append(event.type.value)
        assert strict_bytes(session.state) == strict_bytes(doc)
    assert session.errors == []
    assert not session.needs_resync
    assert sent[0] == "STATE_SNAPSHOT"


@FAST
@given(json_documents(), st.data())
def test_mutations_change_a_copy_never_the_input(doc: dict[str, Any], data: st.DataObject) -> None:
    before = strict_bytes(doc)
    data.draw(mutations(doc))
    assert strict_bytes(doc) == before


@FAST
@given(json_values(max_depth=2, max_leaves=9))
def test_json_values_respect_their_bounds(value: Any) -> None:
    assert depth(value) <= 2
    leaves = node_count(value)  # containers count too, so this over-counts leaves
    assert leaves <= 1 + 3 + 9
    orjson.dumps(value)  # always encodable JSON


def test_awkward_keys_and_type_twins_show_up() -> None:
    seen_keys: set[str] = set()
    retyped: list[tuple[Any, Any]] = []

    @settings(max_examples=300, deadline=None, database=None)
    @given(json_documents(), st.data())
    def collect(doc: dict[str, Any], data: st.DataObject) -> None:
        seen_keys.update(doc)
        new = data.draw(mutations({"n": 1}))
        retyped.append((1, new.get("n")))

    collect()
    assert {"", "~1", "/"} & seen_keys
    # 1 -> 1.0 and 1 -> true are both reachable: the changes Python's == would miss.
    assert any(type(v) is float and v == 1 for _, v in retyped)
    assert any(v is True for _, v in retyped)
    assert set(AWKWARD_KEYS) >= {"", "~", "/", "~1", "0", "01"}


# -- (2) valid streams ----------------------------------------------------------------------------


@FAST
@given(event_streams())
def test_generated_streams_pass_both_verifier_modes_and_apply_cleanly(stream: list[Any]) -> None:
    verify_stream(stream, "client")
    verify_stream(stream, "strict")
    session = apply_events(stream, mode="strict")
    assert session.errors == []
    types = {e["type"] for e in stream}
    assert stream[0]["type"] == "RUN_STARTED"
    assert stream[-1]["type"] in {"RUN_FINISHED", "RUN_ERROR"}
    # Every event type but the sub-agent family (event_streams does not draw sub-agent runs).
    assert types <= EVENT_TYPES - {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"}


def _resplit_contents(stream: list[dict[str, Any]], data: st.DataObject) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in stream:
        if event["type"] in ("TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"):
            for piece in data.draw(resplit([event["delta"]], allow_empty=True)):
                out.append({**event, "delta": piece})
        else:
            out.append(event)
    return out


@FAST
@given(event_streams(chunks=False), st.data())
def test_rechunking_deltas_does_not_change_what_the_client_holds(
    stream: list[dict[str, Any]], data: st.DataObject
) -> None:
    rechunked = _resplit_contents(stream, data)
    first, second = apply_events(stream), apply_events(rechunked)
    assert first.messages == second.messages
    assert strict_bytes(first.state) == strict_bytes(second.state)


@FAST
@given(st.text(max_size=30), st.data())
def test_chunk_splits_join_back(text: str, data: st.DataObject) -> None:
    pieces = data.draw(chunk_splits(text))
    assert "".join(pieces) == text
    assert all(pieces)  # no empty pieces unless asked for
    with_empty = data.draw(chunk_splits(text, allow_empty=True, max_chunks=6))
    assert "".join(with_empty) == text
    assert len(with_empty) <= 6
    again = data.draw(resplit(pieces, max_chunks=3))
    assert "".join(again) == text
    assert len(again) <= 3


# -- (3) single-event corruptions -----------------------------------------------------------------

_FOLLOWERS = {
    "TEXT_MESSAGE_START": ("messageId", {"TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"}),
    "TOOL_CALL_START": ("toolCallId", {"TOOL_CALL_ARGS", "TOOL_CALL_END"}),
    "REASONING_MESSAGE_START": (
        "messageId",
        {"REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"},
    ),
    "REASONING_START": ("messageId", {"REASONING_END"}),
    "STEP_STARTED": ("stepName", {"STEP_FINISHED"}),
}
_ENDS = {
    "TEXT_MESSAGE_END",
    "TOOL_CALL_END",
    "REASONING_MESSAGE_END",
    "REASONING_END",
    "STEP_FINISHED",
}


def _run_bounds(stream: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(index of RUN_STARTED, index of the RUN_FINISHED / RUN_ERROR that ends it)."""
    bounds, start = [], 0
    for i, event in enumerate(stream):
        if event["type"] == "RUN_STARTED":
            start = i
        elif event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            bounds.append((start, i))
    return bounds


Corruption = tuple[str, list[dict[str, Any]], str, str, int]  # name, stream, mode, rule, index


CORRUPTIONS = (
    "ghost-args",
    "ghost-content",
    "nested-run",
    "after-finish",
    "drop-first-run",
    "truncate",
    "drop-start",
    "duplicate-start",
    "move-end",
    "result-unknown",
    "result-early",
    "chunk-after-start",
)


def _applies(kind: str, stream: list[dict[str, Any]]) -> bool:
    types = {e["type"] for e in stream}
    if kind in ("drop-start", "duplicate-start"):
        return bool(types & _FOLLOWERS.keys())
    if kind == "move-end":
        return bool(types & _ENDS)
    if kind in ("result-unknown", "result-early"):
        return "TOOL_CALL_RESULT" in types
    if kind == "chunk-after-start":
        return "TEXT_MESSAGE_START" in types
    return True


def _corrupt(kind: str, stream: list[dict[str, Any]], data: st.DataObject) -> Corruption:
    runs = _run_bounds(stream)
    starts = [i for i, e in enumerate(stream) if e["type"] in _FOLLOWERS]
    ends = [i for i, e in enumerate(stream) if e["type"] in _ENDS]
    results = [i for i, e in enumerate(stream) if e["type"] == "TOOL_CALL_RESULT"]
    s = [dict(e) for e in stream]

    def inside_run() -> int:
        start, end = data.draw(st.sampled_from(runs), label="run")
        return data.draw(st.integers(start + 1, end), label="position")

    if kind == "ghost-args":
        at = inside_run()
        s.insert(at, {"type": "TOOL_CALL_ARGS", "toolCallId": "ghost", "delta": "{"})
        return kind, s, "client", "not-open", at
    if kind == "ghost-content":
        at = inside_run()
        s.insert(at, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"})
        return kind, s, "client", "not-open", at
    if kind == "nested-run":
        at = inside_run()
        s.insert(at, {"type": "RUN_STARTED", "threadId": "t", "runId": "again"})
        return kind, s, "client", "duplicate-run-started", at
    if kind == "after-finish":
        _, end = data.draw(st.sampled_from(runs), label="run")
        s.insert(end + 1, {"type": "CUSTOM", "name": "late", "value": 1})
        return kind, s, "client", "run-ended", end + 1
    if kind == "drop-first-run":
        del s[0]
        if s and s[0]["type"] == "RUN_ERROR":
            # RUN_ERROR may open a stream; the next run's RUN_STARTED is then fine too.
            return kind, [*s, {"type": "RAW", "event": 1}], "client", "run-ended", len(s)
        return kind, s, "client", "not-started", 0
    if kind == "truncate":
        del s[-1]
        return kind, s, "strict", "incomplete", len(s)
    if kind == "drop-start":
        i = data.draw(st.sampled_from(starts), label="start")
        field, followers = _FOLLOWERS[s[i]["type"]]
        ident = s[i][field]
        del s[i]
        at = next(j for j in range(i, len(s)) if s[j]["type"] in followers and s[j][field] == ident)
        return kind, s, "client", "not-open", at
    if kind == "duplicate-start":
        i = data.draw(st.sampled_from(starts), label="start")
        s.insert(i + 1, dict(s[i]))
        return kind, s, "client", "duplicate-start", i + 1
    if kind == "move-end":
        i = data.draw(st.sampled_from(ends), label="end")
        end = next(e for _, e in runs if e > i)
        moved = s.pop(i)
        s.insert(end, moved)  # right after the run's last event, which moved to end - 1
        if s[end - 1]["type"] == "RUN_FINISHED":
            return kind, s, "client", "open-at-finish", end - 1
        return kind, s, "client", "run-ended", end
    if kind == "result-unknown":
        i = data.draw(st.sampled_from(results), label="result")
        s[i]["toolCallId"] = "ghost"
        return kind, s, "strict", "unknown-id", i
    if kind == "result-early":
        i = data.draw(st.sampled_from(results), label="result")
        call = s[i]["toolCallId"]
        start = next(
            j
            for j in range(i)
            if s[j]["type"] in ("TOOL_CALL_START", "TOOL_CALL_CHUNK")
            and s[j].get("toolCallId") == call
        )
        result = s.pop(i)
        if s[start]["type"] == "TOOL_CALL_CHUNK":
            # Chunked calls end implicitly; a result can only come early for explicit ones.
            result["toolCallId"] = "ghost"
            s.insert(i, result)
            return "result-unknown", s, "strict", "unknown-id", i
        s.insert(start + 1, result)
        return kind, s, "strict", "out-of-order", start + 1
    # chunk-after-start
    i = next(j for j, e in enumerate(s) if e["type"] == "TEXT_MESSAGE_START")
    chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": s[i]["messageId"], "delta": "x"}
    s.insert(i + 1, chunk)
    return kind, s, "client", "chunk-after-start", i + 1


# Streams rich in what each corruption needs, so few examples are thrown away.
_RICH = event_streams(max_runs=2, min_items=2, kinds=("text", "tool", "step", "reasoning"))
_ANY = event_streams(max_runs=2, min_items=1)


@pytest.mark.parametrize("kind", CORRUPTIONS)
@settings(max_examples=25, deadline=None, database=None)
@given(data=st.data())
def test_single_event_corruptions_are_rejected_with_the_right_rule(
    kind: str, data: st.DataObject
) -> None:
    rich = kind in ("drop-start", "duplicate-start", "move-end", "result-unknown", "result-early")
    stream = data.draw(_RICH if rich or kind == "chunk-after-start" else _ANY, label="stream")
    assume(_applies(kind, stream))
    kind, corrupted, mode, rule, index = _corrupt(kind, stream, data)
    with pytest.raises(ProtocolViolation) as info:
        verify_stream(corrupted, mode)
    assert (info.value.rule, info.value.index) == (rule, index), (kind, str(info.value))
    # The Session raises the same violation from apply (or finish) and names the same event.
    with pytest.raises(ProtocolViolation) as applied:
        apply_events(corrupted, mode=mode)
    assert (applied.value.rule, applied.value.index) == (rule, index)
    if mode == "strict":
        verify_stream(corrupted, "client")  # the strict-only rules do not bind a client


# -- (4) the helper a user calls on their own state type ----------------------------------------


class Address(BaseModel):
    city: str
    zip_code: str | None = None


class TodoState(BaseModel):
    title: str = ""
    done: bool = False
    priority: Literal["low", "high"] = "low"
    score: float = 0.0
    count: int = Field(default=0, ge=0)
    tags: list[str] = []
    notes: dict[str, int] = {}
    address: Address | None = None


@dataclasses.dataclass
class Board:
    columns: list[str]
    cards: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    archived: bool = False


class Settings(TypedDict):
    theme: str
    size: int | float


def test_check_state_round_trip_on_a_pydantic_model() -> None:
    check_state_round_trip(TodoState, max_examples=60)


def test_check_state_round_trip_on_a_dataclass_and_a_typeddict() -> None:
    check_state_round_trip(Board, max_examples=30)
    check_state_round_trip(Settings, max_examples=30)


@FEW
@given(data=st.data())
def test_check_state_round_trip_inside_a_users_given(data: st.DataObject) -> None:
    check_state_round_trip(TodoState, data, max_steps=5)


@FEW
@given(st.lists(_state_models(TodoState), min_size=1, max_size=6))
def test_state_models_are_valid_instances_and_round_trip(states: list[TodoState]) -> None:
    for state in states:
        assert isinstance(state, TodoState)
        assert state.count >= 0  # the Field(ge=0) constraint holds
    session = assert_state_round_trip(states)
    assert strict_bytes(session.state) == strict_bytes(states[-1].model_dump(mode="json"))


class Flaky(BaseModel):
    """A state whose JSON changes on every dump: a user bug the round trip must catch."""

    dumps: ClassVar[int] = 0
    value: int = 0

    @field_serializer("value")
    def _bump(self, value: int) -> int:
        Flaky.dumps += 1
        return value + Flaky.dumps


def test_a_broken_round_trip_fails_with_a_readable_message() -> None:
    with pytest.raises(AssertionError) as info:
        assert_state_round_trip([Flaky(value=1), Flaky(value=2)])
    message = str(info.value)
    assert message.startswith("state round trip broke at step 0 of 2")
    assert "published:" in message
    assert "client has:" in message
    assert "STATE_SNAPSHOT" in message


# -- (5) StateManager outcomes on large lists: the size rule, whatever shortcut it takes ----------

TRAPS = st.sampled_from([0, 1, 1.0, True, False, 0.0, -0.0, None, "1", 2.5])


@st.composite
def _large_list_edits(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` after one publish worth of edits: a fraction of the items (none, one, some, all)
    get some fields changed, often to a value Python's == calls equal, and items come and go."""
    items = [dict(item) for item in doc["items"]]
    share = draw(st.sampled_from([0.0, 0.01, 0.3, 1.0]))
    fields = draw(st.lists(st.sampled_from(["id", "name", "done", "tags"]), min_size=1))
    for index, item in enumerate(items):
        if share and (share == 1.0 or index % int(1 / share) == 0):
            for field in fields:
                item[field] = draw(TRAPS | st.text(max_size=12))
    for _ in range(draw(st.integers(0, 2))):
        if items and draw(st.booleans()):
            items.pop(draw(st.integers(0, len(items) - 1)))
        else:
            items.insert(draw(st.integers(0, len(items))), {"id": draw(TRAPS)})
    return {"title": doc["title"], "items": items}


@settings(FEW, max_examples=20)
@given(data=st.data(), size=st.integers(250, 450))
def test_publish_follows_the_size_rule_on_large_lists(data: st.DataObject, size: int) -> None:
    # The size rule: nothing when the full type-strict diff is empty, a delta when its patch is
    # shorter than the new state, a snapshot otherwise. The walk may stop early (a snapshot) and
    # probe long lists: neither may change that outcome.
    from agui_replay.patch import apply_patch, diff, json_equal
    from agui_replay.state import Delta, Snapshot, Unchanged

    doc: dict[str, Any] = {
        "title": "board",
        "items": [
            {"id": i, "name": f"item {i}", "done": i % 3 == 0, "tags": ["a"]} for i in range(size)
        ],
    }
    states = StateManager()
    assert isinstance(states.publish(doc), Snapshot)
    client = orjson.loads(orjson.dumps(doc))
    for _ in range(data.draw(st.integers(1, 4))):
        new = data.draw(_large_list_edits(doc))
        result = states.publish(new)
        expected_ops = diff(doc, new)
        if not expected_ops:
            assert result == Unchanged()
        elif len(compact_json(expected_ops)) < len(compact_json(new)):
            assert isinstance(result, Delta), result
            assert len(compact_json(result.ops)) == len(compact_json(expected_ops))
            client = apply_patch(client, result.ops)
        else:
            assert isinstance(result, Snapshot), result
            client = result.value
        assert strict_bytes(client) == strict_bytes(new)
        assert strict_bytes(states.published) == strict_bytes(new)
        assert json_equal(client, new)
        doc = new
