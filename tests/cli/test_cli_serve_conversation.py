"""Whole conversations through ``agui-replay serve``, and every fault, under ``@ag-ui/client``.

The agent is the LangGraph example served by ag-ui-langgraph (its default configuration, which
ends every run on a MESSAGES_SNAPSHOT and a STATE_SNAPSHOT), each turn a ``convert`` tool call
then an answer, its model a ``FakeProvider``. It is recorded twice, three turns each: by pytest
(``--agui-record``, a test file written here and run in a subprocess) and by ``agui-replay
capture`` in front of the live agent, with the reference client ``HttpAgent`` (npm, under Node,
``tests/js/converse.mjs``) talking to it. Then the same client, with message ids of its own,
talks to ``serve``: every turn streams, and its history after each turn is the recorded
client's, with its own ids for the messages it posted and the agent's ids for the others.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agui_replay.cassette import load_cassette
from agui_replay.client import Session
from tests.support.js_packages import installed_js_packages
from tests.support.langgraph_turns import (
    ANSWERS,
    ASKED,
    capture_live,
    converse,
    record_with_pytest,
)
from tests.support.serve_cli import serving

pytestmark = [
    pytest.mark.node,
    pytest.mark.slow,
    # ag-ui-langgraph 0.0.47 still reads the graph's config schema the pre-1.0 way.
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]


@pytest.fixture(scope="module")
def js() -> Path:
    return installed_js_packages("converse.mjs")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_with_pytest(tmp_path_factory.mktemp("recorded"))


@pytest.fixture(scope="module")
def captured(
    js: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[dict[str, Any]]]:
    return capture_live(js, tmp_path_factory.mktemp("captured"))


def as_posted(messages: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """``messages`` with the user messages' ids the client gave them."""
    return [{**m, "id": names.get(m["id"], m["id"])} for m in messages]


def answers(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]


def test_a_pytest_cassette_plays_the_conversation_with_the_ids_the_page_posted(
    js: Path, recorded: Path, tmp_path: Path
) -> None:
    cassette = load_cassette(recorded)
    assert len(cassette.runs) == 3
    assert all("MESSAGES_SNAPSHOT" in {e["type"] for e in run.events} for run in cassette.runs)
    with serving(str(recorded)) as server:
        turns = converse(js, server.url, tmp_path)
    assert server.returncode == 0, server.err
    assert [line.split(" (")[0] for line in server.err.splitlines() if "→" in line] == [
        f"POST / → run {n}" for n in range(3)
    ]
    names: dict[str, str] = {}
    for n, (turn, run) in enumerate(zip(turns, cassette.runs, strict=True)):
        assert turn["errors"] == [], f"turn {n}"
        names[f"user-{n + 1}"] = turn["userId"]
        # What the recorded client (the test's Session) held after the run, ids as posted.
        held = Session(state=run.input.get("state"), messages=run.input["messages"])
        expected = as_posted(held.apply_all(run.events).finish().messages, names)
        assert turn["messages"] == expected, f"turn {n}"
    assert answers(turns[-1]["messages"]) == ANSWERS
    # The page's own messages kept its ids; the agent's kept theirs from turn to turn.
    ids = [[m["id"] for m in turn["messages"]] for turn in turns]
    assert ids[1][: len(ids[0])] == ids[0]
    assert ids[2][: len(ids[1])] == ids[1]
    assert [m["id"] for m in turns[2]["messages"] if m["role"] == "user"] == list(names.values())


def test_a_capture_plays_the_conversation_the_live_agent_had(
    js: Path, captured: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    path, live = captured
    assert len(load_cassette(path).runs) == 3
    assert answers(live[-1]["messages"]) == ANSWERS
    with serving(str(path), "--quiet") as server:
        turns = converse(js, server.url, tmp_path)
    names = {was["userId"]: now["userId"] for was, now in zip(live, turns, strict=True)}
    for n, (was, now) in enumerate(zip(live, turns, strict=True)):
        assert now["errors"] == [], f"turn {n}"
        assert now["messages"] == as_posted(was["messages"], names), f"turn {n}"
        assert now["state"] == _renamed(was["state"], names), f"turn {n}"


def test_a_folder_of_both_plays_each_conversation_from_one_recording(
    js: Path, recorded: Path, captured: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    (folder / "pytest.json").write_bytes(recorded.read_bytes())
    (folder / "capture.json").write_bytes(captured[0].read_bytes())
    with serving(str(folder)) as server:
        first = converse(js, server.url, tmp_path)
        second = converse(js, server.url, tmp_path)
    for turns in (first, second):
        assert [t["errors"] for t in turns] == [[], [], []]
        assert answers(turns[-1]["messages"]) == ANSWERS
        user = [m["id"] for m in turns[-1]["messages"] if m["role"] == "user"]
        assert user == [t["userId"] for t in turns]
    # Each conversation was answered by one file, turn after turn.
    log = [line.split(" → ")[1] for line in server.err.splitlines() if " → " in line]
    served = [line.split(" run ")[0] for line in log]
    assert len(set(served[:3])) == 1, log
    assert len(set(served[3:])) == 1, log


def planner(ctx: Any) -> None:
    """Each turn an ACTIVITY_SNAPSHOT (a plan), a STATE_SNAPSHOT, an answer, and a
    MESSAGES_SNAPSHOT of the thread without the activity messages (HttpAgent keeps those)."""
    said = ctx.messages[-1].content
    turn = len([m for m in ctx.messages if m.role == "user"])
    plan = {"steps": [said]}
    ctx.emit(
        {"type": "ACTIVITY_SNAPSHOT", "messageId": f"plan-{turn}", "activityType": "PLAN",
         "content": plan}
    )  # fmt: skip
    ctx.emit({"type": "STATE_SNAPSHOT", "snapshot": {"turns": turn, "last": said}})
    answer = f"{len(said)} letters."
    reply = ctx.say(answer)
    history = [
        m.model_dump(by_alias=True, exclude_none=True) for m in ctx.messages if m.role != "activity"
    ]
    replied = {"id": reply, "role": "assistant", "content": answer}
    ctx.emit({"type": "MESSAGES_SNAPSHOT", "messages": [*history, replied]})


def test_activity_and_state_snapshots_play_turn_after_turn(js: Path, tmp_path: Path) -> None:
    from agui_replay.cassette import Cassette, CassetteRun, save_cassette
    from agui_replay.events import to_wire
    from agui_replay.server import run_agent_sync, run_input

    runs: list[CassetteRun] = []
    held: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    expected = []
    for n, said in enumerate(ASKED, 1):
        asked = {"id": f"user-{n}", "role": "user", "content": said}
        body = run_input("plans", f"run-{n}", state=state, messages=[*held, asked])
        wire = body.model_dump(by_alias=True, mode="json", exclude_none=True)
        events = [to_wire(e) for e in run_agent_sync(planner, body)]
        runs.append(CassetteRun(input=wire, events=events))
        client = Session(state=state, messages=wire["messages"]).apply_all(events).finish()
        held, state = client.messages, client.state
        expected.append((held, state))
    path = tmp_path / "plans.json"
    save_cassette(Cassette(runs=runs), path)
    with serving(str(path), "--quiet") as server:
        turns = converse(js, server.url, tmp_path)
    names: dict[str, str] = {}
    for n, (turn, (messages, state)) in enumerate(zip(turns, expected, strict=True)):
        names[f"user-{n + 1}"] = turn["userId"]
        assert turn["errors"] == [], f"turn {n}"
        assert turn["messages"] == as_posted(messages, names), f"turn {n}"
        assert turn["state"] == state, f"turn {n}"
    assert [m["role"] for m in turns[-1]["messages"]] == ["user", "activity", "assistant"] * 3


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


# --- every fault, as HttpAgent reports it ----------------------------------------------------


def test_each_fault_of_the_header_is_what_httpagent_reports(
    js: Path, recorded: Path, tmp_path: Path
) -> None:
    run = load_cassette(recorded).runs[0]
    types = [e["type"] for e in run.events]
    start = types.index("TEXT_MESSAGE_START")
    first = types.index("TEXT_MESSAGE_CONTENT")
    delta = run.events[first]["delta"]

    def turn(fault: str) -> dict[str, Any]:
        (done,) = converse(js, server.url, tmp_path, fault, said=ASKED[:1])
        return done

    with serving(str(recorded), "--quiet") as server:
        # A cut: exactly the events before it, then fetch fails (undici: "terminated").
        cut = turn(f"cut-after={first + 1}")
        assert cut["events"] == types[: first + 1], cut
        assert cut["errors"] == [{"name": "TypeError", "message": "terminated"}], cut
        assert answers(cut["messages"]) == [delta]
        # A RUN_ERROR: the events before it, then onRunErrorEvent; runAgent resolves.
        error = turn(f"error-after={first + 1}")
        assert error["events"] == [*types[: first + 1], "RUN_ERROR"], error
        assert [e.get("code") for e in error["errors"]] == ["INJECTED_FAULT"]
        # A slow start: the whole run, its first event a second late.
        slow = turn("delay=1")
        assert slow["errors"] == [], slow
        assert slow["events"] == types, slow
        assert slow["firstEventMs"] >= 1000, slow
        # A lost TEXT_MESSAGE_START: the client's verifier stops at the content that follows.
        dropped = turn(f"drop={start}")
        assert dropped["events"] == types[:start], dropped
        (lost,) = dropped["errors"]
        assert "No active text message found" in lost["message"]
        # A TEXT_MESSAGE_CONTENT twice: no error, the words applied twice, until the run's
        # MESSAGES_SNAPSHOT puts the recorded text back.
        twice = turn(f"duplicate={first}")
        assert twice["errors"] == [], twice
        assert twice["events"] == [*types[: first + 1], *types[first:]], twice
        assert answers(twice["messages"]) == ANSWERS[:1]
        # A TEXT_MESSAGE_START twice: the verifier refuses the second.
        again = turn(f"duplicate={start}")
        assert again["events"] == types[: start + 1], again
        (refused,) = again["errors"]
        assert "already in progress" in refused["message"]
        # An event that is not JSON: JSON.parse fails the run, after the events before it.
        garbled = turn(f"garble={first}")
        assert garbled["events"] == types[:first], garbled
        (broken,) = garbled["errors"]
        assert broken["name"] == "SyntaxError"
        # A header the server does not understand: a 400 naming it.
        wrong = turn("cut-after=three")
        (said,) = wrong["errors"]
        assert said["message"].startswith("HTTP 400: ")
        answer = json.loads(said["message"].removeprefix("HTTP 400: "))
        assert answer["code"] == "INVALID_FAULT"
        assert "X-AGUI-Replay-Fault: 'cut-after=three'" in answer["message"]
        assert "cut-after=N, error-after=N, delay=S, drop=N" in answer["message"]
