"""Re-records that change nothing write nothing, whatever the cassette holds.

The project is what a user has: an agent whose tools call a weather API with ``requests``
(a JSON answer) and ``httpx`` (a streamed forecast, each day its own HTTP chunk a moment
apart), and which asks its model through the openai SDK; the weather API is a stdlib
``http.server`` on 127.0.0.1 and the model a :class:`FakeProvider`. Recorded once and then
re-recorded twice in a row against the same answers, the cassette keeps its bytes (the tool
exchanges' chunk offsets and the file's ``recorded_at`` included), and the summary tells the
untouched file apart from a rewritten one.
"""

from __future__ import annotations

import textwrap

import httpx  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import openai  # noqa: F401
import pytest
import requests  # noqa: F401

from agui_replay.providers import FakeProvider
from tests.support.project import cassette_bytes, free_port
from tests.support.weather_api import WEATHER_CONFTEST

TOOLS = """
import os

import httpx
import requests

BASE = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]


def weather(city):
    return requests.get(BASE + "/weather", params={"city": city}, timeout=5).json()


def forecast(city):
    with httpx.stream("GET", BASE + "/forecast", params={"city": city}) as response:
        return [piece.decode() for piece in response.iter_raw()]
"""

TESTS = """
import openai

import tools


def text(events):
    return "".join(e.get("delta", "") for e in events)


def test_weather_agent(agui):
    model = openai.OpenAI(api_key="sk-unused-in-the-cassette-0123456789", max_retries=0)

    def agent(ctx):
        sky = tools.weather("Paris")["sky"]
        reply = model.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": f"The sky is {sky}."}]
        )
        ctx.say(reply.choices[0].message.content)
        ctx.say(" ".join(tools.forecast("Paris")))

    events = agui.run(agent, "weather in Paris?")
    assert "Paris wed snow;" in text(events)


def test_forecast_only(agui):
    def agent(ctx):
        ctx.say(" ".join(tools.forecast("Rome")))

    events = agui.run(agent)
    assert "Rome mon sunny;" in text(events)
"""


def _differences(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """The lines that differ, file by file (a failure's message)."""
    lines = []
    for name, old in before.items():
        pairs = zip(old.decode().splitlines(), after[name].decode().splitlines(), strict=False)
        lines += [f"{name}: {a} -> {b}" for a, b in pairs if a != b]
    return lines


def _record(pytester: pytest.Pytester) -> pytest.RunResult:
    upstream = FakeProvider()  # the same answer, with the same ids, every time
    upstream.reply("Take a hat.")
    with upstream.serve() as server:
        result = pytester.runpytest(
            "-p", "no:cacheprovider", "--agui-record", "--agui-upstream", server.base_url
        )
    result.assert_outcomes(passed=2)
    return result


def test_two_re_records_of_an_unchanged_agent_leave_its_cassettes_byte_identical(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_PORT", str(free_port()))
    monkeypatch.setenv("WEATHER_UP", "1")
    pytester.makeconftest(WEATHER_CONFTEST)
    pytester.makepyfile(tools=textwrap.dedent(TOOLS), test_agent=textwrap.dedent(TESTS))

    first = _record(pytester)
    assert "2 cassette(s) recorded" in first.stdout.str()
    written = cassette_bytes(pytester.path)
    assert len(written) == 2
    assert b'"offset"' in written["test_agent/test_forecast_only.json"]

    for _ in range(2):
        again = _record(pytester)
        now = cassette_bytes(pytester.path)
        assert now == written, _differences(written, now)
        out = again.stdout.str()
        assert "0 cassette(s) recorded, 2 re-recorded unchanged" in out, out
        assert "  recorded: " not in out, out


MCP_TESTS = """
import pytest

import agents


@pytest.mark.anyio
async def test_streamable_http(agui):
    events = await agui.arun(agents.streamable_agent, "Paris Rome")
    assert any("Rome: mon sunny" in e.get("content", "") for e in events)


@pytest.mark.anyio
async def test_legacy_sse(agui):
    events = await agui.arun(agents.sse_agent, "Lyon")
    assert any("Lyon: mon sunny" in e.get("content", "") for e in events)
"""


def test_re_records_of_an_mcp_agent_leave_its_streams_byte_identical(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    mcp = pytest.importorskip("tests.plugin.test_mcp", reason="needs the mcp package")
    monkeypatch.setenv("MCP_PORT", str(free_port()))
    monkeypatch.setenv("MCP_SSE_PORT", str(free_port()))
    monkeypatch.setenv("MCP_UP", "1")
    pytester.makeconftest(mcp.CONFTEST)
    pytester.makepyfile(
        weather_server=textwrap.dedent(mcp.SERVER),
        agents=textwrap.dedent(mcp.AGENTS),
        test_mcp_agents=textwrap.dedent(MCP_TESTS),
    )
    pytester.runpytest("-p", "no:cacheprovider", "--agui-record").assert_outcomes(passed=2)
    written = cassette_bytes(pytester.path)
    assert b"mcp-session-id" in written["test_mcp_agents/test_streamable_http.json"]
    assert b"session_id=" in written["test_mcp_agents/test_legacy_sse.json"]
    for _ in range(2):
        again = pytester.runpytest("-p", "no:cacheprovider", "--agui-record")
        again.assert_outcomes(passed=2)
        now = cassette_bytes(pytester.path)
        assert now == written, _differences(written, now)
        assert "0 cassette(s) recorded, 2 re-recorded unchanged" in again.stdout.str()
