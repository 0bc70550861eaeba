"""Seed 003's recipe agent on Agent Framework, as cassette tests: recorded once, replayed offline.

The agent is agent-framework-ag-ui's own FastAPI endpoint around an ``AgentFrameworkAgent``;
its model client (Agent Framework's ``OpenAIChatCompletionClient``) is pointed at
``agui.provider.base_url``. While a test records, that address forwards every request to the
upstream and stores each streamed chunk; a plain ``pytest`` serves the stored chunks back, with
no network and no key, and the agent's new event stream must equal the recorded one.

Nothing of Agent Framework is patched: the ids it mints with ``uuid4`` (message ids,
``af-call-...`` approval ids, the ``confirm_changes`` call) come out the same on every replay
because the plugin makes the uuid generators deterministic during each run, and the provider's
random ``call_...`` ids are renamed by normalization wherever they appear (tool call events,
CUSTOM values, the confirmation's arguments, the next run's input).

Recording against OpenAI, the key kept out of the cassettes::

    OPENAI_API_KEY=sk-... .venv-af/bin/python -m pytest examples/agent_framework_recipe \\
        --agui-record --agui-upstream=https://api.openai.com/v1 --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` of
``conftest.py``, which draws random provider ids like OpenAI does.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip(
    "agent_framework_ag_ui",
    reason="agent-framework-ag-ui pins ag-ui-protocol<0.2: run this example in .venv-af "
    "(see .ci/run)",
)

from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_valid_stream,
    message_text,
)
from agui_replay.client import Session
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import create_app
from .scripted_model import CARBONARA, REPLY


def recipe_app(agui: CassetteSession, *, require_confirmation: bool) -> Any:
    return create_app(
        base_url=agui.provider.base_url,
        api_key=os.environ.get("OPENAI_API_KEY", "sk-replay"),  # scrubbed from cassettes
        require_confirmation=require_confirmation,
    )


def state_after(events: list[dict[str, Any]], index: int) -> Any:
    """The client's state once it has applied ``events[: index + 1]``."""
    return Session().apply_all(events[: index + 1]).state


def test_the_recipe_streams_into_the_state(agui: CassetteSession, agui_snapshot: Any) -> None:
    app = recipe_app(agui, require_confirmation=False)
    events = agui.run(app, run_input("kitchen", "run-1", messages=["A classic carbonara, please"]))

    assert_valid_stream(events, "strict")
    types = [e["type"] for e in events]
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "CUSTOM",  # PredictState: which tool argument feeds which state key
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "STATE_DELTA",  # predicted from the streamed arguments, before the tool runs
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STATE_SNAPSHOT",  # the final state, once the tool has run
            "TEXT_MESSAGE_CONTENT",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    predict = next(e for e in events if e["type"] == "CUSTOM")
    assert predict["name"] == "PredictState"
    assert predict["value"] == [
        {"state_key": "recipe", "tool": "update_recipe", "tool_argument": "recipe"}
    ]

    # The recipe reached the client's state while the model was still on the tool call:
    # after its last argument fragment and before the call ended and the tool ran.
    delta = types.index("STATE_DELTA")
    assert types[delta - 1] == "TOOL_CALL_ARGS"
    assert delta < types.index("TOOL_CALL_END") < types.index("TOOL_CALL_RESULT")
    assert events[delta]["delta"][0]["path"] == "/recipe"
    assert state_after(events, delta) == {"recipe": CARBONARA}
    arguments = [e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"]
    assert len(arguments) > 20  # streamed in fragments, not in one piece

    # Then the tool ran and its result became the state the client keeps.
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "Recipe updated."
    assert types.index("STATE_SNAPSHOT", delta) > types.index("TOOL_CALL_RESULT")
    assert_final_state(events, {"recipe": CARBONARA})
    assert message_text(events) == REPLY
    assert events == agui_snapshot


def test_the_recipe_waits_for_approval_then_is_applied(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    app = recipe_app(agui, require_confirmation=True)
    first = run_input("kitchen", "run-1", messages=["carbonara"])
    paused = agui.run(app, first)

    # Run 1 stops before update_recipe runs: the predicted recipe is in the state, the call
    # waits for approval (a confirm_changes call for the UI and a tool_call interrupt).
    assert_valid_stream(paused, "strict")
    assert_event_types(
        paused,
        [
            "TOOL_CALL_START",  # update_recipe
            "STATE_DELTA",  # the predicted recipe
            "TOOL_CALL_END",
            "CUSTOM",  # function_approval_request
            "TOOL_CALL_START",  # confirm_changes, for the UI's approval prompt
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    assert "TOOL_CALL_RESULT" not in [e["type"] for e in paused]
    assert_final_state(paused, {"recipe": CARBONARA})
    calls = [e["toolCallName"] for e in paused if e["type"] == "TOOL_CALL_START"]
    assert calls == ["update_recipe", "confirm_changes"]
    outcome = paused[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_call"
    assert interrupt["message"] == "Approve running update_recipe?"
    update_call = next(e for e in paused if e.get("toolCallName") == "update_recipe")
    assert interrupt["toolCallId"] == update_call["toolCallId"]
    request = next(e for e in paused if e.get("name") == "function_approval_request")
    assert request["value"]["id"] == interrupt["id"]
    assert request["value"]["function_call"]["arguments"] == {"recipe": CARBONARA}

    # The client folds run 1's raw events into its state and messages and answers the
    # interrupt, as a front end would; run 2 carries all of it back.
    client = Session(state=first.state, messages=first.messages).apply_all(paused).finish()
    assert [i["id"] for i in client.pending_interrupts] == [interrupt["id"]]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    second = run_input(
        "kitchen", "run-2", state=client.state, messages=client.messages, resume=resume
    )
    approved = agui.run(app, second)

    # Run 2 runs the approved tool, publishes the final state and replies.
    assert_valid_stream([*paused, *approved], "strict")  # run 2 answers run 1's call
    assert_event_types(
        approved,
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_CONTENT",
            "RUN_FINISHED",
        ],
        in_order=True,
    )
    result = next(e for e in approved if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == update_call["toolCallId"]
    assert result["content"] == "Recipe updated."
    assert_final_state(approved, {"recipe": CARBONARA}, initial_state=client.state)
    # By id: the terminal MESSAGES_SNAPSHOT lists the whole conversation and, merged the way
    # the reference client merges it, leaves the streamed reply ahead of the older messages.
    reply = next(e["messageId"] for e in approved if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert message_text(approved, reply) == REPLY
    assert "outcome" not in approved[-1]

    assert paused == agui_snapshot(name="paused")
    assert approved == agui_snapshot(name="approved")
