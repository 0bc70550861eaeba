"""Agents whose tools race replay the same way every time, and re-record byte for byte.

Two user projects, each recorded against ``FakeProvider`` as the upstream model and a weather
API on 127.0.0.1 (stdlib ``http.server``) that answers each request after a random delay:

* a LangGraph agent behind ag-ui-langgraph whose model asks for two tools in one message;
  its ``ToolNode`` runs them at once, in threads, each calling the API with ``urllib``;
* an async agent (a function agent) whose model asks for three tools, run with
  ``asyncio.gather``, each calling the API with ``httpx.AsyncClient`` and reporting its result
  as soon as it has it.

Each is recorded, replayed 50 times offline in one pytest session (one test, parametrized,
all sharing the cassette), then re-recorded twice: the cassette and the snapshots keep their
bytes, whatever order the requests completed in.
"""

from __future__ import annotations

import difflib
import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

# Imported once here: pytester drops the modules first imported inside its runs.
pytest.importorskip("ag_ui_langgraph")
pytest.importorskip("langchain_openai")
import fastapi  # noqa: F401
import httpx  # noqa: F401
import langchain_core.utils.uuid  # noqa: F401
import langgraph.checkpoint.memory
import langgraph.prebuilt  # noqa: F401
import openai  # noqa: F401

import agui_replay.recording
import agui_replay.snapshot  # noqa: F401
from agui_replay.providers import FakeProvider, ProviderRequest, ToolCallDelta
from tests.support.project import free_port

REPLAYS = 50
ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest")
SKIES = {"Paris": "sunny", "Oslo": "rain", "Rome": "clouds"}


class _SlowWeather(BaseHTTPRequestHandler):
    """``GET /weather?city=C`` answers ``{"city": C, "sky": ...}`` after a random delay."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        city = parse_qs(urlsplit(self.path).query)["city"][0]
        time.sleep(random.uniform(0.01, 0.2))
        body = json.dumps({"city": city, "sky": SKIES[city]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def weather_api(port: int) -> Iterator[None]:
    server = ThreadingHTTPServer(("127.0.0.1", port), _SlowWeather)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def model(cities: tuple[str, ...]) -> Any:
    """The upstream model: asks for the weather of every city in one message, then reports
    the tool messages in the order they came."""

    def reply(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
        tools = [m["content"] for m in request.messages if m["role"] == "tool"]
        if tools:
            yield " / ".join(tools)
            return
        for n, city in enumerate(cities):
            yield ToolCallDelta("", name="get_weather", id=f"call_{n}")
            yield ToolCallDelta(json.dumps({"city": city}))

    return reply


LANGGRAPH_AGENT = '''
"""Weather in several cities at once: chat node + ToolNode (parallel calls, in threads)."""
import json
import os
import urllib.request

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def get_weather(city: str) -> str:
    """The weather in a city right now."""
    url = "http://127.0.0.1:" + os.environ["WEATHER_PORT"] + "/weather?city=" + city
    with urllib.request.urlopen(url, timeout=5) as response:
        found = json.loads(response.read())
    return found["city"] + ": " + found["sky"]


def build_app(base_url):
    model = ChatOpenAI(
        model="gpt-4o-mini", streaming=True, base_url=base_url, api_key="sk-user-key",
        max_retries=0,
    ).bind_tools([get_weather])

    async def chat(state: MessagesState, config):
        return {"messages": [await model.ainvoke(state["messages"], config)]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "chat")
    graph.add_conditional_edges("chat", tools_condition)
    graph.add_edge("tools", "chat")
    agent = LangGraphAgent(name="weather", graph=graph.compile(checkpointer=MemorySaver()))
    app = FastAPI()
    add_langgraph_fastapi_endpoint(app, agent, "/agent")
    return app
'''

LANGGRAPH_TESTS = """
import os

import pytest
from agui_replay.assertions import assert_valid_stream
from agui_replay.server import run_input

from weather_agent import build_app

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.agui(cassette="parallel_tools.json")
@pytest.mark.parametrize("n", range(int(os.environ.get("REPLAYS", "1"))))
async def test_parallel_tools(agui, agui_snapshot, n):
    app = build_app(agui.provider.base_url)
    asked = run_input("t", "run-1", messages=["Weather in Paris and Oslo?"])
    events = await agui.arun(app, asked, path="/agent")
    assert_valid_stream(events, "strict")
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert sorted(results) == ["Oslo: rain", "Paris: sunny"]
    if n == 0:  # the snapshot is named after the first of the parametrized tests
        assert events == agui_snapshot
"""

ASYNC_TESTS = """
import asyncio
import json
import os

import httpx
import openai
import pytest

pytestmark = pytest.mark.anyio

MODEL = openai.AsyncOpenAI(api_key="sk-user-key", max_retries=0)
BASE = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}}}}]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def get_weather(client, city):
    response = await client.get(BASE + "/weather", params={"city": city})
    found = response.json()
    return found["city"] + ": " + found["sky"]


async def agent(ctx):
    messages = [{"role": "user", "content": "Weather in Paris, Oslo and Rome?"}]
    reply = await MODEL.chat.completions.create(
        model="gpt-4o", messages=messages, tools=TOOLS, parallel_tool_calls=True
    )
    calls = reply.choices[0].message.tool_calls
    message_id = ctx.new_message_id()
    for call in calls:
        ctx.emit({"type": "TOOL_CALL_START", "toolCallId": call.id,
                  "toolCallName": call.function.name, "parentMessageId": message_id})
        ctx.emit({"type": "TOOL_CALL_ARGS", "toolCallId": call.id,
                  "delta": call.function.arguments})
        ctx.emit({"type": "TOOL_CALL_END", "toolCallId": call.id})

    async def run(client, call):
        content = await get_weather(client, json.loads(call.function.arguments)["city"])
        ctx.emit({"type": "TOOL_CALL_RESULT", "messageId": "result-" + call.id,
                  "toolCallId": call.id, "content": content, "role": "tool"})
        return {"role": "tool", "tool_call_id": call.id, "content": content}

    async with httpx.AsyncClient() as client:
        results = await asyncio.gather(*(run(client, call) for call in calls))
    messages += [reply.choices[0].message.model_dump(exclude_none=True), *results]
    final = await MODEL.chat.completions.create(model="gpt-4o", messages=messages)
    ctx.say(final.choices[0].message.content)


@pytest.mark.agui(cassette="gathered_tools.json")
@pytest.mark.parametrize("n", range(int(os.environ.get("REPLAYS", "1"))))
async def test_gathered_tools(agui, agui_snapshot, n):
    events = await agui.arun(agent)
    results = [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert sorted(results) == ["Oslo: rain", "Paris: sunny", "Rome: clouds"]
    if n == 0:
        assert events == agui_snapshot
"""


def _files(root: Path) -> dict[str, bytes]:
    """Every cassette and snapshot file of the project, by its path."""
    found = [*root.glob("cassettes/**/*.json"), *root.glob("__snapshots__/**/*")]
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(found) if p.is_file()}


def _assert_same(now: dict[str, bytes], before: dict[str, bytes]) -> None:
    """``now`` has the files of ``before``, byte for byte (else the first lines that differ)."""
    assert now.keys() == before.keys()
    for name, data in before.items():
        if now[name] != data:
            lines = difflib.unified_diff(
                data.decode().splitlines(), now[name].decode().splitlines(), lineterm="", n=2
            )
            pytest.fail(f"{name} changed:\n" + "\n".join(list(lines)[:60]))


def _record(
    pytester: pytest.Pytester, cities: tuple[str, ...], port: int, *more: str
) -> FakeProvider:
    upstream = FakeProvider(function=model(cities))
    with weather_api(port), upstream.serve() as server:
        result = pytester.runpytest(
            *ARGS, "--agui-record", f"--agui-upstream={server.base_url}", *more
        )
    result.assert_outcomes(passed=1)
    upstream.check()
    return upstream


def _record_replay_rerecord(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cities: tuple[str, ...]
) -> None:
    port = free_port()
    monkeypatch.setenv("WEATHER_PORT", str(port))
    monkeypatch.setenv("REPLAYS", "1")
    _record(pytester, cities, port, "--snapshot-update")
    recorded = _files(pytester.path)
    assert len(recorded) == 2, recorded.keys()
    (cassette,) = (json.loads(v) for k, v in recorded.items() if k.startswith("cassettes"))
    assert len(cassette["http"]) == len(cities)

    # 50 replays in one session, offline: the API and the model are down.
    monkeypatch.setenv("REPLAYS", str(REPLAYS))
    started = time.monotonic()
    replayed = pytester.runpytest(*ARGS)
    took = time.monotonic() - started
    replayed.assert_outcomes(passed=REPLAYS)
    _assert_same(_files(pytester.path), recorded)
    print(f"{REPLAYS} replays took {took:.1f} s")

    # Two re-records of the unchanged agent change no byte.
    monkeypatch.setenv("REPLAYS", "1")
    for _ in range(2):
        _record(pytester, cities, port)
        _assert_same(_files(pytester.path), recorded)


def test_parallel_tool_calls_of_a_langgraph_tool_node_replay_deterministically(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(weather_agent=LANGGRAPH_AGENT, test_weather=LANGGRAPH_TESTS)
    pytester.syspathinsert()
    _record_replay_rerecord(pytester, monkeypatch, ("Paris", "Oslo"))


def test_tool_calls_gathered_by_an_async_agent_replay_deterministically(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_gathered=ASYNC_TESTS)
    _record_replay_rerecord(pytester, monkeypatch, ("Paris", "Oslo", "Rome"))
