"""Random ids anywhere in events and inputs, one name across all runs of a cassette; user rules."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay._normalizing import looks_random, replace_ids
from agui_replay.errors import InvalidArgumentError
from agui_replay.normalize import Normalizer, blank, ignore, normalize_events, replace


def _u() -> str:
    return str(uuid.uuid4())


def _call() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _langgraph_like_run(
    run_id: str, msg: str, call: str, lc: str, chat: str
) -> list[dict[str, Any]]:
    """The shapes ag-ui-langgraph emits: RAW payloads with run ids, state with lc_run-- ids."""
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
        {"type": "RAW", "event": {"run_id": lc, "data": {"chunk": {"id": f"lc_run--{lc}"}}}},
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "weather"},
        {"type": "TOOL_CALL_END", "toolCallId": call},
        {"type": "TEXT_MESSAGE_START", "messageId": f"lc_run--{msg}", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": f"lc_run--{msg}"},
        {
            "type": "STATE_SNAPSHOT",
            "snapshot": {
                "messages": [
                    {"id": f"lc_run--{msg}", "tool_calls": [{"id": call}], "response": chat},
                ]
            },
        },
        {"type": "CUSTOM", "name": "trace", "value": {"id": f"af-call-{uuid.uuid4().hex}"}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id},
    ]


def _one_cassette() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two runs; run 2's input carries run 1's raw ids, as a user builds it from the events."""
    msg, call, lc, chat = _u(), _call(), _u(), "chatcmpl-" + uuid.uuid4().hex[:20] + "Ab1"
    run1 = _langgraph_like_run("run-1", msg, call, lc, chat)
    input2 = {
        "threadId": "t",
        "runId": "run-2",
        "messages": [
            {"id": "user-1", "role": "user", "content": "weather?"},
            {
                "id": f"lc_run--{msg}",
                "role": "assistant",
                "toolCalls": [
                    {"id": call, "type": "function", "function": {"name": "w", "arguments": "{}"}}
                ],
            },
            {"id": _u(), "role": "tool", "toolCallId": call, "content": "sunny"},
        ],
        "state": {"last_call": call},
    }
    run2 = _langgraph_like_run("run-2", _u(), _call(), _u(), "chatcmpl-" + uuid.uuid4().hex)
    return [*run1], [input2, *run2]


def _normalize_cassette(run1: list[Any], rest: list[Any]) -> tuple[Any, Any, Any]:
    normalizer = Normalizer()
    a = normalizer.events(run1)
    normalized_input = normalizer.input(rest[0])
    b = normalizer.events(rest[1:])
    return a, normalized_input, b


def test_two_recordings_with_other_random_ids_normalize_the_same() -> None:
    first = _normalize_cassette(*_one_cassette())
    second = _normalize_cassette(*_one_cassette())
    assert first == second


def test_payload_ids_take_the_protocol_name_when_there_is_one() -> None:
    events, run_input, _ = _normalize_cassette(*_one_cassette())
    start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    snapshot_message = next(e for e in events if e["type"] == "STATE_SNAPSHOT")["snapshot"][
        "messages"
    ][0]
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")["toolCallId"]
    assert start["messageId"] == "run-1-msg-1"
    assert snapshot_message["id"] == "run-1-msg-1"
    assert snapshot_message["tool_calls"][0]["id"] == call == "run-1-call-1"
    raw = next(e for e in events if e["type"] == "RAW")
    assert raw["event"]["run_id"] == "<id-1>"
    assert raw["event"]["data"]["chunk"]["id"] == "lc_run--<id-1>"
    assert snapshot_message["response"].startswith("chatcmpl-<id-")
    custom = next(e for e in events if e["type"] == "CUSTOM")
    assert re.fullmatch(r"af-call-<id-\d+>", custom["value"]["id"])
    # Run 2's input names run 1's message and call by run 1's names; the test's "user-1" stays.
    assert [m["id"] for m in run_input["messages"]][:2] == ["user-1", "run-1-msg-1"]
    assert run_input["messages"][1]["toolCalls"][0]["id"] == "run-1-call-1"
    assert run_input["messages"][2]["toolCallId"] == "run-1-call-1"
    assert run_input["state"] == {"last_call": "run-1-call-1"}


def test_an_input_built_from_normalized_events_equals_one_built_from_raw() -> None:
    run1, rest = _one_cassette()
    normalizer = Normalizer()
    normalized_run1 = normalizer.events(run1)
    from_raw = normalizer.input(rest[0])
    other = Normalizer()
    other.events(run1)
    rebuilt = dict(rest[0])
    message = normalized_run1[4]["messageId"]
    rebuilt["messages"] = [
        rest[0]["messages"][0],
        {
            **rest[0]["messages"][1],
            "id": message,
            "toolCalls": [{**rest[0]["messages"][1]["toolCalls"][0], "id": "run-1-call-1"}],
        },
        {**rest[0]["messages"][2], "toolCallId": "run-1-call-1"},
    ]
    rebuilt["state"] = {"last_call": "run-1-call-1"}
    from_normalized = other.input(rebuilt)
    assert from_raw["messages"][:2] == from_normalized["messages"][:2]
    assert from_raw["messages"][2]["toolCallId"] == "run-1-call-1"
    assert from_normalized["messages"][2]["toolCallId"] == "run-1-call-1"
    # The tool message's own id was random (and new) in both: a placeholder either way.
    assert from_raw["messages"][2]["id"] == from_normalized["messages"][2]["id"]
    assert re.fullmatch(r"<id-\d+>", from_raw["messages"][2]["id"])
    assert from_raw["state"] == from_normalized["state"]


def test_normalizing_a_normalized_cassette_changes_nothing() -> None:
    run1, rest = _one_cassette()
    once = _normalize_cassette(run1, rest)
    twice = _normalize_cassette(once[0], [once[1], *once[2]])
    assert twice == once


def test_streamed_text_renames_only_ids_named_already() -> None:
    call = "call_3d9b75974f60000026cbbdd0"
    events = normalize_events(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1"},
            {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "update_recipe"},
            {"type": "TOOL_CALL_END", "toolCallId": call},
            {"type": "TOOL_CALL_START", "toolCallId": "confirm-1", "toolCallName": "confirm"},
            {
                "type": "TOOL_CALL_ARGS",
                "toolCallId": "confirm-1",
                "delta": f'{{"function_call_id": "{call}", "other": "call_Zz9YxW8vU7tS6rQ5"}}',
            },
            {"type": "TOOL_CALL_END", "toolCallId": "confirm-1"},
        ]
    )
    assert events[4]["delta"] == (
        '{"function_call_id": "run-1-call-1", "other": "call_Zz9YxW8vU7tS6rQ5"}'
    )


def test_streamed_text_is_left_alone() -> None:
    secret_looking = "ref 3f1c9a2b-4d5e-4f70-8192-a3b4c5d6e7f8"
    events = normalize_events(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": secret_looking},
        ]
    )
    assert events[2]["delta"] == secret_looking


@pytest.mark.parametrize(
    "value",
    [
        "3f1c9a2b-4d5e-4f70-8192-a3b4c5d6e7f8",
        "01941f29-7c01-7665-90d2-cbce8b9ae76b",
        "call_AbC12dEf34GhI56jKl78",
        "toolu_01A09q90qw90lq917835lq9",
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        "chatcmpl-9ZxYwVuT8sRqPo7nMlKj6iHg",
        "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "3f1c9a2b4d5e4f708192a3b4c5d6e7f8",
    ],
)
def test_recognised_id_shapes(value: str) -> None:
    assert looks_random(value)


@pytest.mark.parametrize(
    "value",
    [
        "msg_important",
        "run-1-msg-1",
        "<id-3>",
        "1700000000000000000",
        "internationalization",
        "user-1",
        "confirm-clear",
        "deadbeef",
    ],
)
def test_words_numbers_and_our_own_ids_are_not_ids(value: str) -> None:
    assert not looks_random(value)
    assert replace_ids(value, lambda token, part: "X") == value


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz -_.,:", max_size=60))
def test_plain_text_is_never_rewritten(text: str) -> None:
    assert replace_ids(text, lambda token, part: "X") == text


def _event() -> dict[str, Any]:
    return {
        "type": "STATE_SNAPSHOT",
        "snapshot": {
            "orders": [
                {"id": "order-17", "updated_at": "2026-12-01T10:00:00Z", "etag": "W/1"},
                {"id": "order-18", "updated_at": "2026-12-01T10:00:05Z", "etag": "W/2"},
            ],
            "meta": {"deep": {"updated_at": 5}},
        },
    }


def test_replace_rewrites_every_string_but_the_type() -> None:
    (out,) = normalize_events([_event()], rules=[replace(r"order-\d+", "<order>")])
    assert [o["id"] for o in out["snapshot"]["orders"]] == ["<order>", "<order>"]
    assert out["type"] == "STATE_SNAPSHOT"


def test_ignore_and_blank_follow_pointer_globs() -> None:
    rules = [ignore("/snapshot/orders/*/updated_at"), blank("/snapshot/orders/*/etag")]
    (out,) = normalize_events([_event()], rules=rules)
    assert out["snapshot"]["orders"][0] == {"id": "order-17", "etag": "<blank>"}
    assert out["snapshot"]["meta"] == {"deep": {"updated_at": 5}}
    (deep,) = normalize_events([_event()], rules=[ignore("/**/updated_at")])
    assert "updated_at" not in str(deep)


def test_a_callable_is_a_rule_and_inputs_are_never_modified() -> None:
    event = _event()
    (out,) = normalize_events([event], rules=[lambda e: {**e, "seen": True}])
    assert out["seen"] is True
    assert event == _event()


def test_bad_rules_are_refused_with_the_position_and_what_a_rule_is() -> None:
    with pytest.raises(InvalidArgumentError, match=r"normalize\[1\].*not a rule"):
        normalize_events([_event()], rules=[replace("a", "b"), "order-\\d+"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="not a valid regex"):
        replace("(", "x")
    with pytest.raises(InvalidArgumentError, match="starting with '/'"):
        ignore("snapshot/x")
    with pytest.raises(InvalidArgumentError, match=r"event #0 \(STATE_SNAPSHOT\)"):
        normalize_events([_event()], rules=[lambda e: e["missing"]])
    with pytest.raises(InvalidArgumentError, match="returned NoneType"):
        normalize_events([_event()], rules=[lambda e: None])  # type: ignore[arg-type,return-value]
