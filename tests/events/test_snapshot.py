"""The syrupy extension for event streams, through real pytest runs (pytester)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agui_replay.errors import InvalidArgumentError
from agui_replay.snapshot import (
    AGUIFoldedSnapshotExtension,
    AGUISnapshotExtension,
    _agui_extension,
    _fold_deltas,
    _serialize_events,
)

CONFTEST = textwrap.dedent(
    """
    import pytest
    from agui_replay.snapshot import use_agui_extension

    @pytest.fixture
    def agui_snapshot(snapshot):
        return use_agui_extension(snapshot)

    @pytest.fixture
    def agui_folded_snapshot(snapshot):
        return use_agui_extension(snapshot, fold=True)
    """
)

# A stream like a framework's: random ids and wall-clock timestamps on every run.
TEST_AGENT = textwrap.dedent(
    """
    import os, time, uuid
    from agui_replay.snapshot import AGUISnapshotExtension

    def stream(text=("Hel", "lo"), extra=False):
        mid, cid = str(uuid.uuid4()), "call_" + uuid.uuid4().hex
        now = lambda: int(time.time() * 1000)
        events = [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": now()},
            {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant",
             "timestamp": now()},
        ]
        events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": d} for d in text]
        events += [{"type": "TEXT_MESSAGE_END", "messageId": mid},
                   {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": "f",
                    "parentMessageId": mid},
                   {"type": "TOOL_CALL_END", "toolCallId": cid}]
        if extra:
            events.append({"type": "CUSTOM", "name": "extra", "value": 1})
        events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "timestamp": now()})
        return events

    TEXT = tuple(os.environ.get("AGUI_TEST_TEXT", "Hel,lo").split(","))
    EXTRA = bool(os.environ.get("AGUI_TEST_EXTRA"))

    def test_stream(agui_snapshot):
        assert stream(TEXT, EXTRA) == agui_snapshot

    def test_with_extension_class(snapshot):
        assert stream(TEXT, EXTRA) == snapshot(extension_class=AGUISnapshotExtension)
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # Under `pytest -n 2` this variable is inherited by the inner run, and syrupy then treats
    # the inner run as an xdist worker and skips its unused-snapshot report.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # these runs do not use hypothesis, and its pytest plugin slows every in-process run down
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def _snap(pytester: pytest.Pytester, name: str, ext: str = "agui.jsonl") -> Path:
    return pytester.path / "__snapshots__" / "test_agent" / f"{name}.{ext}"


def test_update_writes_then_replays_pass(project: pytest.Pytester) -> None:
    first = _run(project)
    first.assert_outcomes(failed=2)
    first.stdout.fnmatch_lines(["*Snapshot 'test_stream' does not exist!*"])

    written = _run(project, "--snapshot-update")
    written.assert_outcomes(passed=2)
    path = _snap(project, "test_stream")
    lines = path.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    # one event per line, normalized: run-id-derived ids, no timestamps, type first
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    assert events[1]["messageId"] == events[5]["parentMessageId"] == "r-msg-1"
    assert events[5]["toolCallId"] == "r-call-1"
    assert all("timestamp" not in e for e in events)
    assert all(line.startswith('{"type": ') for line in lines)
    assert _snap(project, "test_with_extension_class").read_text() == path.read_text()

    # fresh random ids and timestamps, same stream: passes without updating
    again = _run(
        project,
    )
    again.assert_outcomes(passed=2)
    assert path.read_text(encoding="utf-8").splitlines() == lines


def test_a_changed_stream_fails_naming_the_event(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("AGUI_TEST_TEXT", "Hel,LO")
    result = _run(project, "-vv", "-k", "test_stream")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*event streams differ at event #3 (TEXT_MESSAGE_CONTENT): field /delta*",
            '*/delta: snapshot "lo" != received "LO"*',
            '*- {"type": "TEXT_MESSAGE_CONTENT", "delta": "lo", "messageId": "r-msg-1"}*',
            '*+ {"type": "TEXT_MESSAGE_CONTENT", "delta": "LO", "messageId": "r-msg-1"}*',
        ]
    )
    # --snapshot-update accepts the new stream
    monkeypatch.setenv("AGUI_TEST_TEXT", "Hel,LO")
    _run(project, "--snapshot-update").assert_outcomes(passed=2)
    assert '"LO"' in _snap(project, "test_stream").read_text()
    _run(
        project,
    ).assert_outcomes(passed=2)


def test_an_added_event_is_reported_with_its_index(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(project, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("AGUI_TEST_EXTRA", "1")
    result = _run(project, "-vv", "-k", "test_stream")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*event streams differ at event #7: type RUN_FINISHED != CUSTOM*"])


def test_unused_snapshots_are_reported_and_pruned_by_update(project: pytest.Pytester) -> None:
    _run(project, "--snapshot-update").assert_outcomes(passed=2)
    project.makepyfile(
        test_agent=TEST_AGENT.replace("def test_with_extension_class", "def test_renamed")
    )
    result = _run(
        project,
    )
    result.assert_outcomes(passed=1, failed=1)  # the renamed test has no snapshot yet
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    _run(project, "--snapshot-update").assert_outcomes(passed=2)
    assert not _snap(project, "test_with_extension_class").exists()
    assert _snap(project, "test_renamed").exists()


def test_folded_snapshot_ignores_chunking(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_agent=TEST_AGENT
        + textwrap.dedent(
            """
            def test_folded(agui_folded_snapshot):
                assert stream(TEXT, EXTRA) == agui_folded_snapshot
            """
        )
    )
    _run(project, "--snapshot-update", "-k", "test_folded").assert_outcomes(passed=1, deselected=2)
    lines = _snap(project, "test_folded").read_text(encoding="utf-8").splitlines()
    assert '{"type": "TEXT_MESSAGE_CONTENT", "delta": "Hello", "messageId": "r-msg-1"}' in lines
    assert len(lines) == 7
    monkeypatch.setenv("AGUI_TEST_TEXT", "H,e,l,l,o")
    _run(project, "-k", "test_folded").assert_outcomes(passed=1, deselected=2)
    monkeypatch.setenv("AGUI_TEST_TEXT", "H,a,l,l,o")
    failed = _run(project, "-vv", "-k", "test_folded")
    failed.assert_outcomes(failed=1, deselected=2)
    failed.stdout.fnmatch_lines(["*event #2 (TEXT_MESSAGE_CONTENT): field /delta*"])


def test_matchers_and_filters(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_agent=TEST_AGENT
        + textwrap.dedent(
            """
            from syrupy.filters import props
            from syrupy.matchers import path_type
            from agui_replay.snapshot import volatile

            def test_volatile(agui_snapshot):
                assert stream() == agui_snapshot(matcher=volatile("threadId"))

            def test_exclude(agui_snapshot):
                assert stream() == agui_snapshot(exclude=props("role", "parentMessageId"))

            def test_path_type(agui_snapshot):
                assert stream() == agui_snapshot(matcher=path_type({"2.delta": (str,)}))
            """
        )
    )
    _run(project, "--snapshot-update", "-k", "volatile or exclude or path_type").assert_outcomes(
        passed=3, deselected=2
    )
    volatile_lines = _snap(project, "test_volatile").read_text().splitlines()
    assert json.loads(volatile_lines[0]) == {
        "type": "RUN_STARTED",
        "runId": "r",
        "threadId": "<volatile>",
    }
    excluded = [json.loads(x) for x in _snap(project, "test_exclude").read_text().splitlines()]
    assert "role" not in excluded[1]
    assert "parentMessageId" not in excluded[5]
    typed = [json.loads(x) for x in _snap(project, "test_path_type").read_text().splitlines()]
    assert typed[2]["delta"] == "str"
    assert typed[3]["delta"] == "lo"
    _run(project, "-k", "volatile or exclude or path_type").assert_outcomes(passed=3, deselected=2)


# --- the serializer on its own ------------------------------------------------------------------


def _content(mid: str, delta: str) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta}


def test_fold_deltas_per_message_and_reopened_ids() -> None:
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},
        _content("a", "x"),
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"a"'},
        _content("a", "y"),
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": ": 1}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TEXT_MESSAGE_END", "messageId": "a"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},  # reopened
        _content("a", "z"),
        {"type": "TEXT_MESSAGE_END", "messageId": "a"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "k", "delta": "p"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "q"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "k2", "delta": "r"},
    ]
    before = json.dumps(events)
    folded = _fold_deltas(events)
    assert json.dumps(events) == before  # input untouched
    assert [(e["type"], e.get("delta")) for e in folded] == [
        ("TEXT_MESSAGE_START", None),
        ("TEXT_MESSAGE_CONTENT", "xy"),
        ("TOOL_CALL_START", None),
        ("TOOL_CALL_ARGS", '{"a": 1}'),
        ("TOOL_CALL_END", None),
        ("TEXT_MESSAGE_END", None),
        ("TEXT_MESSAGE_START", None),
        ("TEXT_MESSAGE_CONTENT", "z"),
        ("TEXT_MESSAGE_END", None),
        ("TEXT_MESSAGE_CHUNK", "pq"),
        ("TEXT_MESSAGE_CHUNK", "r"),
    ]


def test_serialize_is_one_event_per_line_even_with_newlines_in_text() -> None:
    text = _serialize_events(
        [
            _content("m", "line1\nline2"),
            {"type": "STATE_SNAPSHOT", "snapshot": {"b": 1, "a": [1.0, True]}},
        ]
    )
    lines = text.splitlines()
    assert len(lines) == 2
    assert lines[1] == '{"type": "STATE_SNAPSHOT", "snapshot": {"a": [1.0, true], "b": 1}}'


def test_extension_variants() -> None:
    assert _agui_extension() is AGUISnapshotExtension
    assert _agui_extension(fold=True) is AGUIFoldedSnapshotExtension
    custom = _agui_extension(normalize=False)
    assert custom is _agui_extension(normalize=False)
    assert issubclass(custom, AGUISnapshotExtension)
    raw = custom().serialize(
        [{"type": "TEXT_MESSAGE_START", "messageId": "uuid-1", "timestamp": 5}]
    )
    assert raw == '{"type": "TEXT_MESSAGE_START", "messageId": "uuid-1", "timestamp": 5}\n'
    with pytest.raises(InvalidArgumentError, match="list of events"):
        AGUISnapshotExtension().serialize({"not": "a stream"})
