"""A replay mismatch that the agent's framework turns into an error of its own still fails the
test as a ``ReplayMismatchError``, with its first difference and the command to re-record.

The project is what a user has: a Starlette app serving AG-UI that asks its model through the
openai SDK (one version catches the SDK's error and answers ``500``, as a hand-written endpoint
does; one lets it escape, as LlamaIndex's AG-UI router does, so Starlette answers 500 and
re-raises), and agent functions whose failure the run driver turns into ``RUN_ERROR`` (one asks
the model, one calls a weather API with ``requests``: a stdlib ``http.server`` on 127.0.0.1).
The model is a :class:`FakeProvider`. After recording, the user changes the prompt and the city:
each replay's stand-in (the provider's or the tape's) answers with a mismatch, the framework
converts it, and the test still says what differs and how to re-record.
"""

from __future__ import annotations

import textwrap

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest
import requests  # noqa: F401
import starlette.applications  # noqa: F401

from agui_replay.providers import FakeProvider
from tests.support.project import free_port
from tests.support.weather_api import WEATHER_CONFTEST

AGENTS = """
import json
import os

import openai
import requests
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

KEY = "sk-user-key-0123456789abcdef0123"


def ask(client):
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": os.environ["PROMPT"]},
            {"role": "user", "content": "Weather in Paris?"},
        ],
    )


def sse(body, text):
    ids = {"threadId": body["threadId"], "runId": body["runId"]}
    events = [
        {"type": "RUN_STARTED", **ids},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": text},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", **ids},
    ]
    return StreamingResponse(
        (f"data: {json.dumps(e)}\\n\\n" for e in events), media_type="text/event-stream"
    )


def build_app(base_url, *, catch):
    client = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)

    async def run(request):
        body = await request.json()
        try:
            reply = await client.chat.completions.create(
                model="gpt-4o",
                messages=[
                    {"role": "system", "content": os.environ["PROMPT"]},
                    {"role": "user", "content": "Weather in Paris?"},
                ],
            )
        except openai.APIError as exc:
            if not catch:
                raise
            return PlainTextResponse(f"the agent failed: {exc}", status_code=500)
        return sse(body, reply.choices[0].message.content)

    return Starlette(routes=[Route("/", run, methods=["POST"])])


def model_agent(base_url):
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)

    def agent(ctx):
        ctx.say(ask(client).choices[0].message.content)

    return agent


def tool_agent(ctx):
    base = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]
    city = os.environ["CITY"]
    ctx.say(requests.get(base + "/weather", params={"city": city}, timeout=5).json()["sky"])
"""

TESTS = """
import agents


def test_app_answers_500(agui):
    agui.run(agents.build_app(agui.provider.base_url, catch=True), "Weather in Paris?")


def test_app_raises(agui):
    agui.run(agents.build_app(agui.provider.base_url, catch=False), "Weather in Paris?")


def test_agent_ends_in_run_error(agui):
    events = agui.run(agents.model_agent(agui.provider.base_url), "Weather in Paris?")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]


def test_tool_ends_in_run_error(agui):
    events = agui.run(agents.tool_agent, "Weather in Paris?")
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
"""

NAMES = (
    "test_app_answers_500",
    "test_app_raises",
    "test_agent_ends_in_run_error",
    "test_tool_ends_in_run_error",
)


def test_a_mismatch_the_framework_converts_still_fails_as_a_mismatch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_PORT", str(free_port()))
    monkeypatch.setenv("PROMPT", "You are a weather assistant.")
    monkeypatch.setenv("CITY", "Paris")
    pytester.makeconftest(WEATHER_CONFTEST)
    pytester.makepyfile(agents=textwrap.dedent(AGENTS), test_agents=textwrap.dedent(TESTS))
    upstream = FakeProvider()
    for _ in range(3):
        upstream.reply("Sunny.")
    monkeypatch.setenv("WEATHER_UP", "1")
    with upstream.serve() as server:
        recorded = pytester.runpytest(
            "-p", "no:cacheprovider", "--agui-record", "--agui-upstream", server.base_url
        )
    recorded.assert_outcomes(passed=4)
    monkeypatch.delenv("WEATHER_UP")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == 0

    monkeypatch.setenv("PROMPT", "You are a terse weather assistant.")
    monkeypatch.setenv("CITY", "Rome")
    replayed = pytester.runpytest("-p", "no:cacheprovider", "-rf")
    replayed.assert_outcomes(failed=4)
    out = replayed.stdout.str()
    for name in NAMES:
        line = next(
            (x for x in out.splitlines() if x.startswith(f"FAILED test_agents.py::{name} ")), ""
        )
        assert " - Failed: ReplayMismatch" in line, (name, out)  # cut at the terminal's width
        assert "\nReplayMismatchError: " in _section(out, name), (name, out)
        assert f"pytest test_agents.py::{name} --agui-record" in _section(out, name), (name, out)
    for name in NAMES[:3]:  # the provider's first difference, named
        assert "first difference at /body/messages/0/content" in _section(out, name), out
    tool = _section(out, NAMES[3])
    assert "first difference at /query/city/0" in tool, out
    assert 'recorded: "Paris"' in tool, out
    assert 'received: "Rome"' in tool, out
    assert "answered HTTP 500" in _section(out, "test_app_answers_500")  # what the app made of it
    assert "starlette" not in out  # no framework traceback
    assert "0 replayed, 0 unused, 4 did not replay" in out


def _section(out: str, name: str) -> str:
    """The failure report of test ``name`` (its ``____ name ____`` section)."""
    start = out.find(f"_ {name} _")
    end = out.find("\n____", start + 1)
    return out[start : end if end > 0 else None]
