"""The Gemini wire format, served to the real google-genai SDK (loopback and in process)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from agui_replay.providers import (
    FakeProvider,
    Reasoning,
    Recorder,
    Text,
    ToolCall,
    ToolCallDelta,
    Usage,
    detect_api,
)

MODEL = "gemini-2.0-flash"


def _client(base_url: str, **options: object) -> genai.Client:
    return genai.Client(
        api_key="AIza-test-key-0123456789",
        http_options=types.HttpOptions(base_url=base_url, **options),  # type: ignore[arg-type]
    )


def test_paths_are_detected() -> None:
    assert detect_api(f"/v1beta/models/{MODEL}:generateContent") == "gemini.generate"
    assert detect_api(f"/v1/models/{MODEL}:streamGenerateContent?alt=sse") == "gemini.generate"
    assert detect_api("/v1/models") is None


def test_streamed_text_keeps_the_script_chunks_and_reports_usage() -> None:
    fake = FakeProvider()
    fake.reply("Hel", "lo", usage=Usage(7, 2))
    with fake.serve() as server:
        client = _client(server.gemini_base_url)
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
    assert [c.text for c in chunks] == ["Hel", "lo", ""]
    last = chunks[-1]
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata.prompt_token_count == 7
    assert last.usage_metadata.candidates_token_count == 2
    assert last.model_version == MODEL
    request = fake.last_request
    assert request.api == "gemini.generate"
    assert request.stream
    assert request.model == MODEL
    assert request.messages == [{"parts": [{"text": "hi"}], "role": "user"}]
    fake.check()


def test_whole_response_with_a_function_call_and_reasoning() -> None:
    fake = FakeProvider()
    fake.turn(Reasoning("Weather needs a tool."), ToolCall("get_weather", '{"ci', 'ty": "Paris"}'))
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description="weather of a city",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}},
            )
        ]
    )
    with fake.serve() as server:
        client = _client(server.gemini_base_url)
        reply = client.models.generate_content(
            model=MODEL, contents="weather?", config=types.GenerateContentConfig(tools=[tool])
        )
    parts = reply.candidates[0].content.parts
    assert parts[0].thought is True
    assert parts[0].text == "Weather needs a tool."
    assert reply.function_calls[0].name == "get_weather"
    assert reply.function_calls[0].args == {"city": "Paris"}
    assert fake.last_request.tool_names == ["get_weather"]
    assert fake.last_request.stream is False


def test_streamed_function_call_is_one_part_sent_when_complete() -> None:
    fake = FakeProvider()
    fake.turn(Text("Let me look."), ToolCall("lookup", '{"q": ', '"x"}'), ToolCall("other", "{}"))
    with fake.serve() as server:
        client = _client(server.gemini_base_url)
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="go"))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    calls = [p.function_call for p in parts if p.function_call]
    assert [(c.name, c.args) for c in calls] == [("lookup", {"q": "x"}), ("other", {})]
    assert parts[0].text == "Let me look."


def test_scripted_errors_reach_the_sdk_in_googles_shape() -> None:
    fake = FakeProvider()
    fake.error(429, "quota")
    fake.error(503)
    with fake.serve() as server:
        client = _client(server.gemini_base_url)
        with pytest.raises(errors.ClientError) as client_error:
            client.models.generate_content(model=MODEL, contents="hi")
        with pytest.raises(errors.ServerError) as server_error:
            client.models.generate_content(model=MODEL, contents="hi")
    assert (client_error.value.code, client_error.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert client_error.value.message == "quota"
    assert server_error.value.status == "UNAVAILABLE"


def test_arguments_that_are_not_a_json_object_fail_in_the_fake() -> None:
    fake = FakeProvider()
    fake.tool_call("f", "[1, 2]")
    with fake.serve() as server:
        client = _client(server.gemini_base_url)
        with pytest.raises(errors.ServerError):
            client.models.generate_content(model=MODEL, contents="hi")
    with pytest.raises(Exception, match="args are an object"):
        fake.check()


def test_function_driven_turn_streams_in_process_over_httpx2() -> None:
    def answer(request: object) -> object:
        yield "You said "
        yield ToolCallDelta('{"n": 1}', name="count")

    fake = FakeProvider()
    fake.generate(answer)
    client = _client("http://fake.invalid", httpx_client=httpx2.Client(transport=fake.transport()))
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert parts[0].text == "You said "
    assert parts[1].function_call.name == "count"
    fake.check()


def test_async_client_in_process() -> None:
    fake = FakeProvider()
    fake.reply("a", "b")

    async def main() -> list[str | None]:
        client = _client(
            "http://fake.invalid",
            httpx_async_client=httpx2.AsyncClient(transport=fake.async_transport()),
        )
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents="hi")
        return [c.text async for c in stream]

    assert asyncio.run(main()) == ["a", "b", ""]


def test_recorded_gemini_stream_replays_the_same_chunks_and_scrubs_the_key() -> None:
    upstream = FakeProvider()
    upstream.reply("Bon", "jour")
    key = "AIzaSyD-real-looking-key-0123456789abc"
    with upstream.serve() as real:
        recorder = Recorder(real.url)
        with recorder.serve() as proxy:
            client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=proxy.url))
            stream = client.models.generate_content_stream(model=MODEL, contents="x")
            first = [c.text for c in stream]
        recorder.close()
    recorded = recorder.interactions[0]
    stored = json.dumps(recorded.to_dict())
    assert key not in stored
    assert recorded.request.headers["x-goog-api-key"] == "<scrubbed>"
    assert recorded.request.path.endswith(":streamGenerateContent?alt=sse")
    replay = recorder.to_fake()
    with replay.serve() as server:
        client = _client(server.gemini_base_url)
        again = [c.text for c in client.models.generate_content_stream(model=MODEL, contents="x")]
    assert again == first == ["Bon", "jour", ""]
    replay.check()


def test_a_key_in_the_query_string_is_scrubbed_from_the_stored_path() -> None:
    upstream = FakeProvider()
    upstream.reply("ok")
    key = "AIzaSyQuery-key-0123456789abcdefgh"
    with upstream.serve() as real:
        recorder = Recorder(real.url)
        with recorder.serve() as proxy:
            response = httpx2.post(
                f"{proxy.url}/v1beta/models/{MODEL}:generateContent?key={key}",
                json={"contents": [{"role": "user", "parts": [{"text": key}]}]},
            )
        recorder.close()
    assert response.status_code == 200
    stored = json.dumps(recorder.interactions[0].to_dict())
    assert key not in stored
    assert "key=<scrubbed>" in recorder.interactions[0].request.path
