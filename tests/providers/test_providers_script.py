"""Function-driven turns, per-chunk delay over the loopback server, packaging rules."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from agui_replay.errors import ProviderError
from agui_replay.providers import (
    FakeProvider,
    ProviderRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)


def echo(request: ProviderRequest) -> Any:
    """A sync generator turn: repeat the last user message word by word."""
    words = str(request.messages[-1]["content"]).split(" ")
    for i, word in enumerate(words):
        yield word if i == 0 else " " + word
    yield Usage(input_tokens=len(words), output_tokens=len(words))


def test_function_serves_every_request() -> None:
    fake = FakeProvider(function=echo)
    client = openai.OpenAI(
        base_url="http://x/v1", api_key="k", http_client=httpx2.Client(transport=fake.transport())
    )
    for question in ("hello there", "one two three"):
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": question}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        assert [c.choices[0].delta.content for c in chunks if c.choices][1:-1] == [
            w if i == 0 else " " + w for i, w in enumerate(question.split(" "))
        ]
        assert chunks[-1].usage is not None
        assert chunks[-1].usage.prompt_tokens == len(question.split(" "))
    fake.check()  # a function fake has no unserved turns


def test_async_generator_turn_on_sync_paths_and_deltas_of_every_kind() -> None:
    async def think_then_call(request: ProviderRequest) -> Any:
        yield ReasoningDelta("pondering ")
        yield ReasoningDelta("hard", signature="sig-x")
        yield TextDelta("Calling.")
        yield ToolCallDelta('{"city":', name="get_weather", id="toolu_x")
        yield ToolCallDelta(' "Oslo"}')

    fake = FakeProvider()
    fake.generate(think_then_call)
    with fake.serve() as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k")
        with client.messages.stream(model="c", max_tokens=9, messages=[]) as stream:
            final = stream.get_final_message()
        client.close()
    kinds = [
        (b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in final.content
    ]
    assert kinds[:2] == [("thinking", "pondering hard"), ("text", "Calling.")]
    tool = final.content[2]
    assert tool.type == "tool_use"
    assert (tool.id, tool.input) == ("toolu_x", {"city": "Oslo"})
    assert final.content[0].type == "thinking"
    assert final.content[0].signature == "sig-x"
    fake.check()


def test_a_failing_function_is_reported() -> None:
    def broken(request: ProviderRequest) -> Any:
        yield "fine"
        raise RuntimeError("boom")

    fake = FakeProvider()
    fake.generate(broken)
    with httpx2.Client(transport=fake.transport()) as c:
        r = c.post("http://x/v1/chat/completions", json={"model": "m"})
    assert r.status_code == 500
    with pytest.raises(ProviderError, match="RuntimeError: boom"):
        fake.check()

    fake = FakeProvider()
    fake.generate(lambda request: [42])
    with httpx2.Client(transport=fake.transport()) as c:
        c.post("http://x/v1/chat/completions", json={"model": "m"})
    with pytest.raises(ProviderError, match="yielded int 42 at position 0"):
        fake.check()


def test_chunks_are_flushed_one_by_one_over_the_socket() -> None:
    # each frame is its own HTTP chunk, flushed at once; the client's HTTP parser hands each
    # chunk over as one read, so the boundaries survive the socket
    fake = FakeProvider()
    fake.reply("a", "b", "c")
    fake.reply("x", "y", delay=0.01)  # the optional per-chunk delay changes timing only
    with fake.serve() as server, httpx2.Client() as c:
        bodies = []
        for _ in range(2):
            with c.stream(
                "POST", server.base_url + "/chat/completions", json={"model": "m", "stream": True}
            ) as response:
                bodies.append(list(response.iter_raw()))
    assert [len(b) for b in bodies] == [6, 5]  # role, texts, finish, [DONE]
    assert all(read.endswith(b"\n\n") and read.count(b"data: ") == 1 for read in bodies[0])
    assert b"".join(bodies[1]).count(b'"content":"x"') == 1


def test_unknown_endpoint_answers_404_and_is_kept() -> None:
    fake = FakeProvider()
    with httpx2.Client(transport=fake.transport()) as c:
        r = c.post("http://x/v1/embeddings", json={})
    assert r.status_code == 404
    assert "not an endpoint this fake serves" in r.json()["error"]["message"]
    with pytest.raises(ProviderError, match="/v1/embeddings"):
        fake.check()
    with pytest.raises(ProviderError, match="has not received any request"):
        FakeProvider().last_request  # noqa: B018


def test_providers_package_does_not_import_pytest() -> None:
    code = (
        "import sys, agui_replay.providers, agui_replay.providers._recorder, "
        "agui_replay.providers._fake; assert 'pytest' not in sys.modules, 'pytest imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fake_is_not_collected_as_a_test() -> None:
    assert FakeProvider.__test__ is False
