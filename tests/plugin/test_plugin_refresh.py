"""``pytest --agui-refresh`` through real pytest runs (pytester).

The story a user lives: record once; change how the agent turns the model's answer into
events; the plain replay fails; ``--agui-refresh`` (offline: the upstream fixture refuses to be
used and the network guard is up) stores the new events and keeps the recorded interactions
byte for byte; the plain replay passes again. Changing the prompt instead cannot be refreshed:
the run fails, names the first differing field and asks for ``--agui-record``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import httpcore2  # noqa: F401  (imported once here: pytester drops modules first imported
import httpx2  # noqa: F401  inside, and httpx2 maps only its own httpcore2's errors)
import openai  # noqa: F401
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.pytester_run import run

CONFTEST = textwrap.dedent(
    """
    import os
    import openai, pytest
    from agui_replay.providers import FakeProvider

    def _echo(request):
        for word in request.messages[-1]["content"].split():
            yield " " + word

    @pytest.fixture
    def agui_upstream():
        if os.environ.get("AGUI_TEST_OFFLINE"):
            raise AssertionError("the upstream was asked for although the run is offline")
        with FakeProvider(function=_echo).serve() as server:
            yield server

    @pytest.fixture
    def agent(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="dummy", max_retries=0)
        style = os.environ.get("AGENT_STYLE", "plain")
        prompt = os.environ.get("AGENT_PROMPT", "")

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": prompt + ctx.last_user_text()}],
                stream=True,
            )
            if style == "steps":  # the agent's own logic changed: same requests, more events
                with ctx.step("think"):
                    pass
            with ctx.message("assistant") as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        text = chunk.choices[0].delta.content
                        message.delta(text.upper() if style == "steps" else text)

        return agent
    """
)

TESTS = textwrap.dedent(
    """
    def test_hello(agui, agent):
        events = agui.run(agent, "hello there")
        assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)

    def test_twice(agui, agent):
        agui.run(agent, "one")
        agui.run(agent, "two")
    """
)

HELLO = Path("cassettes", "test_agent", "test_hello.json")
TWICE = Path("cassettes", "test_agent", "test_twice.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "AGENT_PROMPT", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def _record_hello(project: pytest.Pytester) -> bytes:
    """Record test_hello alone; its cassette's bytes."""
    run(project, "--agui-record", "-k", "test_hello").assert_outcomes(passed=1, deselected=1)
    return HELLO.read_bytes()


def _types(path: Path, run: int = 0) -> list[str]:
    doc = json.loads(path.read_bytes())
    return [e["type"] for e in doc["runs"][run]["events"]]


def _interaction_text(path: Path) -> list[str]:
    """The exact text of each run's ``"interactions"`` member in the file."""
    text = path.read_text(encoding="utf-8")
    found = []
    start = 0
    while (at := text.find('"interactions": [', start)) != -1:
        depth, end = 0, text.index("[", at)
        while True:
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            if depth == 0:
                break
            end += 1
        found.append(text[at : end + 1])
        start = end
    return found


def test_refresh_stores_the_new_events_and_keeps_the_interactions(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "--agui-record").assert_outcomes(passed=2)
    recorded = HELLO.read_bytes()
    recorded_interactions = _interaction_text(HELLO)
    assert recorded_interactions
    assert "STEP_STARTED" not in _types(HELLO)

    monkeypatch.setenv("AGENT_STYLE", "steps")
    replay = run(project)
    replay.assert_outcomes(failed=2)
    replay.stdout.fnmatch_lines(["*ReplayMismatchError*does not replay as recorded*"])

    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")  # the upstream fixture now refuses
    refresh = run(project, "--agui-refresh")
    refresh.assert_outcomes(passed=2)
    refresh.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 2 refreshed, 0 replayed*",
            "*refreshed: cassettes/test_agent/test_hello.json*",
            "*refreshed: cassettes/test_agent/test_twice.json*",
        ]
    )
    assert HELLO.read_bytes() != recorded
    assert "STEP_STARTED" in _types(HELLO)
    assert "STEP_STARTED" in _types(TWICE, 1)
    assert _interaction_text(HELLO) == recorded_interactions  # byte for byte
    assert json.loads(HELLO.read_bytes())["recorded_at"] == json.loads(recorded)["recorded_at"]

    run(project).assert_outcomes(passed=2)  # the plain replay passes again

    again = run(project, "--agui-refresh")  # nothing changed now: nothing written
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*0 refreshed, 2 replayed*"])


def test_refresh_after_a_prompt_change_fails_and_asks_for_a_record(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _record_hello(project)
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    monkeypatch.setenv("AGENT_PROMPT", "Be brief. ")
    result = run(project, "--agui-refresh", "-k", "test_hello")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayMismatchError: *test_hello.json: run #0 cannot be refreshed*first "
            "differing field: /body/messages/0/content*",
            "*a real re-record is needed: `pytest test_agent.py::test_hello --agui-record`*",
        ]
    )
    assert HELLO.read_bytes() == before


def test_refresh_after_an_input_change_names_the_field(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _record_hello(project)
    project.makepyfile(test_agent=TESTS.replace('"hello there"', '"hello here"'))
    result = run(project, "--agui-refresh", "-k", "test_hello")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        ["*cannot be refreshed*another input*first differing field: /messages/0/content*"]
    )
    assert HELLO.read_bytes() == before


def test_a_failing_test_is_not_refreshed(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _record_hello(project)
    monkeypatch.setenv("AGENT_STYLE", "steps")
    project.makepyfile(
        test_agent=TESTS.replace(
            'assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)',
            'assert not any(e["type"] == "STEP_STARTED" for e in events)',
        )
    )
    result = run(project, "--agui-refresh", "-k", "test_hello")
    result.assert_outcomes(failed=1, deselected=1)
    assert HELLO.read_bytes() == before


def test_refresh_without_a_cassette_asks_for_a_record(project: pytest.Pytester) -> None:
    result = run(project, "--agui-refresh", "-k", "test_hello")
    result.assert_outcomes(errors=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*no cassette for this test: a refresh re-derives*`pytest test_agent.py::test_hello "
            "--agui-record`*"
        ]
    )
    assert not HELLO.exists()


def test_refresh_cannot_be_combined_with_recording(project: pytest.Pytester) -> None:
    result = run(project, "--agui-refresh", "--agui-record")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agui-refresh *cannot be combined with --agui-record*"])


def test_a_fewer_requests_change_is_refused(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _record_hello(project)
    project.makepyfile(
        test_agent=(
            "def test_hello(agui):\n"
            "    def agent(ctx):\n"
            "        ctx.say('no model call at all')\n"
            "    agui.run(agent, 'hello there')\n"
        )
    )
    result = run(project, "--agui-refresh", "-k", "test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cannot be refreshed*made 0 provider request(s) where the recording has 1*"]
    )
    assert HELLO.read_bytes() == before
