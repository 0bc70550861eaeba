"""The sync HTTP libraries besides httpx are routed too: ``requests`` (and anything else on
``urllib3``: botocore, a bare ``PoolManager``) and ``urllib.request`` (``http.client``).

Each request goes to a FakeProvider's OpenAI chat completions stream through the routing, with
no socket, and the stream arrives in the chunks the fake planned, one read per chunk.
"""

from __future__ import annotations

import http.client
import json
import urllib.request

import pytest
import requests
import urllib3

from agui_replay.providers import FakeProvider
from agui_replay.providers._plan import Plan, Request
from agui_replay.providers._transport._routing import HostTable, Router, intercepting

URL = "https://api.openai.com/v1/chat/completions"
BODY = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
PIECES = ("Hel", "lo, ", "wor", "ld")


def _router(fake: FakeProvider) -> Router:
    def handle(request: Request) -> Plan:
        seen = (request.method, request.target, request.provider, request.origin, request.headers)
        fake.seen.append(seen)  # type: ignore[attr-defined]
        return fake.handle(request.method, request.target, request.headers, request.body)

    async def ahandle(request: Request) -> Plan:
        raise AssertionError("a sync library reached the async handler")

    fake.seen = []  # type: ignore[attr-defined]
    return Router(HostTable(), handle, ahandle)


def _deltas(pieces: list[bytes]) -> list[str]:
    """The text deltas of the SSE events, checking that each read holds whole events."""
    out = []
    for piece in pieces:
        text = piece.decode()
        assert text.endswith("\n\n"), pieces  # a chunk is whole SSE events, never a split
        for block in text.split("\n\n"):
            data = block.removeprefix("data: ")
            if not block or data == "[DONE]":
                continue
            choices = json.loads(data)["choices"]
            if choices and choices[0]["delta"].get("content"):
                out.append(choices[0]["delta"]["content"])
    return out


@pytest.fixture
def fake() -> FakeProvider:
    provider = FakeProvider()
    provider.reply(*PIECES)
    return provider


def test_requests_streams_the_planned_chunks_one_by_one(fake: FakeProvider) -> None:
    session = requests.Session()  # built before the routing starts, pool and all
    with intercepting(_router(fake)):
        response = session.post(
            URL, json=BODY, headers={"authorization": "Bearer sk-x"}, stream=True, timeout=5
        )
        pieces = list(response.iter_content(chunk_size=None))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert _deltas(pieces) == list(PIECES)
    assert len(pieces) >= len(PIECES)  # one read per planned chunk, not the whole body
    method, path, provider, origin, headers = fake.seen[0]  # type: ignore[attr-defined]
    assert (method, path, provider, origin) == ("POST", "/v1/chat/completions", "openai", URL[:22])
    assert headers["authorization"] == "Bearer sk-x"
    assert fake.requests[0].body == BODY


def test_urllib3_pool_manager_preload_false_streams_chunk_by_chunk(fake: FakeProvider) -> None:
    manager = urllib3.PoolManager()
    with intercepting(_router(fake)):
        response = manager.request(
            "POST", URL, body=json.dumps(BODY).encode(), preload_content=False
        )
        pieces = list(response.stream(None))
        response.release_conn()
    assert _deltas(pieces) == list(PIECES)
    assert len(pieces) >= len(PIECES)
    # the pool never opened a connection
    assert all(pool.num_connections == 0 for pool in manager.pools._container.values())


def test_urllib_request_reads_each_chunk_with_read1(fake: FakeProvider) -> None:
    request = urllib.request.Request(
        URL, data=json.dumps(BODY).encode(), headers={"content-type": "application/json"}
    )
    with intercepting(_router(fake)), urllib.request.urlopen(request, timeout=5) as response:
        pieces = []
        while piece := response.read1(65536):
            pieces.append(piece)
    assert response.status == 200
    assert _deltas(pieces) == list(PIECES)
    assert len(pieces) >= len(PIECES)
    assert fake.seen[0][3] == URL[:22]  # type: ignore[attr-defined]


def test_a_plain_json_answer_and_the_patches_restored(fake: FakeProvider) -> None:
    before = (
        urllib3.connectionpool.HTTPConnectionPool.urlopen,
        http.client.HTTPConnection.connect,
        http.client.HTTPSConnection.connect,
    )
    body = {**BODY, "stream": False}
    fake.reply("second")
    with intercepting(_router(fake)):
        answer = requests.post(URL, json=body, timeout=5).json()
        with urllib.request.urlopen(
            urllib.request.Request(URL, data=json.dumps(body).encode()), timeout=5
        ) as response:
            second = json.loads(response.read())
    assert answer["choices"][0]["message"]["content"] == "".join(PIECES)
    assert second["choices"][0]["message"]["content"] == "second"
    after = (
        urllib3.connectionpool.HTTPConnectionPool.urlopen,
        http.client.HTTPConnection.connect,
        http.client.HTTPSConnection.connect,
    )
    assert after == before


def test_other_hosts_go_out_untouched_through_both_libraries() -> None:
    target = FakeProvider()
    target.reply("from the network")
    target.reply("again")
    fake = FakeProvider()  # would answer if the request were routed; it must not be
    with target.serve() as server, intercepting(_router(fake)):
        first = requests.post(server.base_url + "/chat/completions", json={"messages": []})
        with urllib.request.urlopen(
            urllib.request.Request(server.base_url + "/chat/completions", data=b'{"messages": []}'),
            timeout=5,
        ) as response:
            second = json.loads(response.read())
    assert first.json()["choices"][0]["message"]["content"] == "from the network"
    assert second["choices"][0]["message"]["content"] == "again"
    assert fake.requests == []
