"""The ``agui-replay`` command, run in process through ``main([...])`` and as the installed
console script, on cassettes recorded from the real run driver (the task-board example agent).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_replay.cassette import Cassette, CassetteRun, load_recording, save_cassette
from agui_replay.cli import main, replay_app
from agui_replay.cli._parser import build_parser
from agui_replay.cli._progress import Progress
from agui_replay.cli._serve import _event_delays
from agui_replay.client import Session
from agui_replay.events import to_wire
from agui_replay.patch import apply_patch
from agui_replay.server import run_agent_sync, run_input
from agui_replay.server.testing import serve
from agui_replay.sse import decode_sse, encode_sse
from tests.support.serve_cli import serving

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.task_board.agent import CLEAR_INTERRUPT, TaskBoard  # noqa: E402
from examples.task_board.board import TOOLS  # noqa: E402

SCRIPT = Path(sys.executable).with_name("agui-replay")

SAID = ["add alpha, beta", "complete alpha", "clear"]


def record_board(path: Path) -> Cassette:
    """Three runs of the task-board agent through the real run driver, saved as a cassette:
    two tasks added, one completed, then a clear that stops on an interrupt."""
    state: Any = None
    messages: list[dict[str, Any]] = []
    runs = []
    for n, said in enumerate(SAID, start=1):
        history = [*messages, {"id": f"user-{n}", "role": "user", "content": said}]
        body = run_input("board", f"run-{n}", state=state, messages=history, tools=TOOLS)
        events = [to_wire(e) for e in run_agent_sync(TaskBoard(), body)]
        session = Session(state=state, messages=history).apply_all(events).finish()
        state, messages = session.state, list(session.messages)
        runs.append(
            CassetteRun(
                input=body.model_dump(by_alias=True, mode="json", exclude_none=True), events=events
            )
        )
    cassette = Cassette(runs=runs)
    save_cassette(cassette, path)
    return cassette


def replay_run(cassette: Cassette, index: int) -> Session:
    """What a client that sent run ``index``'s recorded input ends with."""
    run = cassette.runs[index]
    session = Session(state=run.input.get("state"), messages=run.input.get("messages"))
    return session.apply_all(run.events).finish()


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("board")
    cassette = record_board(folder / "board.json")
    events = cassette.events
    sse = folder / "board.sse"
    sse.write_bytes(b": a keep-alive comment\n\n" + b"".join(encode_sse(e) for e in events))
    jsonl = folder / "board.jsonl"
    jsonl.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return {
        "folder": folder,
        "cassette": cassette,
        "path": folder / "board.json",
        "sse": sse,
        "jsonl": jsonl,
        "events": events,
    }


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def first_index(events: list[dict[str, Any]], kind: str, **fields: Any) -> int:
    return next(
        i
        for i, e in enumerate(events)
        if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())
    )


# --- reading inputs ------------------------------------------------------------------------


def test_the_three_input_formats_load_to_the_same_stream(board: dict[str, Any]) -> None:
    from_cassette = load_recording(board["path"])
    from_sse = load_recording(board["sse"])
    from_jsonl = load_recording(board["jsonl"])
    assert from_cassette.kind == "cassette"
    assert from_sse.kind == "sse"
    assert from_jsonl.kind == "jsonl"
    assert from_cassette.events == from_sse.events == from_jsonl.events == board["events"]
    # A bare stream is cut into runs at each RUN_STARTED, like the cassette's runs.
    assert [len(r.events) for r in from_sse.runs] == [len(r.events) for r in from_cassette.runs]
    # The JSON-lines reader knows each event's line; the SSE one skips the comment frame.
    assert from_jsonl.line_of(4) == 5
    assert from_sse.line_of(0) == 3


def test_a_jsonl_capture_saved_as_txt_is_recognized_by_its_content(
    board: dict[str, Any], tmp_path: Path
) -> None:
    plain = tmp_path / "capture.txt"
    plain.write_text(board["jsonl"].read_text(encoding="utf-8"), encoding="utf-8")
    sse_txt = tmp_path / "capture2.txt"
    sse_txt.write_bytes(board["sse"].read_bytes())
    assert load_recording(plain).kind == "jsonl"
    assert load_recording(sse_txt).kind == "sse"
    assert load_recording(plain).events == load_recording(sse_txt).events


# --- show -----------------------------------------------------------------------------------


def test_show_prints_assembled_messages_tool_calls_state_and_the_interrupt(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "show", board["path"], "--no-color", "--full")
    assert code == 0
    events = board["events"]
    # The reply of run 0, put together from its TEXT_MESSAGE_CONTENT deltas.
    reply_id = events[first_index(events, "TEXT_MESSAGE_START")]["messageId"]
    reply = "".join(
        e["delta"]
        for e in events
        if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] == reply_id
    )
    assert f"assistant {reply_id}" in out
    assert json.dumps(reply, ensure_ascii=False) in out
    # Tool calls with their arguments, and their results.
    assert "add_task" in out
    assert '{"title":"alpha"}' in out
    assert '{"title":"beta"}' in out
    assert "tool result" in out
    assert "complete_task" in out
    assert '{"task":"alpha"}' in out
    # The state after a change, compact, and the done flag flipping in run 1.
    assert '"title":"beta"' in out.split("── run 1")[0]
    assert '"done":true' in out.split("── run 1")[1]
    # The third run ends on the clear confirmation.
    assert CLEAR_INTERRUPT in out
    assert "interrupt" in out
    assert "\033[" not in out
    assert out.count("── run ") == 3


def test_show_one_run_and_colours(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_cli(capsys, "show", board["path"], "--run", "1")
    assert code == 0
    assert out.count("── run ") == 1
    assert "── run 1" in out
    assert "tool call add_task" not in out  # run 0's calls are not shown
    assert "tool call complete_task" in out
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, coloured, _ = run_cli(capsys, "show", board["path"], "--run", "1")
    assert "\033[" in coloured
    _, plain, _ = run_cli(capsys, "show", board["path"], "--run", "1", "--no-color")
    assert "\033[" not in plain
    code, _, err = run_cli(capsys, "show", board["path"], "--run", "7")
    assert code == 2
    assert "--run 7 is out of range" in err
    assert "3 run(s)" in err


# --- verify ---------------------------------------------------------------------------------


def test_verify_accepts_a_recorded_stream_in_both_modes(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for source in (board["path"], board["sse"], board["jsonl"]):
        for mode in ("client", "strict"):
            code, out, _ = run_cli(capsys, "verify", source, "--mode", mode)
            assert code == 0, out
            assert out.startswith("ok")
            assert f"{len(board['events'])} event(s)" in out


def test_verify_takes_several_files_and_folders_of_cassettes(
    board: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cassettes" / "test_mod"
    folder.mkdir(parents=True)
    (folder / "a.json").write_bytes(board["path"].read_bytes())
    (folder / "b.json").write_bytes(board["path"].read_bytes())
    code, out, _ = run_cli(capsys, "verify", "--mode", "strict", tmp_path / "cassettes")
    assert code == 0, out
    assert out.splitlines()[-1] == "all 2 file(s) follow the AG-UI ordering rules (strict mode)"
    assert f"{folder / 'a.json'}: ok" in out
    # One bad file among good ones: exit 1, the bad one named with its rule.
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "TEXT_MESSAGE_END", "messageId": "m"}) + "\n")
    code, out, _ = run_cli(capsys, "verify", folder / "a.json", bad)
    assert code == 1
    assert f"{bad}:1: TEXT_MESSAGE_END #0" in out
    code, out, _ = run_cli(capsys, "verify", "--json", folder / "a.json", folder / "b.json")
    assert [entry["ok"] for entry in json.loads(out)] == [True, True]
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(capsys, "verify", empty)
    assert code == 2
    assert "a folder with no cassette (*.json) in it" in err


def test_verify_names_the_rule_the_event_and_the_file_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    # A blank line in the middle: line numbers are the file's, not the event count.
    bad.write_text(
        "\n".join(json.dumps(e) for e in lines[:2])
        + "\n\n"
        + "\n".join(json.dumps(e) for e in lines[2:]),
        encoding="utf-8",
    )
    code, out, _ = run_cli(capsys, "verify", bad)
    assert code == 1
    assert f"{bad}:4: TOOL_CALL_ARGS #2 breaks rule not-open" in out
    assert '"c2"' in out
    # How to fix it, on its own indented line right under the violation.
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "breaks rule not-open" in line)
    assert lines[at + 1] == (
        '  fix: emit TOOL_CALL_START for "c2" before its arguments, or use the id of a call '
        "that is open"
    )

    code, out, _ = run_cli(capsys, "verify", bad, "--json")
    assert code == 1
    result = json.loads(out)
    assert result["ok"] is False
    assert result["mode"] == "client"
    assert result["events"] == 5
    [violation] = result["violations"]
    assert violation["rule"] == "not-open"
    assert violation["event_type"] == "TOOL_CALL_ARGS"
    assert violation["index"] == 2
    assert violation["line"] == 4
    assert violation["ids"] == ["c2"]
    assert violation["hint"].startswith('emit TOOL_CALL_START for "c2"')
    assert violation["hint"] not in violation["message"]


def test_strict_mode_rejects_what_client_mode_lets_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.sse"
    cut.write_bytes(
        encode_sse({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
        + encode_sse({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
        + encode_sse({"type": "TEXT_MESSAGE_END", "messageId": "m"})
    )
    assert run_cli(capsys, "verify", cut)[0] == 0
    code, out, _ = run_cli(capsys, "verify", cut, "--mode", "strict", "--json")
    assert code == 1
    assert json.loads(out)["violations"][0]["rule"] == "incomplete"


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "line", "words"),
    [
        (
            "broken.jsonl",
            '{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n{"type": "RUN_FIN\n',
            3,
            "not valid JSON",
        ),
        (
            "unknown.jsonl",
            '{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n{"type": "THINKING_START"}\n',
            2,
            "THINKING_START",
        ),
        (
            "frames.sse",
            'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\ndata: oops\n\n',
            3,
            "not JSON",
        ),
        ("broken.json", '{\n  "version": 1,\n  "runs": [\n    {,\n', 4, "not valid JSON"),
        ("empty.txt", "", 1, "empty"),
    ],
)
def test_a_bad_input_file_exits_2_naming_file_and_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: str,
    line: int,
    words: str,
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    for command in ("show", "verify", "state", "view"):
        code, _, err = run_cli(capsys, command, path, *(["-o", "-"] if command == "view" else []))
        assert code == 2, command
        assert f"{path}:{line}:" in err, err
        assert words in err


def test_a_missing_file_and_a_bad_flag_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "show", tmp_path / "nope.json")
    assert code == 2
    assert "nope.json" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", "x.json", "--mode", "lenient"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_verify_json_reports_an_input_error_as_json_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("[1]\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "verify", path, "--json")
    assert code == 2
    result = json.loads(out)
    assert result["ok"] is False
    assert f"{path}:1" in result["error"]


# --- diff -----------------------------------------------------------------------------------


def _renamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same stream as a framework with random ids and a clock would produce it."""
    text = json.dumps(events)
    for old in sorted({e.get("messageId") for e in events if e.get("messageId")}, reverse=True):
        text = text.replace(f'"{old}"', f'"uuid-{abs(hash(old)) % 10**8:08d}"')
    out = json.loads(text)
    for n, event in enumerate(out):
        event["timestamp"] = 1_700_000_000_000 + n
    return out


def test_diff_is_event_aware(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    events = board["events"]
    code, out, _ = run_cli(capsys, "diff", board["path"], board["sse"])
    assert code == 0
    assert out.startswith("same")

    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text("".join(json.dumps(e) + "\n" for e in _renamed(events)), encoding="utf-8")
    assert run_cli(capsys, "diff", board["path"], renamed)[0] == 0
    code, out, _ = run_cli(capsys, "diff", board["path"], renamed, "--raw")
    assert code == 1
    assert "event streams differ at event #0" in out

    changed = [dict(e) for e in events]
    at = first_index(changed, "TOOL_CALL_ARGS")
    changed[at]["delta"] = '{"title":"gamma"}'
    other = tmp_path / "changed.jsonl"
    other.write_text("".join(json.dumps(e) + "\n" for e in changed), encoding="utf-8")
    code, out, _ = run_cli(capsys, "diff", board["path"], other, "--no-color")
    assert code == 1
    assert f"event streams differ at event #{at} (TOOL_CALL_ARGS): field /delta" in out
    assert "gamma" in out
    # The recorded state did not change (only the arguments did).
    assert "final state: same" in out


def _tool_result_stream(result_message_id: str) -> str:
    """A run with one tool call whose result message has the id ``result_message_id``."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "call_a", "toolCallName": "weather"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "call_a", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "call_a"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": result_message_id,
            "toolCallId": "call_a",
            "content": "sunny",
        },
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_diff_sees_a_broken_link_between_two_ids_in_either_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The tool result named after its call (one raw id in two roles), then given an id of its
    # own: both orders report the field, neither says "same".
    linked, broken = tmp_path / "linked.jsonl", tmp_path / "broken.jsonl"
    linked.write_text(_tool_result_stream("call_a"), encoding="utf-8")
    broken.write_text(_tool_result_stream("result_1"), encoding="utf-8")
    for a, b in ((linked, broken), (broken, linked)):
        code, out, _ = run_cli(capsys, "diff", a, b, "--no-color")
        assert code == 1, out
        assert "differ at event #4 (TOOL_CALL_RESULT): field /messageId" in out
    assert run_cli(capsys, "diff", linked, linked)[0] == 0


# --- state ----------------------------------------------------------------------------------


def test_state_final_and_at_an_event(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    events = board["events"]
    code, out, _ = run_cli(capsys, "state", board["path"])
    assert code == 0
    final = json.loads(out)
    # After "add alpha, beta", "complete alpha" and an unanswered "clear": both tasks, alpha done.
    assert [(t["title"], t["done"]) for t in final["tasks"]] == [("alpha", True), ("beta", False)]

    first_publish = first_index(events, "STATE_SNAPSHOT")
    code, out, _ = run_cli(capsys, "state", board["path"], "--at", str(first_publish))
    assert code == 0
    assert [t["title"] for t in json.loads(out)["tasks"]] == ["alpha"]
    # Just before the first publish the client still has the input state (none: the reference
    # agent's `{}`).
    code, out, _ = run_cli(capsys, "state", board["path"], "--at", str(first_publish - 1))
    assert json.loads(out) == {}

    code, out, _ = run_cli(capsys, "state", board["path"], "--run", "0", "--compact")
    assert code == 0
    assert "\n" not in out.strip()
    assert [(t["title"], t["done"]) for t in json.loads(out)["tasks"]] == [
        ("alpha", False),
        ("beta", False),
    ]
    for source in (board["sse"], board["jsonl"]):
        assert json.loads(run_cli(capsys, "state", source, "--at", "-1")[1]) == final
    code, _, err = run_cli(capsys, "state", board["path"], "--at", str(len(events)))
    assert code == 2
    assert "out of range" in err


# --- view -----------------------------------------------------------------------------------


def test_view_writes_one_self_contained_page(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "page.html"
    code, _, err = run_cli(capsys, "view", board["path"], "-o", target, "--at", "9")
    assert code == 0
    assert str(target) in err
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    # Nothing is fetched: no external script, style sheet, image or font.
    lowered = page.lower()
    assert "<script src" not in lowered
    assert "<link" not in lowered
    assert "@import" not in lowered
    assert "http://" not in lowered
    assert "https://" not in lowered
    data_text = page.split('<script id="agui-data" type="application/json">')[1].split("</script>")[
        0
    ]
    data = json.loads(data_text)
    assert data["events"] == board["events"]
    assert data["selected"] == 9
    # Replaying the page's state operations gives the client's state at every event.
    state = data["initialState"]
    ops_at = {index: ops for index, ops in data["stateOps"]}
    for index in range(len(board["events"])):
        if index in ops_at:
            state = apply_patch(state, ops_at[index])
        if index % 7 == 0 or index == len(board["events"]) - 1:
            expected = json.loads(run_cli(capsys, "state", board["path"], "--at", str(index))[1])
            assert state == expected, index
    # Every message the client ends with is in the chat data, with its final text.
    final = replay_run(board["cassette"], 2).messages
    chat = {m["id"]: m["message"] for m in data["messages"]}
    assert all(chat[m["id"]] == m for m in final)
    code, out, _ = run_cli(capsys, "view", board["path"], "-o", "-")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>")


def test_view_keeps_hostile_text_inside_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evil.jsonl"
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "</script><script>alert(1)</script>",
        },
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    code, page, _ = run_cli(capsys, "view", path, "-o", "-")
    assert code == 0
    assert "<script>alert(1)" not in page
    data_text = page.split('<script id="agui-data" type="application/json">')[1].split("</script>")[
        0
    ]
    assert json.loads(data_text)["events"][2]["delta"] == events[2]["delta"]


# --- serve ----------------------------------------------------------------------------------


def test_the_replay_endpoint_streams_each_recorded_run_in_turn(board: dict[str, Any]) -> None:
    cassette = board["cassette"]
    app = replay_app(load_recording(board["path"]), speed=0)
    with serve(app) as url, httpx.Client(timeout=10.0) as http:
        for n in (0, 1, 2, 0):
            response = http.post(
                url, json=cassette.runs[n].input, headers={"accept": "text/event-stream"}
            )
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert decode_sse(response.content) == cassette.runs[n].events
        assert http.get(url).status_code == 405
        refused = http.post(url, json={"threadId": "t"})
        assert refused.status_code == 400
        assert "RunAgentInput" in refused.json()["message"]
        # JSON that only Python reads (NaN), or nested past the limits: refused, as capture does
        for body in (b'{"threadId": NaN}', b"[" * 100_000 + b"]" * 100_000):
            refused = http.post(url, content=body, headers={"content-type": "application/json"})
            assert refused.status_code == 400
            assert "not valid JSON" in refused.json()["message"]
        preflight = http.options(url)
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "*"


def as_posted(events: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded events with the posted threadId/runId, as `serve` streams them."""
    first = events[0]
    names = {k: {first[k]: body[k]} for k in ("threadId", "runId")}
    return [{**e, **{k: m[e[k]] for k, m in names.items() if e.get(k) in m}} for e in events]


def test_a_fixed_run_is_served_for_every_request(board: dict[str, Any]) -> None:
    cassette = board["cassette"]
    app = replay_app(load_recording(board["path"]), run=2, speed=0)
    with serve(app) as url, httpx.Client(timeout=10.0) as http:
        for _ in range(2):
            response = http.post(url, json=cassette.runs[0].input)
            expected = as_posted(cassette.runs[2].events, cassette.runs[0].input)
            assert decode_sse(response.content) == expected


def test_recorded_timing_is_scaled_by_speed_and_capped() -> None:
    events = [
        {"type": "X"},
        {"type": "X", "timestamp": 1000},
        {"type": "X", "timestamp": 1500},
        {"type": "X"},
        {"type": "X", "timestamp": 9500},
    ]
    assert _event_delays(events, 1.0, 5.0) == [0.0, 0.0, 0.5, 0.0, 5.0]
    assert _event_delays(events, 2.0, 5.0) == [0.0, 0.0, 0.25, 0.0, 4.0]
    assert _event_delays(events, 0, 5.0) == [0.0] * 5


def test_serve_says_when_it_cannot_listen_on_the_host(
    board: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # TEST-NET-3: an address no interface of this machine has.
    code, _, err = run_cli(capsys, "serve", board["path"], "--host", "203.0.113.254")
    assert code == 2
    assert "cannot listen on 203.0.113.254:0" in err


def test_the_console_script_serves_and_stops_cleanly_on_sigterm(board: dict[str, Any]) -> None:
    cassette = board["cassette"]
    with serving(str(board["path"]), "--run", "1") as server:
        response = httpx.post(server.url, json=cassette.runs[0].input, timeout=10.0)
        expected = as_posted(cassette.runs[1].events, cassette.runs[0].input)
        assert decode_sse(response.content) == expected
    assert server.returncode == 0, server.err
    assert "stopped" in server.err
    assert "run 1" in server.err


# --- the installed command, help and exit codes -------------------------------------------------


def test_the_installed_console_script(board: dict[str, Any]) -> None:
    done = subprocess.run(
        [str(SCRIPT), "verify", str(board["jsonl"]), "--mode", "strict", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


@pytest.mark.parametrize("command", ["show", "verify", "diff", "state", "serve", "view", "capture"])
def test_every_subcommand_has_help_with_the_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert f"agui-replay {command}" in out
    assert "exit codes: 0 " in out


def test_top_level_help_lists_the_subcommands() -> None:
    text = build_parser().format_help()
    for command in ("show", "verify", "diff", "state", "serve", "view", "capture"):
        assert command in text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_only_and_is_wiped_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGUI_REPLAY_NO_PROGRESS", raising=False)
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = Progress("verify", 100_000, stream)
        progress.started -= 10  # as if the work had been going on for a while
        progress.tick(255)  # between reports: nothing
        progress.tick(512)
        progress.close()
    assert terminal.getvalue() == "\rverify: 512/100000 events\r\033[K"
    assert pipe.getvalue() == ""
