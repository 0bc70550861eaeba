"""The progress line: only the command line draws it, through the callbacks the library takes."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from agui_replay.cassette import load_recording
from agui_replay.cli import main
from agui_replay.cli._viewer import view_data

CONTENT = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> _Terminal:
    """stderr as a terminal, on a clock where each reading is a second after the last, so the
    progress line shows at every 256th event. Called in the test itself: pytest sets its own
    capturing streams between a fixture's setup and the test."""
    clock = iter(range(10**6))
    monkeypatch.setattr(time, "monotonic", lambda: float(next(clock)))
    monkeypatch.delenv("AGUI_REPLAY_NO_PROGRESS", raising=False)
    stderr = _Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    return stderr


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    """A valid JSON-lines stream of 600 events."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        *[CONTENT] * 596,
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def test_verify_draws_its_progress_line_and_clears_it(
    stream: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = on_a_terminal(monkeypatch)
    assert main(["verify", str(stream)]) == 0
    assert terminal.getvalue() == "\rverify: 256/600 events\rverify: 512/600 events\r\033[K"
    assert "follow" in capsys.readouterr().out


def test_view_draws_the_walk_then_the_verification(
    stream: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = on_a_terminal(monkeypatch)
    assert main(["view", str(stream), "-o", "-"]) == 0
    assert terminal.getvalue() == (
        "\rview: 256/600 events\rview: 512/600 events\r\033[K"
        "\rverify: 256/600 events\rverify: 512/600 events\r\033[K"
    )
    assert capsys.readouterr().out.startswith("<!DOCTYPE html>")


def test_the_viewer_data_prints_nothing_and_reports_to_its_callbacks(
    stream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = on_a_terminal(monkeypatch)
    recording = load_recording(stream)
    walked: list[tuple[int, int]] = []
    verified: list[tuple[int, int]] = []
    data = view_data(
        recording,
        progress=lambda *c: walked.append(c),
        verify_progress=lambda *c: verified.append(c),
    )
    assert data["valid"]
    assert walked == verified == [(done, 600) for done in range(1, 601)]
    assert view_data(recording) == data
    assert terminal.getvalue() == ""
