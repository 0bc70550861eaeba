"""End to end: a pydantic-ai agent behind its AG-UI adapter, recorded once, replayed twice.

The agent talks to the provider through the real ``openai`` SDK. The recording run points the
recorder at a fake upstream server; the two replay runs have no upstream at all (the fixture
that would start one fails the test if it is asked for). pydantic-ai names its messages with
random UUIDs and stamps events with the wall clock, yet both replays match the cassette and the
syrupy snapshot byte for byte.
"""

from __future__ import annotations

import json
import textwrap
import uuid

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.recording
import agui_replay.snapshot  # noqa: F401

pytest.importorskip("pydantic_ai")
import pydantic_ai.models.openai
import pydantic_ai.ui.ag_ui  # noqa: F401

CONFTEST = textwrap.dedent(
    """
    import os
    import pytest
    from agui_replay.providers import FakeProvider

    @pytest.fixture
    def agui_upstream():
        if os.environ.get("AGUI_E2E_REPLAY"):
            pytest.fail("the replay asked for an upstream provider")
        fake = FakeProvider()
        fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
        fake.reply("It is sunny", " in Paris", "!")
        with fake.serve() as server:
            yield server
        fake.check()  # the recording consumed exactly the scripted turns
    """
)

TEST_E2E = textwrap.dedent(
    """
    import json, os
    import openai, pytest
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route
    from agui_replay.server import run_input

    def weather_app(client):
        agent = Agent(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client)))

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"sunny in {city}"

        async def endpoint(request):
            return await AGUIAdapter.dispatch_request(request, agent=agent)

        return Starlette(routes=[Route("/agent", endpoint, methods=["POST"])])

    @pytest.mark.anyio
    async def test_weather(agui, agui_snapshot):
        base_url = agui.provider.base_url
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-e2e-dummy", max_retries=0)
        async with client:
            events = await agui.arun(
                weather_app(client),
                run_input("thread-1", "run-1", messages=["Weather in Paris?"]),
                path="/agent",
            )
        with open(os.environ["AGUI_E2E_RAW"], "a") as out:
            out.write(json.dumps(events) + "\\n")
        assert events == agui_snapshot
    """
)


def test_pydantic_ai_agent_records_once_and_replays_offline_twice(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw_log = pytester.path / "raw.jsonl"
    monkeypatch.setenv("AGUI_E2E_RAW", str(raw_log))
    monkeypatch.delenv("AGUI_E2E_REPLAY", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_e2e=TEST_E2E)
    args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")

    recorded = pytester.runpytest(*args, "--agui-record", "--snapshot-update")
    recorded.assert_outcomes(passed=1)
    cassette_file = pytester.path / "cassettes" / "test_e2e" / "test_weather[asyncio].json"
    snapshot_file = (
        pytester.path / "__snapshots__" / "test_e2e" / "test_weather[asyncio].agui.jsonl"
    )
    cassette_bytes = cassette_file.read_bytes()
    snapshot_bytes = snapshot_file.read_bytes()

    cassette = json.loads(cassette_bytes)
    (run,) = cassette["runs"]
    assert len(run["interactions"]) == 2  # the tool call turn, then the answer
    second_request = run["interactions"][1]["request"]["body"]
    assert second_request["messages"][-1]["content"] == "sunny in Paris"
    types = [e["type"] for e in run["events"]]
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_ARGS" in types
    text = "".join(e["delta"] for e in run["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is sunny in Paris!"
    assert all("timestamp" not in e for e in run["events"])
    snapshot_lines = snapshot_bytes.decode().splitlines()
    assert len(snapshot_lines) == len(run["events"])  # one event per line

    monkeypatch.setenv("AGUI_E2E_REPLAY", "1")
    for _ in range(2):
        replayed = pytester.runpytest(*args)
        replayed.assert_outcomes(passed=1)
        replayed.stdout.fnmatch_lines(["*0 cassette(s) recorded, 1 replayed*"])
        assert cassette_file.read_bytes() == cassette_bytes
        assert snapshot_file.read_bytes() == snapshot_bytes

    # pydantic-ai mints its message ids with uuid.uuid4(): during agui.arun the standard
    # generators replay one deterministic sequence per cassette and run, so the raw ids the
    # agent produced were the same UUIDs on the recording and on both replays.
    runs = [json.loads(line) for line in raw_log.read_text().splitlines()]
    assert len(runs) == 3
    message_ids = [
        [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"] for events in runs
    ]
    assert message_ids[0] == message_ids[1] == message_ids[2]
    assert all(uuid.UUID(m).version == 4 for m in message_ids[0])
    assert all(any("timestamp" in e for e in events) for events in runs)
