"""Binary response bodies (AWS event streams) are stored losslessly, chunk by chunk.

A chunk of a binary stream is stored as ``{"offset", "data": base64, "encoding": "base64"}``
(cassette format 3); text chunks are as in format 2, and format 1 and 2 files still load. The
recorder keeps the bytes and the read boundaries, the replay sends them back unchanged, and
scrubbing rewrites only the messages that held a secret, with new CRCs.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agui_replay._eventstream import decode_frames, encode_event
from agui_replay.cassette import (
    Cassette,
    CassetteRun,
    dumps_cassette,
    load_cassette,
    loads_cassette,
)
from agui_replay.cassette._format import FORMAT_VERSION
from agui_replay.errors import CassetteError
from agui_replay.providers import FakeProvider, Interaction, Recorder
from agui_replay.providers._interaction import Chunk
from agui_replay.recording._modes import DEFAULT_SECRET_ENV
from agui_replay.scrub import SCRUBBED, scrub

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from botocore.eventstream import EventStreamBuffer  # noqa: E402

MODEL = "amazon.nova-lite-v1:0"
USER = [{"role": "user", "content": [{"text": "hi"}]}]
INPUT = {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": []}
INPUT |= {"forwardedProps": {}}
EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
TOKEN = "IQoJb3JpZ2luX2VjSESSIONtoken0123456789abcdef"


def _client(url: str, token: str = TOKEN) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="eu-west-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret-access-key-example",
        aws_session_token=token,
        config=Config(retries={"total_max_attempts": 1}),
    )


def _delta(text: str, index: int = 0) -> bytes:
    payload = {"contentBlockIndex": index, "delta": {"text": text}}
    return encode_event("contentBlockDelta", json.dumps(payload).encode())


def _valid_messages(data: bytes) -> list[Any]:
    """Every message, through botocore's parser (which checks both CRCs)."""
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return list(buffer)


def _record_bedrock(*chunks: str, secrets: tuple[str, ...] = ()) -> tuple[Recorder, Any]:
    upstream = FakeProvider(chunk_delay=0.01)  # a pause per frame: one read per frame
    upstream.reply(*chunks)
    with upstream.serve() as up:
        recorder = Recorder(up.url, secrets=secrets)
        with recorder.serve() as proxy:
            response = _client(proxy.url).converse_stream(modelId=MODEL, messages=USER)
            events = list(response["stream"])
        recorder.close()
    return recorder, events


# --- the stored form ------------------------------------------------------------------------


def test_binary_chunks_are_base64_and_text_chunks_unchanged() -> None:
    binary = Chunk(0.25, b"\x00\xffbytes")
    assert binary.to_dict() == {
        "offset": 0.25,
        "data": base64.b64encode(b"\x00\xffbytes").decode(),
        "encoding": "base64",
    }
    assert Chunk.from_dict(binary.to_dict()) == binary
    text = Chunk(0.5, "data: {}\n\n")
    assert text.to_dict() == {"offset": 0.5, "data": "data: {}\n\n"}
    assert Chunk.from_dict(text.to_dict()) == text


def test_cassette_round_trip_keeps_binary_chunks_byte_identical() -> None:
    frames = [_delta("Hel"), _delta("lo")]
    # a read boundary inside a frame, as TCP may cut it
    reads = [frames[0][:20], frames[0][20:] + frames[1]]
    interaction = {
        "provider": "bedrock",
        "request": {"method": "POST", "path": f"/model/{MODEL}/converse-stream", "body": {}},
        "response": {
            "status": 200,
            "headers": {"content-type": "application/vnd.amazon.eventstream"},
            "chunks": [Chunk(0.01 * i, r).to_dict() for i, r in enumerate(reads)],
        },
    }
    text = dumps_cassette(Cassette(runs=[CassetteRun(INPUT, EVENTS, [interaction])]))
    assert f'"version": {FORMAT_VERSION},' in text
    assert FORMAT_VERSION == 3
    assert text.count('"encoding": "base64"') == 2
    loaded = loads_cassette(text)
    back = Interaction.from_dict(loaded.runs[0].interactions[0])
    assert [c.data for c in back.response.chunks] == reads
    assert back.response.content == b"".join(frames)


@pytest.mark.parametrize("version", [1, 2])
def test_older_format_versions_still_load_and_replay(version: int) -> None:
    sse = 'data: {"choices":[{"index":0,"delta":{"content":"old"},"finish_reason":null}]}\n\n'
    interaction: dict[str, Any] = {
        "request": {"method": "POST", "path": "/v1/chat/completions", "body": {"model": "m"}},
        "response": {
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "chunks": [{"offset": 0.0, "data": sse}, {"offset": 0.1, "data": "data: [DONE]\n\n"}],
        },
    }
    if version == 2:
        interaction["provider"] = "openai"
    doc = {
        "version": version,
        "runs": [{"input": INPUT, "interactions": [interaction], "events": EVENTS}],
    }
    loaded = loads_cassette(json.dumps(doc))
    assert loaded.version == FORMAT_VERSION  # migrated as it is read
    # format 1 named no provider: its exchanges answer any, as "default" ones do
    assert loaded.runs[0].interactions[0]["provider"] == ("openai" if version == 2 else "default")
    assert f'"version": {FORMAT_VERSION},' in dumps_cassette(loaded)
    fake = FakeProvider.from_interactions(loaded.runs[0].interactions)
    plan = fake.handle("POST", "/v1/chat/completions", {}, b'{"model": "m"}')
    assert [data for _, data in plan.writes()] == [sse.encode(), b"data: [DONE]\n\n"]


@pytest.mark.parametrize(
    ("chunk", "where", "says"),
    [
        ({"offset": 0, "data": "AAE=", "encoding": "hex"}, "chunks[0].encoding", '"base64"'),
        ({"offset": 0, "data": "not base64!", "encoding": "base64"}, "chunks[0].data", "base64"),
    ],
)
def test_a_broken_binary_chunk_is_named(chunk: dict[str, Any], where: str, says: str) -> None:
    interaction = {
        "request": {"method": "POST", "path": "/p"},
        "response": {"status": 200, "chunks": [chunk]},
    }
    doc = {
        "version": 3,
        "runs": [{"input": INPUT, "interactions": [interaction], "events": EVENTS}],
    }
    with pytest.raises(CassetteError) as caught:
        loads_cassette(json.dumps(doc, indent=1))
    assert where in str(caught.value)
    assert says in str(caught.value)


# --- record, then replay --------------------------------------------------------------------


def test_record_then_replay_keeps_binary_chunks_byte_identical(tmp_path: Any) -> None:
    recorder, live = _record_bedrock("Hel", "lo", " world")
    interaction = recorder.interactions[0]
    chunks = interaction.response.chunks
    assert all(isinstance(c.data, bytes) for c in chunks)
    assert interaction.response.body is None
    # each frame was its own read, and botocore accepts every one of them (CRCs intact)
    assert [len(_valid_messages(c.raw)) for c in chunks] == [1] * len(chunks)
    recorded = [c.raw for c in chunks]

    # through a cassette file and back
    path = tmp_path / "bedrock.json"
    run = CassetteRun(INPUT, EVENTS, [i.to_dict() for i in recorder.interactions])
    path.write_text(dumps_cassette(Cassette(runs=[run])))
    loaded = load_cassette(path)
    again = Interaction.from_dict(loaded.runs[0].interactions[0])
    assert [c.raw for c in again.response.chunks] == recorded

    # the replay sends those very bytes, one write per recorded read
    fake = FakeProvider.from_interactions([again])
    body = json.dumps({"messages": USER}).encode()
    plan = fake.handle("POST", interaction.request.path, {}, body)
    assert [data for _, data in plan.writes()] == recorded

    # and boto3 reads the replay as it read the live stream
    fake = FakeProvider.from_interactions(loaded.runs[0].interactions)
    with fake.serve() as server:
        replayed = list(_client(server.url).converse_stream(modelId=MODEL, messages=USER)["stream"])
    assert replayed == live
    fake.check()


def test_sigv4_headers_are_scrubbed_or_not_stored() -> None:
    recorder, _ = _record_bedrock("ok")
    headers = recorder.interactions[0].request.headers
    assert headers["authorization"] == SCRUBBED
    assert headers["x-amz-security-token"] == SCRUBBED
    for name in ("x-amz-date", "amz-sdk-invocation-id", "amz-sdk-request"):
        assert name not in headers
    stored = dumps_cassette(
        Cassette(runs=[CassetteRun(INPUT, EVENTS, [i.to_dict() for i in recorder.interactions])])
    )
    assert TOKEN not in stored
    assert "AKIDEXAMPLE" not in stored
    assert "AWS4-HMAC-SHA256" not in stored


def test_cassette_scrub_hides_sigv4_headers_wherever_they_come_from() -> None:
    doc = {
        "headers": {
            "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/"
            "bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123abcd0123abcd",
            "X-Amz-Security-Token": TOKEN,
            "X-Amz-Date": "20250101T000000Z",
            "X-Amz-Content-SHA256": "e3b0c44298fc1c149afbf4c8996fb924" + "27ae41e4" * 4,
            "amz-sdk-invocation-id": "3f1c6a3e-0000-4000-8000-000000000000",
            "amz-sdk-request": "attempt=1; max=4",
            "content-type": "application/json",
        },
        "body": {"note": f"token {TOKEN}, key AKIDEXAMPLE, sig 0123abcd0123abcd"},
    }
    out = scrub(doc)
    assert out["headers"]["content-type"] == "application/json"
    assert {k for k, v in out["headers"].items() if v == SCRUBBED} == set(doc["headers"]) - {
        "content-type"
    }
    assert out["body"]["note"] == f"token {SCRUBBED}, key {SCRUBBED}, sig {SCRUBBED}"


def test_aws_credentials_are_default_secret_env_variables() -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        assert name in DEFAULT_SECRET_ENV


# --- scrubbing inside the frames ------------------------------------------------------------

SECRET = "sk-live-0123456789abcdefghij"


def _stream_doc(reads: list[bytes]) -> dict[str, Any]:
    return {
        "response": {
            "status": 200,
            "headers": {"content-type": "application/vnd.amazon.eventstream"},
            "chunks": [Chunk(0.0, r).to_dict() for r in reads],
        }
    }


def _reads(doc: dict[str, Any]) -> list[bytes]:
    return [base64.b64decode(c["data"]) for c in doc["response"]["chunks"]]


def test_scrub_rewrites_only_the_frames_that_held_a_secret() -> None:
    start = encode_event("messageStart", b'{"role":"assistant"}')
    # the model echoed the key across two deltas; a read boundary also cuts a frame
    one, two = _delta("key " + SECRET[:10]), _delta(SECRET[10:] + " end")
    stop = encode_event("messageStop", b'{"stopReason":"end_turn"}')
    reads = [start + one[:30], one[30:] + two, stop]
    out = scrub(_stream_doc(reads), secrets=[SECRET])
    new = _reads(out)
    assert len(new) == 3
    assert new[2] == stop  # untouched frames keep their bytes
    assert new[0].startswith(start)
    data = b"".join(new)
    assert SECRET.encode() not in data
    messages = _valid_messages(data)  # botocore checks the new CRCs
    texts = [json.loads(m.payload)["delta"]["text"] for m in messages[1:3]]
    assert texts == [f"key {SCRUBBED}", " end"]
    frames, stop_at = decode_frames(data)
    assert stop_at == len(data)
    assert len(frames) == 4


def test_scrub_leaves_a_clean_binary_stream_alone() -> None:
    reads = [_delta("nothing secret"), encode_event("messageStop", b'{"stopReason":"end_turn"}')]
    doc = _stream_doc(reads)
    assert scrub(doc, secrets=[SECRET]) == doc


def test_the_recorder_scrubs_a_secret_the_model_echoed_in_frames() -> None:
    recorder, live = _record_bedrock("the key is ", SECRET[:8], SECRET[8:], secrets=(SECRET,))
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in live if "contentBlockDelta" in e]
    assert "".join(texts) == "the key is " + SECRET  # the live client saw the real answer
    stored = recorder.interactions[0].response.content
    assert SECRET.encode() not in stored
    messages = _valid_messages(stored)
    deltas = [
        json.loads(m.payload) for m in messages if m.headers[":event-type"] == "contentBlockDelta"
    ]
    assert "".join(d["delta"]["text"] for d in deltas) == "the key is " + SCRUBBED
    # and the scrubbed recording still replays through boto3
    fake = recorder.to_fake()
    with fake.serve() as server:
        replayed = list(_client(server.url).converse_stream(modelId=MODEL, messages=USER)["stream"])
    got = [e["contentBlockDelta"]["delta"]["text"] for e in replayed if "contentBlockDelta" in e]
    assert "".join(got) == "the key is " + SCRUBBED
