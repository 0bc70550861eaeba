"""A LangGraph test suite as a user writes it: record once, replay offline, re-record unchanged.

The user's project (a fresh pytester folder) holds a LangGraph agent behind ag-ui-langgraph with
its default configuration (RAW events included): ``ChatOpenAI(streaming=True)`` at
``agui.provider.base_url``, a ``ToolNode`` with one tool, a ``MemorySaver`` checkpointer, a
FastAPI app from ``add_langgraph_fastapi_endpoint``. Its tests use the ``agui`` fixture, strict
verification and syrupy snapshots, and patch nothing of LangChain or LangGraph.

The workflow, step by step, for each of the user's tests:

1. record with ``--agui-record`` against a local OpenAI-compatible server that draws random
   ``chatcmpl-``/``call_`` ids, ``created`` stamps and ``system_fingerprint`` values on every
   response, as OpenAI does (``FakeProvider(ids="random")`` on 127.0.0.1), then stop it;
2. replay twice offline: no upstream asked, cassette and snapshot bytes unchanged;
3. verify every cassette in strict mode with ``agui-replay verify --mode strict``;
4. replay from a copy of the project in another folder (a fresh clone lives elsewhere);
5. re-record against a new server (new random provider ids), without ``--snapshot-update``:
   the snapshots and the cassette's events and inputs are unchanged;
6. replay again.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Imported once here: pytester drops the modules first imported inside its runs.
ag_ui_langgraph = pytest.importorskip("ag_ui_langgraph")
pytest.importorskip("langchain_openai")
import fastapi  # noqa: E402, F401
import langchain_core.utils.uuid  # noqa: E402, F401
import langgraph.checkpoint.memory  # noqa: E402
import langgraph.prebuilt  # noqa: E402, F401
import openai  # noqa: E402, F401

import agui_replay.recording  # noqa: E402
import agui_replay.snapshot  # noqa: E402, F401
from agui_replay.normalize import normalize_events  # noqa: E402
from agui_replay.providers import FakeProvider, ProviderRequest, ToolCallDelta  # noqa: E402

AGENT = textwrap.dedent(
    '''
    """A weather assistant: chat node + ToolNode, served by ag-ui-langgraph (defaults)."""
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    WEATHER = {"paris": "sunny, 24°C", "oslo": "rain, 8°C"}

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city right now."""
        return WEATHER.get(city.lower(), "unknown")

    def build_app(base_url, api_key):
        model = ChatOpenAI(
            model="gpt-4o-mini", streaming=True, base_url=base_url, api_key=api_key,
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
        agent = LangGraphAgent(
            name="weather", graph=graph.compile(checkpointer=MemorySaver())
        )
        app = FastAPI()
        add_langgraph_fastapi_endpoint(app, agent, "/agent")
        return app
    '''
)

CONFTEST = textwrap.dedent(
    """
    import pytest

    @pytest.fixture
    def anyio_backend():
        return "asyncio"
    """
)

TESTS = textwrap.dedent(
    """
    import pytest
    from agui_replay.assertions import assert_valid_stream, message_text
    from agui_replay.client import Session
    from agui_replay.server import run_input

    from weather_agent import build_app

    pytestmark = [
        pytest.mark.anyio,
        pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
    ]

    async def test_weather(agui, agui_snapshot):
        app = build_app(agui.provider.base_url, "sk-user-key")
        events = await agui.arun(app, run_input("t", "run-1", messages=["Weather in Paris?"]),
                                 path="/agent")
        assert_valid_stream(events, "strict")
        assert [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == [
            "sunny, 24°C"
        ]
        assert message_text(events) == "Paris: sunny, 24°C."
        assert events == agui_snapshot

    async def test_follow_up_on_the_same_thread(agui, agui_snapshot):
        app = build_app(agui.provider.base_url, "sk-user-key")
        first = run_input("t", "run-1", messages=["Weather in Paris?"])
        paris = await agui.arun(app, first, path="/agent")
        # The next input is what a front end holds: the raw stream, folded.
        client = Session(state=first.state, messages=first.messages)
        client.apply_all(paris).finish()
        asked = {"id": "user-2", "role": "user", "content": "And in Oslo?"}
        second = run_input("t", "run-2", state=client.state,
                           messages=[*client.messages, asked])
        oslo = await agui.arun(app, second, path="/agent")
        assert_valid_stream(oslo, "strict")
        assert [e["content"] for e in oslo if e["type"] == "TOOL_CALL_RESULT"] == ["rain, 8°C"]
        # The run's MESSAGES_SNAPSHOT puts turn 1's answer last; the answer is this run's.
        assert message_text(oslo) == "Oslo: rain, 8°C."
        shown = Session(state=second.state, messages=second.messages).apply_all(oslo).finish()
        assert [m["content"] for m in shown.messages if m["role"] == "assistant"
                and m["content"]] == ["Paris: sunny, 24°C.", "Oslo: rain, 8°C."]
        assert paris == agui_snapshot(name="paris")
        assert oslo == agui_snapshot(name="oslo")
    """
)


def weather_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """The local server's model: asks for the weather in the city named last, then says it."""
    last = request.messages[-1]
    if last["role"] == "tool":
        (call,) = request.messages[-2]["tool_calls"]
        city = json.loads(call["function"]["arguments"])["city"]
        yield f"{city}: "
        yield f"{last['content']}."
        return
    found = re.search(r"\bin ([A-Z][a-z]+)", last["content"])
    city = found.group(1) if found else "Paris"
    yield ToolCallDelta("", name="get_weather")  # the fake draws a random call_ id
    yield ToolCallDelta('{"city": ')
    yield ToolCallDelta(json.dumps(city) + "}")


ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest")


def _cassette_runs(path: Path) -> list[dict[str, Any]]:
    """What a cassette compares: each run's input and events (not the provider's chunks)."""
    runs = json.loads(path.read_text())["runs"]
    return [{"input": r["input"], "events": r["events"]} for r in runs]


def _provider_ids(path: Path) -> set[str]:
    """The chatcmpl- and call_ ids the upstream sent (inside the recorded response chunks)."""
    runs = json.loads(path.read_text())["runs"]
    chunks = [c["data"] for r in runs for i in r["interactions"] for c in i["response"]["chunks"]]
    return set(re.findall(r"(?:chatcmpl-|call_)[0-9A-Za-z]+", "".join(chunks)))


def _strict_verify(cassette: Path) -> subprocess.CompletedProcess[str]:
    agui_replay = Path(sys.executable).with_name("agui-replay")
    return subprocess.run(
        [str(agui_replay), "verify", "--mode", "strict", str(cassette)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("test_name", ["test_weather", "test_follow_up_on_the_same_thread"])
def test_a_langgraph_suite_records_replays_and_re_records_unchanged(
    pytester: pytest.Pytester, test_name: str
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(weather_agent=AGENT, test_weather_agent=TESTS)
    pytester.syspathinsert()
    select = f"test_weather_agent.py::{test_name}"
    cassette = pytester.path / "cassettes" / "test_weather_agent" / f"{test_name}.json"
    snapshots = pytester.path / "__snapshots__" / "test_weather_agent"

    # 1. Record against a local server that draws random ids, then stop it.
    upstream = FakeProvider(function=weather_model, ids="random")
    with upstream.serve() as server:
        recorded = pytester.runpytest(
            select,
            *ARGS,
            "--agui-record",
            "--snapshot-update",
            f"--agui-upstream={server.base_url}",
        )
        recorded.assert_outcomes(passed=1)
    upstream.check()
    asked = len(upstream.requests)
    assert asked == (2 if test_name == "test_weather" else 4)  # tool call, answer (per run)
    cassette_bytes = cassette.read_bytes()
    snapshot_bytes = {p.name: p.read_bytes() for p in sorted(snapshots.iterdir())}
    assert snapshot_bytes
    assert b"sk-user-key" not in cassette_bytes

    # 2. Replay twice, offline: nothing asks the (stopped) upstream, nothing is rewritten.
    for _ in range(2):
        replayed = pytester.runpytest(select, *ARGS)
        replayed.assert_outcomes(passed=1)
        replayed.stdout.fnmatch_lines(["*0 cassette(s) recorded, 1 replayed*"])
        assert cassette.read_bytes() == cassette_bytes
        assert {p.name: p.read_bytes() for p in sorted(snapshots.iterdir())} == snapshot_bytes
    assert len(upstream.requests) == asked

    # 3. Every cassette passes strict verification, run 2's answers to run 1's calls included.
    verified = _strict_verify(cassette)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "(strict mode)" in verified.stdout

    # 4. A copy of the project in another folder (a fresh clone) replays the same cassette.
    elsewhere = pytester.path.parent / f"{pytester.path.name}-clone"
    shutil.copytree(pytester.path, elsewhere, ignore=shutil.ignore_patterns("__pycache__"))
    cloned = subprocess.run(
        [sys.executable, "-m", "pytest", select, *ARGS],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cloned.returncode == 0, cloned.stdout[-3000:] + cloned.stderr[-2000:]

    # 5. Re-record against a new server: new provider ids, the same events and snapshots.
    first_ids = _provider_ids(cassette)
    first_runs = _cassette_runs(cassette)
    upstream = FakeProvider(function=weather_model, ids="random")
    with upstream.serve() as server:
        rerecorded = pytester.runpytest(
            select, *ARGS, "--agui-record", f"--agui-upstream={server.base_url}"
        )
        rerecorded.assert_outcomes(passed=1)  # the snapshot assertions held
    upstream.check()
    new_ids = _provider_ids(cassette)
    assert first_ids
    assert new_ids
    assert first_ids.isdisjoint(new_ids)
    assert _cassette_runs(cassette) == first_runs
    assert {p.name: p.read_bytes() for p in sorted(snapshots.iterdir())} == snapshot_bytes
    rerecorded_bytes = cassette.read_bytes()

    # 6. And that recording replays too.
    again = pytester.runpytest(select, *ARGS)
    again.assert_outcomes(passed=1)
    assert cassette.read_bytes() == rerecorded_bytes


def test_openai_system_fingerprints_are_normalized_in_state() -> None:
    """LangChain copies each response's ``system_fingerprint`` into the AI message's
    ``response_metadata``, so it reaches STATE_SNAPSHOT and RAW events; OpenAI (and the random
    fake) change it from response to response. It is 8+ hex digits after ``fp_``, all digits
    at times."""

    def state(*fingerprints: str) -> list[dict[str, Any]]:
        messages = [{"response_metadata": {"system_fingerprint": fp}} for fp in fingerprints]
        return [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "STATE_SNAPSHOT", "snapshot": {"messages": messages}},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        ]

    recorded = normalize_events(state("fp_44709d6fcb", "fp_f33640a400", "fp_44709d6fcb"))
    rerecorded = normalize_events(state("fp_1234567890", "fp_0aa9e4f2c1", "fp_1234567890"))
    assert recorded == rerecorded
    metadata = [m["response_metadata"] for m in recorded[1]["snapshot"]["messages"]]
    assert [m["system_fingerprint"] for m in metadata] == ["fp_<id-1>", "fp_<id-2>", "fp_<id-1>"]
    # Words and short tails after fp_ are not ids.
    words = state("fp_important", "fp_123")
    assert normalize_events(words)[1] == words[1]
