"""Trajectories: ``tool_calls`` reads a stream's tool calls, ``assert_tool_calls`` checks them.

``tool_calls`` is proved against every stored stream of the repository (the cassettes and the
examples' snapshot files) by a hand count that shares no code with it: a plain loop over the
stored JSON, one entry per ``TOOL_CALL_START``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import (
    RunFinishedEvent,
    RunStartedEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agui_replay.assertions import assert_tool_calls, tool_calls
from agui_replay.cassette import load_recording
from agui_replay.errors import InvalidArgumentError

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = sorted((ROOT / "cassettes").rglob("*.json"))
SNAPSHOTS = sorted((ROOT / "examples").rglob("*.agui.jsonl"))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- the hand count over every stored stream -----------------------------------------------


def _hand_count(path: Path) -> list[tuple[str, str]]:
    """(id, name) of every TOOL_CALL_START stored in the file, read with json alone."""
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        events = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        events = [event for run in json.loads(text)["runs"] for event in run["events"]]
    starts = []
    for event in events:
        assert event["type"] != "TOOL_CALL_CHUNK", "the hand count reads START events only"
        if event["type"] == "TOOL_CALL_START":
            starts.append((event["toolCallId"], event["toolCallName"]))
    return starts


def test_there_are_stored_streams_to_count() -> None:
    assert len(CASSETTES) >= 10
    assert len(SNAPSHOTS) >= 10


@pytest.mark.parametrize("path", [*CASSETTES, *SNAPSHOTS], ids=_name)
def test_tool_calls_agree_with_a_hand_count(path: Path) -> None:
    calls = tool_calls(path)
    assert [(c["id"], c["name"]) for c in calls] == _hand_count(path)
    # the other ways in give the same calls: the file's runs, and (for JSON lines) its lines
    assert tool_calls([list(run.events) for run in load_recording(path).runs]) == calls
    assert tool_calls(str(path)) == calls
    if path.name.endswith(".jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert tool_calls(lines) == calls


def test_the_week_of_work_by_hand() -> None:
    path = ROOT / "cassettes/test_task_board_cassettes/test_a_week_of_work_across_runs.json"
    assert tool_calls(path) == [
        {
            "id": "week-run-1-call-1",
            "name": "add_task",
            "args": {"title": "draft the agenda"},
            "result": {"id": 1, "title": "draft the agenda"},
        },
        {
            "id": "week-run-1-call-2",
            "name": "add_task",
            "args": {"title": "book the room"},
            "result": {"id": 2, "title": "book the room"},
        },
        {
            "id": "week-run-2-call-1",
            "name": "estimate",
            "args": {"task": "2", "minutes": 45},
            "result": {"id": 2, "title": "book the room", "estimate_minutes": 45, "done": False},
        },
        {
            "id": "week-run-3-call-1",
            "name": "complete_task",
            "args": {"task": "1"},
            "result": {"id": 1, "title": "draft the agenda", "done": True},
        },
    ]
    assert_tool_calls(
        path,
        [
            ("add_task", {"title": "draft the agenda"}),
            ("add_task", {"title": "book the room"}),
            ("estimate", {"task": "2", "minutes": 45}),
            ("complete_task", {"task": "1"}),
        ],
    )


def test_the_packing_snapshot_by_hand() -> None:
    path = (
        ROOT / "examples/pydantic_ai_agent/__snapshots__/test_packing_agent/"
        "test_packing_for_a_rainy_weekend_then_adding_the_passport[planned].agui.jsonl"
    )
    assert tool_calls(path) == [
        {
            "id": "run-1-call-1",
            "name": "get_forecast",
            "args": {"city": "Oslo"},
            "result": "8°C, rain showers all weekend",  # not JSON: the text
        },
        {
            "id": "run-1-call-2",
            "name": "pack",
            "args": {"destination": "Oslo", "items": ["rain jacket", "umbrella", "wool sweater"]},
            "result": "Packed 3 item(s); 3 on the list.",
        },
    ]


# --- reading: chunking, shapes, what is left out ---------------------------------------------


def _run(*events: dict[str, Any], run: str = "r") -> list[dict[str, Any]]:
    return [
        {"type": "RUN_STARTED", "threadId": "t", "runId": run},
        *events,
        {"type": "RUN_FINISHED", "threadId": "t", "runId": run},
    ]


def _call(ident: str, name: str, *deltas: str, result: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "TOOL_CALL_START", "toolCallId": ident, "toolCallName": name}
    ]
    out += [{"type": "TOOL_CALL_ARGS", "toolCallId": ident, "delta": d} for d in deltas]
    out.append({"type": "TOOL_CALL_END", "toolCallId": ident})
    if result is not None:
        out.append(
            {
                "type": "TOOL_CALL_RESULT",
                "toolCallId": ident,
                "messageId": f"{ident}-r",
                "content": result,
            }
        )
    return out


def test_args_are_joined_whatever_the_chunking() -> None:
    text = '{"city": "Paris", "days": [1, 2]}'
    for size in (1, 2, 5, len(text)):
        deltas = [text[i : i + size] for i in range(0, len(text), size)]
        events = _run(*_call("c1", "weather", *deltas, result="sunny"))
        assert tool_calls(events) == [
            {
                "id": "c1",
                "name": "weather",
                "args": {"city": "Paris", "days": [1, 2]},
                "result": "sunny",
            }
        ]


def test_chunk_events_are_expanded_as_the_client_does() -> None:
    events = _run(
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "a", "toolCallName": "search", "delta": '{"q":'},
        {"type": "TOOL_CALL_CHUNK", "delta": ' "x"}'},
        # a chunk with another id ends the first call and starts the next
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "b", "toolCallName": "book", "delta": "{}"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "a", "messageId": "m1", "content": "[1, 2]"},
    )
    assert tool_calls(events) == [
        {"id": "a", "name": "search", "args": {"q": "x"}, "result": [1, 2]},
        {"id": "b", "name": "book", "args": {}, "result": None},
    ]


def test_args_that_are_not_json_stay_text_and_no_args_are_empty() -> None:
    events = _run(*_call("c1", "shell", "ls -", "la"), *_call("c2", "now"))
    assert tool_calls(events) == [
        {"id": "c1", "name": "shell", "args": "ls -la", "result": None},
        {"id": "c2", "name": "now", "args": {}, "result": None},
    ]


def test_a_result_without_content_and_one_for_an_unknown_call() -> None:
    events = _run(
        *_call("c1", "ping", "{}"),
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "m"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "older", "messageId": "m2", "content": "x"},
    )
    assert tool_calls(events) == [{"id": "c1", "name": "ping", "args": {}, "result": None}]


def test_calls_only_a_messages_snapshot_shows_are_not_invented() -> None:
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {
                "id": "m1",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "old",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"id": "m2", "role": "tool", "toolCallId": "old", "content": "rain"},
        ],
    }
    assert tool_calls(_run(snapshot)) == []
    assert [c["id"] for c in tool_calls(_run(snapshot, *_call("new", "weather", "{}")))] == ["new"]


def test_models_runs_and_run_records_are_accepted() -> None:
    models = [
        RunStartedEvent(thread_id="t", run_id="r"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="weather"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"city": "Rome"}'),
        ToolCallEndEvent(tool_call_id="c1"),
        ToolCallResultEvent(message_id="m", tool_call_id="c1", content='{"sky": "clear"}'),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    one = [{"id": "c1", "name": "weather", "args": {"city": "Rome"}, "result": {"sky": "clear"}}]
    assert tool_calls(models) == one
    second = _run(*_call("c1", "weather", '{"city": "Oslo"}'), run="r2")
    both = tool_calls([models, second])
    assert [c["args"] for c in both] == [{"city": "Rome"}, {"city": "Oslo"}]

    class Record:  # what agui.runs holds: objects with .events
        def __init__(self, events: list[Any]) -> None:
            self.events = events

    assert tool_calls([Record(models), Record(second)]) == both


def test_bad_inputs_say_what_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="tool_calls takes events"):
        tool_calls(42)
    with pytest.raises(InvalidArgumentError, match="line 2 of the given lines is not a JSON"):
        tool_calls(['{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}', "not json"])
    with pytest.raises(Exception, match="no such file"):
        tool_calls(tmp_path / "missing.agui.jsonl")
    broken = _run({"type": "TOOL_CALL_CHUNK", "delta": "{}"})  # the first chunk has no id
    with pytest.raises(AssertionError, match="chunk-without-id"):
        tool_calls(broken)


# --- assert_tool_calls ------------------------------------------------------------------------


def _trip() -> list[dict[str, Any]]:
    return _run(
        *_call("c1", "search", '{"q": "Paris", "n": 3}', result="[]"),
        *_call("c2", "weather", '{"city": "Paris", "opts": {"units": "C", "days": 2}}'),
        *_call("c3", "book", '{"hotel": "H-12"}'),
    )


EXACT = [
    ("search", {"q": "Paris", "n": 3}),
    ("weather", {"city": "Paris", "opts": {"units": "C", "days": 2}}),
    ("book", {"hotel": "H-12"}),
]


def test_strict_passes_on_the_same_calls_in_order() -> None:
    assert_tool_calls(_trip(), EXACT)
    assert_tool_calls(_trip(), [(n, None) for n, _ in EXACT])
    assert_tool_calls(_trip(), ["search", "weather", "book"])  # a bare name: any args


def test_strict_fails_on_another_order_and_unordered_accepts_it() -> None:
    swapped = [EXACT[1], EXACT[0], EXACT[2]]
    with pytest.raises(AssertionError) as info:
        assert_tool_calls(_trip(), swapped)
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == (
        "tool calls differ (mode='strict', args='exact'; 3 expected, 3 made): "
        'call #0 differs in the name: expected "weather", got "search"'
    )
    assert lines[1].split() == ["expected", "|", "actual"]
    assert lines[2].startswith("  > #0 weather ")
    assert lines[2].split(" | ")[1].startswith("#0 search ")
    assert lines[3].startswith("    #1 search ")
    assert lines[3].split(" | ")[1].startswith("#1 weather ")
    # the columns line up
    assert len({line.index(" | ") for line in lines[1:]}) == 1
    assert_tool_calls(_trip(), swapped, mode="unordered")


def test_strict_names_a_missing_and_an_extra_call() -> None:
    with pytest.raises(AssertionError, match=r"expected call #3 \(ping \(any args\)\) did not"):
        assert_tool_calls(_trip(), [*EXACT, ("ping", None)])
    with pytest.raises(AssertionError, match=r"call #2 book \{\"hotel\": \"H-12\"\} was not"):
        assert_tool_calls(_trip(), EXACT[:2])


def test_args_exact_subset_and_ignore() -> None:
    partial = [
        ("search", {"q": "Paris"}),
        ("weather", {"opts": {"units": "C"}}),
        ("book", {}),
    ]
    with pytest.raises(AssertionError, match=r"call #0 differs in the args at /n: not expected"):
        assert_tool_calls(_trip(), partial)
    assert_tool_calls(_trip(), partial, args="subset")
    wrong = [("search", {"q": "Lisbon"}), ("weather", {"x": 1}), ("book", {"hotel": 1})]
    with pytest.raises(AssertionError, match='at /q: expected "Lisbon", got "Paris"'):
        assert_tool_calls(_trip(), wrong, args="subset")
    assert_tool_calls(_trip(), wrong, args="ignore")
    with pytest.raises(AssertionError, match=r"at /opts/x: missing \(expected 1\)"):
        assert_tool_calls(
            _trip(),
            [EXACT[0], ("weather", {"opts": {"days": 2, "x": 1}})],
            mode="superset",
            args="subset",
        )


def test_json_strict_values() -> None:
    events = _run(*_call("c1", "f", '{"n": 1, "flag": true}'))
    with pytest.raises(AssertionError, match=r"at /n: expected 1.0 \(float\), got 1 \(int\)"):
        assert_tool_calls(events, [("f", {"n": 1.0, "flag": True})])
    with pytest.raises(AssertionError, match="at /flag"):
        assert_tool_calls(events, [("f", {"n": 1, "flag": 1})])


def test_matchers_at_any_depth() -> None:
    expected = [
        (re.compile("sea.*"), {"q": re.compile(r"[A-Z]\w+"), "n": lambda n: n > 2}),
        ("weather", {"city": "Paris", "opts": {"units": re.compile("C|F"), "days": int}}),
        ("book", {"hotel": re.compile(r"H-\d+")}),
    ]
    assert_tool_calls(_trip(), expected)

    def positive(n: Any) -> bool:
        return bool(n < 0)

    with pytest.raises(AssertionError, match=r"at /n: the predicate <positive> returned false"):
        assert_tool_calls(_trip(), [("search", {"q": "Paris", "n": positive}), *EXACT[1:]])
    with pytest.raises(AssertionError, match=r"at /hotel: \"H-12\" does not fullmatch re 'H-1'"):
        assert_tool_calls(_trip(), [*EXACT[:2], ("book", {"hotel": re.compile("H-1")})])
    with pytest.raises(AssertionError, match=r"at /q: the predicate <lambda> raised TypeError"):
        assert_tool_calls(_trip(), [("search", {"q": lambda q: q > 1, "n": 3}), *EXACT[1:]])
    # matchers are shown as such in the table
    with pytest.raises(AssertionError) as info:
        assert_tool_calls(_trip(), [("search", {"q": re.compile("P.*"), "n": positive})])
    assert '#0 search {"q": re(\'P.*\'), "n": <positive>}' in str(info.value)


def test_unordered_pairs_each_actual_call_once() -> None:
    twice = _run(*_call("a", "add", '{"x": 1}'), *_call("b", "add", '{"x": 2}'))
    assert_tool_calls(twice, [("add", {"x": 2}), ("add", {"x": 1})], mode="unordered")
    # a matcher that fits both must not take the one the other expected call needs
    assert_tool_calls(twice, [("add", None), ("add", {"x": 1})], mode="unordered")
    with pytest.raises(AssertionError) as info:
        assert_tool_calls(twice, [("add", {"x": 1}), ("add", {"x": 1})], mode="unordered")
    text = str(info.value)
    assert text.splitlines()[0] == (
        "tool calls differ (mode='unordered', args='exact'; 2 expected, 2 made): expected call "
        '#1 (add {"x": 1}) did not happen; the closest, call #1, differs in the args at /x: '
        "expected 1 (int), got 2 (int)"
    )
    assert '  > #1 add {"x": 1} |' in text
    assert '#1 add {"x": 2}' in text.splitlines()[-1]


def test_subset_and_superset() -> None:
    # subset: every call made was expected; an expected call may not have happened
    assert_tool_calls(_trip(), [*EXACT, ("cancel", None)], mode="subset")
    with pytest.raises(AssertionError, match=r"\(mode='subset'.*call #2 book .* was not expected"):
        assert_tool_calls(_trip(), EXACT[:2], mode="subset")
    # superset: every expected call happened; others may have too
    assert_tool_calls(_trip(), [EXACT[2], EXACT[0]], mode="superset")
    with pytest.raises(AssertionError, match=r"expected call #1 \(cancel \(any args\)\) did not"):
        assert_tool_calls(_trip(), [EXACT[0], ("cancel", None)], mode="superset")


def test_bad_modes_name_the_allowed_values() -> None:
    with pytest.raises(
        InvalidArgumentError,
        match="mode must be one of 'strict', 'unordered', 'subset', 'superset', got 'ordered'",
    ):
        assert_tool_calls(_trip(), EXACT, mode="ordered")  # type: ignore[arg-type]
    with pytest.raises(
        InvalidArgumentError, match="args must be one of 'exact', 'subset', 'ignore', got 'loose'"
    ):
        assert_tool_calls(_trip(), EXACT, args="loose")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"expected\[1\] is .*\(name, args\) pair"):
        assert_tool_calls(_trip(), [EXACT[0], 3])


def test_an_empty_trajectory() -> None:
    assert_tool_calls(_run(), [])
    with pytest.raises(AssertionError, match=r"0 expected, 3 made"):
        assert_tool_calls(_trip(), [])
