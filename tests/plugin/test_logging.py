"""Debug logs of the plugin's decisions, read the way a user reads them (pytest's own options).

A user who asks "why did my request not match" runs ``pytest --log-level=DEBUG -o
log_cli=true`` and reads, under the ``agui_replay`` loggers, what the session decided for the
cassette, where each request went, and which recorded interaction it matched or why none did.
"""

from __future__ import annotations

import textwrap

import openai  # noqa: F401  (imported here once: pytester drops modules first imported inside)
import pytest

AGENT = """
import openai


def ask(question):
    def agent(ctx):
        client = openai.OpenAI(base_url=AGUI.provider.base_url, api_key="sk-x", max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": question}],
            stream=True,
        )
        with ctx.assistant_message() as message:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    message.delta(chunk.choices[0].delta.content)

    return agent
"""

TEST = """
import agent
from agui_replay.assertions import message_text


def test_paris(agui):
    agent.AGUI = agui
    events = agui.run(agent.ask(QUESTION), "What is the weather in Paris?")
    assert message_text(events) == "Sunny."
"""

CONFTEST = """
import pytest

from agui_replay.providers import FakeProvider


@pytest.fixture
def agui_upstream():
    upstream = FakeProvider()
    upstream.reply("Sunny.")
    with upstream.serve() as server:
        yield server
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agent=textwrap.dedent(AGENT))
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makepyfile(test_weather=textwrap.dedent(TEST).replace("QUESTION", '"Paris?"'))
    pytester.syspathinsert()
    pytester.runpytest("--agui-record").assert_outcomes(passed=1)
    return pytester


def test_a_replay_logs_the_cassette_decision_the_route_and_the_match(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--log-level=DEBUG", "-o", "log_cli=true")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "agui_replay.session" in out
    assert "run #0 replays (record mode none)" in out
    assert "agui_replay.routing" in out
    assert "the session's own server, answered in process" in out
    assert "agui_replay.matching" in out
    assert "matches recorded interaction #0" in out


def test_a_mismatch_is_logged_with_its_first_difference(project: pytest.Pytester) -> None:
    project.makepyfile(test_weather=textwrap.dedent(TEST).replace("QUESTION", '"Lyon?"'))
    result = project.runpytest("--log-level=DEBUG", "-o", "log_cli=true")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "does not match recorded interaction #0: first difference at /body/messages" in out


def test_recording_logs_what_it_writes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent=textwrap.dedent(AGENT))
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    pytester.makepyfile(test_weather=textwrap.dedent(TEST).replace("QUESTION", '"Paris?"'))
    pytester.syspathinsert()
    result = pytester.runpytest("--agui-record", "--log-level=DEBUG", "-o", "log_cli=true")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "run #0 records (record mode" in out
    assert "writing 1 run(s)" in out


def test_nothing_is_logged_at_the_default_level(project: pytest.Pytester) -> None:
    result = project.runpytest("-o", "log_cli=true")
    result.assert_outcomes(passed=1)
    assert "agui_replay.session" not in result.stdout.str()
