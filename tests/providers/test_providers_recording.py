"""Recording real traffic (transport wrapper and proxy), scrubbing, and replaying it."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from agui_replay.errors import RequestMismatchError, ScriptExhaustedError
from agui_replay.providers import FakeProvider, Interaction, Recorder
from agui_replay.providers._interaction import Chunk, RecordedRequest, RecordedResponse
from agui_replay.scrub import SCRUBBED

SECRET_KEY = "sk-live-0123456789abcdef"
CUSTOMER_SECRET = "ACME-PASSWORD-42"
MESSAGES: list[Any] = [{"role": "user", "content": f"my password is {CUSTOMER_SECRET}"}]


def upstream_fake() -> FakeProvider:
    fake = FakeProvider(seed=7)
    fake.reply("Your key ", f"is {SECRET_KEY}", " and ", f"{CUSTOMER_SECRET}!")
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    return fake


def record_with_transport() -> tuple[FakeProvider, Recorder, list[Any]]:
    upstream = upstream_fake()
    recorder = Recorder(secrets=[CUSTOMER_SECRET])
    client = openai.OpenAI(
        base_url="http://upstream.invalid/v1",
        api_key=SECRET_KEY,
        max_retries=0,
        http_client=httpx2.Client(transport=recorder.transport(upstream.transport())),
    )
    stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    first = [c.choices[0].delta.content for c in stream if c.choices]
    second = client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    client.close()
    return upstream, recorder, [first, second.choices[0].message.tool_calls]


def test_transport_records_each_chunk_with_its_boundary_and_offset() -> None:
    _upstream, recorder, _ = record_with_transport()
    assert len(recorder.interactions) == 2
    streamed = recorder.interactions[0]
    assert streamed.request.method == "POST"
    assert streamed.request.path == "/v1/chat/completions"
    assert streamed.request.body["model"] == "gpt-4o"
    # one recorded chunk per frame the upstream wrote: role, 4 texts, finish, [DONE]
    assert len(streamed.response.chunks) == 7
    assert streamed.response.chunks[-1].data == "data: [DONE]\n\n"
    offsets = [c.offset for c in streamed.response.chunks]
    assert offsets == sorted(offsets)
    assert offsets[0] >= 0
    assert streamed.response.status == 200
    assert "event-stream" in streamed.response.headers["content-type"]
    plain = recorder.interactions[1]
    assert plain.response.chunks == []
    assert plain.response.body["object"] == "chat.completion"


def test_secrets_are_scrubbed_everywhere_before_storage() -> None:
    _, recorder, live = record_with_transport()
    text = json.dumps([i.to_dict() for i in recorder.interactions])
    assert SECRET_KEY not in text
    assert CUSTOMER_SECRET not in text
    req = recorder.interactions[0].request
    assert req.headers["authorization"] == SCRUBBED
    assert req.body["messages"][0]["content"] == f"my password is {SCRUBBED}"
    joined = "".join(c.data for c in recorder.interactions[0].response.chunks)
    assert f'"is {SCRUBBED}"' in joined
    assert f'"{SCRUBBED}!"' in joined
    # the live client still saw the real bytes
    assert live[0][2] == f"is {SECRET_KEY}"


def test_replay_serves_the_same_bytes_with_the_same_boundaries() -> None:
    _, recorder, _ = record_with_transport()
    # through JSON, as a cassette would store it
    stored = json.loads(json.dumps([i.to_dict() for i in recorder.interactions]))
    fake = FakeProvider.from_interactions([Interaction.from_dict(d) for d in stored])
    with (
        httpx2.Client(transport=fake.transport()) as client,
        client.stream(
            "POST",
            "http://x/v1/chat/completions",
            json=recorder.interactions[0].request.body,
        ) as response,
    ):
        replayed = [c.decode() for c in response.iter_raw()]
    assert replayed == [c.data for c in recorder.interactions[0].response.chunks]

    client2 = openai.OpenAI(
        base_url="http://x/v1", api_key="k", http_client=httpx2.Client(transport=fake.transport())
    )
    # the recorded request had the scrubbed text; the replayed agent sends the same
    messages = [{"role": "user", "content": f"my password is {SCRUBBED}"}]
    r = client2.chat.completions.create(model="gpt-4o", messages=messages)
    calls = r.choices[0].message.tool_calls or []
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    fake.check()


def test_replay_mismatch_shows_the_first_differing_field() -> None:
    _, recorder, _ = record_with_transport()
    fake = recorder.to_fake()
    client = openai.OpenAI(
        base_url="http://x/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=fake.transport()),
    )
    changed = [{"role": "user", "content": "a different question"}]
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-4o", messages=changed, stream=True)
    assert isinstance(fake.errors[0], RequestMismatchError)
    message = str(fake.errors[0])
    assert "first difference at /body/messages/0/content" in message
    assert f'recorded: "my password is {SCRUBBED}"' in message
    assert 'received: "a different question"' in message
    with pytest.raises(RequestMismatchError):
        fake.check()


def test_mismatch_on_model_is_reported_before_messages() -> None:
    inter = Interaction(
        RecordedRequest("POST", "/v1/chat/completions", {}, {"model": "a", "messages": [1]}),
        RecordedResponse(200, {"content-type": "application/json"}, body={"x": 1}),
    )
    fake = FakeProvider.from_interactions([inter])
    with httpx2.Client(transport=fake.transport()) as c:
        c.post("http://x/v1/chat/completions", json={"messages": [2], "model": "b"})
    assert "first difference at /body/model" in str(fake.errors[0])


def test_unordered_and_none_match_modes() -> None:
    def inter(content: str) -> Interaction:
        return Interaction(
            RecordedRequest("POST", "/v1/chat/completions", {}, {"q": content}),
            RecordedResponse(200, {"content-type": "application/json"}, body={"a": content}),
        )

    fake = FakeProvider.from_interactions([inter("1"), inter("2")], match="unordered")
    with httpx2.Client(transport=fake.transport()) as c:
        url = "http://x/v1/chat/completions"
        assert c.post(url, json={"q": "2"}).json() == {"a": "2"}
        assert c.post(url, json={"q": "1"}).json() == {"a": "1"}
        assert c.post(url, json={"q": "1"}).status_code == 500
    assert isinstance(fake.errors[0], ScriptExhaustedError)

    loose = FakeProvider.from_interactions([inter("1")], match="none")
    with httpx2.Client(transport=loose.transport()) as c:
        assert c.post("http://x/v1/chat/completions", json={"q": "zz"}).json() == {"a": "1"}
    loose.check()


def test_proxy_records_anthropic_stream_and_scrubs_the_key() -> None:
    upstream = FakeProvider()
    upstream.reply("Hel", "lo")
    with upstream.serve() as up:
        recorder = Recorder(up.anthropic_base_url)
        with recorder.serve() as proxy:
            assert proxy.url.startswith("http://127.0.0.1:")
            client = anthropic.Anthropic(
                base_url=proxy.anthropic_base_url, api_key=SECRET_KEY, max_retries=0
            )
            with client.messages.stream(model="c", max_tokens=5, messages=MESSAGES) as stream:
                texts = list(stream.text_stream)
            client.close()
    assert texts == ["Hel", "lo"]
    (inter,) = recorder.interactions
    # anthropic 2.x sends the key as a bearer token; older clients use x-api-key
    auth = {k: v for k, v in inter.request.headers.items() if k in ("authorization", "x-api-key")}
    assert auth
    assert set(auth.values()) == {SCRUBBED}
    assert inter.request.path == "/v1/messages"
    assert SECRET_KEY not in json.dumps(inter.to_dict())
    data = "".join(c.data for c in inter.response.chunks)
    assert data.startswith("event: message_start\n")
    assert data.endswith('event: message_stop\ndata: {"type":"message_stop"}\n\n')
    # replay through the real SDK
    fake = recorder.to_fake()
    with fake.serve() as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k")
        with client.messages.stream(model="c", max_tokens=5, messages=MESSAGES) as stream:
            assert list(stream.text_stream) == ["Hel", "lo"]
        client.close()
    fake.check()


def test_proxy_for_openai_mirrors_the_upstream_path() -> None:
    upstream = upstream_fake()
    with upstream.serve() as up:
        recorder = Recorder(up, secrets=[CUSTOMER_SECRET])
        with recorder.serve() as proxy:
            assert proxy.base_url.endswith("/v1")
            client = openai.OpenAI(base_url=proxy.base_url, api_key=SECRET_KEY, max_retries=0)
            chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
            client.chat.completions.create(model="m", messages=MESSAGES)
            client.close()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).startswith(
        "Your key is sk-live"
    )
    assert len(recorder.interactions) == 2
    assert SECRET_KEY not in json.dumps([i.to_dict() for i in recorder.interactions])
    upstream.check()


@pytest.mark.anyio
@pytest.mark.parametrize("library", ["httpx2", "httpx"])
async def test_async_transport_wrappers(library: str) -> None:
    upstream = upstream_fake()
    recorder = Recorder()
    http_client: Any
    if library == "httpx2":
        http_client = httpx2.AsyncClient(
            transport=recorder.async_transport(upstream.async_transport())
        )
    else:
        http_client = httpx.AsyncClient(
            transport=recorder.httpx_async_transport(upstream.httpx_async_transport())
        )
    client = openai.AsyncOpenAI(base_url="http://u/v1", api_key=SECRET_KEY, http_client=http_client)
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    _ = [c async for c in stream]
    await client.chat.completions.create(model="m", messages=MESSAGES)
    await client.close()
    assert len(recorder.interactions[0].response.chunks) == 7
    assert recorder.interactions[1].response.body["choices"][0]["finish_reason"] == "tool_calls"


def test_httpx_sync_transport_wrapper() -> None:
    upstream = upstream_fake()
    recorder = Recorder()
    with httpx.Client(transport=recorder.httpx_transport(upstream.httpx_transport())) as c:
        c.post("http://u/v1/chat/completions", json={"model": "m", "stream": True}).read()
    assert recorder.interactions[0].response.chunks[0].data.startswith("data: {")


def test_realtime_replay_still_serves_everything() -> None:
    inter = Interaction(
        RecordedRequest("POST", "/v1/chat/completions", {}, {"m": 1}),
        RecordedResponse(
            200,
            {"content-type": "text/event-stream"},
            [Chunk(0.001, "data: 1\n\n"), Chunk(0.002, "data: [DONE]\n\n")],
        ),
    )
    fake = FakeProvider.from_interactions([inter], realtime=True)
    with fake.serve() as server, httpx2.Client() as c:
        r = c.post(server.base_url + "/chat/completions", json={"m": 1})
    assert r.text == "data: 1\n\ndata: [DONE]\n\n"


def test_interaction_round_trip_and_bad_dicts() -> None:
    inter = Interaction(
        RecordedRequest("POST", "/v1/messages", {"a": "b"}, {"k": [1, "x"]}),
        RecordedResponse(200, {"content-type": "text/event-stream"}, [Chunk(0.5, "data: é\n\n")]),
    )
    assert Interaction.from_dict(json.loads(json.dumps(inter.to_dict()))) == inter
    from agui_replay.errors import ProviderError

    with pytest.raises(ProviderError, match="'response'"):
        Interaction.from_dict({"request": inter.request.to_dict()})


def test_scrubber_headers_and_values() -> None:
    from agui_replay.providers._recorder import Scrubber

    s = Scrubber(
        secrets=["tok-9"], scrub_headers=["authorization", "x-api-key", "api-key", "x-org"]
    )
    headers = s.headers(
        {
            "X-Api-Key": "key-1-long-enough",
            "api-key": "azure-2-long-enough",
            "X-Org": "org-3",
            "Accept": "tok-9",
        }
    )
    assert headers == {
        "x-api-key": SCRUBBED,
        "api-key": SCRUBBED,
        "x-org": SCRUBBED,
        "accept": SCRUBBED,
    }
    # values learnt from secret headers are scrubbed inside bodies too; a learnt value too
    # short to be a key ("org-3") is not (it would rewrite every occurrence of its letters),
    # and the keys of an object are names, never rewritten
    body = {"key-1-long-enough": ["azure-2-long-enough org-3 tok-9", 5, None]}
    assert s.value(body) == {"key-1-long-enough": [f"{SCRUBBED} org-3 {SCRUBBED}", 5, None]}


class _Pieces(httpx2.SyncByteStream):
    """A response body that arrives in exactly these network reads."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Any:
        yield from self.pieces


def test_a_secret_cut_by_a_network_read_boundary_is_still_scrubbed() -> None:
    key = "sk-live-not-a-pattern-0123456789"  # learned from the Authorization header
    body = f'data: {{"echo": "{key}"}}\n\n'.encode()
    cut = body.index(b"0123")  # the read boundary falls inside the key

    def upstream(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=_Pieces([body[:cut], body[cut:]]),
        )

    recorder = Recorder()
    client = httpx2.Client(transport=recorder.transport(httpx2.MockTransport(upstream)))
    with client.stream(
        "POST", "http://upstream.test/v1/x", headers={"Authorization": f"Bearer {key}"}, json={}
    ) as response:
        received = b"".join(response.iter_raw())
    assert received == body  # the agent still gets the real bytes
    chunks = [c.data for c in recorder.interactions[0].response.chunks]
    assert len(chunks) == 2
    assert key not in "".join(chunks)
    assert "<scrubbed>" in chunks[0]


# --- the public seams a harness builds on ----------------------------------------------------


def test_recorder_app_records_behind_a_transport_and_a_router() -> None:
    from agui_replay.providers import LoopbackServer, detect_api
    from agui_replay.providers._formats import error_plan
    from agui_replay.providers._plan import Plan
    from agui_replay.providers._recorder import ProxyApp
    from agui_replay.providers._transport._httpx import Httpx2Transport

    upstream = upstream_fake()
    with upstream.serve() as up:
        recorder = Recorder(up, secrets=[CUSTOMER_SECRET])
        app = recorder.app()
        assert isinstance(app, ProxyApp)
        assert app.origin == up.url

        def router(method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
            if path.startswith("/v1/chat/"):
                return app(method, path, headers, body)
            return error_plan(detect_api(path), 404, f"no route for {path}")

        in_process = openai.OpenAI(
            base_url="http://proxy.invalid/v1",
            api_key=SECRET_KEY,
            max_retries=0,
            http_client=httpx2.Client(transport=Httpx2Transport(router)),
        )
        chunks = list(in_process.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        with pytest.raises(openai.NotFoundError, match="no route for /v1/responses"):
            in_process.responses.create(model="m", input="hi")
        in_process.close()
        with LoopbackServer(router) as server:
            over_http = openai.OpenAI(base_url=server.base_url, api_key=SECRET_KEY, max_retries=0)
            over_http.chat.completions.create(model="m", messages=MESSAGES)
            over_http.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("Your key is sk-live")  # the upstream's answer came through
    assert [i.request.path for i in recorder.interactions] == ["/v1/chat/completions"] * 2
    stored = json.dumps([i.to_dict() for i in recorder.interactions])
    assert SECRET_KEY not in stored
    assert CUSTOMER_SECRET not in stored
    assert not app.client.is_closed
    recorder.close()
    assert app.client.is_closed
    upstream.check()


def test_recorder_app_needs_an_upstream() -> None:
    from agui_replay.errors import ProviderError

    with pytest.raises(ProviderError, match=r"Recorder\.app\(\) needs an upstream"):
        Recorder().app()


def test_the_transports_are_imported_on_first_use() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agui_replay.providers as p\n"
        "assert 'httpx' not in sys.modules and 'httpx2' not in sys.modules\n"
        "transport = p.FakeProvider().httpx_transport()\n"
        "import httpx\n"
        "assert isinstance(transport, httpx.BaseTransport)\n"
        "try:\n"
        "    p.NoSuchThing\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "has no attribute 'NoSuchThing'" in done.stdout


def test_a_closed_loopback_server_refuses_connections_at_once() -> None:
    import socket

    fake = FakeProvider()
    fake.reply("Hi")
    server = fake.serve()
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    port = server.port
    server.close()
    server.close()  # a second close is a no-op
    assert server.closed
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    client.close()


def test_recorded_chunks_from_dicts_in_every_accepted_form() -> None:
    from agui_replay.errors import ProviderError

    response = RecordedResponse.from_dict(
        {
            "status": 200,
            "chunks": [
                {"offset": 1, "data": "a"},
                {"offset": 0.5, "data": "b"},
                {"offset": "2", "data": 3},  # not what we write; converted as before
            ],
        }
    )
    assert response.chunks == [Chunk(1.0, "a"), Chunk(0.5, "b"), Chunk(2.0, "3")]
    assert [type(c.offset) for c in response.chunks] == [float, float, float]
    with pytest.raises(ProviderError, match=r"response\.chunks\[1\]: chunk has no 'offset'"):
        RecordedResponse.from_dict({"status": 200, "chunks": [{"offset": 0, "data": "a"}, {}]})
    with pytest.raises(ProviderError, match=r"chunks\[0\]: chunk must be a JSON object"):
        RecordedResponse.from_dict({"status": 200, "chunks": ["data: a"]})
    with pytest.raises(ProviderError, match=r"chunks\[0\]: .*\"offset\": seconds"):
        RecordedResponse.from_dict({"status": 200, "chunks": [{"offset": "soon", "data": "a"}]})
    with pytest.raises(ProviderError, match=r"response\.status must be an HTTP status code"):
        RecordedResponse.from_dict({"status": "ok"})
    with pytest.raises(ProviderError, match="response must be a JSON object, got list"):
        RecordedResponse.from_dict([])  # type: ignore[arg-type]


def test_from_interactions_names_the_bad_interaction() -> None:
    from agui_replay.errors import ProviderError

    good = {"request": {"method": "POST", "path": "/v1/messages"}, "response": {"status": 200}}
    with pytest.raises(ProviderError, match=r"interaction #1: interaction has no 'response'"):
        FakeProvider.from_interactions([good, {"request": good["request"]}])
    with pytest.raises(ProviderError, match=r"interaction #0: "):
        FakeProvider.from_interactions(["not an object"])  # type: ignore[list-item]
