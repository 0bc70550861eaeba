"""Faults on replay, through real pytest runs (pytester), written the way a user writes tests.

The project has an OpenAI agent and an Anthropic agent that stream a model's answer, their
SDK clients built with no ``base_url`` (the zero-config routing reaches them). A FakeProvider
on 127.0.0.1 stands in for both providers while ``test_record.py`` records one conversation
each; it is stopped before the faulted tests run. The faulted tests point at those cassettes
with ``cassette=`` and replay them with a fault: a stream cut mid-answer, a 429 the SDK
retries, a frame the SDK cannot parse, a delay, a read timeout. Each checks the agent's events
itself; afterwards every cassette file is byte-identical to what was recorded.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import openai  # noqa: F401
import pytest

import agui_replay.faults
import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from agui_replay.providers import FakeProvider, LoopbackServer
from tests.support.project import cassette_bytes

AGENTS = """
import anthropic
import openai


def openai_agent(max_retries=0):
    client = openai.OpenAI(api_key="sk-faults-test-key", max_retries=max_retries)

    def agent(ctx):
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": ctx.last_user_text()}],
            stream=True,
        )
        with ctx.assistant_message() as message:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    message.delta(chunk.choices[0].delta.content)

    return agent


def anthropic_agent(max_retries=0):
    client = anthropic.Anthropic(api_key="sk-ant-faults-test-key", max_retries=max_retries)

    def agent(ctx):
        with client.messages.stream(
            model="claude-3-5-haiku-latest",
            max_tokens=100,
            messages=[{"role": "user", "content": ctx.last_user_text()}],
        ) as stream, ctx.assistant_message() as message:
            for text in stream.text_stream:
                message.delta(text)

    return agent
"""

RECORD = """
from agents import anthropic_agent, openai_agent

from agui_replay.assertions import message_text


def test_openai_answer(agui):
    events = agui.run(openai_agent(), "what colour is the sky?")
    assert message_text(events) == "The sky is blue today."


def test_anthropic_answer(agui):
    events = agui.run(anthropic_agent(), "what colour is the sky?")
    assert message_text(events) == "The sky is blue today."
"""

FAULTS = """
import pytest
from agents import anthropic_agent, openai_agent

from agui_replay import faults
from agui_replay.assertions import message_text

OPENAI = "test_record/test_openai_answer.json"
ANTHROPIC = "test_record/test_anthropic_answer.json"
QUESTION = "what colour is the sky?"


@pytest.mark.agui(cassette=OPENAI, faults=[faults.cut(after_chunks=3)])
def test_openai_stream_cut(agui):
    events = agui.run(openai_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["message"] == "Connection error."  # openai.APIConnectionError
    assert message_text(events) == "The sky "  # what arrived before the cut


@pytest.mark.agui(cassette=ANTHROPIC, faults=[faults.cut(after_chunks=3)])
def test_anthropic_stream_cut(agui):
    events = agui.run(anthropic_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "incomplete chunked read" in events[-1]["message"]


@pytest.mark.agui(cassette=OPENAI, faults=[faults.status(429, headers={"retry-after": "0"})])
def test_openai_rate_limited_then_retried(agui):
    events = agui.run(openai_agent(max_retries=2), QUESTION)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert message_text(events) == "The sky is blue today."


@pytest.mark.agui(cassette=ANTHROPIC, faults=[faults.status(429, headers={"retry-after": "0"})])
def test_anthropic_rate_limited_then_retried(agui):
    events = agui.run(anthropic_agent(max_retries=2), QUESTION)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert message_text(events) == "The sky is blue today."


@pytest.mark.agui(cassette=OPENAI, faults=[faults.status(429, times=3)])
def test_openai_rate_limited_past_its_retries(agui):
    events = agui.run(openai_agent(max_retries=0), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "429" in events[-1]["message"]


@pytest.mark.agui(cassette=OPENAI, faults=[faults.malformed(after_chunks=2)])
def test_openai_malformed_chunk(agui):
    events = agui.run(openai_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "Expecting" in events[-1]["message"]  # the JSON decoder's own words


@pytest.mark.agui(cassette=ANTHROPIC, faults=[faults.malformed(after_chunks=2)])
def test_anthropic_malformed_chunk(agui):
    events = agui.run(anthropic_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "Expecting" in events[-1]["message"]


@pytest.mark.agui(cassette=OPENAI, faults=[faults.delay(0.05)])
def test_openai_slow_first_chunk(agui):
    events = agui.run(openai_agent(), QUESTION)
    assert message_text(events) == "The sky is blue today."


@pytest.mark.agui(cassette=ANTHROPIC, faults=[faults.delay(0.05)])
def test_anthropic_slow_first_chunk(agui):
    events = agui.run(anthropic_agent(), QUESTION)
    assert message_text(events) == "The sky is blue today."


@pytest.mark.agui(cassette=OPENAI, faults=[faults.timeout()])
def test_openai_read_timeout(agui):
    events = agui.run(openai_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["message"] == "Request timed out."  # openai.APITimeoutError


@pytest.mark.agui(cassette=ANTHROPIC, faults=[faults.timeout()])
def test_anthropic_read_timeout(agui):
    events = agui.run(anthropic_agent(), QUESTION)
    assert events[-1]["type"] == "RUN_ERROR"
    assert "timed out" in events[-1]["message"]  # anthropic.APITimeoutError
"""


def _answer(request: object) -> Iterator[str]:
    yield from ("The ", "sky ", "is ", "blue ", "today.")


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    fake = FakeProvider(function=_answer)
    with fake.serve() as server:
        yield server


@pytest.fixture
def recorded(pytester: pytest.Pytester, upstream: LoopbackServer) -> dict[str, bytes]:
    pytester.makepyfile(agents=AGENTS, test_record=RECORD)
    result = pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}")
    result.assert_outcomes(passed=2)
    upstream.close()  # the faulted replays have nowhere to go but the cassettes
    files = cassette_bytes(pytester.path)
    assert sorted(files) == [
        "test_record/test_anthropic_answer.json",
        "test_record/test_openai_answer.json",
    ]
    return files


def test_faults_replay_without_touching_the_cassettes(
    pytester: pytest.Pytester, recorded: dict[str, bytes]
) -> None:
    pytester.makepyfile(test_faults=FAULTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_faults.py")
    result.assert_outcomes(passed=11)
    assert "replayed with faults: 11 tests" in result.stdout.str()
    assert cassette_bytes(pytester.path) == recorded
    # --agui-record and --agui-refresh leave a faulted test's cassette alone: it replays
    for flag in ("--agui-record", "--agui-refresh"):
        again = pytester.runpytest("-p", "no:cacheprovider", "test_faults.py", flag)
        again.assert_outcomes(passed=11)
        assert cassette_bytes(pytester.path) == recorded


MISTAKES = """
import pytest
from agents import openai_agent

from agui_replay import faults

OPENAI = "test_record/test_openai_answer.json"


@pytest.mark.agui(cassette=OPENAI, faults=[faults.cut(after_chunks=1, request=5)])
def test_fault_on_a_request_never_made(agui):
    agui.run(openai_agent(), "what colour is the sky?")


@pytest.mark.agui(cassette=OPENAI, faults=[faults.timeout(request=0)])
def test_fault_on_a_request_the_test_does_not_make(agui):
    agui.run(lambda ctx: ctx.say("no model today"), "what colour is the sky?")


@pytest.mark.agui(cassette=OPENAI, faults=["cut after 3"])
def test_fault_not_built_by_faults(agui):
    pass


@pytest.mark.agui(faults=[faults.timeout()])
def test_fault_without_a_recorded_cassette(agui):
    agui.run(openai_agent(), "what colour is the sky?")
"""


def test_fault_mistakes_fail_with_what_to_do(
    pytester: pytest.Pytester, recorded: dict[str, bytes]
) -> None:
    pytester.makepyfile(test_mistakes=MISTAKES)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_mistakes.py")
    result.assert_outcomes(failed=3, errors=1)
    out = " ".join(result.stdout.str().split())
    assert (
        "faults.cut(after_chunks=1, request=5): the cassette holds 1 provider request(s), "
        "counted from 0 over its runs (request=0: run #0 POST /v1/chat/completions (openai)). "
        "Point request= at one of them"
    ) in out
    assert "1 fault(s) never hit a response: faults.timeout(request=0)" in out
    assert "point request= at one the test makes" in out
    assert "faults=[...]) item #0 is str 'cut after 3'" in out
    assert "a test with faults= replays a recorded cassette and never records one" in out
    assert cassette_bytes(pytester.path) == recorded
