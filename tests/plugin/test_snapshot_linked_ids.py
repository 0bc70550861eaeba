"""A snapshot catches an agent that stops reusing an id, written the way a user writes it.

Agno answers a tool call with a ``TOOL_CALL_RESULT`` whose ``messageId`` is the tool call's own
id. Normalization gives one raw id one name in every role, so the snapshot shows the link
(``messageId`` and ``toolCallId`` both ``run-1-call-1``), and a change to the agent that breaks
it fails the replay and the snapshot, naming the field.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

AGENT = textwrap.dedent(
    """
    import uuid

    def result_message_id(call_id):
        return call_id  # as Agno does: the tool result message is named after the call

    def agent(ctx):
        answer, call_id = str(uuid.uuid4()), f"call_{uuid.uuid4().hex[:24]}"
        ctx.emit({"type": "TEXT_MESSAGE_START", "messageId": answer, "role": "assistant"})
        ctx.emit({"type": "TEXT_MESSAGE_END", "messageId": answer})
        ctx.emit({"type": "TOOL_CALL_START", "toolCallId": call_id,
                  "toolCallName": "get_weather", "parentMessageId": answer})
        ctx.emit({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"city": "Oslo"}'})
        ctx.emit({"type": "TOOL_CALL_END", "toolCallId": call_id})
        ctx.emit({"type": "TOOL_CALL_RESULT", "messageId": result_message_id(call_id),
                  "toolCallId": call_id, "content": "snow", "role": "tool"})
        reply = str(uuid.uuid4())
        ctx.emit({"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"})
        ctx.emit({"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": "Snow in Oslo."})
        ctx.emit({"type": "TEXT_MESSAGE_END", "messageId": reply})
    """
)

# The change under test: the tool result gets a message id of its own.
BROKEN = "return call_id  # as Agno does: the tool result message is named after the call"
FRESH = "return str(uuid.uuid4())  # a message id of its own: the link to the call is gone"

TESTS = textwrap.dedent(
    """
    from agent_mod import agent
    from agui_replay.server import run_agent_sync

    WEATHER = {"threadId": "t", "runId": "run-1",
               "messages": [{"id": "user-1", "role": "user", "content": "Oslo?"}]}

    def test_weather(agui, agui_snapshot):
        assert agui.run(agent, WEATHER) == agui_snapshot

    def test_weather_without_a_cassette(agui_snapshot):
        assert run_agent_sync(agent, WEATHER) == agui_snapshot
    """
)


def _project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent_mod=AGENT, test_weather=TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")


def _snapshot(pytester: pytest.Pytester, name: str) -> list[dict[str, object]]:
    path = pytester.path / "__snapshots__" / "test_weather" / f"{name}.agui.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _break_the_link(pytester: pytest.Pytester) -> None:
    path = pytester.path / "agent_mod.py"
    path.write_text(path.read_text().replace(BROKEN, FRESH))
    shutil.rmtree(pytester.path / "__pycache__", ignore_errors=True)


def test_the_snapshot_shows_the_link_and_fails_when_it_breaks(pytester: pytest.Pytester) -> None:
    _project(pytester)
    recorded = pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update")
    recorded.assert_outcomes(passed=2)
    for name in ("test_weather", "test_weather_without_a_cassette"):
        events = _snapshot(pytester, name)
        result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
        assert result["messageId"] == result["toolCallId"] == "run-1-call-1"
        starts = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
        assert starts == ["run-1-msg-1", "run-1-msg-2"]
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)  # replays: same random-free stream

    _break_the_link(pytester)
    broken = pytester.runpytest(*ARGS, "-vv")
    broken.assert_outcomes(failed=2)
    broken.stdout.fnmatch_lines(
        [
            # the replay names the tool result's messageId, no longer the call's name
            "*run #0 does not replay as recorded",
            "*event streams differ at event #6 (TOOL_CALL_RESULT): field /messageId",
            '*/messageId: recorded "run-1-call-1" != replayed "run-1-msg-2"',
        ],
        consecutive=False,
    )
    broken.stdout.fnmatch_lines(
        [
            # and so does the snapshot of the same run taken without a cassette
            "*test_weather_without_a_cassette*",
            '*/messageId: snapshot "run-1-call-1" != received "run-1-msg-2"',
        ]
    )
