"""AWS Bedrock Converse / ConverseStream, served to the real boto3 client.

The eventstream framing is checked three ways: botocore's own parser (``EventStreamBuffer`` and
the ``converse_stream`` iterator), our decoder, and the bytes of an independent implementation
(the npm package ``@copilotkit/aimock``, run as a server when Node and npm are here).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402
from botocore.eventstream import EventStreamBuffer  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

from agui_replay._eventstream import decode_frame, decode_frames  # noqa: E402
from agui_replay.providers import (  # noqa: E402
    FakeProvider,
    Reasoning,
    Recorder,
    Text,
    ToolCall,
    Usage,
    detect_api,
)

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
USER = [{"role": "user", "content": [{"text": "hi"}]}]
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Weather of a city",
                "inputSchema": {"json": {"type": "object"}},
            }
        }
    ]
}
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN0123456789"


def _client(url: str, *, key: str = "AKIAIOSFODNN7EXAMPLE", token: str = SESSION_TOKEN) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        aws_session_token=token,
        # one attempt: each request consumes exactly one scripted turn, errors included
        config=Config(retries={"total_max_attempts": 1}),
    )


def _messages(data: bytes) -> list[Any]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return list(buffer)


def test_paths_are_detected() -> None:
    assert detect_api("/model/amazon.nova-lite-v1%3A0/converse") == "bedrock.converse"
    assert detect_api(f"/model/{MODEL}/converse-stream") == "bedrock.converse"
    assert detect_api("/prefix/model/m/converse-stream") == "bedrock.converse"
    assert detect_api("/model/m/invoke") is None
    assert detect_api("/model/m/converse/extra") is None


def test_converse_stream_text_event_by_event() -> None:
    fake = FakeProvider()
    fake.reply("Hel", "lo", usage=Usage(7, 2))
    with fake.serve() as server:
        response = _client(server.url).converse_stream(modelId=MODEL, messages=USER)
        events = list(response["stream"])
    assert response["ResponseMetadata"]["HTTPHeaders"]["content-type"] == (
        "application/vnd.amazon.eventstream"
    )
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert events[1:4] == [
        {"contentBlockDelta": {"delta": {"text": "Hel"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "lo"}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
    ]
    assert events[4] == {"messageStop": {"stopReason": "end_turn"}}
    usage = events[5]["metadata"]["usage"]
    assert usage == {"inputTokens": 7, "outputTokens": 2, "totalTokens": 9}
    request = fake.last_request
    assert request.api == "bedrock.converse"
    assert request.model == MODEL  # URL-decoded from the path
    assert request.stream
    assert request.messages == USER
    # the client signed its request (SigV4); the fake serves it all the same
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    assert request.headers["x-amz-security-token"] == SESSION_TOKEN
    fake.check()


def test_converse_stream_tool_call_streams_its_input_fragments() -> None:
    fake = FakeProvider()
    fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}', id="tooluse_fixed")
    with fake.serve() as server:
        response = _client(server.url).converse_stream(
            modelId=MODEL, messages=USER, toolConfig=TOOLS
        )
        events = list(response["stream"])
    start = events[1]["contentBlockStart"]
    assert start == {
        "start": {"toolUse": {"toolUseId": "tooluse_fixed", "name": "get_weather"}},
        "contentBlockIndex": 0,
    }
    pieces = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events[2:4]]
    assert pieces == ['{"ci', 'ty": "Paris"}']
    assert events[4] == {"contentBlockStop": {"contentBlockIndex": 0}}
    assert events[5] == {"messageStop": {"stopReason": "tool_use"}}
    assert fake.last_request.tool_names == ["get_weather"]
    fake.check()


def test_converse_whole_response_with_reasoning_text_and_tool_call() -> None:
    fake = FakeProvider()
    fake.turn(
        Reasoning("think", "ing", signature="sig-1"),
        Text("Let me ", "look."),
        ToolCall("get_weather", '{"city": ', '"Paris"}'),
        usage=Usage(12, 5),
    )
    with fake.serve() as server:
        response = _client(server.url).converse(modelId=MODEL, messages=USER, toolConfig=TOOLS)
    content = response["output"]["message"]["content"]
    assert content[0] == {
        "reasoningContent": {"reasoningText": {"text": "thinking", "signature": "sig-1"}}
    }
    assert content[1] == {"text": "Let me look."}
    tool = content[2]["toolUse"]
    assert tool["name"] == "get_weather"
    assert tool["input"] == {"city": "Paris"}
    assert tool["toolUseId"].startswith("tooluse_")
    assert response["stopReason"] == "tool_use"
    assert response["usage"] == {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17}
    assert not fake.last_request.stream
    fake.check()


def test_reasoning_streams_its_signature_before_the_block_stops() -> None:
    fake = FakeProvider()
    fake.turn(Reasoning("hm", signature="sig-2"), Text("ok"))
    with fake.serve() as server:
        events = list(_client(server.url).converse_stream(modelId=MODEL, messages=USER)["stream"])
    deltas = [e["contentBlockDelta"] for e in events if "contentBlockDelta" in e]
    assert deltas == [
        {"delta": {"reasoningContent": {"text": "hm"}}, "contentBlockIndex": 0},
        {"delta": {"reasoningContent": {"signature": "sig-2"}}, "contentBlockIndex": 0},
        {"delta": {"text": "ok"}, "contentBlockIndex": 1},
    ]


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "ThrottlingException"),
        (400, "ValidationException"),
        (503, "ServiceUnavailableException"),
    ],
)
def test_errors_are_bedrock_shaped(status: int, code: str) -> None:
    fake = FakeProvider()
    fake.error(status, "scripted trouble")
    with fake.serve() as server, pytest.raises(ClientError) as caught:
        _client(server.url).converse_stream(modelId=MODEL, messages=USER)
    error = caught.value.response
    assert error["Error"] == {"Code": code, "Message": "scripted trouble"}
    assert error["ResponseMetadata"]["HTTPStatusCode"] == status
    assert error["ResponseMetadata"]["HTTPHeaders"]["x-amzn-errortype"].startswith(code + ":")
    fake.check()


def test_error_type_can_be_named() -> None:
    fake = FakeProvider()
    fake.error(424, "the model failed", error_type="ModelErrorException")
    with fake.serve() as server, pytest.raises(ClientError) as caught:
        _client(server.url).converse(modelId=MODEL, messages=USER)
    assert caught.value.response["Error"]["Code"] == "ModelErrorException"


def test_each_write_is_exactly_one_frame_botocore_reads() -> None:
    fake = FakeProvider()
    fake.reply("a", "b", "c")
    body = json.dumps({"messages": USER}).encode()
    plan = fake.handle("POST", f"/model/{MODEL}/converse-stream", {}, body)
    writes = [data for _, data in plan.writes()]
    assert [len(_messages(w)) for w in writes] == [1] * len(writes)
    kinds = [_messages(w)[0].headers[":event-type"] for w in writes]
    assert kinds == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    # our decoder agrees with botocore's on every frame
    for w in writes:
        ours, end = decode_frame(w)
        theirs = _messages(w)[0]
        assert end == len(w) == theirs.prelude.total_length
        assert ours.headers == theirs.headers
        assert ours.payload == theirs.payload
        assert ours.headers[":message-type"] == "event"
        assert ours.headers[":content-type"] == "application/json"


def test_loopback_sends_each_frame_as_its_own_http_chunk() -> None:
    import urllib3

    fake = FakeProvider()
    fake.reply("Hel", "lo")
    with fake.serve() as server, urllib3.PoolManager() as pool:
        resp = pool.request(
            "POST",
            f"{server.url}/model/{MODEL}/converse-stream",
            body=json.dumps({"messages": USER}),
            preload_content=False,
        )
        chunks = list(resp.read_chunked())
        resp.release_conn()
    assert [len(_messages(c)) for c in chunks] == [1] * 6
    texts = [json.loads(_messages(c)[0].payload) for c in chunks[1:3]]
    assert [t["delta"]["text"] for t in texts] == ["Hel", "lo"]


def test_a_cut_stream_ends_the_boto3_iteration_with_an_error() -> None:
    fake = FakeProvider()
    fake.reply("a", "b", "c", cut_after=1)
    got: list[Any] = []
    with fake.serve() as server:
        stream = _client(server.url).converse_stream(modelId=MODEL, messages=USER)["stream"]
        with pytest.raises(Exception, match=r"ended prematurely|IncompleteRead|Connection"):
            got.extend(stream)
    assert got[-1] == {"contentBlockDelta": {"delta": {"text": "a"}, "contentBlockIndex": 0}}


def test_function_turn_streams_to_boto3() -> None:
    def answer(request: Any) -> Iterator[object]:
        assert request.model == MODEL
        yield "x"
        yield "y"

    fake = FakeProvider()
    fake.generate(answer)
    with fake.serve() as server:
        events = list(_client(server.url).converse_stream(modelId=MODEL, messages=USER)["stream"])
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert texts == ["x", "y"]
    fake.check()


def test_sigv4_headers_do_not_break_request_matching() -> None:
    # record through the proxy with one set of credentials...
    upstream = FakeProvider()
    upstream.reply("recorded")
    with upstream.serve() as up:
        recorder = Recorder(up.url)
        with recorder.serve() as proxy:
            first = _client(proxy.url).converse(modelId=MODEL, messages=USER)
        recorder.close()
    assert first["output"]["message"]["content"] == [{"text": "recorded"}]
    # ...replay with others: another signature, date, token and invocation id
    replay = recorder.to_fake()
    time.sleep(1.1)  # a new X-Amz-Date, so a new signature
    with replay.serve() as server:
        again = _client(
            server.url, key="AKIAOTHERKEYEXAMPLE", token="another-token-123456"
        ).converse(modelId=MODEL, messages=USER)
    assert again["output"]["message"]["content"] == [{"text": "recorded"}]
    replay.check()


def test_a_different_body_still_mismatches() -> None:
    upstream = FakeProvider()
    upstream.reply("recorded")
    with upstream.serve() as up:
        recorder = Recorder(up.url)
        with recorder.serve() as proxy:
            _client(proxy.url).converse(modelId=MODEL, messages=USER)
        recorder.close()
    replay = recorder.to_fake()
    other = [{"role": "user", "content": [{"text": "something else"}]}]
    with replay.serve() as server, pytest.raises(ClientError):
        _client(server.url).converse(modelId=MODEL, messages=other)
    assert "first difference at /body/messages/0/content/0/text" in str(replay.errors[0])


# --- an independent implementation: @copilotkit/aimock -----------------------------------------

AIMOCK = "@copilotkit/aimock@1.43.0"
_AIMOCK_CLI = ("node_modules", "@copilotkit", "aimock", "dist", "cli.js")
_NETWORK = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network")


def _aimock_folder() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run @copilotkit/aimock, the independent encoder")
    default = Path.home() / ".cache" / "agui-replay" / "aimock-1.43.0"
    folder = Path(os.environ.get("AGUI_REPLAY_AIMOCK_DIR", default))
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.joinpath(*_AIMOCK_CLI).exists():
            (folder / "package.json").write_text('{"private": true}\n')
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", AIMOCK],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0 or not folder.joinpath(*_AIMOCK_CLI).exists():
                output = (done.stdout + done.stderr).strip()[-300:]
                if any(word in output for word in _NETWORK):
                    pytest.skip(f"the npm registry cannot be reached to install {AIMOCK}: {output}")
                pytest.skip(f"{AIMOCK} could not be installed: {output}")
    return folder


@pytest.fixture(scope="module")
def aimock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = _aimock_folder()
    fixtures = tmp_path_factory.mktemp("aimock") / "fixtures.json"
    fixtures.write_text(
        json.dumps(
            {
                "fixtures": [
                    {"match": {"userMessage": "hello"}, "response": {"content": "Hello there"}},
                    {
                        "match": {"userMessage": "weather"},
                        "response": {
                            "toolCalls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]
                        },
                    },
                ]
            }
        )
    )
    cli = str(folder.joinpath(*_AIMOCK_CLI))
    proc = subprocess.Popen(
        ["node", cli, "-p", "0", "-h", "127.0.0.1", "-f", str(fixtures), "--log-level", "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 30
        seen = ""
        assert proc.stdout is not None
        while url is None and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            seen += line
            if "listening on " in line:
                url = line.rsplit("listening on ", 1)[1].strip()
        if url is None:
            pytest.skip(f"{AIMOCK} did not start as a server: {seen[-300:]}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _aimock_stream(url: str, text: str) -> bytes:
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": text}]}]}).encode()
    request = urllib.request.Request(
        f"{url}/model/{MODEL.replace(':', '%3A')}/converse-stream",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
        return response.read()


def _ours(*script: Any) -> bytes:
    fake = FakeProvider()
    fake.turn(*script)
    plan = fake.handle(
        "POST", f"/model/{MODEL}/converse-stream", {}, json.dumps({"messages": USER}).encode()
    )
    return b"".join(data for _, data in plan.writes())


def _structure(data: bytes) -> list[tuple[str, frozenset[str], tuple[str, ...]]]:
    """Per message: event type, header names and the payload's top-level keys, checked to be
    well-formed by both decoders (lengths, prelude and message CRCs)."""
    frames, stop = decode_frames(data)
    assert stop == len(data), "bytes after the last whole message"
    theirs = _messages(data)
    assert len(theirs) == len(frames)
    out = []
    for (start, end, frame), message in zip(frames, theirs, strict=True):
        assert message.prelude.total_length == end - start
        assert message.prelude.headers_length == len(frame.raw_headers)
        assert message.headers == frame.headers
        assert frame.headers[":message-type"] == "event"
        assert frame.headers[":content-type"] == "application/json"
        payload = json.loads(frame.payload)
        out.append((frame.headers[":event-type"], frozenset(frame.headers), tuple(sorted(payload))))
    return out


def _without_empty_text_start(structure: list[Any], data: bytes) -> list[Any]:
    # aimock opens a text block with contentBlockStart {"start": {}}; Bedrock (and we) open only
    # tool blocks that way
    frames, _ = decode_frames(data)
    keep = []
    for item, (_, _, frame) in zip(structure, frames, strict=True):
        if item[0] == "contentBlockStart" and json.loads(frame.payload).get("start") == {}:
            continue
        keep.append(item)
    return keep


def test_aimock_text_stream_has_our_frame_structure(aimock_url: str) -> None:
    theirs = _aimock_stream(aimock_url, "hello")
    ours = _ours(Text("Hello there"))
    assert _without_empty_text_start(_structure(theirs), theirs) == _structure(ours)


def test_aimock_tool_stream_has_our_frame_structure(aimock_url: str) -> None:
    theirs = _aimock_stream(aimock_url, "weather")
    ours = _ours(ToolCall("get_weather", '{"city":"Paris"}'))
    assert _structure(theirs) == _structure(ours)
    # both start the tool block with its id and name
    start = [f for _, _, f in decode_frames(theirs)[0] if f.event_type == "contentBlockStart"]
    assert set(json.loads(start[0].payload)["start"]["toolUse"]) == {"toolUseId", "name"}
