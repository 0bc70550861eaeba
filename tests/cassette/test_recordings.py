"""agui_replay.cassette: recorded streams loaded, walked run by run, verified, folded."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.cassette._recordings import (
    initial_state,
    load_recording,
    state_at,
    verify_recording,
    walk,
)
from agui_replay.server import run_input


def _input(run: str, state: Any) -> dict[str, Any]:
    body = run_input("thread", run, state=state, messages=["hello"])
    dumped: dict[str, Any] = body.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


RUN_0: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "thread", "runId": "run-1"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
    {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
    {"type": "RUN_FINISHED", "threadId": "thread", "runId": "run-1"},
]
RUN_1: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "thread", "runId": "run-2"},
    {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 11}]},
    {"type": "RUN_FINISHED", "threadId": "thread", "runId": "run-2"},
]


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    # Run 1's client sent state {"n": 10}, not the {"n": 2} run 0 ended with.
    runs = [
        CassetteRun(input=_input("run-1", {"n": 0}), events=RUN_0),
        CassetteRun(input=_input("run-2", {"n": 10}), events=RUN_1),
    ]
    path = tmp_path / "two-runs.json"
    save_cassette(Cassette(runs=runs), path)
    return path


def test_a_cassette_loads_with_its_runs_and_the_line_of_every_event(cassette: Path) -> None:
    recording = load_recording(cassette)
    assert recording.kind == "cassette"
    assert [(r.index, r.start, r.end) for r in recording.runs] == [(0, 0, 4), (1, 4, 7)]
    assert recording.events == RUN_0 + RUN_1
    assert recording.run_of(5).index == 1
    lines = cassette.read_text(encoding="utf-8").splitlines()
    for index, event in enumerate(recording.events):
        line = recording.line_of(index)
        assert line is not None
        assert json.loads(lines[line - 1].strip().rstrip(",")) == event
        assert recording.where(index) == f"{cassette}:{line}"


def test_each_run_is_walked_from_the_state_its_input_carried(cassette: Path) -> None:
    recording = load_recording(cassette)
    steps = [(s.index, s.run.index, s.session.state, s.state_changed) for s in walk(recording)]
    assert steps == [
        (0, 0, {"n": 0}, False),
        (1, 0, {"n": 1}, True),
        (2, 0, {"n": 2}, True),
        (3, 0, {"n": 2}, False),
        (4, 1, {"n": 10}, False),
        (5, 1, {"n": 11}, True),
        (6, 1, {"n": 11}, False),
    ]
    assert initial_state(recording) == {"n": 0}
    only_the_second = [s.index for s in walk(recording, runs=recording.runs[1:])]
    assert only_the_second == [4, 5, 6]


def test_state_at_an_event_from_the_start_or_the_end(cassette: Path) -> None:
    recording = load_recording(cassette)
    expected = [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 2}, {"n": 10}, {"n": 11}, {"n": 11}]
    assert [state_at(recording, i) for i in range(7)] == expected
    assert [state_at(recording, i - 7) for i in range(7)] == expected
    assert state_at(recording) == {"n": 11}
    walked: list[int] = []
    assert state_at(recording, 2, on_step=walked.append) == {"n": 2}
    assert walked == [0, 1, 2, 3]  # the walk stops at the first event past #2
    for wrong in (7, -8):
        with pytest.raises(IndexError, match=f"event #{wrong} is out of range"):
            state_at(recording, wrong)


def test_an_empty_stream_has_its_initial_state_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    save_cassette(Cassette(runs=[]), path)
    recording = load_recording(path)
    assert recording.events == []
    assert state_at(recording) is None
    with pytest.raises(IndexError):
        state_at(recording, 0)


def test_verifying_names_the_rule_and_the_line_of_the_broken_event(tmp_path: Path) -> None:
    events = [
        RUN_0[0],
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},  # never started
        RUN_0[3],
    ]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n" + "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    recording = load_recording(path)
    assert recording.kind == "jsonl"
    violations, invalid = verify_recording(recording, "client")
    assert invalid == []
    assert [(v.index, v.event_type) for v in violations] == [(1, "TEXT_MESSAGE_CONTENT")]
    assert recording.where(violations[0].index) == f"{path}:3"  # line 1 is blank


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _long_stream(tmp_path: Path, deltas: int) -> Path:
    events = [
        RUN_0[0],
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"},) * deltas,
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        RUN_0[3],
    ]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_verifying_reports_progress_to_the_callback_and_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a terminal, with a clock where every reading is a second later, a counter that
    # printed on its own would have shown by now; the library leaves that to its caller.
    clock = iter(range(10**6))
    monkeypatch.setattr(time, "monotonic", lambda: float(next(clock)))
    monkeypatch.delenv("AGUI_REPLAY_NO_PROGRESS", raising=False)
    stderr = _Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    recording = load_recording(_long_stream(tmp_path, 600))
    calls: list[tuple[int, int]] = []
    assert verify_recording(recording, "client", progress=lambda *c: calls.append(c)) == ([], [])
    total = len(recording.events)
    assert calls == [(done, total) for done in range(1, total + 1)]
    assert verify_recording(recording, "strict") == ([], [])
    assert stderr.getvalue() == ""


def test_verifying_stops_reporting_where_it_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "unstarted.jsonl"
    stray = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"}
    path.write_text(json.dumps(stray) + "\n" + json.dumps(stray) + "\n", encoding="utf-8")
    calls: list[tuple[int, int]] = []
    violations, _ = verify_recording(
        load_recording(path), "client", limit=1, progress=lambda *c: calls.append(c)
    )
    assert len(violations) == 1
    assert calls == [(1, 2)]


def test_the_library_layer_runs_without_the_command_line(cassette: Path) -> None:
    code = (
        "import sys; from agui_replay.cassette import load_recording, state_at, verify_recording; "
        f"recording = load_recording({str(cassette)!r}); "
        "assert state_at(recording) == {'n': 11}; "
        "assert verify_recording(recording, 'client') == ([], []); "
        "print(sorted(m for m in sys.modules if m.split('.')[:2] == ['agui_replay', 'cli']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_json_lines_capture_may_hold_unicode_line_separators_in_its_strings(
    tmp_path: Path,
) -> None:
    # orjson (and json.dumps with ensure_ascii=False) leave U+2028, U+2029 and U+0085 unescaped.
    text = "one\u2028two\u2029three\x85four\x1cfive"
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": text},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    path = tmp_path / "capture.jsonl"
    path.write_bytes(b"\r\n".join(orjson.dumps(e) for e in events) + b"\n")
    recording = load_recording(path)
    assert recording.events == events
    assert recording.line_of(2) == 3
