"""What a re-record keeps of the file it replaces: the timing of a response that said the same
(offsets, chunk boundaries, how a long-lived stream ended), the session ids a server minted
anew, and the whole file when nothing else changed; a different answer is written."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from agui_replay.cassette import Cassette, CassetteRun, dumps_cassette, save_cassette
from agui_replay.recording._steady import steady_cassette

EVENTS = [
    {"type": "RUN_STARTED", "threadId": "thread", "runId": "run-1"},
    {"type": "RUN_FINISHED", "threadId": "thread", "runId": "run-1"},
]
URL = "http://127.0.0.1:8000/mcp"
OLD_ID, NEW_ID = "3f6c0d9e8b7a4c21a5e0f1d2c3b4a596", "9a8b7c6d5e4f40312a1b2c3d4e5f6071"


def _exchange(session: str, chunks: list[dict[str, Any]], **response: Any) -> dict[str, Any]:
    return {
        "request": {"method": "GET", "url": URL, "headers": {"mcp-session-id": session}},
        "response": {
            "status": 200,
            "headers": {"mcp-session-id": session},
            "chunks": chunks,
            **response,
        },
    }


def _cassette(http: list[dict[str, Any]], recorded_at: str) -> Cassette:
    run = CassetteRun(input={"threadId": "thread", "runId": "run-1"}, events=list(EVENTS))
    return Cassette(runs=[run], http=http, recorded_at=recorded_at)


def test_a_stream_that_said_the_same_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    old = [_exchange(OLD_ID, [{"offset": 0.01, "data": "one two"}], end_after=3)]
    save_cassette(_cassette(old, "2026-01-01T00:00:00Z"), path)
    before = path.read_bytes()
    # another session id, other reads, other offsets, closed by the client a moment first
    chunks = [{"offset": 0.02, "data": "one "}, {"offset": 0.05, "data": "two", "after": 2}]
    new = _cassette([_exchange(NEW_ID, chunks, open=True)], "2026-02-02T00:00:00Z")
    assert steady_cassette(new, path, secrets=[]) is None
    assert path.read_bytes() == before


def test_a_stream_that_said_something_else_is_written(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    old = [_exchange(OLD_ID, [{"offset": 0.01, "data": "one two"}])]
    save_cassette(_cassette(old, "2026-01-01T00:00:00Z"), path)
    changed = [_exchange(NEW_ID, [{"offset": 0.02, "data": "one three"}])]
    steady = steady_cassette(_cassette(changed, "2026-02-02T00:00:00Z"), path, secrets=[])
    assert steady is not None
    assert steady.recorded_at == "2026-02-02T00:00:00Z"
    response = steady.http[0]["response"]
    assert response["chunks"] == [{"offset": 0.02, "data": "one three"}]
    assert response["headers"] == {"mcp-session-id": OLD_ID}  # the id is read as the file's


def test_a_short_session_id_is_not_read_as_the_files(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_cassette(_cassette([_exchange("7", [{"offset": 0.01, "data": "7 days"}])], "x"), path)
    new = _cassette([_exchange("8", [{"offset": 0.02, "data": "7 days"}])], "y")
    steady = steady_cassette(new, path, secrets=[])
    assert steady is not None
    assert steady.http[0]["request"]["headers"] == {"mcp-session-id": "8"}


def test_exchanges_keep_their_timing_by_request_not_by_place(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    first = _exchange("s", [{"offset": 0.01, "data": "A"}])
    second = copy.deepcopy(first)
    second["request"]["url"] = URL + "?page=2"
    second["response"]["chunks"] = [{"offset": 0.03, "data": "B"}]
    save_cassette(_cassette([first, second], "2026-01-01T00:00:00Z"), path)
    now = copy.deepcopy([second, first])  # the other order, other offsets
    now[0]["response"]["chunks"][0]["offset"] = 0.5
    now[1]["response"]["chunks"][0]["offset"] = 0.6
    steady = steady_cassette(_cassette(now, "2026-02-02T00:00:00Z"), path, secrets=[])
    assert steady is not None  # the order changed: written, with the offsets of then
    assert [e["response"]["chunks"][0]["offset"] for e in steady.http] == [0.03, 0.01]
    assert dumps_cassette(steady) != path.read_text()
