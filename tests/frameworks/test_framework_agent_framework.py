"""Record, replay offline, re-record: a Microsoft Agent Framework test suite, as a user writes it.

A fresh folder holds a recipe agent on agent-framework-ag-ui (``AgentFrameworkAgent`` with
``state_schema``, ``predict_state_config`` and ``require_confirmation``, served by its FastAPI
endpoint) and two cassette tests that use only the plugin's documented API. Against a local
OpenAI-compatible server that draws random ``chatcmpl-``/``call_`` ids per response
(``FakeProvider(ids="random")`` on 127.0.0.1, given with ``--agui-upstream``), the suite is:

1. recorded with ``--agui-record --snapshot-update``; the server is then stopped;
2. replayed twice offline: no request reaches the server, no cassette or snapshot byte changes;
3. verified in strict mode, every cassette, with ``agui-replay verify --mode strict``;
4. recorded again against a new server, which draws new provider ids: the cassettes change,
   the snapshots must not;
5. replayed again.

Each step is a pytest process of its own, as on a user's machine. Nothing of Agent Framework
is patched. agent-framework-ag-ui pins ``ag-ui-protocol<0.2``, so
this module runs in ``.venv-af`` (``.ci/run`` builds it) and skips itself elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip(
    "agent_framework_ag_ui",
    reason="agent-framework-ag-ui pins ag-ui-protocol<0.2: this test runs in .venv-af "
    "(see .ci/run)",
)

from agui_replay.providers import FakeProvider, ProviderRequest, ToolCallDelta
from agui_replay.providers._chunking import by_size

RECIPE = {
    "title": "Fluffy Pancakes",
    "skill_level": "Beginner",
    "special_preferences": ["Vegetarian"],
    "cooking_time": "15 min",
    "ingredients": [
        {"icon": "🌾", "name": "Flour", "amount": "200g"},
        {"icon": "🥛", "name": "Milk", "amount": "300ml"},
        {"icon": "🥚", "name": "Eggs", "amount": "2"},
    ],
    "instructions": ["Whisk everything together", "Fry ladlefuls in a hot buttered pan"],
}
REPLY = "Here's your recipe! Pancakes, ready in fifteen minutes."

RECIPE_AGENT = textwrap.dedent(
    '''
    """A recipe agent on Agent Framework whose recipe streams into the client's state."""

    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient
    from agent_framework_ag_ui import AgentFrameworkAgent, add_agent_framework_fastapi_endpoint
    from fastapi import FastAPI
    from pydantic import BaseModel, Field


    class Ingredient(BaseModel):
        icon: str
        name: str
        amount: str


    class Recipe(BaseModel):
        title: str
        skill_level: str
        special_preferences: list[str] = Field(default_factory=list)
        cooking_time: str
        ingredients: list[Ingredient]
        instructions: list[str]


    def update_recipe(recipe: Recipe) -> str:
        """Update the recipe. Always write the complete recipe."""
        return "Recipe updated."


    def create_app(*, base_url, api_key, require_confirmation):
        approval = "always_require" if require_confirmation else "never_require"
        agent = Agent(
            name="recipe_agent",
            instructions="You create recipes. To change the recipe, call update_recipe.",
            client=OpenAIChatCompletionClient("gpt-4o-mini", base_url=base_url, api_key=api_key),
            tools=[tool(update_recipe, approval_mode=approval)],
        )
        recipe_agent = AgentFrameworkAgent(
            agent=agent,
            state_schema={"recipe": {"type": "object", "description": "The current recipe"}},
            predict_state_config={"recipe": {"tool": "update_recipe", "tool_argument": "recipe"}},
            require_confirmation=require_confirmation,
        )
        app = FastAPI()
        add_agent_framework_fastapi_endpoint(app, recipe_agent, "/", single_user=True)
        return app
    '''
)

TEST_RECIPE = textwrap.dedent(
    """
    import os

    from agui_replay.assertions import assert_event_types, assert_final_state
    from agui_replay.client import Session
    from agui_replay.server import run_input

    from recipe_agent import create_app

    RECIPE = {recipe!r}


    def recipe_app(agui, *, require_confirmation):
        return create_app(
            base_url=agui.provider.base_url,
            api_key=os.environ.get("OPENAI_API_KEY", "sk-test"),
            require_confirmation=require_confirmation,
        )


    def test_the_recipe_streams_into_the_state(agui, agui_snapshot):
        app = recipe_app(agui, require_confirmation=False)
        events = agui.run(app, run_input("kitchen", "run-1", messages=["Pancakes, please"]))

        assert_event_types(
            events,
            ["TOOL_CALL_ARGS", "STATE_DELTA", "TOOL_CALL_END", "TOOL_CALL_RESULT",
             "STATE_SNAPSHOT"],
            in_order=True,
        )
        assert_final_state(events, {{"recipe": RECIPE}})
        assert events == agui_snapshot


    def test_the_recipe_waits_for_approval(agui, agui_snapshot):
        app = recipe_app(agui, require_confirmation=True)
        first = run_input("kitchen", "run-1", messages=["Pancakes, please"])
        paused = agui.run(app, first)
        assert paused[-1]["outcome"]["type"] == "interrupt"
        assert_final_state(paused, {{"recipe": RECIPE}})

        client = Session(state=first.state, messages=first.messages).apply_all(paused).finish()
        (interrupt,) = client.pending_interrupts
        answer = {{"approved": True}}
        resume = [{{"interruptId": interrupt["id"], "status": "resolved", "payload": answer}}]
        second = run_input(
            "kitchen", "run-2", state=client.state, messages=client.messages, resume=resume
        )
        approved = agui.run(app, second)

        assert [e["toolCallId"] for e in approved if e["type"] == "TOOL_CALL_RESULT"] == [
            interrupt["toolCallId"]
        ]
        assert_final_state(approved, {{"recipe": RECIPE}}, initial_state=client.state)
        assert paused == agui_snapshot(name="paused")
        assert approved == agui_snapshot(name="approved")
    """
).format(recipe=RECIPE)

ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:randomly")
PROVIDER_CALL_ID = re.compile(r"call_[0-9a-f]{24}")


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """The local server's model: the recipe call for the user's ask, a sentence after it."""
    if request.messages[-1]["role"] == "tool":
        yield REPLY
        return
    arguments = json.dumps({"recipe": RECIPE}, ensure_ascii=False)
    for n, fragment in enumerate(by_size(arguments, 20)):
        yield ToolCallDelta(fragment, name="update_recipe" if n == 0 else None)


def files(folder: Path, pattern: str) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.glob(pattern))}


def digest(contents: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}


def provider_call_ids(cassettes: dict[str, bytes]) -> set[str]:
    return {m for data in cassettes.values() for m in PROVIDER_CALL_ID.findall(data.decode())}


def churn(before: dict[str, bytes], after: dict[str, bytes]) -> list[tuple[str, str, str]]:
    """The snapshot lines a re-record changed: (file, line before, line after)."""
    assert sorted(before) == sorted(after)
    changed = []
    for name in before:
        old, new = before[name].decode().splitlines(), after[name].decode().splitlines()
        assert len(old) == len(new), f"{name}: {len(old)} events before, {len(new)} after"
        changed += [(name, a, b) for a, b in zip(old, new, strict=True) if a != b]
    return changed


def test_an_agent_framework_suite_records_replays_verifies_and_rerecords(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(recipe_agent=RECIPE_AGENT, test_recipe=TEST_RECIPE)
    cassette_dir = pytester.path / "cassettes"
    snapshot_dir = pytester.path / "__snapshots__"

    # 1. Record against the local server, then stop it.
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as server:
        recorded = pytester.runpytest_subprocess(
            *ARGS, "--agui-record", "--snapshot-update", f"--agui-upstream={server.base_url}"
        )
        recorded.assert_outcomes(passed=2)
    fake.check()
    asked = len(fake.requests)
    assert asked == 4  # the streamed test's two turns, the paused run's one, the approved one's
    cassettes = files(cassette_dir, "**/*.json")
    snapshots = files(snapshot_dir, "**/*.agui.jsonl")
    assert sorted(cassettes) == [
        "test_recipe/test_the_recipe_streams_into_the_state.json",
        "test_recipe/test_the_recipe_waits_for_approval.json",
    ]
    assert len(snapshots) == 3
    first_ids = provider_call_ids(cassettes)
    assert len(first_ids) == 2  # one drawn per tool call, random

    # 2. Replay twice, offline: the server is gone and would refuse a connection.
    for _ in range(2):
        replayed = pytester.runpytest_subprocess(*ARGS)
        replayed.assert_outcomes(passed=2)
        replayed.stdout.fnmatch_lines(["*0 cassette(s) recorded, 2 replayed*"])
        assert len(fake.requests) == asked
        assert digest(files(cassette_dir, "**/*.json")) == digest(cassettes)
        assert digest(files(snapshot_dir, "**/*.agui.jsonl")) == digest(snapshots)

    # 3. Every cassette passes the strict ordering rules (run 2 answers run 1's tool call).
    for name in cassettes:
        verified = subprocess.run(
            [sys.executable, "-m", "agui_replay", "verify", "--mode", "strict", name],
            cwd=cassette_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "(strict mode)" in verified.stdout

    # 4. Record again against a new server: new provider ids in the cassettes, and the
    # snapshots (updated only if they differ) stay as they were.
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as server:
        rerecorded = pytester.runpytest_subprocess(
            *ARGS, "--agui-record", "--snapshot-update", f"--agui-upstream={server.base_url}"
        )
        rerecorded.assert_outcomes(passed=2)
    fake.check()
    cassettes_again = files(cassette_dir, "**/*.json")
    second_ids = provider_call_ids(cassettes_again)
    assert len(second_ids) == 2
    assert not second_ids & first_ids  # the provider drew new ids
    changed = churn(snapshots, files(snapshot_dir, "**/*.agui.jsonl"))

    # 5. Replay again.
    replayed = pytester.runpytest_subprocess(*ARGS)
    replayed.assert_outcomes(passed=2)
    assert digest(files(cassette_dir, "**/*.json")) == digest(cassettes_again)

    # agent-framework-ag-ui sends confirm_changes' arguments, which name the provider's call
    # id ("function_call_id": "call_..."), in one TOOL_CALL_ARGS delta: normalization renames
    # an id named already even there, so no snapshot line follows the provider's ids.
    assert changed == []
