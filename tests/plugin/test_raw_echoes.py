"""A prompt edit that ``match_ignore`` covers replays, although the framework's RAW events repeat
the prompt.

The project is what a user has: a LangGraph agent behind ag-ui-langgraph with its defaults (RAW
events and ``rawEvent`` fields on), a system prompt of its own, ``ChatOpenAI`` at
``agui.provider.base_url``, and a syrupy snapshot of each stream; the model is a
:class:`FakeProvider`. After recording, the user rewords the system prompt and marks the test
``match_ignore=["/messages/0/content"]``: the replay passes and the snapshot holds, since a
replay leaves the framework's own payloads out of the comparison. A test marked
``compare_raw=True`` compares them and fails on the echoed prompt, naming it.
"""

from __future__ import annotations

import textwrap

import pytest

# Imported once here: pytester drops the modules first imported inside its runs.
pytest.importorskip("ag_ui_langgraph")
pytest.importorskip("langchain_openai")
import fastapi  # noqa: F401
import langgraph.checkpoint.memory
import langgraph.prebuilt  # noqa: F401
import openai  # noqa: F401

from agui_replay.providers import FakeProvider
from tests.frameworks.test_framework_langgraph import AGENT, CONFTEST, weather_model

PROMPTED = AGENT.replace(
    'await model.ainvoke(state["messages"], config)',
    'await model.ainvoke([SystemMessage(os.environ["PROMPT"]), *state["messages"]], config)',
).replace(
    "from fastapi import FastAPI",
    "import os\nfrom fastapi import FastAPI\nfrom langchain_core.messages import SystemMessage",
    1,
)

TESTS = textwrap.dedent(
    """
    import pytest
    from agui_replay.server import run_input

    from weather_agent import build_app

    pytestmark = [
        pytest.mark.anyio,
        pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
    ]

    async def ask(agui):
        app = build_app(agui.provider.base_url, "sk-user-key")
        question = run_input("t", "run-1", messages=["Weather in Paris?"])
        return await agui.arun(app, question, path="/agent")

    @pytest.mark.agui(match_ignore=["/messages/0/content"])
    async def test_weather(agui, agui_snapshot):
        events = await ask(agui)
        assert any(e["type"] == "RAW" for e in events)
        assert events == agui_snapshot

    @pytest.mark.agui(match_ignore=["/messages/0/content"], compare_raw=True)
    async def test_weather_raw_compared(agui):
        await ask(agui)
    """
)

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest")


def _snapshots(pytester: pytest.Pytester) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(pytester.path.rglob("*.agui.jsonl"))}


def test_a_prompt_edit_under_match_ignore_replays_though_raw_events_echo_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(weather_agent=PROMPTED, test_weather_agent=TESTS)
    pytester.syspathinsert()
    monkeypatch.setenv("PROMPT", "You are a weather assistant.")
    with FakeProvider(function=weather_model).serve() as server:
        recorded = pytester.runpytest(
            *ARGS, "--agui-record", "--snapshot-update", f"--agui-upstream={server.base_url}"
        )
    recorded.assert_outcomes(passed=2)
    cassette = pytester.path / "cassettes" / "test_weather_agent" / "test_weather.json"
    assert b"You are a weather assistant." in cassette.read_bytes()
    snapshots = _snapshots(pytester)
    assert snapshots

    monkeypatch.setenv("PROMPT", "You are a helpful weather assistant. Answer briefly.")
    replayed = pytester.runpytest(*ARGS)
    replayed.assert_outcomes(passed=1, failed=1)
    out = replayed.stdout.str()
    assert "test_weather_agent.py::test_weather_raw_compared" in out
    assert "FAILED test_weather_agent.py::test_weather " not in out
    assert "ReplayMismatchError" in out
    assert "/event/data/input/messages/0/0/content" in out  # the echo, compared on request
    assert "replayed with ignored fields: 2 tests" in out
    assert _snapshots(pytester) == snapshots
    assert b"You are a weather assistant." in cassette.read_bytes()
