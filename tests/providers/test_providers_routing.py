"""Zero-config routing: real SDK clients and plain httpx / httpx2 clients, no base_url changed."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from agui_replay.cassette import load_cassette
from agui_replay.errors import NetworkBlockedError, ProviderError
from agui_replay.providers import FakeProvider
from agui_replay.providers._plan import Plan, Request
from agui_replay.providers._transport._routing import (
    ENV_VARS,
    HostTable,
    Router,
    intercepting,
    provider_environment,
    split_route,
    upstream_map,
)
from agui_replay.recording import CassetteSession

KEY = "sk-routing-test-0123456789abcdef"


def _fake_router(fake: FakeProvider, hosts: HostTable | None = None) -> Router:
    seen: list[tuple[str | None, str | None]] = []

    def handle(request: Request) -> Plan:
        seen.append((request.provider, request.origin))
        return fake.handle(request.method, request.target, request.headers, request.body)

    async def ahandle(request: Request) -> Plan:
        seen.append((request.provider, request.origin))
        return await fake.ahandle(request.method, request.target, request.headers, request.body)

    router = Router(hosts or HostTable(), handle, ahandle)
    router.seen = seen  # type: ignore[attr-defined]
    return router


def test_host_table_matches_known_hosts_wildcards_ports_and_names() -> None:
    table = HostTable(["gateway.local:8443", "corp=*.llm.corp", "# comment", ""])
    assert table.provider_for("API.OPENAI.COM", None) == "openai"
    assert table.provider_for("api.anthropic.com", 443) == "anthropic"
    assert table.provider_for("generativelanguage.googleapis.com", None) == "gemini"
    assert table.provider_for("my-res.openai.azure.com", None) == "azure"
    assert table.provider_for("openai.azure.com", None) is None
    assert table.provider_for("gateway.local", 8443) == "gateway.local"
    assert table.provider_for("gateway.local", 8444) is None
    assert table.provider_for("eu.llm.corp", None) == "corp"
    assert table.provider_for("api.openai.com.evil.net", None) is None
    with pytest.raises(ProviderError, match="host name"):
        HostTable(["http://"])


def test_upstream_map_forms() -> None:
    class Server:
        base_url = "http://127.0.0.1:1/v1"

    assert upstream_map(None) == {}
    assert upstream_map(Server()) == {"default": "http://127.0.0.1:1/v1"}
    assert upstream_map({"openai": Server(), "gemini": "http://g"}) == {
        "openai": "http://127.0.0.1:1/v1",
        "gemini": "http://g",
    }
    assert upstream_map(["http://a/v1", "anthropic=http://b"]) == {
        "default": "http://a/v1",
        "anthropic": "http://b",
    }
    with pytest.raises(ProviderError, match="base_url"):
        upstream_map({"openai": 3})


def test_split_route() -> None:
    assert split_route("/_agui/openai/v1/chat/completions") == ("openai", "/v1/chat/completions")
    assert split_route("/_agui/gemini") == ("gemini", "/")
    assert split_route("/v1/chat/completions") == (None, "/v1/chat/completions")


def test_sync_sdk_clients_built_before_the_block_are_routed_in_process() -> None:
    fake = FakeProvider()
    fake.reply("Hi")
    fake.reply("Hello")
    oa = openai.OpenAI(api_key=KEY, max_retries=0)  # no base_url: api.openai.com
    an = anthropic.Anthropic(api_key=KEY, max_retries=0)
    router = _fake_router(fake)
    with intercepting(router):
        reply = oa.chat.completions.create(model="m", messages=[])
        message = an.messages.create(model="c", max_tokens=5, messages=[])
    assert reply.choices[0].message.content == "Hi"
    assert message.content[0].text == "Hello"
    assert router.seen == [  # type: ignore[attr-defined]
        ("openai", "https://api.openai.com"),
        ("anthropic", "https://api.anthropic.com"),
    ]
    assert [r.path for r in fake.requests] == ["/v1/chat/completions", "/v1/messages"]
    fake.check()


def test_plain_httpx_and_httpx2_sync_and_async_are_routed() -> None:
    fake = FakeProvider()
    for word in ("a", "b", "c", "d"):
        fake.reply(word)
    body = {"model": "m", "messages": []}
    url = "https://eu.openai.azure.com/openai/deployments/d/chat/completions?api-version=1"

    async def async_calls() -> list[str]:
        async with httpx.AsyncClient() as h1, httpx2.AsyncClient() as h2:
            r1 = await h1.post(url, json=body)
            r2 = await h2.post(url, json=body)
        return [
            r1.json()["choices"][0]["message"]["content"],
            r2.json()["choices"][0]["message"]["content"],
        ]

    router = _fake_router(fake)
    with intercepting(router), httpx.Client() as h1, httpx2.Client() as h2:
        got = [
            h1.post(url, json=body).json()["choices"][0]["message"]["content"],
            h2.post(url, json=body).json()["choices"][0]["message"]["content"],
        ]
        got += asyncio.run(async_calls())
    assert got == ["a", "b", "c", "d"]
    assert {p for p, _ in router.seen} == {"azure"}  # type: ignore[attr-defined]
    fake.check()


def test_other_hosts_and_the_recorders_own_requests_go_out_untouched() -> None:
    target = FakeProvider()
    target.reply("from the network")
    fake = FakeProvider()  # would answer if the request were routed; it must not be
    with target.serve() as server, intercepting(_fake_router(fake)), httpx2.Client() as client:
        response = client.post(server.base_url + "/chat/completions", json={"messages": []})
    assert response.json()["choices"][0]["message"]["content"] == "from the network"
    assert fake.requests == []


def test_transports_are_restored_after_the_block_and_nested_blocks_stack() -> None:
    original = httpx2.HTTPTransport.handle_request
    inner_fake, outer_fake = FakeProvider(), FakeProvider()
    inner_fake.reply("inner")
    outer_fake.reply("outer")
    client = openai.OpenAI(api_key=KEY, max_retries=0)
    with intercepting(_fake_router(outer_fake)):
        with intercepting(_fake_router(inner_fake)):
            first = client.chat.completions.create(model="m", messages=[])
        second = client.chat.completions.create(model="m", messages=[])
    assert httpx2.HTTPTransport.handle_request is original
    assert first.choices[0].message.content == "inner"
    assert second.choices[0].message.content == "outer"


def test_environment_is_set_for_the_block_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://mine.example")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with provider_environment("http://127.0.0.1:5") as before:
        assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:5/_agui/openai/v1"
        assert os.environ["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5/_agui/anthropic"
        assert os.environ["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5/_agui/gemini"
        assert before == {"ANTHROPIC_BASE_URL": "http://mine.example"}
    assert "OPENAI_BASE_URL" not in os.environ
    assert os.environ["ANTHROPIC_BASE_URL"] == "http://mine.example"
    assert set(ENV_VARS) == {"openai", "anthropic", "gemini"}


# --- through CassetteSession -----------------------------------------------------------------


def _chat_agent(client: Any) -> Any:
    def agent(ctx: Any) -> None:
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": ctx.last_user_text()}]
        )
        ctx.say(reply.choices[0].message.content)

    return agent


def test_two_providers_record_to_their_own_upstreams_and_replay(tmp_path: Path) -> None:
    oa = openai.OpenAI(api_key=KEY, max_retries=0)
    an = anthropic.AsyncAnthropic(api_key=KEY, max_retries=0)

    async def agent(ctx: Any) -> None:
        first = await asyncio.to_thread(
            oa.chat.completions.create, model="gpt-4o", messages=[{"role": "user", "content": "1"}]
        )
        second = await an.messages.create(
            model="claude", max_tokens=9, messages=[{"role": "user", "content": "2"}]
        )
        ctx.say(first.choices[0].message.content + " / " + second.content[0].text)

    openai_up, anthropic_up = FakeProvider(), FakeProvider()
    openai_up.reply("from openai")
    anthropic_up.reply("from anthropic")
    path = tmp_path / "two.json"
    with openai_up.serve() as o, anthropic_up.serve() as a:
        upstream = {"openai": o, "anthropic": a.url}
        with CassetteSession(path, mode="rewrite", upstream=upstream) as session:
            events = asyncio.run(session.arun(agent))
    assert events[2]["delta"] == "from openai / from anthropic"
    assert [r.api for r in openai_up.requests] == ["openai.chat"]
    assert [r.api for r in anthropic_up.requests] == ["anthropic.messages"]
    cassette = load_cassette(path)
    assert cassette.version == 3
    assert [i["provider"] for i in cassette.runs[0].interactions] == ["openai", "anthropic"]
    assert KEY not in path.read_text()

    with CassetteSession(path, mode="none") as session:
        again = asyncio.run(session.arun(agent))
    assert again[2]["delta"] == "from openai / from anthropic"
    assert session.runs[0].action == "replayed"
    assert [r.provider for r in session.provider.fake.requests] == ["openai", "anthropic"]


def test_a_format_1_cassette_replays_to_a_zero_config_client(tmp_path: Path) -> None:
    upstream = FakeProvider()
    upstream.reply("old")
    path = tmp_path / "v1.json"
    with upstream.serve() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        # recorded the old way, through agui.provider.base_url
        with CassetteSession(path, mode="rewrite", upstream=server.base_url) as session:
            session.run(
                _chat_agent(
                    openai.OpenAI(base_url=session.provider.base_url, api_key=KEY, max_retries=0)
                ),
                "hi",
            )
        del client
    doc = json.loads(path.read_text())
    doc["version"] = 1
    for interaction in doc["runs"][0]["interactions"]:
        assert interaction.pop("provider") == "default"
    path.write_text(json.dumps(doc))
    zero_config = openai.OpenAI(api_key=KEY, max_retries=0)
    with CassetteSession(path, mode="none") as session:
        events = session.run(_chat_agent(zero_config), "hi")
    assert events[2]["delta"] == "old"


def test_replay_refuses_unknown_hosts_through_the_guard(tmp_path: Path) -> None:
    upstream = FakeProvider()
    upstream.reply("ok")
    path = tmp_path / "guard.json"
    client = openai.OpenAI(api_key=KEY, max_retries=0)
    with (
        upstream.serve() as server,
        CassetteSession(path, mode="rewrite", upstream=server.base_url) as session,
    ):
        session.run(_chat_agent(client), "hi")

    def dial_out(ctx: Any) -> None:
        _chat_agent(client)(ctx)
        with httpx2.Client() as other:
            other.get("http://0.0.0.0:9/")  # 0.0.0.0 is not loopback for the guard

    with CassetteSession(path, mode="none") as session, pytest.raises(NetworkBlockedError):
        session.run(dial_out, "hi")


def test_a_non_httpx_client_reads_the_environment_route_over_loopback(tmp_path: Path) -> None:
    upstream = FakeProvider()
    upstream.reply("via urllib")

    def agent(ctx: Any) -> None:
        request = urllib.request.Request(
            os.environ["OPENAI_BASE_URL"] + "/chat/completions",
            data=json.dumps({"model": "m", "messages": []}).encode(),
            headers={"content-type": "application/json", "authorization": f"Bearer {KEY}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            ctx.say(json.loads(response.read())["choices"][0]["message"]["content"])

    path = tmp_path / "env.json"
    with (
        upstream.serve() as server,
        CassetteSession(path, mode="rewrite", upstream=server.base_url) as session,
    ):
        events = session.run(agent)
    assert events[2]["delta"] == "via urllib"
    interaction = load_cassette(path).runs[0].interactions[0]
    assert interaction["provider"] == "openai"
    assert interaction["request"]["path"] == "/v1/chat/completions"
    with CassetteSession(path, mode="none") as session:
        assert session.run(agent)[2]["delta"] == "via urllib"


def test_intercept_false_leaves_clients_alone(tmp_path: Path) -> None:
    upstream = FakeProvider()
    upstream.reply("ok")
    path = tmp_path / "off.json"
    client = openai.OpenAI(api_key=KEY, max_retries=0)
    with (
        upstream.serve() as server,
        CassetteSession(path, mode="rewrite", upstream=server.base_url) as session,
    ):
        session.run(_chat_agent(client), "hi")
    with (
        CassetteSession(path, mode="none", intercept=False) as session,
        pytest.raises(NetworkBlockedError, match=r"'api\.openai\.com'"),
    ):
        session.run(_chat_agent(client), "hi")


@pytest.mark.parametrize(
    ("client_path", "upstream", "sent", "forwarded"),
    [
        ("/v1", "http://u/v1", "/v1/chat/completions", "/v1/chat/completions"),
        ("/v1", "http://u/openai/v1", "/v1/chat/completions", "/openai/v1/chat/completions"),
        ("", "http://u", "/v1/messages", "/v1/messages"),
        ("", "http://u/anthropic", "/v1/messages", "/anthropic/v1/messages"),
        ("", "http://u/v1", "/v1/chat/completions", "/v1/chat/completions"),  # unknown base
    ],
)
def test_the_recorder_sends_each_path_under_its_upstreams_base(
    client_path: str, upstream: str, sent: str, forwarded: str
) -> None:
    from agui_replay.providers import Recorder

    recorder = Recorder()
    app = recorder.app(upstream, provider="p", client_base_path=client_path)
    try:
        assert app.upstream_path(sent) == forwarded
    finally:
        recorder.close()


def test_an_async_agent_keeps_its_loop_while_a_slow_stream_records(tmp_path: Path) -> None:
    import threading

    go = threading.Event()

    def upstream_turn(request: Any) -> Iterator[str]:
        yield "first"
        # the rest comes only once the agent's loop has run another task
        yield " second" if go.wait(10) else " (the agent's loop was blocked)"

    async def agent(ctx: Any) -> None:
        client = openai.AsyncOpenAI(api_key=KEY, max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)

        async def release() -> None:
            go.set()

        task = asyncio.create_task(release())
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        await task
        ctx.say(text)

    upstream = FakeProvider(function=upstream_turn)
    with (
        upstream.serve() as server,
        CassetteSession(
            tmp_path / "slow.json", mode="rewrite", upstream=server.base_url
        ) as session,
    ):
        events = asyncio.run(session.arun(agent))
    assert events[2]["delta"] == "first second"
