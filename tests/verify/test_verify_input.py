"""A run that answers an earlier run's tool call, verified alone with its input."""

from __future__ import annotations

import pytest

from agui_replay.assertions import assert_valid_stream
from agui_replay.errors import ProtocolViolation
from agui_replay.server import run_input
from agui_replay.verify import Verifier, verify_stream

# Run 2 of an approval flow: the framework's RUN_STARTED carries no input, and the result
# answers the call that run 1 opened (and the input names).
RUN_2 = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2"},
    {"type": "TOOL_CALL_RESULT", "messageId": "m9", "toolCallId": "call_1", "content": "done"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "run-2"},
]
INPUT_2 = {
    "threadId": "t",
    "runId": "run-2",
    "messages": [
        {"id": "u1", "role": "user", "content": "clear it"},
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "clear", "arguments": "{}"},
                }
            ],
        },
    ],
}


def test_without_the_input_the_answer_names_an_unknown_call() -> None:
    with pytest.raises(ProtocolViolation) as caught:
        verify_stream(RUN_2, "strict")
    assert caught.value.rule == "unknown-id"
    with pytest.raises(AssertionError, match="unknown-id"):
        assert_valid_stream(RUN_2, "strict")


@pytest.mark.parametrize("given", [INPUT_2, run_input("t", "run-2", messages=INPUT_2["messages"])])
def test_with_the_input_the_run_verifies(given: object) -> None:
    verify_stream(RUN_2, "strict", input=given)
    assert_valid_stream(RUN_2, "strict", input=given)


def test_a_call_the_input_does_not_name_is_still_unknown() -> None:
    other = {**INPUT_2, "messages": INPUT_2["messages"][:1]}
    with pytest.raises(AssertionError, match='tool call "call_1"'):
        assert_valid_stream(RUN_2, "strict", input=other)


def test_learn_input_on_a_streaming_verifier() -> None:
    verifier = Verifier("strict")
    verifier.learn_input(INPUT_2)
    for event in RUN_2:
        verifier.feed(event)
    verifier.finish()
