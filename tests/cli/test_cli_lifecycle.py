"""The CLI across runs: `show` prints interrupt and resume ids that agree, `state --run N`
honours the run, `serve` treats a client disconnect as normal (one line at most)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agui_replay.cassette._recordings import load_recording, state_at
from agui_replay.cli import main
from agui_replay.recording import CassetteSession


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _approval_agent(ctx: Any) -> Any:
    """Asks for approval (an interrupt) on the first run; the resumed run says what it got."""
    if not ctx.input.resume:
        ctx.say("may I?")
        return ctx.interrupt({"id": "ask-approval", "reason": "confirm", "message": "ok?"})
    ctx.say(f"resumed with {ctx.input.resume[0].status}")
    return None


def _resume_input(interrupt_id: str) -> dict[str, Any]:
    return {
        "threadId": "thread",
        "runId": "run-2",
        "resume": [{"interruptId": interrupt_id, "status": "resolved"}],
    }


def _interrupt_and_resume_lines(out: str) -> tuple[str, str]:
    interrupt = next(line for line in out.splitlines() if " interrupt " in line)
    resume = next(line for line in out.splitlines() if "resume:" in line)
    return interrupt.split(" interrupt ", 1)[1].split()[0], resume.split("resume:", 1)[1].split()[0]


def test_show_prints_the_same_interrupt_id_in_the_outcome_and_the_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "approval.json"
    with CassetteSession(path, mode="once") as agui:
        first = agui.run(_approval_agent, "do it")
        asked = first[-1]["outcome"]["interrupts"][0]["id"]
        agui.run(_approval_agent, _resume_input(asked))
    code, out, _ = run_cli(capsys, "show", str(path), "--no-color")
    assert code == 0
    interrupt, resume = _interrupt_and_resume_lines(out)
    assert interrupt == resume
    assert interrupt != "ask-approval"  # the normalized name, on both lines
    assert "stored as" not in out


def _stored_resume(path: Path, interrupt_id: str, *, version: int | None = None) -> Path:
    """An approval cassette (interrupt, then resume) whose stored resume names
    ``interrupt_id``, optionally marked as another format version."""
    with CassetteSession(path, mode="once") as agui:
        agui.run(_approval_agent, "do it")
        agui.run(_approval_agent, _resume_input("ask-approval"))
    doc = json.loads(path.read_text(encoding="utf-8"))
    if version is not None:
        doc["version"] = version
    doc["runs"][1]["input"]["resume"][0]["interruptId"] = interrupt_id
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def test_show_maps_a_format_1_resume_to_the_interrupt_it_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Format 1 stored inputs raw and events normalized: the resume names the raw id, which
    # the migration on load reads as the interrupt it answers.
    path = _stored_resume(tmp_path / "old.json", "ask-approval", version=1)
    code, out, _ = run_cli(capsys, "show", str(path), "--no-color")
    assert code == 0
    interrupt, resume = _interrupt_and_resume_lines(out)
    assert interrupt == resume
    assert interrupt != "ask-approval"
    assert "ask-approval" not in out
    assert "answers none" not in out


def test_show_says_when_a_resume_answers_no_open_interrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _stored_resume(tmp_path / "wrong.json", "nobody-asked")
    _, out, _ = run_cli(capsys, "show", str(path), "--no-color")
    assert "resume: nobody-asked (answers none of the interrupts open: " in out


def _counting_agent(ctx: Any) -> None:
    count = int((ctx.input.state or {}).get("count", 0)) + 1
    ctx.set_state({"count": count, "runs": [f"run {count}"] * count})
    ctx.say(f"count is {count}")


def test_state_run_n_is_the_state_at_the_end_of_that_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "count.json"
    with CassetteSession(path, mode="once") as agui:
        state: dict[str, Any] = {}
        for n in range(3):
            agui.run(_counting_agent, {"threadId": "t", "runId": f"run-{n + 1}", "state": state})
            state = {"count": n + 1, "runs": [f"run {n + 1}"] * (n + 1)}  # what it published
    recording = load_recording(path)
    seen = []
    for n, run in enumerate(recording.runs):
        code, out, _ = run_cli(capsys, "state", str(path), "--run", str(n), "--compact")
        assert code == 0
        assert json.loads(out) == state_at(recording, run.end - 1)
        seen.append(json.loads(out))
    assert [s["count"] for s in seen] == [1, 2, 3]
    assert seen[-1] == state
    code, _, err = run_cli(capsys, "state", str(path), "--run", "3")
    assert code == 2
    assert "run 3" in err


def _big_recording(path: Path, deltas: int) -> None:
    def chatty(ctx: Any) -> None:
        with ctx.message("assistant") as message:
            for i in range(deltas):
                message.delta(f"word {i} ")

    with CassetteSession(path, mode="once") as agui:
        agui.run(chatty, "talk")


def test_serve_reports_a_client_disconnect_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    _big_recording(path, 3000)
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:  # a file: a flood of lines would fill a pipe, stall the server
        server = subprocess.Popen(
            [sys.executable, "-m", "agui_replay", "serve", str(path), "--speed", "0"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        body = json.dumps({"threadId": "t", "runId": "r", "messages": []}).encode()
        request = (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        ) + body
        clients = 4
        for _ in range(clients):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                client.sendall(request)
                client.recv(512)  # the headers and a first event, then hang up with a reset
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
        time.sleep(1.0)
    finally:
        server.terminate()
        server.communicate(timeout=20)
    err = log.read_text(encoding="utf-8")
    lines = err.splitlines()
    assert "Traceback" not in err
    assert "socket.send() raised exception" not in err
    disconnects = [line for line in lines if "client disconnected" in line]
    assert 1 <= len(disconnects) <= clients
    # the banner, one line per request, at most one per disconnect, "stopped"
    assert len(lines) <= 2 + 2 * clients, err


def test_a_broken_cassettes_hint_names_its_test_outside_pytest_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text(
        json.dumps({"version": 99, "name": "tests/test_x.py::test_y", "runs": []}),
        encoding="utf-8",
    )
    code, _, err = run_cli(capsys, "show", str(newer))
    assert code == 2
    assert "Re-record it with `pytest tests/test_x.py::test_y --agui-record`" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    code, _, err = run_cli(capsys, "show", str(broken))
    assert code == 2
    assert "`pytest --agui-record`" not in err  # never the command that re-records everything
    assert "`pytest path/to/test_file.py::test_name --agui-record` (the test that uses" in err
