"""A tool's own HTTP requests are recorded into the cassette and replayed offline.

The project is what a user has: tools that call a weather API with ``requests``, ``httpx``
(sync and async) and ``urllib.request``, agents that call them (one also asks the model), and
a conftest that starts a stand-in for the weather API on 127.0.0.1 when ``WEATHER_UP`` is set.
The suite records with the stand-in up, replays twice with it stopped (and, where the system
allows, inside a network namespace with no network at all), then records again and replays:
the syrupy snapshots written by the first recording never change.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest
import requests  # noqa: F401

from agui_replay.errors import ReplayMismatchError
from agui_replay.providers import DEFAULT_DROP_HOSTS, FakeProvider
from agui_replay.pytest_plugin._options import _DropHosts
from agui_replay.recording import CassetteSession
from tests.plugin.test_offline_namespace import _namespace_problem
from tests.support.project import free_port
from tests.support.weather_api import WEATHER_CONFTEST

WEATHER_KEY = "weather-secret-key-0123456789abcdef"
OPENAI_KEY = "sk-proj-toolrequests0live0key0abcdef"

TOOLS = f"""
import os
import urllib.request
import json

import httpx
import requests

BASE = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]
AUTH = {{"authorization": "Bearer {WEATHER_KEY}"}}


def weather_requests(city):
    response = requests.get(BASE + "/weather", params={{"city": city}}, headers=AUTH, timeout=5)
    response.raise_for_status()
    return response.json()


def forecast_requests(city):
    with requests.get(
        BASE + "/forecast", params={{"city": city}}, headers=AUTH, stream=True, timeout=5
    ) as response:
        return [piece.decode() for piece in response.iter_content(chunk_size=None)]


def weather_httpx(city):
    return httpx.get(BASE + "/weather", params={{"city": city}}, headers=AUTH).json()


def forecast_httpx(city):
    with httpx.stream("GET", BASE + "/forecast", params={{"city": city}}, headers=AUTH) as r:
        return [piece.decode() for piece in r.iter_raw()]


async def weather_httpx_async(city):
    async with httpx.AsyncClient() as client:
        response = await client.get(BASE + "/weather", params={{"city": city}}, headers=AUTH)
        return response.json()


def weather_urllib(city):
    request = urllib.request.Request(BASE + "/weather?city=" + city, headers=AUTH)
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def forecast_urllib(city):
    request = urllib.request.Request(BASE + "/forecast?city=" + city, headers=AUTH)
    pieces = []
    with urllib.request.urlopen(request, timeout=5) as response:
        while piece := response.read1(65536):
            pieces.append(piece.decode())
    return pieces
"""

TESTS = f"""
import openai
import pytest

import tools

MODEL = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)


def report(ctx, weather, forecast):
    ctx.say(f"{{weather['city']}}: {{weather['sky']}}, {{weather['celsius']}} C")
    with ctx.assistant_message() as message:
        for piece in forecast:  # one delta per chunk the API sent
            message.delta(piece)


def test_tool_on_requests_with_the_model(agui, agui_snapshot):
    def agent(ctx):
        weather = tools.weather_requests("Paris")
        reply = MODEL.chat.completions.create(
            model="gpt-4o", messages=[{{"role": "user", "content": weather["sky"]}}]
        )
        ctx.say(reply.choices[0].message.content)
        report(ctx, weather, tools.forecast_requests("Paris"))

    events = agui.run(agent, "weather in Paris?")
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"][-3:] == [
        "Paris mon sunny;", "Paris tue rain;", "Paris wed snow;"
    ]
    assert events == agui_snapshot


def test_tool_on_httpx(agui, agui_snapshot):
    def agent(ctx):
        report(ctx, tools.weather_httpx("Rome"), tools.forecast_httpx("Rome"))

    events = agui.run(agent)
    assert len([e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]) == 4
    assert events == agui_snapshot


@pytest.mark.anyio
async def test_async_tool_on_httpx(agui, agui_snapshot):
    async def agent(ctx):
        weather = await tools.weather_httpx_async("Oslo")
        ctx.say(f"{{weather['city']}}: {{weather['sky']}}")

    events = await agui.arun(agent)
    assert events == agui_snapshot


def test_tool_on_urllib(agui, agui_snapshot):
    def agent(ctx):
        report(ctx, tools.weather_urllib("Lima"), tools.forecast_urllib("Lima"))

    events = agui.run(agent)
    assert len([e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]) == 4
    assert events == agui_snapshot
"""

PASSED = 4


def _snapshots(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.agui.jsonl"))}


def test_tool_requests_record_then_replay_offline_and_re_record_unchanged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_PORT", str(free_port()))
    pytester.makeconftest(WEATHER_CONFTEST)
    pytester.makepyfile(tools=textwrap.dedent(TOOLS), test_weather=textwrap.dedent(TESTS))
    upstream = FakeProvider()
    upstream.reply("It is sunny.")

    with upstream.serve() as server:
        monkeypatch.setenv("WEATHER_UP", "1")
        record = pytester.runpytest(
            "-p",
            "no:cacheprovider",
            "--agui-record",
            "--agui-upstream",
            server.base_url,
            "--snapshot-update",
        )
        record.assert_outcomes(passed=PASSED)
    cassettes = {p.name: json.loads(p.read_text()) for p in pytester.path.rglob("*.json")}
    assert len(cassettes) == PASSED
    stored = json.dumps(cassettes)
    assert WEATHER_KEY not in stored
    assert OPENAI_KEY not in stored
    first = cassettes["test_tool_on_requests_with_the_model.json"]
    urls = [e["request"]["url"] for e in first["http"]]
    assert [u.split("/", 3)[-1] for u in urls] == ["weather?city=Paris", "forecast?city=Paris"]
    forecast = first["http"][1]["response"]
    assert [c["data"] for c in forecast["chunks"]] == [
        "Paris mon sunny;",
        "Paris tue rain;",
        "Paris wed snow;",
    ]
    assert all(c["offset"] >= 0 for c in forecast["chunks"])
    assert first["http"][0]["request"]["headers"]["authorization"] == "<scrubbed>"
    assert [i["provider"] for i in first["runs"][0]["interactions"]] == ["openai"]
    snapshots = _snapshots(pytester.path)
    assert snapshots

    # the weather API is down from here on: the replays have only the cassettes
    monkeypatch.delenv("WEATHER_UP")
    for _ in range(2):
        replay = pytester.runpytest("-p", "no:cacheprovider")
        replay.assert_outcomes(passed=PASSED)
        assert f"0 cassette(s) recorded, {PASSED} replayed" in replay.stdout.str()

    problem = _namespace_problem()
    if problem is None:
        done = subprocess.run(
            [
                "unshare", "-n", "sh", "-c",
                f'ip link set lo up && exec "{sys.executable}" -m pytest -p no:cacheprovider',
            ],
            cwd=pytester.path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert f"{PASSED} passed" in out, out

    monkeypatch.setenv("WEATHER_UP", "1")
    upstream.reply("It is sunny.")
    with upstream.serve() as server:
        again = pytester.runpytest(
            "-p", "no:cacheprovider", "--agui-record", "--agui-upstream", server.base_url
        )
        again.assert_outcomes(passed=PASSED)
    monkeypatch.delenv("WEATHER_UP")
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=PASSED)
    assert _snapshots(pytester.path) == snapshots


def _tool_session(path: Path, mode: str, **options: Any) -> CassetteSession:
    return CassetteSession(path, mode=mode, upstream="http://127.0.0.1:9/v1", **options)


def test_a_replayed_request_that_matches_nothing_names_the_closest(tmp_path: Path) -> None:
    import httpx

    with FakeProvider().serve() as api:  # a stand-in API: not ours once it is not a fake's
        url = api.url
    path = tmp_path / "c.json"
    exchange = {
        "request": {"method": "GET", "url": f"{url}/weather?city=Paris", "headers": {}},
        "response": {"status": 200, "headers": {}, "chunks": [{"offset": 0, "data": "{}"}]},
    }
    with _tool_session(path, "rewrite") as session, session.taping() as tape:
        tape.recorded, tape.mode = [exchange], "replay"
        session.run(lambda ctx: ctx.say(httpx.get(f"{url}/weather?city=Paris").text))
        with pytest.raises(ReplayMismatchError) as caught:
            session.run(lambda ctx: httpx.get(f"{url}/weather?city=Rome"))
    message = str(caught.value)
    assert f"GET {url}/weather?city=Rome matches no recorded HTTP exchange" in message
    assert f"closest recorded one is #0 GET {url}/weather?city=Paris" in message
    assert "first difference at /query/city/0" in message
    assert 'recorded: "Paris"' in message
    assert 'received: "Rome"' in message


def test_drop_hosts_answer_204_and_match_on_body(tmp_path: Path) -> None:
    import httpx

    assert tuple(_DropHosts()) == DEFAULT_DROP_HOSTS  # the ini default is the facade's list
    with _tool_session(tmp_path / "d.json", "rewrite", match_on=["body"]) as session:
        with session.taping() as tape:
            response = httpx.post("https://us.i.posthog.com/batch", json={"event": "x"})
            assert response.status_code == 204
            assert response.content == b""
            exchange = {
                "request": {"method": "POST", "url": "http://api.test/x", "body": {"n": 1}},
                "response": {"status": 200, "headers": {}, "chunks": [{"offset": 0, "data": "a"}]},
            }
            tape.recorded, tape.mode = [exchange], "replay"
            with pytest.raises(
                ReplayMismatchError,
                match=r"first difference at /body/n\n    recorded: 1\n    received: 2",
            ):
                httpx.post("http://api.test/x", json={"n": 2})
            assert httpx.post("http://api.test/x", json={"n": 1}).text == "a"
        assert tape.dropped == ["POST https://us.i.posthog.com/batch"]
