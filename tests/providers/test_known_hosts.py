"""The known provider hosts beyond OpenAI, Anthropic and Gemini are routed with no configuration.

Each family's real SDK client is pointed at the provider's real host name (as its docs say to
build it); the request is intercepted in process, recorded from a FakeProvider standing in for
the provider (``upstream={"groq": ...}``, what ``--agui-upstream groq=URL`` gives), and
replayed with nothing listening anywhere. Nothing reaches the network: a replay is guarded,
and the stand-in is stopped before it.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import openai
import pytest

from agui_replay.cassette import load_cassette
from agui_replay.errors import ReplayMismatchError
from agui_replay.providers import FakeProvider, detect_api
from agui_replay.providers._transport._routing import BASE_PATHS, HostTable
from agui_replay.recording import CassetteSession

KEY = "sk-knownhosts-0123456789abcdef0123"

# provider, the base URL its docs give the OpenAI client, the path the client then sends
OPENAI_COMPATIBLE = [
    ("mistral", "https://api.mistral.ai/v1", "/v1/chat/completions"),
    ("groq", "https://api.groq.com/openai/v1", "/openai/v1/chat/completions"),
    ("openrouter", "https://openrouter.ai/api/v1", "/api/v1/chat/completions"),
    ("deepseek", "https://api.deepseek.com", "/chat/completions"),
    ("together", "https://api.together.xyz/v1", "/v1/chat/completions"),
    ("xai", "https://api.x.ai/v1", "/v1/chat/completions"),
    ("ollama", "http://localhost:11434/v1", "/v1/chat/completions"),
    ("ollama", "http://127.0.0.1:11434/v1", "/v1/chat/completions"),
]


@pytest.mark.parametrize(
    ("host", "port", "provider"),
    [
        ("bedrock-runtime.us-east-1.amazonaws.com", None, "bedrock"),
        ("bedrock-runtime.eu-central-2.amazonaws.com", 443, "bedrock"),
        ("bedrock-runtime-fips.us-gov-west-1.amazonaws.com", None, "bedrock"),
        ("bedrock-runtime.cn-north-1.amazonaws.com.cn", None, "bedrock"),
        ("aiplatform.googleapis.com", None, "vertex"),
        ("us-central1-aiplatform.googleapis.com", None, "vertex"),
        ("europe-west4-aiplatform.googleapis.com", None, "vertex"),
        ("api.mistral.ai", None, "mistral"),
        ("api.groq.com", None, "groq"),
        ("openrouter.ai", None, "openrouter"),
        ("api.deepseek.com", None, "deepseek"),
        ("api.together.xyz", None, "together"),
        ("api.x.ai", None, "xai"),
        ("localhost", 11434, "ollama"),
        ("127.0.0.1", 11434, "ollama"),
        # not providers
        ("bedrock.us-east-1.amazonaws.com", None, None),  # the control plane
        ("bedrock-runtime.us-east-1.amazonaws.com.evil.net", None, None),
        ("bedrock-runtime.a.b.amazonaws.com", None, None),  # '*' is one label
        ("x.aiplatform.googleapis.com", None, None),
        ("localhost", 11435, None),
        ("localhost", None, None),
        ("x.ai", None, None),
    ],
)
def test_known_host_table(host: str, port: int | None, provider: str | None) -> None:
    assert HostTable().provider_for(host, port) == provider


def test_a_star_inside_a_label_in_extra_hosts() -> None:
    table = HostTable(["gw=llm-*.corp.example:8443"])
    assert table.provider_for("llm-eu.corp.example", 8443) == "gw"
    assert table.provider_for("llm-eu.corp.example", None) is None
    assert table.provider_for("llm-eu.x.corp.example", 8443) is None


@pytest.mark.parametrize(
    "path",
    [
        "/openai/v1/chat/completions",
        "/api/v1/chat/completions",
        "/chat/completions",
        "/v1/projects/p/locations/l/endpoints/openapi/chat/completions",
    ],
)
def test_their_path_prefixes_are_openai_chat(path: str) -> None:
    assert detect_api(path) == "openai.chat"


def test_vertex_paths_are_gemini_generate() -> None:
    path = "/v1beta1/projects/p/locations/global/publishers/google/models/gemini-2.0-flash"
    assert detect_api(path + ":streamGenerateContent?alt=sse") == "gemini.generate"
    assert detect_api(path + ":generateContent") == "gemini.generate"


def _chat(client: Any, suffix: str = "") -> Any:
    def agent(ctx: Any) -> None:
        stream = client.chat.completions.create(
            model="some-model",
            messages=[{"role": "user", "content": ctx.last_user_text() + suffix}],
            stream=True,
        )
        with ctx.assistant_message() as message:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    message.delta(chunk.choices[0].delta.content)

    return agent


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


@pytest.mark.parametrize(("provider", "base_url", "sent"), OPENAI_COMPATIBLE)
def test_openai_compatible_hosts_record_and_replay_in_process(
    tmp_path: Path, provider: str, base_url: str, sent: str
) -> None:
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    stand_in = FakeProvider()
    stand_in.reply("Hel", "lo ", provider)
    path = tmp_path / f"{provider}.json"
    with (
        stand_in.serve() as server,
        CassetteSession(path, mode="rewrite", upstream={provider: server.base_url}) as session,
    ):
        recorded = session.run(_chat(client), "hi")
    assert _texts(recorded) == ["Hel", "lo ", provider]
    # the stand-in's base is /v1: the provider's own base path was swapped for it
    assert BASE_PATHS[provider] == sent.removesuffix("/chat/completions")
    assert [(r.path, r.api) for r in stand_in.requests] == [("/v1/chat/completions", "openai.chat")]
    assert stand_in.requests[0].headers["authorization"] == f"Bearer {KEY}"
    cassette = load_cassette(path)
    (interaction,) = cassette.runs[0].interactions
    assert interaction["provider"] == provider
    assert interaction["request"]["path"] == sent
    assert interaction["request"]["body"]["messages"] == [{"role": "user", "content": "hi"}]
    assert len(interaction["response"]["chunks"]) > 3  # a provider's stream, chunk by chunk
    assert KEY not in path.read_text()

    with CassetteSession(path, mode="none") as session:
        replayed = session.run(_chat(client), "hi")
    assert _texts(replayed) == _texts(recorded)
    fake = session.provider.fake
    assert fake is not None
    assert [(r.provider, r.api, r.path) for r in fake.requests] == [(provider, "openai.chat", sent)]
    assert session.guard.violations == []

    # the prompt is compared, as any provider's
    mismatch = pytest.raises(ReplayMismatchError, match="/body/messages/0/content")
    with CassetteSession(path, mode="none") as session, mismatch:
        session.run(_chat(client, " and more"), "hi")


def test_vertex_gemini_records_and_replays_in_process(tmp_path: Path) -> None:
    genai = pytest.importorskip("google.genai")
    from google.oauth2.credentials import Credentials

    token = "ya29.knownhosts-vertex-token-0123456789"
    credentials = Credentials(token=token, expiry=datetime.datetime(2100, 1, 1))  # no refresh
    client = genai.Client(
        vertexai=True, project="proj", location="europe-west4", credentials=credentials
    )

    def agent(ctx: Any) -> None:
        with ctx.assistant_message() as message:
            for chunk in client.models.generate_content_stream(
                model="gemini-2.0-flash", contents=ctx.last_user_text()
            ):
                if chunk.text:
                    message.delta(chunk.text)

    stand_in = FakeProvider()
    stand_in.reply("Bon", "jour")
    path = tmp_path / "vertex.json"
    with (
        stand_in.serve() as server,
        CassetteSession(path, mode="rewrite", upstream={"vertex": server.url}) as session,
    ):
        recorded = session.run(agent, "salut")
    assert _texts(recorded) == ["Bon", "jour"]
    (request,) = stand_in.requests
    assert request.api == "gemini.generate"
    assert request.path.startswith("/v1beta1/projects/proj/locations/europe-west4/publishers/")
    (interaction,) = load_cassette(path).runs[0].interactions
    assert interaction["provider"] == "vertex"
    assert token not in path.read_text()

    with CassetteSession(path, mode="none") as session:
        replayed = session.run(agent, "salut")
    assert _texts(replayed) == ["Bon", "jour"]
    fake = session.provider.fake
    assert fake is not None
    assert [(r.provider, r.api) for r in fake.requests] == [("vertex", "gemini.generate")]
