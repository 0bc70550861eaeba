"""The recipe agent as cassette tests: its model calls recorded once, replayed offline.

The agent talks to its model through the real ``openai`` SDK pointed at
``agui.provider.base_url``. While a test records, that address forwards every request to the
upstream and stores each streamed chunk in the cassette; on a plain ``pytest`` it serves the
stored chunks back, with no network and no key, and the agent's new event stream must equal
the recorded one.

Recording against OpenAI (``gpt-4o-mini``), with the key kept out of the cassette::

    OPENAI_API_KEY=sk-... pytest examples/recipe/test_recipe_cassettes.py \\
        --agui-record --agui-upstream=https://api.openai.com/v1 --snapshot-update

The cassettes in this repository were recorded against the scripted ``agui_upstream`` below
(this project has no key and no network): a real model writes other recipes, so its tests
would pin what it wrote instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from agui_replay.assertions import (
    assert_event_types,
    assert_final_state,
    assert_valid_stream,
    message_text,
)
from agui_replay.client import Session
from agui_replay.providers import (
    FakeProvider,
    LoopbackServer,
    ProviderRequest,
    ToolCallDelta,
    by_size,
)
from agui_replay.recording import CassetteSession
from agui_replay.server import run_input

from .agent import REJECTED, RecipeAgent
from .recipe import CARBONARA, UPDATE_RECIPE

ARGUMENTS = json.dumps({"recipe": CARBONARA}, ensure_ascii=False)
UPDATED = "Here's a classic carbonara: guanciale, egg yolks and Pecorino, no cream."
KEPT = "No problem, I left your recipe as it was."
# How a run that executes update_recipe ends: the call's result, the model's reply, the run's end.
ANSWERED_THEN_REPLY = [
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
]


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for the model, answering from the conversation it is sent: a request ending
    on the user's words gets the ``update_recipe`` call, its arguments in 24-character
    fragments; one ending on the tool's answer gets a short reply."""
    last = request.messages[-1]
    if last["role"] == "user":
        for n, fragment in enumerate(by_size(ARGUMENTS, 24)):
            first = n == 0
            yield ToolCallDelta(
                fragment, name=UPDATE_RECIPE if first else None, id="call_recipe" if first else None
            )
    else:
        words = (KEPT if last["content"] == REJECTED else UPDATED).split(" ")
        yield words[0]
        for word in words[1:]:
            yield " " + word


@pytest.fixture
def agui_upstream() -> Iterator[LoopbackServer]:
    """The provider recorded from (replaced here by the scripted model; only started when a
    test records)."""
    fake = FakeProvider(function=scripted_model)
    with fake.serve() as server:
        yield server
    fake.check()


def recipe_agent(agui: CassetteSession, *, require_confirmation: bool = False) -> RecipeAgent:
    return RecipeAgent(
        base_url=agui.provider.base_url,
        api_key=os.environ.get("OPENAI_API_KEY", "sk-replay"),  # scrubbed from cassettes
        require_confirmation=require_confirmation,
    )


def follow_up(events: list[dict[str, Any]], first: Any) -> tuple[Any, list[dict[str, Any]], Any]:
    """What a client sends back after run ``first``: its state, its messages, the interrupt."""
    session = Session(state=first.state, messages=first.messages).apply_all(events).finish()
    (interrupt,) = session.pending_interrupts
    return session.state, list(session.messages), interrupt


def test_the_recipe_streams_into_the_state(
    agui: CassetteSession, agui_folded_snapshot: Any
) -> None:
    events = agui.run(recipe_agent(agui), run_input("kitchen", "run-1", messages=["carbonara"]))

    assert_valid_stream(events, "strict")
    assert_final_state(events, {"recipe": CARBONARA})
    assert_event_types(
        events,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "STATE_SNAPSHOT",
            "STATE_DELTA",
            "STATE_SNAPSHOT",
            *ANSWERED_THEN_REPLY,
        ],
        in_order=True,
    )
    # Predictive state: the client watched the recipe being written, delta by delta.
    deltas = [e for e in events if e["type"] == "STATE_DELTA"]
    assert len(deltas) > 20
    assert message_text(events) == UPDATED
    # Deltas folded per message / tool call: one line per call's arguments, one per reply.
    assert events == agui_folded_snapshot


def test_confirming_then_approving_the_recipe(agui: CassetteSession, agui_snapshot: Any) -> None:
    agent = recipe_agent(agui, require_confirmation=True)
    first = run_input("kitchen", "run-1", messages=["carbonara"])
    paused = agui.run(agent, first)

    # Run 1 stops before the tool runs: the predicted recipe is on screen, an interrupt asks.
    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert "TOOL_CALL_RESULT" not in [e["type"] for e in paused]
    assert_final_state(paused, {"recipe": CARBONARA})
    state, messages, interrupt = follow_up(paused, first)
    assert interrupt["reason"] == "tool_call"

    # Run 2 approves: the tool runs, the final state is published, the model replies.
    resume = [{"interruptId": interrupt["id"], "status": "resolved"}]
    approved = agui.run(
        agent, run_input("kitchen", "run-2", state=state, messages=messages, resume=resume)
    )
    assert_valid_stream(approved)
    assert_event_types(
        approved,
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "STATE_SNAPSHOT",
            *ANSWERED_THEN_REPLY,
        ],
        in_order=True,
    )
    assert_final_state(approved, {"recipe": CARBONARA}, initial_state=state)
    assert message_text(approved) == UPDATED

    assert paused == agui_snapshot(name="paused")
    assert approved == agui_snapshot(name="approved")


def test_confirming_then_rejecting_restores_the_recipe(
    agui: CassetteSession, agui_snapshot: Any
) -> None:
    before = {"recipe": {**CARBONARA, "title": "Weeknight Carbonara", "ingredients": []}}
    agent = recipe_agent(agui, require_confirmation=True)
    first = run_input("kitchen", "run-1", state=before, messages=["make it classic"])
    paused = agui.run(agent, first)
    assert_final_state(paused, {"recipe": CARBONARA}, initial_state=before)  # predicted
    state, messages, interrupt = follow_up(paused, first)

    resume = [{"interruptId": interrupt["id"], "status": "cancelled"}]
    rejected = agui.run(
        agent, run_input("kitchen", "run-2", state=state, messages=messages, resume=resume)
    )

    # The predicted changes are discarded: the client is back on its own recipe.
    assert_final_state(rejected, before, initial_state=state)
    assert message_text(rejected) == KEPT
    assert rejected == agui_snapshot(name="rejected")
