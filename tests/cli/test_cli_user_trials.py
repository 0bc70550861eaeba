"""The ``agui-replay`` command run the way new users ran it, on the repository's own cassettes:
the viewer's chat, ``show``, ``diff`` and ``serve`` on real recordings."""

from __future__ import annotations

import copy
import html
import json
import random
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agui_replay.cassette import load_recording, walk
from agui_replay.cli import main
from agui_replay.sse import decode_sse
from tests.cli.test_viewer_browser import CHROMIUM_FLAGS, _chromium
from tests.support.serve_cli import serving

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = (
    ROOT / "cassettes/test_langgraph_agent/test_a_conversion_calls_the_tool_then_answers.json"
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def session_messages_at_each_event(path: Path) -> list[list[dict[str, Any]]]:
    """What the client ``Session`` holds after each event, copied."""
    return [copy.deepcopy(list(step.session.messages)) for step in walk(load_recording(path))]


def page_data(page: Path) -> dict[str, Any]:
    text = page.read_text("utf-8")
    found = re.search(r'<script id="agui-data" type="application/json">(.*?)</script>', text, re.S)
    assert found is not None
    data: dict[str, Any] = orjson.loads(found.group(1))
    return data


def chat_at(data: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The chat the page draws after event n, read from its data as viewer.js reads it."""
    entries = {entry["key"]: entry for entry in data["messages"]}
    held: list[int] = []
    for index, keys in data["messageOrder"]:
        if index > n:
            break
        held = keys

    def cut(marks: list[list[int]]) -> int:
        length = 0
        for index, size in marks:
            if index > n:
                break
            length = size
        return length

    shown = []
    for key in held:
        entry = entries[key]
        message = copy.deepcopy(entry["message"])
        if isinstance(message.get("content"), str):
            message["content"] = message["content"][: cut(entry["marks"])]
        calls = [
            call
            for call in message.get("toolCalls") or []
            if call["id"] not in entry["calls"] or entry["calls"][call["id"]]["first"] <= n
        ]
        if calls or "toolCalls" in message:
            message["toolCalls"] = calls
        for call in calls:
            record = entry["calls"].get(call["id"])
            if record is not None:
                call["function"]["arguments"] = call["function"]["arguments"][
                    : cut(record["marks"])
                ]
        shown.append(message)
    return [shown_as(m) for m in shown]


def shown_as(message: dict[str, Any]) -> dict[str, Any]:
    """What the chat draws of a message: who, its text, its calls and what it answers."""
    content = message.get("content")
    return {
        "id": message.get("id"),
        "role": message.get("role"),
        "text": "" if content is None else content,
        "calls": [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("toolCalls") or []
        ],
        "answers": message.get("toolCallId"),
    }


# --- view: the chat is the client's message list ---------------------------------------------


def test_the_viewer_chat_is_what_the_client_holds_at_every_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "conversion.html"
    code, _, err = run_cli(capsys, "view", LANGGRAPH, "-o", page)
    assert code == 0, err
    data = page_data(page)
    held = session_messages_at_each_event(LANGGRAPH)
    # The MESSAGES_SNAPSHOT at the end renames the tool result: 4 messages, not 5.
    assert [m["role"] for m in held[-1]] == ["user", "assistant", "assistant", "tool"]
    for n, messages in enumerate(held):
        assert chat_at(data, n) == [shown_as(m) for m in messages], f"event #{n}"


@pytest.mark.parametrize(
    "cassette",
    sorted((ROOT / "cassettes").rglob("*.json")),
    ids=lambda p: p.relative_to(ROOT / "cassettes").as_posix(),
)
def test_every_repository_cassette_views_with_the_clients_messages(
    cassette: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.html"
    assert run_cli(capsys, "view", cassette, "-o", page)[0] == 0
    data = page_data(page)
    for n, messages in enumerate(session_messages_at_each_event(cassette)):
        assert chat_at(data, n) == [shown_as(m) for m in messages], f"event #{n}"


def test_the_viewer_page_in_chromium_shows_the_clients_messages_at_the_last_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    page = tmp_path / "conversion.html"
    assert run_cli(capsys, "view", LANGGRAPH, "-o", page)[0] == 0
    done = subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=2000",
            "--dump-dom",
            page.resolve().as_uri() + "#event=-1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    chat = re.search(r'<div id="chat"[^>]*>(.*?)</section>', done.stdout, re.S)
    assert chat is not None, done.stdout[:2000]
    ids = re.findall(r'class="msg [^"]*" data-id="([^"]*)"', chat.group(1))
    shown = [html.unescape(i) for i in ids]
    assert shown == [m["id"] for m in session_messages_at_each_event(LANGGRAPH)[-1]]


# --- show ------------------------------------------------------------------------------------

RECIPE_APPROVAL = (
    ROOT
    / "cassettes/test_agent_framework_recipe"
    / "test_the_recipe_waits_for_approval_then_is_applied.json"
)


def event_lines(out: str) -> dict[int, str]:
    """The printed lines by the event number they start with (the first line of each)."""
    lines: dict[int, str] = {}
    for line in out.splitlines():
        found = re.match(r"\s+#(\d+)\s+(.*)", line)
        if found:
            lines.setdefault(int(found.group(1)), found.group(2))
    return lines


def test_show_says_a_snapshot_equal_to_the_state_leaves_it_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    events = load_recording(RECIPE_APPROVAL).events
    same = [
        i
        for i in range(1, len(events))
        if events[i]["type"] == events[i - 1]["type"] == "STATE_SNAPSHOT"
        and events[i]["snapshot"] == events[i - 1]["snapshot"]
    ]
    assert same, "the cassette repeats a snapshot"
    code, out, _ = run_cli(capsys, "show", RECIPE_APPROVAL)
    assert code == 0
    lines = event_lines(out)
    for i in same:
        assert lines[i] == "state unchanged (STATE_SNAPSHOT)"
    assert "state snapshot: \n" not in out
    assert not re.search(r"state snapshot:\s*$", out, re.M)


def test_show_names_each_raw_line_by_its_inner_event(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "show", LANGGRAPH)
    assert code == 0
    lines = event_lines(out)
    events = load_recording(LANGGRAPH).events
    raws = [i for i, e in enumerate(events) if e["type"] == "RAW"]
    assert raws
    for i in raws:
        inner = events[i]["event"]
        assert lines[i].startswith(f"raw {inner['event']} {inner['name']} "), lines[i]
    assert lines[1].startswith("raw on_chain_start LangGraph")
    assert any(lines[i].startswith("raw on_chat_model_stream ChatOpenAI") for i in raws)


def test_the_viewer_timeline_names_raw_events_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.html"
    assert run_cli(capsys, "view", LANGGRAPH, "-o", page)[0] == 0
    data = page_data(page)
    assert data["summaries"][1].startswith("on_chain_start LangGraph ")


def test_the_run_header_names_a_trailing_tool_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The client ran a tool itself and sends its result back: that result drives the run.
    doc = orjson.loads(LANGGRAPH.read_bytes())
    doc["runs"][0]["input"]["messages"] += [
        {
            "id": "a-1",
            "role": "assistant",
            "toolCalls": [
                {"id": "ui-1", "type": "function", "function": {"name": "ask", "arguments": "{}"}}
            ],
        },
        {"id": "t-1", "role": "tool", "toolCallId": "ui-1", "content": "the user said yes"},
    ]
    cassette = tmp_path / "resumed.json"
    cassette.write_bytes(orjson.dumps(doc))
    code, out, _ = run_cli(capsys, "show", cassette)
    assert code == 0
    assert (
        'input: 3 message(s), last user message "How much is 10 km in miles?", '
        'ending with the tool result for ui-1 → "the user said yes"'
    ) in out


def test_show_filters_by_event_type(capsys: pytest.CaptureFixture[str]) -> None:
    events = load_recording(LANGGRAPH).events
    code, out, _ = run_cli(
        capsys,
        "show",
        LANGGRAPH,
        "--type",
        "TOOL_CALL_ARGS",
        "--types",
        "state_snapshot,RUN_STARTED",
    )
    assert code == 0
    wanted = {"TOOL_CALL_ARGS", "STATE_SNAPSHOT", "RUN_STARTED"}
    lines = event_lines(out)
    assert sorted(lines) == [i for i, e in enumerate(events) if e["type"] in wanted]
    first_args = next(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_ARGS")
    assert lines[first_args].startswith("TOOL_CALL_ARGS ")
    assert events[first_args]["delta"][:5] in lines[first_args]


def test_show_refuses_an_unknown_type_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "show", LANGGRAPH, "--type", "TEXT_CONTENT")
    assert code == 2
    assert out == ""
    assert "--type TEXT_CONTENT: not an AG-UI event type" in err
    assert "TEXT_MESSAGE_CONTENT" in err


# --- diff: a raw capture against the cassette of the same run --------------------------------


def raw_capture(cassette: Path, target: Path, seed: int) -> Path:
    """The run as the framework streamed it: the cassette's normalized ids back to random ones
    (each id one UUID throughout, in events and payloads), saved as JSON lines."""
    rng = random.Random(seed)
    names: dict[str, str] = {}

    def random_id(found: re.Match[str]) -> str:
        return names.setdefault(found.group(0), str(uuid.UUID(int=rng.getrandbits(128))))

    with target.open("w") as out:
        for event in load_recording(cassette).events:
            line = orjson.dumps(event).decode()
            out.write(re.sub(r"run-\d+-(?:msg|call)-\d+", random_id, line) + "\n")
    assert names, "the cassette has normalized ids"
    return target


def test_a_raw_capture_and_the_cassette_of_the_same_run_compare_equal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = raw_capture(LANGGRAPH, tmp_path / "raw.jsonl", seed=1)
    for a, b in ((LANGGRAPH, raw), (raw, LANGGRAPH)):
        code, out, _ = run_cli(capsys, "diff", a, b)
        assert (code, out) == (0, "same: 67 event(s) (ids and timestamps normalized)\n")
    other = raw_capture(LANGGRAPH, tmp_path / "other.jsonl", seed=2)
    assert run_cli(capsys, "diff", raw, other)[0] == 0


def test_diff_still_finds_a_real_difference_after_aligning_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = raw_capture(LANGGRAPH, tmp_path / "raw.jsonl", seed=1)
    changed = tmp_path / "changed.jsonl"
    changed.write_text(raw.read_text().replace(" 6.21", " 6.20", 1))
    code, out, _ = run_cli(capsys, "diff", LANGGRAPH, changed)
    assert code == 1
    assert "differ at event" in out
    assert "6.21" in out
    assert "6.20" in out


# --- serve: the posted ids, refusals logged, --quiet ------------------------------------------


def test_serve_streams_the_posted_thread_and_run_ids() -> None:
    body = {
        "threadId": "my-thread",
        "runId": "front-end-run-7",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "How much is 10 km in miles?"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    with serving(str(LANGGRAPH)) as server:
        response = httpx.post(server.url, json=body, timeout=10.0)
    assert server.returncode == 0, server.err
    events = decode_sse(response.content)
    recorded = load_recording(LANGGRAPH).events
    assert len(events) == len(recorded)
    started, finished = events[0], events[-1]
    assert (started["type"], started["threadId"], started["runId"]) == (
        "RUN_STARTED",
        "my-thread",
        "front-end-run-7",
    )
    assert (finished["type"], finished["threadId"], finished["runId"]) == (
        "RUN_FINISHED",
        "my-thread",
        "front-end-run-7",
    )
    assert not [e for e in events if e.get("runId") == "run-1" or e.get("threadId") == "roads"]
    # The posted message keeps its id wherever the recording named it (the final
    # MESSAGES_SNAPSHOT, the state's LangChain messages); everything else is as recorded.
    (snapshot,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    assert snapshot["messages"][0]["id"] == "u1"
    text = json.dumps(events)
    assert '"user-1"' not in text
    assert [{k: v for k, v in e.items() if k not in ("threadId", "runId")} for e in events] == [
        {k: v for k, v in e.items() if k not in ("threadId", "runId")}
        for e in json.loads(json.dumps(recorded).replace('"user-1"', '"u1"'))
    ]


def test_serve_logs_each_refused_request_in_one_line() -> None:
    with serving(str(LANGGRAPH)) as server:
        assert httpx.get(server.url, timeout=10.0).status_code == 405
        assert httpx.post(server.url, json={"threadId": "t"}, timeout=10.0).status_code == 400
    assert server.returncode == 0, server.err
    err = server.err
    refused = [line for line in err.splitlines() if "refused" in line]
    assert len(refused) == 2, err
    assert refused[0].startswith("GET / → 405 refused: POST a RunAgentInput")
    assert refused[1].startswith("POST / → 400 refused: not a valid RunAgentInput")


def test_serve_quiet_prints_the_url_line_only() -> None:
    with serving(str(LANGGRAPH), "--quiet") as server:
        assert httpx.get(server.url, timeout=10.0).status_code == 405
    assert server.returncode == 0, server.err
    assert (server.out, server.err) == ("", "")
