"""Zero-config routing through real pytest runs (pytester), written the way a user writes tests.

The agents build their SDK clients with no ``base_url``: in the test, and in a module imported
before the test (at import time). A FakeProvider on 127.0.0.1 stands in for each real provider
while recording (``--agui-record --agui-upstream ...``); it is stopped before the replaying run,
which has no network at all (the plugin's guard refuses every non-loopback connection, and a
refused connection fails the test even if the agent swallows it).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import anthropic  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import openai  # noqa: F401
import pytest
from google import genai  # noqa: F401

import agui_replay.providers
import agui_replay.providers._transport._routing
import agui_replay.recording
import agui_replay.server  # noqa: F401
from agui_replay.providers import FakeProvider, LoopbackServer

OPENAI_KEY = "sk-proj-zeroconfig0live0key0abcdef"
ANTHROPIC_KEY = "sk-ant-api03-zeroconfig-live-key-abcdef"
GEMINI_KEY = "AIzaSyZeroConfig-live-key-0123456789ab"


def _echo(prefix: str) -> Any:
    def reply(request: Any) -> Iterator[str]:
        yield f"[{prefix}]"
        last = request.messages[-1] if request.messages else {}
        text = last.get("content") if isinstance(last, dict) else None
        if not isinstance(text, str):  # Anthropic blocks, Gemini parts
            parts = last.get("parts") or last.get("content") or []
            text = " ".join(p.get("text", "") for p in parts if isinstance(p, dict))
        for word in str(text).split():
            yield " " + word

    return reply


@pytest.fixture
def upstreams() -> Iterator[dict[str, LoopbackServer]]:
    fakes = {name: FakeProvider(function=_echo(name)) for name in ("one", "two")}
    servers = {name: fake.serve() for name, fake in fakes.items()}
    for name, server in servers.items():
        server.fake = fakes[name]  # type: ignore[attr-defined]  (what each upstream received)
    try:
        yield servers
    finally:
        for server in servers.values():
            server.close()


def _cassettes(pytester: pytest.Pytester) -> dict[str, Any]:
    return {
        path.relative_to(pytester.path / "cassettes").as_posix(): json.loads(path.read_text())
        for path in sorted((pytester.path / "cassettes").rglob("*.json"))
    }


def _record_then_replay(
    pytester: pytest.Pytester,
    upstreams: dict[str, LoopbackServer],
    upstream_args: list[str],
    passed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    record = pytester.runpytest("--agui-record", *upstream_args)
    record.assert_outcomes(passed=passed)
    cassettes = _cassettes(pytester)
    text = json.dumps(cassettes)
    for key in (OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY):
        assert key not in text
    for server in upstreams.values():
        server.close()  # the replay has nowhere to go but the cassettes
    # another key at replay time, as CI has: requests are compared without their secrets
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-ci-dummy")
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=passed)
    assert f"0 cassette(s) recorded, {passed} replayed" in replay.stdout.str()
    return cassettes


OPENAI_AGENT = textwrap.dedent(
    f"""
    import openai

    # built at import time, before any test or fixture runs, with no base_url
    CLIENT = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)


    def make_agent(client):
        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o",
                messages=[{{"role": "user", "content": ctx.last_user_text()}}],
                stream=True,
            )
            with ctx.assistant_message() as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        return agent
    """
)


def test_openai_client_without_base_url_records_and_replays(
    pytester: pytest.Pytester, upstreams: dict[str, LoopbackServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(my_agent=OPENAI_AGENT)
    pytester.makepyfile(
        test_weather=textwrap.dedent(
            f"""
            import openai, pytest
            from my_agent import CLIENT, make_agent

            def test_import_time_client(agui):
                events = agui.run(make_agent(CLIENT), "weather in Paris")
                assert "".join(e.get("delta", "") for e in events) == "[one] weather in Paris"

            def test_client_built_in_the_test(agui):
                client = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)
                events = agui.run(make_agent(client), "and Rome")
                assert "".join(e.get("delta", "") for e in events) == "[one] and Rome"

            @pytest.mark.anyio
            async def test_async_client_built_in_the_agent(agui):
                async def agent(ctx):
                    client = openai.AsyncOpenAI(api_key="{OPENAI_KEY}", max_retries=0)
                    reply = await client.chat.completions.create(
                        model="gpt-4o", messages=[{{"role": "user", "content": "async"}}]
                    )
                    ctx.say(reply.choices[0].message.content)

                events = await agui.arun(agent)
                assert events[2]["delta"] == "[one] async"
            """
        )
    )
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    cassettes = _record_then_replay(
        pytester, upstreams, [f"--agui-upstream={upstreams['one'].base_url}"], 3, monkeypatch
    )
    run = cassettes["test_weather/test_import_time_client.json"]["runs"][0]
    assert cassettes["test_weather/test_import_time_client.json"]["version"] == 3
    assert [(i["provider"], i["request"]["path"]) for i in run["interactions"]] == [
        ("openai", "/v1/chat/completions")
    ]
    # every chunk kept, with its boundary
    assert len(run["interactions"][0]["response"]["chunks"]) >= 5


def test_anthropic_and_gemini_clients_without_base_url(
    pytester: pytest.Pytester, upstreams: dict[str, LoopbackServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    pytester.makepyfile(
        agents=textwrap.dedent(
            f"""
            import anthropic
            from google import genai

            CLAUDE = anthropic.Anthropic(max_retries=0)          # key from ANTHROPIC_API_KEY
            GEMINI = genai.Client(api_key="{GEMINI_KEY}")


            def claude(ctx):
                with CLAUDE.messages.stream(
                    model="claude-test", max_tokens=50,
                    messages=[{{"role": "user", "content": ctx.last_user_text()}}],
                ) as stream, ctx.assistant_message() as message:
                    for text in stream.text_stream:
                        message.delta(text)


            def gemini(ctx):
                with ctx.assistant_message() as message:
                    for chunk in GEMINI.models.generate_content_stream(
                        model="gemini-2.0-flash", contents=ctx.last_user_text()
                    ):
                        if chunk.text:
                            message.delta(chunk.text)
            """
        )
    )
    pytester.makepyfile(
        test_agents=textwrap.dedent(
            """
            from agents import claude, gemini

            def text(events):
                return "".join(e.get("delta", "") for e in events)

            def test_claude(agui):
                assert text(agui.run(claude, "bonjour claude")) == "[one] bonjour claude"

            def test_gemini(agui):
                assert text(agui.run(gemini, "hallo gemini")) == "[one] hallo gemini"
            """
        )
    )
    # a bare upstream URL serves every provider that has none of its own
    cassettes = _record_then_replay(
        pytester, upstreams, ["--agui-upstream", upstreams["one"].base_url], 2, monkeypatch
    )
    claude_run = cassettes["test_agents/test_claude.json"]["runs"][0]
    gemini_run = cassettes["test_agents/test_gemini.json"]["runs"][0]
    assert [i["provider"] for i in claude_run["interactions"]] == ["anthropic"]
    assert claude_run["interactions"][0]["request"]["headers"]["authorization"] == "<scrubbed>"
    (gemini_call,) = gemini_run["interactions"]
    assert gemini_call["provider"] == "gemini"
    assert gemini_call["request"]["path"].endswith(
        "/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    )
    assert gemini_call["request"]["headers"]["x-goog-api-key"] == "<scrubbed>"


def test_two_providers_in_one_run_record_and_replay_both(
    pytester: pytest.Pytester, upstreams: dict[str, LoopbackServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_two=textwrap.dedent(
            f"""
            import anthropic, openai

            PLANNER = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)
            WRITER = anthropic.Anthropic(api_key="{ANTHROPIC_KEY}", max_retries=0)

            def agent(ctx):
                plan = PLANNER.chat.completions.create(
                    model="gpt-4o", messages=[{{"role": "user", "content": "plan it"}}]
                ).choices[0].message.content
                text = WRITER.messages.create(
                    model="claude", max_tokens=50,
                    messages=[{{"role": "user", "content": "write " + plan}}],
                ).content[0].text
                ctx.say(text)

            def test_plan_then_write(agui):
                events = agui.run(agent)
                assert events[2]["delta"] == "[two] write [one] plan it"
            """
        )
    )
    args = [
        f"--agui-upstream=openai={upstreams['one'].base_url}",
        f"--agui-upstream=anthropic={upstreams['two'].url}",
    ]
    cassettes = _record_then_replay(pytester, upstreams, args, 1, monkeypatch)
    interactions = cassettes["test_two/test_plan_then_write.json"]["runs"][0]["interactions"]
    assert [(i["provider"], i["request"]["path"]) for i in interactions] == [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
    ]


def test_agui_upstream_fixture_may_map_providers_and_hosts_route_more(
    pytester: pytest.Pytester, upstreams: dict[str, LoopbackServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGUI_TEST_ONE", upstreams["one"].base_url)
    monkeypatch.setenv("AGUI_TEST_TWO", upstreams["two"].base_url)
    pytester.makeini("[pytest]\nagui_provider_hosts =\n    gateway=llm-gateway.internal\n")
    pytester.makeconftest(
        textwrap.dedent(
            """
            import os, pytest

            @pytest.fixture
            def agui_upstream():
                return {"gateway": os.environ["AGUI_TEST_ONE"],
                        "vllm": os.environ["AGUI_TEST_TWO"]}
            """
        )
    )
    pytester.makepyfile(
        test_hosts=textwrap.dedent(
            f"""
            import openai, pytest

            # hosts that do not resolve anywhere: only the routing can answer them
            GATEWAY = openai.OpenAI(
                base_url="https://llm-gateway.internal/v1", api_key="{OPENAI_KEY}",
                max_retries=0,
            )
            LOCAL = openai.OpenAI(
                base_url="http://vllm.test:8000/v1", api_key="k", max_retries=0
            )

            def ask(client):
                def agent(ctx):
                    ctx.say(client.chat.completions.create(
                        model="m", messages=[{{"role": "user", "content": "hi"}}]
                    ).choices[0].message.content)
                return agent

            def test_gateway_from_ini(agui):
                assert agui.run(ask(GATEWAY))[2]["delta"] == "[one] hi"

            @pytest.mark.agui(hosts={{"vllm": "vllm.test:8000"}})
            def test_host_from_marker(agui):
                assert agui.run(ask(LOCAL))[2]["delta"] == "[two] hi"
            """
        )
    )
    cassettes = _record_then_replay(pytester, upstreams, [], 2, monkeypatch)
    providers = {
        name: [i["provider"] for i in c["runs"][0]["interactions"]] for name, c in cassettes.items()
    }
    assert providers == {
        "test_hosts/test_gateway_from_ini.json": ["gateway"],
        "test_hosts/test_host_from_marker.json": ["vllm"],
    }
    # each upstream got the path its client sent (both base URLs end in /v1)
    for server in upstreams.values():
        assert [r.path for r in server.fake.requests] == ["/v1/chat/completions"]  # type: ignore[attr-defined]


def test_a_request_to_an_unknown_host_fails_the_replay(
    pytester: pytest.Pytester,
    upstreams: dict[str, LoopbackServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(
        test_leak=textwrap.dedent(
            f"""
            import os

            import httpx, openai

            CLIENT = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)

            def agent(ctx):
                reply = CLIENT.chat.completions.create(model="m", messages=[])
                if os.environ.get("SEND_EVENTS"):  # a request the recording never made
                    try:  # to a host nobody routes, error swallowed as agents do
                        httpx.post("http://0.0.0.0:9/v1/events", json={{}}, timeout=2)
                    except httpx.HTTPError:
                        pass
                ctx.say(reply.choices[0].message.content)

            def test_leak(agui):
                agui.run(agent)
            """
        )
    )
    # (a request that failed while recording would be stored as that failure and replayed)
    pytester.runpytest("--agui-record", f"--agui-upstream={upstreams['one'].base_url}")
    monkeypatch.setenv("SEND_EVENTS", "1")
    replay = pytester.runpytest()
    replay.assert_outcomes(failed=1)
    replay.stdout.fnmatch_lines(
        ["*POST http://0.0.0.0:9/v1/events matches no recorded HTTP exchange*"]
    )
