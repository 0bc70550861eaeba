"""A key the model echoes, cut into the JSON-escaped pieces of several SSE frames, is scrubbed.

Recorded through the real SDKs (``openai`` chat and Responses, ``anthropic``, ``google-genai``)
and our :class:`Recorder`, against a FakeProvider upstream that streams the key in 1- to
4-character frames or split at every position; the network reads are cut anywhere (a frame
across reads, several frames in one read). Every file written must hold no piece of 8 or more
characters of the key (also JSON-unescaped), and the scrubbed cassette must still replay
through the same SDK, which then sees ``<scrubbed>`` where the key was.
"""

from __future__ import annotations

import doctest
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.providers import FakeProvider, Interaction, Recorder
from agui_replay.providers._chunking import by_size, split_at
from agui_replay.scrub import DEFAULT_SECRET_PATTERNS, SCRUBBED, scrub
from agui_replay.scrub import _streamed_text as _scrub_streams
from agui_replay.scrub._scrubber import scrub_sequence

Api = Literal["chat", "responses", "anthropic", "gemini"]
APIS: tuple[Api, ...] = ("chat", "responses", "anthropic", "gemini")
PATHS: dict[Api, str] = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
}
# Key-shaped (found by DEFAULT_SECRET_PATTERNS, unknown to the recorder) and an Azure-style
# key (32 hex characters: only a configured secret finds it).
KEYS: dict[Api, str] = {
    "chat": "sk-proj-Q7mX2vLp9RtK4wZs8NcY1bHd",
    "responses": "sk-svcacct-H3jK9pQ2xV7mN4tR8wYz",
    "anthropic": "sk-ant-api03-Zq8Lm3Nv7Xc2Bt5Rw9Ky",
    "gemini": "AIzaSyD4kq9XmT2vLp8RzN6wYb3HcJ5sQ1fG7uE",
}
AZURE_KEY = "3f9a1c7e5b2d48a6907e1f3c5a7b9d2e"
BEFORE, AFTER = "Your key is ", ", keep it safe."
OUR_KEY = "sk-test-the0clients0own0key00"  # what the SDK sends as its credential


# --- the leak check --------------------------------------------------------------------------


def _strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every string in a JSON value (object keys too), with where it is."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield (*path, "<key>"), str(k)
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))


def _streams(chunks: list[Any]) -> Iterator[str]:
    """The strings of a chunks list's SSE frames joined across frames, one text per place in
    the frame (so ``choices.0.delta.content`` rebuilds what the model streamed)."""
    joined: dict[tuple[Any, ...], list[str]] = {}
    text = "".join(c["data"] for c in chunks if isinstance(c, dict) and "data" in c)
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                frame = json.loads(line[5:])
            except ValueError:
                continue
            for path, s in _strings(frame):
                joined.setdefault(path, []).append(s)
    yield from ("".join(pieces) for pieces in joined.values())


def readings(text: str) -> str:
    """``text`` plus every string in it once and twice JSON-unescaped (a frame's data is JSON
    inside the cassette's JSON), so an escaped piece (``\\u0073k-``) cannot hide, and the
    text each ``chunks`` list streamed, rebuilt across its frames."""
    out = [text]
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    for _, s in _strings(doc):
        out.append(s)
        for line in s.splitlines():
            payload = line[5:] if line.startswith("data:") else line
            try:
                out.extend(v for _, v in _strings(json.loads(payload)))
            except ValueError:
                continue
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("chunks"), list):
                out.extend(_streams(node["chunks"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return "\n".join(out)


def fragments(key: str, text: str, size: int = 8) -> list[str]:
    """The pieces of ``size`` characters of ``key`` found in ``text`` (read every way)."""
    seen = readings(text)
    pieces = {key[i : i + size] for i in range(len(key) - size + 1)}
    return sorted(p for p in pieces if p in seen)


def assert_no_leak(key: str, folder: Path) -> None:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert key not in text, path
        assert fragments(key, text) == [], path


def test_the_leak_check_finds_escaped_and_partial_keys() -> None:
    key = KEYS["chat"]
    assert fragments(key, f"x{key[3:11]}y") == [key[3:11]]
    escaped = json.dumps({"data": 'data: {"t": "\\u0073k-proj-Q"}\n\n'})
    assert fragments(key, escaped) == ["k-proj-Q", "sk-proj-"]
    assert fragments(key, "sk-proj") == []


# --- recording through the real SDKs ---------------------------------------------------------


class _Reads(httpx2.SyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces


class Rechunked(httpx2.BaseTransport):
    """The upstream's response body re-cut into other network reads."""

    def __init__(self, inner: httpx2.BaseTransport, cut: Callable[[bytes], list[bytes]]) -> None:
        self.inner = inner
        self.cut = cut
        self.reads: list[list[bytes]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        body = b"".join(response.stream)  # type: ignore[union-attr]
        self.reads.append(self.cut(body))
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=_Reads(self.reads[-1])
        )


def reads_of(size: int) -> Callable[[bytes], list[bytes]]:
    return lambda body: [body[i : i + size] for i in range(0, len(body), size)]


def random_reads(seed: int) -> Callable[[bytes], list[bytes]]:
    def cut(body: bytes) -> list[bytes]:
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, len(body) // 40)))
        return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    return cut


class _Swap(httpx2.BaseTransport):
    """A transport whose target changes: one SDK client (costly to build) serves every test."""

    target: httpx2.BaseTransport

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self.target.handle_request(request)


_CLIENTS: dict[tuple[Api, str], tuple[Any, _Swap]] = {}


def sdk_client(api: Api, api_key: str) -> tuple[Any, _Swap]:
    if (api, api_key) not in _CLIENTS:
        swap = _Swap()
        http = httpx2.Client(transport=swap)
        client: Any
        if api in ("chat", "responses"):
            client = openai.OpenAI(
                base_url="http://up.invalid/v1", api_key=api_key, http_client=http, max_retries=0
            )
        elif api == "anthropic":
            client = anthropic.Anthropic(
                base_url="http://up.invalid", api_key=api_key, http_client=http, max_retries=0
            )
        else:
            options = types.HttpOptions(base_url="http://up.invalid", httpx_client=http)  # type: ignore[arg-type]
            client = genai.Client(api_key=api_key, http_options=options)
        _CLIENTS[api, api_key] = (client, swap)
    return _CLIENTS[api, api_key]


def stream_through_sdk(api: Api, transport: httpx2.BaseTransport, *, api_key: str) -> str:
    """What the agent's SDK receives as streamed text (text deltas joined)."""
    client, swap = sdk_client(api, api_key)
    swap.target = transport
    messages: list[Any] = [{"role": "user", "content": "what is my key?"}]
    if api == "chat":
        stream = client.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    if api == "responses":
        events = list(client.responses.create(model="gpt-5", input="what?", stream=True))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        (done,) = [e for e in events if e.type == "response.completed"]
        assert done.response.output_text == text
        return text
    if api == "anthropic":
        with client.messages.stream(model="c", max_tokens=50, messages=messages) as s:
            streamed = "".join(s.text_stream)
            assert s.get_final_message().content[0].text == streamed  # type: ignore[union-attr]
        return streamed
    chunks = client.models.generate_content_stream(model="gemini-2.0-flash", contents="what?")
    return "".join(c.text or "" for c in chunks)


def record_and_save(
    api: Api,
    pieces: list[str],
    folder: Path,
    *,
    cut: Callable[[bytes], list[bytes]] | None = None,
    secrets: tuple[str, ...] = (),
    api_key: str = OUR_KEY,
    azure: bool = False,
) -> tuple[Path, str]:
    """Record one streamed answer made of ``pieces`` and save it as the plugin does."""
    upstream = FakeProvider()
    upstream.reply(*pieces)
    recorder = Recorder(secrets=secrets)
    inner: httpx2.BaseTransport = upstream.transport()
    if cut is not None:
        inner = rechunked = Rechunked(inner, cut)
    if azure:
        client = openai.AzureOpenAI(
            api_key=api_key,
            azure_endpoint="http://up.invalid",
            api_version="2024-10-21",
            http_client=httpx2.Client(transport=recorder.transport(inner)),
            max_retries=0,
        )
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}], stream=True
        )
        live = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    else:
        live = stream_through_sdk(api, recorder.transport(inner), api_key=api_key)
    assert live == "".join(pieces)  # the agent got the real answer
    (interaction,) = recorder.interactions
    assert "event-stream" in interaction.response.headers["content-type"]
    if cut is not None:  # one stored chunk per network read
        assert len(interaction.response.chunks) == len(rechunked.reads[0])
    run = CassetteRun(input={}, interactions=[interaction.to_dict()])
    path = save_cassette(Cassette(runs=[run]), folder / "cassette.json", secrets=secrets)
    return path, live


def replayed_text(api: Api, path: Path) -> tuple[str, list[str]]:
    """Replay the saved cassette through the SDK: its streamed text and the chunks served."""
    doc = json.loads(path.read_text())
    interactions = [Interaction.from_dict(i) for i in doc["runs"][0]["interactions"]]
    fake = FakeProvider.from_interactions(interactions, match="none")
    text = stream_through_sdk(api, fake.transport(), api_key="k")
    fake.check()
    return text, [c.data for c in interactions[0].response.chunks]


def expected(text: str, key: str) -> str:
    return text.replace(key, SCRUBBED)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("api", APIS)
def test_a_key_streamed_in_small_frames_leaves_no_piece_in_the_cassette(
    api: Api, size: int, tmp_path: Path
) -> None:
    key = KEYS[api]
    text = f"{BEFORE}{key}{AFTER}"
    path, _ = record_and_save(api, by_size(text, size), tmp_path)
    assert_no_leak(key, tmp_path)
    replayed, chunks = replayed_text(api, path)
    assert replayed == expected(text, key)
    assert len(chunks) >= len(text) // size  # one stored chunk per frame, none merged


@pytest.mark.parametrize("api", APIS)
def test_a_key_split_at_every_position_leaves_no_piece(api: Api, tmp_path: Path) -> None:
    key = KEYS[api]
    for cut in range(1, len(key)):
        folder = tmp_path / str(cut)
        pieces = [BEFORE + key[:cut], key[cut:] + AFTER]
        path, _ = record_and_save(api, pieces, folder)
        assert_no_leak(key, folder)
        replayed, _ = replayed_text(api, path)
        assert replayed == expected("".join(pieces), key), cut


@pytest.mark.parametrize(
    "cut",
    [reads_of(1), reads_of(7), reads_of(200), reads_of(5000), random_reads(3)],
    ids=["1-byte-reads", "7-byte-reads", "200-byte-reads", "one-read", "random-reads"],
)
@pytest.mark.parametrize("api", APIS)
def test_frames_cut_across_network_reads_or_sharing_one(
    api: Api, cut: Callable[[bytes], list[bytes]], tmp_path: Path
) -> None:
    key = KEYS[api]
    text = f"{BEFORE}{key}{AFTER}"
    path, _ = record_and_save(api, by_size(text, 3), tmp_path, cut=cut)
    assert_no_leak(key, tmp_path)
    replayed, _ = replayed_text(api, path)
    assert replayed == expected(text, key)


@pytest.mark.parametrize("size", [1, 4])
def test_an_azure_key_from_the_api_key_header_is_scrubbed_from_the_echo(
    size: int, tmp_path: Path
) -> None:
    # 32 hex characters: no pattern finds it (it would scrub every hex id); the recorder learns
    # it from the api-key header the Azure client sends
    text = f"{BEFORE}{AZURE_KEY}{AFTER}"
    path, _ = record_and_save(
        "chat", by_size(text, size), tmp_path, api_key=AZURE_KEY, azure=True, cut=reads_of(5)
    )
    assert_no_leak(AZURE_KEY, tmp_path)
    doc = json.loads(path.read_text())
    headers = doc["runs"][0]["interactions"][0]["request"]["headers"]
    assert headers["api-key"] == SCRUBBED
    replayed, _ = replayed_text("chat", path)
    assert replayed == expected(text, AZURE_KEY)


@pytest.mark.parametrize("api", APIS)
def test_a_configured_secret_split_at_every_position(api: Api, tmp_path: Path) -> None:
    for cut in range(1, len(AZURE_KEY), 3):
        folder = tmp_path / str(cut)
        pieces = [BEFORE + AZURE_KEY[:cut], AZURE_KEY[cut:] + AFTER]
        path, _ = record_and_save(api, pieces, folder, secrets=(AZURE_KEY,))
        assert_no_leak(AZURE_KEY, folder)
        assert replayed_text(api, path)[0] == expected("".join(pieces), AZURE_KEY)


def test_the_clients_own_key_echoed_in_frames_is_scrubbed(tmp_path: Path) -> None:
    # the recorder learns it from the Authorization header; not configured anywhere
    key = "live0key0not0pattern0shaped0x"
    path, _ = record_and_save("chat", by_size(f"{BEFORE}{key}{AFTER}", 2), tmp_path, api_key=key)
    assert_no_leak(key, tmp_path)
    assert SCRUBBED in replayed_text("chat", path)[0]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_a_key_in_streamed_tool_arguments(api: Api, tmp_path: Path) -> None:
    key = KEYS[api]
    args = json.dumps({"token": key, "note": "x"})
    upstream = FakeProvider()
    upstream.tool_call("save", *by_size(args, 3))
    recorder = Recorder()
    http = httpx2.Client(transport=recorder.transport(Rechunked(upstream.transport(), reads_of(9))))
    # (the recorder scrubs the client's own key everywhere: it must not be a short one)
    tools: Any
    if api == "anthropic":
        aclient = anthropic.Anthropic(
            base_url="http://up.invalid", api_key=OUR_KEY, http_client=http
        )
        tools = [{"name": "save", "input_schema": {"type": "object"}}]
        with aclient.messages.stream(
            model="c", max_tokens=9, messages=[{"role": "user", "content": "x"}], tools=tools
        ) as s:
            s.until_done()
    elif api == "responses":
        oclient = openai.OpenAI(base_url="http://up.invalid/v1", api_key=OUR_KEY, http_client=http)
        tools = [{"type": "function", "name": "save", "parameters": {}}]
        list(oclient.responses.create(model="m", input="x", tools=tools, stream=True))
    else:
        oclient = openai.OpenAI(base_url="http://up.invalid/v1", api_key=OUR_KEY, http_client=http)
        list(oclient.chat.completions.create(model="m", messages=[], stream=True))
    run = CassetteRun(input={}, interactions=[i.to_dict() for i in recorder.interactions])
    path = save_cassette(Cassette(runs=[run]), tmp_path / "c.json")
    assert_no_leak(key, tmp_path)
    doc = json.loads(path.read_text())
    fake = FakeProvider.from_interactions(doc["runs"][0]["interactions"], match="none")
    http = httpx2.Client(transport=fake.transport())
    if api == "anthropic":
        aclient = anthropic.Anthropic(base_url="http://x", api_key="k", http_client=http)
        with aclient.messages.stream(
            model="c", max_tokens=9, messages=[{"role": "user", "content": "x"}], tools=tools
        ) as s:
            block = s.get_final_message().content[0]
        assert block.input == {"token": SCRUBBED, "note": "x"}  # type: ignore[union-attr]
    elif api == "responses":
        oclient = openai.OpenAI(base_url="http://x/v1", api_key="k", http_client=http)
        events = list(oclient.responses.create(model="m", input="x", tools=tools, stream=True))
        (done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
        assert json.loads(done.arguments) == {"token": SCRUBBED, "note": "x"}
    else:
        oclient = openai.OpenAI(base_url="http://x/v1", api_key="k", http_client=http)
        chunks = list(oclient.chat.completions.create(model="m", messages=[], stream=True))
        calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices]
        joined = "".join(t[0].function.arguments or "" for t in calls if t)  # type: ignore[union-attr]
        assert json.loads(joined) == {"token": SCRUBBED, "note": "x"}
    fake.check()


# --- unit level: the scrubber on frames ------------------------------------------------------


def wire_body(api: Api, pieces: list[str]) -> bytes:
    """The exact SSE body the fake sends for a text answer streamed in ``pieces``."""
    fake = FakeProvider()
    fake.reply(*pieces)
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": [], "input": "x"}
    with httpx2.Client(transport=fake.transport()) as client:
        return client.post(f"http://x{PATHS[api]}", json=body).content


def streamed_text(api: Api, chunks: list[str]) -> str:
    """The text a client rebuilds from the frames (every frame must still parse)."""
    out: list[str] = []
    for frame in "".join(chunks).split("\n\n"):
        for line in frame.splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            obj = json.loads(line[6:])  # every frame is still JSON
            if api == "chat":
                out.extend(c["delta"].get("content") or "" for c in obj["choices"])
            elif api == "responses" and obj["type"] == "response.output_text.delta":
                out.append(obj["delta"])
            elif api == "anthropic" and obj["type"] == "content_block_delta":
                out.append(obj["delta"].get("text", ""))
            elif api == "gemini":
                out.extend(p.get("text", "") for p in obj["candidates"][0]["content"]["parts"])
    return "".join(out)


def scrub_chunks_of(chunks: list[str], **options: Any) -> list[str]:
    doc = {"response": {"headers": {}, "chunks": [{"offset": 0.0, "data": c} for c in chunks]}}
    return [c["data"] for c in scrub(doc, **options)["response"]["chunks"]]


KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    api=st.sampled_from(APIS),
    key_tail=st.text(KEY_CHARS, min_size=17, max_size=40),
    frame_sizes=st.lists(st.integers(1, 4), min_size=1, max_size=80),
    read_cuts=st.lists(st.integers(1, 20_000), max_size=30),
    before=st.text(' .,:abc!é"\\\n', max_size=12),
)
def test_no_piece_of_a_key_survives_random_frames_and_reads(
    api: Api, key_tail: str, frame_sizes: list[int], read_cuts: list[int], before: str
) -> None:
    key = "sk-" + key_tail
    text = f"{before} {key} and the rest, unchanged."
    pieces: list[str] = []
    at, k = 0, 0
    while at < len(text):
        size = frame_sizes[k % len(frame_sizes)]
        pieces.append(text[at : at + size])
        at, k = at + size, k + 1
    body = wire_body(api, pieces).decode()
    chunks = split_at(body, [c % len(body) for c in read_cuts])
    out = scrub_chunks_of(chunks)
    assert len(out) == len(chunks)
    assert key not in "".join(out)
    assert streamed_text(api, out) == expected(text, key)  # the rest is unchanged
    # (a shrunk key such as "sk-00000000..." has pieces that the frames hold anyway: ids...)
    natural = fragments(key, json.dumps(wire_body(api, [expected(text, key)]).decode()))
    assert set(fragments(key, json.dumps(out))) <= set(natural)
    # and a stream without a key is left exactly as it was
    clean = text.replace(key, "no key here")
    clean_chunks = split_at(wire_body(api, [clean]).decode(), [5, 50, 300])
    assert scrub_chunks_of(clean_chunks) == clean_chunks


def test_a_key_cut_in_many_escaped_pieces_of_one_frame_each() -> None:
    key = KEYS["chat"]
    frame = 'data: {{"choices":[{{"index":0,"delta":{{"content":{}}}}}]}}\n\n'.format
    pieces = [f"\n{key[:5]}", key[5:9], key[9:] + "\t!"]
    chunks = [frame(json.dumps(p)) for p in pieces]
    # the newline before the key is "\n" in the frame: the raw bytes read "nsk-..." there
    out = scrub_chunks_of(chunks)
    assert [json.loads(c[6:])["choices"][0]["delta"]["content"] for c in out] == [
        f"\n{SCRUBBED}",
        "",
        "\t!",
    ]


def test_unicode_escapes_and_an_ascii_only_encoder() -> None:
    key = KEYS["anthropic"]
    pieces = ["é " + key[:10], key[10:] + " ü"]
    chunks = [
        "event: content_block_delta\ndata: "
        + json.dumps({"type": "content_block_delta", "index": 0, "delta": {"text": p}})
        + "\n\n"
        for p in pieces
    ]
    out = scrub_chunks_of(chunks)
    texts = [json.loads(c.split("data: ")[1])["delta"]["text"] for c in out]
    assert texts == [f"é {SCRUBBED}", " ü"]
    assert out[0].startswith("event: content_block_delta\ndata: {")
    assert out[0].isascii()  # an ASCII-only encoder's frames stay ASCII-only
    assert out[0].count("\\u00e9 ") == 1  # the untouched start of the string keeps its bytes


def test_streams_are_kept_apart_by_choice_tool_call_and_block_index() -> None:
    key = KEYS["chat"]

    def chat(**delta: Any) -> str:
        index = delta.pop("choice", 0)
        return "data: " + json.dumps({"choices": [{"index": index, "delta": delta}]}) + "\n\n"

    def call(index: int, args: str) -> dict[str, Any]:
        return {"index": index, "function": {"arguments": args}}

    chunks = [
        chat(content=key[:6]),
        chat(choice=1, content="sk-other-choice-text"),
        chat(tool_calls=[call(0, '{"a": "' + key[:8])]),
        chat(content=key[6:] + " end"),
        chat(tool_calls=[call(1, "{}")]),
        chat(tool_calls=[call(0, key[8:] + '"}')]),
        chat(refusal="no " + key[:4]),
        chat(refusal=key[4:]),
    ]
    out = [json.loads(c[6:])["choices"][0]["delta"] for c in scrub_chunks_of(chunks)]
    assert out[0]["content"] == SCRUBBED
    assert out[3]["content"] == " end"
    assert out[1]["content"] == SCRUBBED  # key-shaped on its own
    assert out[2]["tool_calls"][0]["function"]["arguments"] == '{"a": "' + SCRUBBED
    assert out[4]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert out[5]["tool_calls"][0]["function"]["arguments"] == '"}'
    assert [out[6]["refusal"], out[7]["refusal"]] == [f"no {SCRUBBED}", ""]


def test_reasoning_fields_and_summary_deltas() -> None:
    key = KEYS["responses"]
    chat = [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": p}}]})
        for p in (key[:9], key[9:])
    ]
    responses = [
        "data: "
        + json.dumps(
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1",
                "output_index": 0,
                "summary_index": 0,
                "delta": p,
            }
        )
        for p in (key[:9], key[9:])
    ]
    thinking = [
        "data: " + json.dumps({"type": "content_block_delta", "index": 0, "delta": {"thinking": p}})
        for p in (key[:9], key[9:])
    ]
    for frames in (chat, responses, thinking):
        out = scrub_chunks_of([f + "\n\n" for f in frames])
        assert key[:9] not in "".join(out)
        assert key[9:] not in "".join(out)
        assert SCRUBBED in out[0]


def test_two_output_items_of_the_responses_api_are_two_streams() -> None:
    def delta(item: str, text: str) -> str:
        obj = {"type": "response.output_text.delta", "item_id": item, "output_index": 0}
        return "data: " + json.dumps({**obj, "content_index": 0, "delta": text}) + "\n\n"

    # "sk-" ends one item and the rest starts another: not one key
    chunks = [delta("msg_1", "see sk-"), delta("msg_2", "abcdefghijklmnopqrstuv")]
    assert scrub_chunks_of(chunks) == chunks


def test_malformed_frames_are_scrubbed_as_plain_text() -> None:
    key = KEYS["chat"]
    chunks = [
        'data: {"choices": [{"delta": {"content": "' + key[:10],
        key[10:] + '"}}]\n\n',  # a frame that is not JSON (a bracket is missing)
        "data: [DONE]\n\n",
        f"data: {key}\n\n",
        ": a comment " + key + "\n\n",
        'data: {"deep": ' + "[" * 5000 + "]" * 5000 + "}\n\n",
        "data: {}\ndata: {}\n\n",
    ]
    out = scrub_chunks_of(chunks)
    assert len(out) == len(chunks)
    assert key not in "".join(out)
    assert out[0].endswith(SCRUBBED)
    assert out[1] == '"}}]\n\n'
    assert out[3] == f"data: {SCRUBBED}\n\n"
    assert out[5:] == chunks[5:]


def test_crlf_lines_and_a_value_spread_over_data_lines() -> None:
    key = KEYS["anthropic"]

    def frame(text: str) -> str:
        delta = {"type": "content_block_delta", "index": 0, "delta": {"text": text}}
        return f"event: content_block_delta\r\ndata: {json.dumps(delta)}\r\n\r\n"

    out = scrub_chunks_of([frame(key[:7]), frame(key[7:] + " ok")])
    assert [json.loads(c.split("data: ")[1])["delta"]["text"] for c in out] == [SCRUBBED, " ok"]
    assert all(c.endswith("}\r\n\r\n") for c in out)
    spread = f'data: {{"text":\ndata: "{key}"}}\n\n'  # no line is JSON by itself: plain text
    assert scrub_chunks_of([spread]) == [f'data: {{"text":\ndata: "{SCRUBBED}"}}\n\n']


def test_a_non_sse_body_and_other_strings_keep_the_old_behaviour() -> None:
    key = KEYS["chat"]
    assert scrub_chunks_of(["plain ", key[:5], key[5:] + " text"]) == ["plain ", SCRUBBED, " text"]
    body = {"choices": [{"message": {"content": f"it is {key}"}}]}
    assert scrub({"body": body}) == {
        "body": {"choices": [{"message": {"content": f"it is {SCRUBBED}"}}]}
    }


def test_done_events_carry_the_whole_text_and_are_scrubbed_too() -> None:
    key = KEYS["responses"]
    escaped = json.dumps(
        {"type": "response.output_text.done", "text": f"\n{key}"}, ensure_ascii=True
    )
    escaped = escaped.replace("sk-", "\\u0073k-")  # an encoder may escape any character
    out = scrub_chunks_of([f"data: {escaped}\n\n"])
    assert json.loads(out[0][6:])["text"] == f"\n{SCRUBBED}"


def test_object_keys_and_duplicate_keys_inside_a_frame() -> None:
    key = KEYS["gemini"]
    frame = '{"a": "' + key + '", "a": "x", "' + key + '": 1, "b": "\\n"}'
    out = scrub_chunks_of([f"data: {frame}\n\n"])
    assert key not in out[0]
    assert json.loads(out[0][6:]) == {"a": "x", SCRUBBED: 1, "b": "\n"}


# --- AG-UI events: the deltas of one message or tool call ----------------------------------


def _content(delta: str, ident: str = "m1") -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": ident, "delta": delta}


@pytest.mark.parametrize("how", ["configured", "header"])
def test_an_azure_key_split_at_every_position_across_event_deltas(how: str) -> None:
    key = AZURE_KEY
    for cut in range(1, len(key)):
        events = [
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            _content(BEFORE + key[:cut]),
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"k": "' + key[:cut]},
            _content(key[cut:] + AFTER),
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": key[cut:] + '"}'},
        ]
        if how == "configured":
            out = scrub(events, secrets=[key])
        else:
            out = scrub({"headers": {"api-key": key}, "events": events})["events"]
        text = "".join(e["delta"] for e in out if e["type"] == "TEXT_MESSAGE_CONTENT")
        args = "".join(e["delta"] for e in out if e["type"] == "TOOL_CALL_ARGS")
        assert text == expected(BEFORE + key + AFTER, key)
        assert json.loads(args) == {"k": SCRUBBED}
        assert fragments(key, json.dumps(out)) == []


def test_a_32_hex_id_is_not_scrubbed_by_default() -> None:
    events = [_content(f"trace {AZURE_KEY}")]
    assert scrub(events) == events


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_event_deltas_in_small_pieces_with_the_key_pattern(size: int) -> None:
    key = KEYS["anthropic"]
    deltas = by_size(f"{BEFORE}{key}{AFTER}", size)
    out = scrub([_content(d) for d in deltas])
    assert "".join(e["delta"] for e in out) == expected(BEFORE + key + AFTER, key)


# --- the building blocks -------------------------------------------------------------------


def test_scrub_sequence_scrubs_every_one_of_many_matches() -> None:
    # (its cost per match is a benchmark's business, not a pass/fail test's)
    pieces = ["x sk-abcdefghijklmnopqrstu y"] * 20_000
    out = scrub_sequence(pieces, DEFAULT_SECRET_PATTERNS)
    assert out == ["x <scrubbed> y"] * 20_000


def test_the_doctests_of_the_stream_scrubber() -> None:
    # module=False: the scrub facade gives its functions its own __module__, and testmod would
    # then skip them as defined elsewhere.
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    globs = vars(_scrub_streams)
    for name, value in sorted(globs.items()):
        if callable(value) and getattr(value, "__doc__", None) and not name.startswith("__"):
            for found in finder.find(value, name, module=False, globs=dict(globs)):
                runner.run(found)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3
    assert result.failed == 0


def test_apply_edits_puts_insertions_and_removals_where_they_belong() -> None:
    apply = _scrub_streams.apply_edits
    assert apply("abcdef", ["ab", "", "cd", "ef"], [(2, 2, "X")]) == ["ab", "", "Xcd", "ef"]
    assert apply("abcdef", ["ab", "cd", "ef"], [(6, 6, "X")]) == ["ab", "cd", "efX"]
    assert apply("abcdef", ["abc", "def"], [(0, 1, "1"), (2, 4, "2"), (5, 6, "")]) == [
        "1b2",
        "e",
    ]
    assert re.fullmatch(r"\w+", "".join(apply("abc", ["abc"], [])))


def test_a_key_passed_in_code_and_echoed_into_events_is_scrubbed_from_the_cassette(
    tmp_path: Path,
) -> None:
    # No variable holds the Azure key: the recorder learns it from the api-key header, and the
    # session scrubs it from the agent's events too, not only from the chunks.
    from agui_replay.recording import CassetteSession

    upstream = FakeProvider()
    text = f"{BEFORE}{AZURE_KEY}{AFTER}"
    upstream.reply(*by_size(text, 3))
    path = tmp_path / "cassettes" / "azure.json"
    with upstream.serve() as server, CassetteSession(path, mode="once", upstream=server) as agui:
        client = openai.AzureOpenAI(
            api_key=AZURE_KEY,
            azure_endpoint=agui.provider.base_url.removesuffix("/v1"),
            api_version="2024-10-21",
            max_retries=0,
        )

        def agent(ctx: Any) -> None:
            stream = client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "x"}], stream=True
            )
            with ctx.message("assistant") as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        events = agui.run(agent, "what is my key?")
        assert AZURE_KEY in "".join(e.get("delta", "") for e in events)  # the agent echoed it
    assert_no_leak(AZURE_KEY, tmp_path)
    stored = json.loads(path.read_text(encoding="utf-8"))["runs"][0]["events"]
    assert SCRUBBED in "".join(e.get("delta", "") for e in stored)
