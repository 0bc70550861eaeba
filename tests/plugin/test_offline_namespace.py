"""Replaying with no network at all: cassettes recorded from zero-config clients replay inside a
network namespace whose only interface is loopback (``unshare -n``), where no name resolves and
no packet can leave the machine, so nothing can pass for offline that is not.

The project is what a user has: agents whose SDK clients are built with no base URL (at import
time, and inside a test), for OpenAI, Anthropic and Google Gen AI (its async half over aiohttp),
and a run that calls two providers. It records against a FakeProvider on 127.0.0.1 in this
process's network, then a plain ``pytest`` runs in the namespace. Needs root (or user
namespaces) and ``ip`` from iproute2; elsewhere it skips and says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from google import genai  # noqa: F401  (imported once here: pytester drops modules first imported inside)

from agui_replay.providers import FakeProvider, LoopbackServer
from tests.support.echo_upstream import echo

KEYS = {
    "openai": "sk-proj-namespace0live0key0abcdef",
    "anthropic": "sk-ant-api03-namespace-live-key-0123",
    "gemini": "AIzaSyNamespaceLiveKey-0123456789abcd",
}


def _namespace_problem() -> str | None:
    """Why a test cannot run in a network namespace of its own here, or ``None``."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare (util-linux) and ip (iproute2)"
    done = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True
    )
    if done.returncode != 0:
        return f"`unshare -n` is not permitted here ({done.stderr.strip() or done.returncode})"
    return None


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with FakeProvider(function=echo).serve() as server:
        yield server


AGENTS = f"""
import anthropic
import openai
from google import genai

# built at import time, no base URL, as applications build them
OPENAI = openai.OpenAI(api_key="{KEYS["openai"]}", max_retries=0)
GEMINI = genai.Client(api_key="{KEYS["gemini"]}")


def openai_agent(ctx):
    stream = OPENAI.chat.completions.create(
        model="gpt-4o", stream=True,
        messages=[{{"role": "user", "content": ctx.last_user_text()}}],
    )
    with ctx.assistant_message() as message:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                message.delta(chunk.choices[0].delta.content)


def anthropic_agent(client):
    def agent(ctx):
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=64,
            messages=[{{"role": "user", "content": ctx.last_user_text()}}],
        ) as stream, ctx.assistant_message() as message:
            for text in stream.text_stream:
                message.delta(text)
    return agent


async def gemini_agent(ctx):
    with ctx.assistant_message() as message:
        stream = await GEMINI.aio.models.generate_content_stream(
            model="gemini-2.0-flash", contents=ctx.last_user_text()
        )
        async for chunk in stream:
            if chunk.text:
                message.delta(chunk.text)
"""

TESTS = f"""
import anthropic
import pytest

from agents import anthropic_agent, gemini_agent, openai_agent


def text(events):
    return "".join(e.get("delta", "") for e in events)


def test_openai_client_built_at_import(agui):
    assert text(agui.run(openai_agent, "one two")) == "[echo] one two"


def test_anthropic_client_built_in_the_test(agui):
    client = anthropic.Anthropic(api_key="{KEYS["anthropic"]}", max_retries=0)
    assert text(agui.run(anthropic_agent(client), "three")) == "[echo] three"


@pytest.mark.anyio
async def test_gemini_async_client_over_aiohttp(agui):
    assert text(await agui.arun(gemini_agent, "four five")) == "[echo] four five"


def test_two_providers_in_one_run(agui):
    client = anthropic.Anthropic(api_key="{KEYS["anthropic"]}", max_retries=0)

    def both(ctx):
        openai_agent(ctx)
        anthropic_agent(client)(ctx)

    assert text(agui.run(both, "six")) == "[echo] six[echo] six"
    assert [i["provider"] for i in agui.runs[0].interactions] == ["openai", "anthropic"]
"""


def test_zero_config_cassettes_replay_in_a_namespace_with_no_network(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    problem = _namespace_problem()
    if problem is not None:
        pytest.skip(problem)
    pytester.makepyfile(agents=textwrap.dedent(AGENTS), test_agents=textwrap.dedent(TESTS))
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    record = pytester.runpytest("--agui-record", "--agui-upstream", upstream.base_url)
    record.assert_outcomes(passed=4)
    stored = "".join(p.read_text() for p in (pytester.path / "cassettes").rglob("*.json"))
    for key in KEYS.values():
        assert key not in stored
    upstream.close()

    replay = subprocess.run(
        [
            "unshare",
            "-n",
            "sh",
            "-c",
            f'ip link set lo up && exec "{sys.executable}" -m pytest -p no:cacheprovider',
        ],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = replay.stdout + replay.stderr
    assert replay.returncode == 0, out
    assert "4 passed" in out, out
    assert "0 cassette(s) recorded, 4 replayed" in out, out

    # the namespace is what it claims: loopback is its only interface
    interfaces = subprocess.run(
        ["unshare", "-n", "cat", "/proc/net/dev"], capture_output=True, text=True, timeout=60
    ).stdout
    names = {line.split(":")[0].strip() for line in interfaces.splitlines()[2:]}
    assert names == {"lo"}, interfaces
