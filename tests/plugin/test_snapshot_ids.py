"""``agui_snapshot`` of ``agui.run``'s events, written the way a user writes it (pytester).

A snapshot of a run taken with ``agui.run`` shows the ids the cassette stores for that run:
the ids the test wrote (``user-1``) stay, and a message of run 1 that run 2 carries keeps its
run-1 name. Several runs go into one snapshot file, each opened by a ``# run #N`` line.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

# Like a framework: a random message id, and the conversation echoed in a MESSAGES_SNAPSHOT.
AGENT = textwrap.dedent(
    """
    import uuid

    def agent(ctx):
        reply = {"id": str(uuid.uuid4()), "role": "assistant",
                 "content": f"answer {len(ctx.messages)}"}
        ctx.emit({"type": "TEXT_MESSAGE_START", "messageId": reply["id"], "role": "assistant"})
        ctx.emit({"type": "TEXT_MESSAGE_CONTENT", "messageId": reply["id"],
                  "delta": reply["content"]})
        ctx.emit({"type": "TEXT_MESSAGE_END", "messageId": reply["id"]})
        history = [m.model_dump(by_alias=True, exclude_none=True) for m in ctx.messages]
        ctx.emit({"type": "MESSAGES_SNAPSHOT", "messages": [*history, reply]})
    """
)

TWO_TURNS = """
    from agent_mod import agent

    def reply_of(events):
        start = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
        content = next(e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        return {"id": start["messageId"], "role": "assistant", "content": content["delta"]}

    def conversation(agui):
        hello = {"id": "user-1", "role": "user", "content": "hello"}
        first = agui.run(agent, {"threadId": "t", "runId": "run-1", "messages": [hello]})
        again = {"id": "user-2", "role": "user", "content": "again"}
        second = agui.run(agent, {"threadId": "t", "runId": "run-2",
                                  "messages": [hello, reply_of(first), again]})
        return first, second

    def test_second_turn(agui, agui_snapshot):
        first, second = conversation(agui)
        assert second == agui_snapshot

    def test_both_turns(agui, agui_snapshot):
        first, second = conversation(agui)
        assert [first, second] == agui_snapshot

    def test_both_turns_folded(agui, agui_folded_snapshot):
        first, second = conversation(agui)
        assert [first, second] == agui_folded_snapshot
"""


def _project(pytester: pytest.Pytester, tests: str = TWO_TURNS) -> None:
    pytester.makepyfile(agent_mod=AGENT)
    pytester.makepyfile(test_turns=textwrap.dedent(tests))
    pytester.makeini("[pytest]\npythonpath = .\n")


def _lines(pytester: pytest.Pytester, name: str) -> list[str]:
    path = pytester.path / "__snapshots__" / "test_turns" / f"{name}.agui.jsonl"
    return path.read_text().splitlines()


def _cassette_events(pytester: pytest.Pytester, name: str) -> list[list[dict[str, Any]]]:
    path = Path(pytester.path, "cassettes", "test_turns", f"{name}.json")
    cassette = json.loads(path.read_text())
    return [run["events"] for run in cassette["runs"]]


def _snapshot_of_messages(lines: list[str]) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in lines if not line.startswith("#")]
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")
    messages: list[dict[str, Any]] = snapshot["messages"]
    return messages


def test_a_run_s_snapshot_shows_the_ids_its_cassette_stores(pytester: pytest.Pytester) -> None:
    _project(pytester)
    recorded = pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update", "test_turns.py")
    recorded.assert_outcomes(passed=3)

    lines = _lines(pytester, "test_second_turn")
    stored = _cassette_events(pytester, "test_second_turn")[1]
    assert [json.loads(line) for line in lines] == stored
    ids = [m["id"] for m in _snapshot_of_messages(lines)]
    # the test's own ids stay; run 1's answer keeps its run-1 name in run 2
    assert ids == ["user-1", "run-1-msg-1", "user-2", "run-2-msg-1"]

    # and the snapshot holds on replay, from the cassette, with no network
    pytester.runpytest(*ARGS, "test_turns.py").assert_outcomes(passed=3)


def test_two_runs_go_into_one_file_separated_by_run_lines(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update").assert_outcomes(passed=3)

    lines = _lines(pytester, "test_both_turns")
    first, second = _cassette_events(pytester, "test_both_turns")
    assert lines[0] == "# run #0"
    assert lines[len(first) + 1] == "# run #1"
    assert [json.loads(line) for line in lines[1 : len(first) + 1]] == first
    assert [json.loads(line) for line in lines[len(first) + 2 :]] == second

    folded = _lines(pytester, "test_both_turns_folded")
    assert folded.count("# run #0") == folded.count("# run #1") == 1


def test_a_changed_second_run_names_that_run_in_the_failure(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update").assert_outcomes(passed=3)
    path = pytester.path / "__snapshots__" / "test_turns" / "test_both_turns.agui.jsonl"
    path.write_text(path.read_text().replace('"answer 3"', '"answer three"'))

    result = pytester.runpytest(*ARGS, "test_turns.py::test_both_turns")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*run #1: event streams differ at event #2*"])


def test_several_runs_without_agui_are_normalized_as_one_cassette(
    pytester: pytest.Pytester,
) -> None:
    _project(
        pytester,
        """
        from agent_mod import agent
        from agui_replay.server import run_agent_sync

        def test_plain(agui_snapshot):
            hello = {"id": "user-1", "role": "user", "content": "hello"}
            first = run_agent_sync(agent, {"threadId": "t", "runId": "a", "messages": [hello]})
            second = run_agent_sync(agent, {"threadId": "t", "runId": "b", "messages": [hello]})
            assert [first, second] == agui_snapshot
        """,
    )
    pytester.runpytest(*ARGS, "--snapshot-update").assert_outcomes(passed=1)
    lines = _lines(pytester, "test_plain")
    assert lines.count("# run #0") == lines.count("# run #1") == 1
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)
