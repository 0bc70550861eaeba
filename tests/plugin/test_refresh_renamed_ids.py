"""A cassette normalized under the older id-naming rule is brought up to date offline.

Before one raw id kept one name in every role, an Agno- or LangGraph-style tool result (its
``messageId`` the tool call's own id) was stored under a message name of its own. With the new
rule the replayed run names it after the call, so the events differ, and a second run whose
input was built from the first carries the new names too. ``--agui-refresh`` stores both: the
new events, and the input with its ids renamed, since the question put to the model is the same.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

AGENT = textwrap.dedent(
    """
    import uuid

    def agent(ctx):
        answer, call_id = str(uuid.uuid4()), f"call_{uuid.uuid4().hex[:24]}"
        ctx.emit({"type": "TEXT_MESSAGE_START", "messageId": answer, "role": "assistant"})
        ctx.emit({"type": "TEXT_MESSAGE_END", "messageId": answer})
        ctx.emit({"type": "TOOL_CALL_START", "toolCallId": call_id,
                  "toolCallName": "get_weather", "parentMessageId": answer})
        ctx.emit({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"city": "Oslo"}'})
        ctx.emit({"type": "TOOL_CALL_END", "toolCallId": call_id})
        ctx.emit({"type": "TOOL_CALL_RESULT", "messageId": call_id,  # named after its call
                  "toolCallId": call_id, "content": "snow", "role": "tool"})
        reply = str(uuid.uuid4())
        ctx.emit({"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"})
        ctx.emit({"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": "Snow."})
        ctx.emit({"type": "TEXT_MESSAGE_END", "messageId": reply})
    """
)

TESTS = textwrap.dedent(
    """
    from agent_mod import agent
    from agui_replay.server.testing import fold

    def test_two_runs(agui):
        first = agui.run(agent, {"threadId": "t", "runId": "run-1",
                                 "messages": [{"id": "u1", "role": "user", "content": "Oslo?"}]})
        history = fold(first, mode="client").messages
        second = agui.run(agent, {"threadId": "t", "runId": "run-2",
                                  "messages": [*history,
                                               {"id": "u2", "role": "user", "content": "Bergen?"}]})
        assert [e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["Snow."]
    """
)

# What the older rule called each message-role name of the new one (tool calls keep theirs).
OLDER = {
    f"run-{n}-{new}": f"run-{n}-{old}"
    for n in (1, 2)
    for new, old in (("call-1", "msg-2"), ("msg-2", "msg-3"))
}


def _older(value: Any, key: str = "") -> Any:
    """``value`` with its message-role ids named as the older rule named them."""
    if isinstance(value, dict):
        is_message = "role" in value and "id" in value
        return {
            k: (
                OLDER.get(v, v)
                if isinstance(v, str) and (k == "messageId" or (k == "id" and is_message))
                else _older(v, k)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_older(v, key) for v in value]
    return value


def _runs(path: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads(path.read_text())["runs"]
    return [{"input": r["input"], "events": r["events"]} for r in runs]


def test_a_refresh_renames_the_ids_of_an_older_cassette(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent_mod=AGENT, test_weather=TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.runpytest(*ARGS, "--agui-record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_weather" / "test_two_runs.json"
    current = _runs(cassette)
    tool = next(m for m in current[1]["input"]["messages"] if m["role"] == "tool")
    assert tool["id"] == tool["toolCallId"] == "run-1-call-1"  # one raw id, one name

    doc = json.loads(cassette.read_text())
    doc["runs"] = _older(doc["runs"])
    cassette.write_text(json.dumps(doc, indent=1))
    aged = _runs(cassette)
    tool = next(m for m in aged[1]["input"]["messages"] if m["role"] == "tool")
    assert aged != current
    assert tool["id"] == "run-1-msg-2"

    replay = pytester.runpytest(*ARGS)
    replay.assert_outcomes(failed=1)
    replay.stdout.fnmatch_lines(["*only the agent's events changed*--agui-refresh*"])

    pytester.runpytest(*ARGS, "--agui-refresh").assert_outcomes(passed=1)
    assert _runs(cassette) == current  # events and inputs under today's names
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)


def test_a_replay_of_a_renamed_input_advises_the_refresh(pytester: pytest.Pytester) -> None:
    # Only the second run's input is older: the replay names the refresh, not a re-record.
    pytester.makepyfile(agent_mod=AGENT, test_weather=TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.runpytest(*ARGS, "--agui-record").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_weather" / "test_two_runs.json"
    doc = json.loads(cassette.read_text())
    doc["runs"][1]["input"] = _older(doc["runs"][1]["input"])
    cassette.write_text(json.dumps(doc, indent=1))

    replay = pytester.runpytest(*ARGS)
    replay.assert_outcomes(failed=1)
    replay.stdout.fnmatch_lines(
        [
            "*run #1 starts from the recorded input with its ids named otherwise*",
            "*--agui-refresh*",
        ]
    )
