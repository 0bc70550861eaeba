"""An agent's MCP servers over HTTP are recorded into the cassette and replayed offline.

The project is what a user has: an MCP server made with the ``mcp`` package (one tool,
``forecast(city)``, which reports progress on the request's stream and a notice on the
session's own stream), agents that reach it through the ``mcp`` client over streamable HTTP,
over the legacy SSE transport, and over stdio (a process the agent starts), and a conftest that
starts the HTTP servers as processes when ``MCP_UP`` is set. The suite records with them up,
replays twice with them stopped (and, where the system allows, inside a network namespace with no
network at all), then records again and replays: the syrupy snapshots written by the first
recording never change. The stdio server is no HTTP: nothing of it is recorded, and every replay
starts it again.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agui_replay.errors import CassetteError
from agui_replay.recording import CassetteSession
from tests.plugin.test_offline_namespace import _namespace_problem
from tests.support.project import free_port

# imported once here: pytester drops modules first imported inside
pytest.importorskip("mcp.client.streamable_http", reason="needs the mcp package (test extra)")
pytest.importorskip("mcp.client.sse")
pytest.importorskip("mcp.client.stdio")
pytest.importorskip("mcp.server.mcpserver")

SERVER = """
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer

weather = MCPServer("weather")


@weather.tool()
async def forecast(city: str, ctx: Context) -> str:
    \"\"\"Three days of weather for a city.\"\"\"
    await ctx.report_progress(0.5, 1.0, f"looking up {city}")  # on the request's own stream
    # not tied to the request: the session's stream (streamable HTTP's GET, SSE's only stream)
    await ctx.request_context.session.send_resource_updated(f"weather://{city}")
    return f"{city}: mon sunny, tue rain, wed snow"


if __name__ == "__main__":
    transport = sys.argv[1]
    if transport == "stdio":
        with Path(__file__).with_name("stdio_starts.log").open("a") as log:
            log.write("started\\n")
        weather.run()
    else:
        weather.run(transport, host="127.0.0.1", port=int(sys.argv[2]))
"""

CONFTEST = """
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def start(transport, port):
    server = Path(__file__).with_name("weather_server.py")
    process = subprocess.Popen(
        [sys.executable, str(server), transport, str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the MCP server ({transport}) did not start on port {port}")


@pytest.fixture(scope="session", autouse=True)
def mcp_servers():
    if not os.environ.get("MCP_UP"):
        yield None  # stopped: a replay must not need them
        return
    processes = [
        start("streamable-http", int(os.environ["MCP_PORT"])),
        start("sse", int(os.environ["MCP_SSE_PORT"])),
    ]
    yield processes
    for process in processes:
        process.terminate()
        process.wait(30)


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

AGENTS = """
import asyncio
import os
import sys
from pathlib import Path

from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

HTTP_URL = f"http://127.0.0.1:{os.environ['MCP_PORT']}/mcp"
SSE_URL = f"http://127.0.0.1:{os.environ['MCP_SSE_PORT']}/sse"
STDIO = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("weather_server.py")), "stdio"]
)


class Notices:
    \"\"\"The resources the server says were updated, as the notices come.\"\"\"

    def __init__(self):
        self.seen = []
        self.changed = asyncio.Event()

    async def __call__(self, message):
        params = getattr(getattr(message, "root", message), "params", None)
        if getattr(params, "uri", None):
            self.seen.append(str(params.uri))
            self.changed.set()

    async def wait_for(self, uri):
        while uri not in self.seen:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)


async def use_forecast(ctx, session, notices, cities, *, together=False):
    await session.initialize()
    listed = await session.list_tools()
    ctx.say("tools: " + ", ".join(tool.name for tool in listed.tools))
    progress = {city: [] for city in cities}

    def call(city):
        async def note(done, total, message):
            progress[city].append(message)
        return session.call_tool("forecast", {"city": city}, progress_callback=note)

    if together:  # POSTed at once, while the session's stream is open
        results = await asyncio.gather(*(call(city) for city in cities))
    else:
        results = [await call(city) for city in cities]
    for city, result in zip(cities, results):
        await notices.wait_for(f"weather://{city}")  # the notice on the session's stream
        with ctx.tool_call("forecast") as tool:
            tool.args_json({"city": city})
            tool.result(result.content[0].text)
        ctx.say(f"{'; '.join(progress[city])}; weather://{city} updated")


def agent_over(transport, *, together=False):
    async def agent(ctx):
        cities = ctx.last_user_text().split()
        notices = Notices()
        async with transport() as streams:
            async with ClientSession(streams[0], streams[1], message_handler=notices) as session:
                await use_forecast(ctx, session, notices, cities, together=together)
    return agent


streamable_agent = agent_over(lambda: streamable_http_client(HTTP_URL))
streamable_agent_together = agent_over(lambda: streamable_http_client(HTTP_URL), together=True)
sse_agent = agent_over(lambda: sse_client(SSE_URL))
stdio_agent = agent_over(lambda: stdio_client(STDIO))
"""

TESTS = """
import pytest

import agents


def text(events):
    return "".join(e.get("delta", e.get("content", "")) for e in events)


@pytest.mark.anyio
async def test_streamable_http(agui, agui_snapshot):
    events = await agui.arun(agents.streamable_agent, "Paris Rome")
    assert "Rome: mon sunny" in text(events)
    assert events == agui_snapshot


@pytest.mark.anyio
async def test_streamable_http_calls_at_once(agui, agui_snapshot):
    events = await agui.arun(agents.streamable_agent_together, "Oslo Lima Kyiv")
    assert "Kyiv: mon sunny" in text(events)
    assert events == agui_snapshot


@pytest.mark.anyio
async def test_legacy_sse(agui, agui_snapshot):
    events = await agui.arun(agents.sse_agent, "Lyon Nice")
    assert "looking up Nice; weather://Nice updated" in text(events)
    assert events == agui_snapshot


@pytest.mark.anyio
async def test_stdio_server_runs_in_replay_too(agui, agui_snapshot):
    events = await agui.arun(agents.stdio_agent, "Bern")
    assert "Bern: mon sunny" in text(events)
    assert events == agui_snapshot
"""

PASSED = 4


def _snapshots(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.agui.jsonl"))}


def _cassettes(root: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text()) for p in (root / "cassettes").rglob("*.json")}


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return True
    return False


def _check_recorded(cassettes: dict[str, Any], ports: tuple[int, int]) -> None:
    streamable = cassettes["test_streamable_http"]["http"]
    assert {e["request"]["url"] for e in streamable} == {f"http://127.0.0.1:{ports[0]}/mcp"}
    methods = [e["request"]["method"] for e in streamable]
    assert methods[-1] == "DELETE", methods  # the session ended
    assert methods.count("GET") == 1, methods
    rpc = [e["request"].get("body") or {} for e in streamable]
    assert [b["id"] for b in rpc if "id" in b] == [1, 2, 3, 4]  # JSON-RPC ids: counters
    session = streamable[0]["response"]["headers"]["mcp-session-id"]
    assert all(e["request"]["headers"]["mcp-session-id"] == session for e in streamable[1:])
    # the session's stream: each notice arrived after its tools/call was sent
    stream = streamable[methods.index("GET")]["response"]
    calls = [n + 1 for n, b in enumerate(rpc) if b.get("method") == "tools/call"]
    notices = [c for c in stream["chunks"] if "resources/updated" in c["data"]]
    assert len(notices) == len(calls) == 2, stream
    assert all(c["after"] >= n for c, n in zip(notices, calls, strict=True))
    # it ended when the DELETE closed the session, or the client had closed it just before
    assert stream.get("end_after") == len(methods) or stream.get("open") is True, stream

    sse = cassettes["test_legacy_sse"]["http"]
    assert [e["request"]["method"] for e in sse] == ["GET"] + ["POST"] * 5
    events = sse[0]["response"]
    assert events["open"] is True  # the client closed it: replayed, it stays open until then
    data = "".join(c["data"] for c in events["chunks"])
    assert data.count('"id":') == 4  # the four answers came on this stream
    afters = [c.get("after", 1) for c in events["chunks"]]
    assert afters == sorted(afters)
    assert afters[-1] == len(sse)

    assert "http" not in cassettes["test_stdio_server_runs_in_replay_too"]  # not HTTP


def test_mcp_servers_record_then_replay_offline_and_re_record_unchanged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = (free_port(), free_port())
    monkeypatch.setenv("MCP_PORT", str(ports[0]))
    monkeypatch.setenv("MCP_SSE_PORT", str(ports[1]))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        weather_server=textwrap.dedent(SERVER),
        agents=textwrap.dedent(AGENTS),
        test_mcp_agents=textwrap.dedent(TESTS),
    )
    starts = pytester.path / "stdio_starts.log"

    monkeypatch.setenv("MCP_UP", "1")
    record = pytester.runpytest("-p", "no:cacheprovider", "--agui-record", "--snapshot-update")
    record.assert_outcomes(passed=PASSED)
    _check_recorded(_cassettes(pytester.path), ports)
    snapshots = _snapshots(pytester.path)
    assert snapshots
    assert starts.read_text().count("started") == 1

    # the MCP servers are down from here on: the replays have only the cassettes
    monkeypatch.delenv("MCP_UP")
    assert _refused(ports[0])
    assert _refused(ports[1])
    for n in range(2):
        replay = pytester.runpytest("-p", "no:cacheprovider")
        replay.assert_outcomes(passed=PASSED)
        assert f"0 cassette(s) recorded, {PASSED} replayed" in replay.stdout.str()
        # the stdio server is no HTTP: it is not recorded, and each replay starts it again
        assert starts.read_text().count("started") == 2 + n

    problem = _namespace_problem()
    if problem is None:
        done = subprocess.run(
            [
                "unshare", "-n", "sh", "-c",
                f'ip link set lo up && exec "{sys.executable}" -m pytest -p no:cacheprovider',
            ],
            cwd=pytester.path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert f"{PASSED} passed" in out, out

    monkeypatch.setenv("MCP_UP", "1")
    again = pytester.runpytest("-p", "no:cacheprovider", "--agui-record")
    again.assert_outcomes(passed=PASSED)
    _check_recorded(_cassettes(pytester.path), ports)
    monkeypatch.delenv("MCP_UP")
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=PASSED)
    assert _snapshots(pytester.path) == snapshots
    if problem is not None:
        pytest.skip(f"replayed offline, but not in a network namespace: {problem}")


# --- the tape's rules, on hand-written exchanges -------------------------------------------------

URL = "http://mcp.test/mcp"


def _exchange(method: str, body: Any, response: dict[str, Any]) -> dict[str, Any]:
    headers = {"mcp-session-id": "recorded-session"}
    return {
        "request": {"method": method, "url": URL, "headers": headers, "body": body},
        "response": response,
    }


@pytest.mark.anyio
async def test_a_stream_chunk_waits_for_the_request_it_answered(tmp_path: Path) -> None:
    import httpx

    stream = {
        "status": 200,
        "headers": {"content-type": "text/event-stream"},
        "chunks": [
            {"offset": 0, "data": "event: endpoint\n\n"},
            {"offset": 0.1, "data": "data: answer\n\n", "after": 2},
        ],
        "end_after": 2,
    }
    accepted = {"status": 202, "headers": {}, "chunks": [{"offset": 0, "data": "Accepted"}]}
    exchanges = [_exchange("GET", None, stream), _exchange("POST", {"id": 1}, accepted)]
    seen: list[str] = []
    session = CassetteSession(tmp_path / "m.json", mode="rewrite", upstream="http://127.0.0.1:9/v1")
    with session, session.taping() as tape:
        tape.recorded, tape.mode = exchanges, "replay"
        async with httpx.AsyncClient() as client:
            first = asyncio.Event()

            async def read() -> None:
                async with client.stream("GET", URL) as response:
                    async for piece in response.aiter_text():
                        seen.append(piece)
                        first.set()

            reader = asyncio.create_task(read())
            await first.wait()
            seen.append("POST")
            assert (await client.post(URL, json={"id": 1})).status_code == 202
            await reader
    assert seen == ["event: endpoint\n\n", "POST", "data: answer\n\n"]


def test_mcp_session_id_is_never_compared(tmp_path: Path) -> None:
    import httpx

    answer = {
        "status": 200,
        "headers": {"mcp-session-id": "recorded-session"},
        "chunks": [{"offset": 0, "data": "ok"}],
    }
    session = CassetteSession(
        tmp_path / "m.json", mode="rewrite", upstream="http://127.0.0.1:9/v1", match_on=["headers"]
    )
    with session, session.taping() as tape:
        exchange = _exchange("POST", {"id": 1}, answer)
        sent = httpx.Client().build_request("POST", URL, json={"id": 1}).headers
        hop = {"host", "content-length", "connection"}  # never stored
        exchange["request"]["headers"] |= {k: v for k, v in sent.items() if k not in hop}
        tape.recorded, tape.mode = [exchange], "replay"
        response = httpx.post(URL, json={"id": 1}, headers={"mcp-session-id": "another"})
        assert response.headers["mcp-session-id"] == "recorded-session"
        assert response.text == "ok"


def test_a_bad_after_names_the_exchange_and_the_fix(tmp_path: Path) -> None:
    import httpx

    stream = {"status": 200, "headers": {}, "chunks": [{"offset": 0, "data": "x", "after": "2"}]}
    session = CassetteSession(tmp_path / "m.json", mode="rewrite", upstream="http://127.0.0.1:9/v1")
    with session, session.taping() as tape:
        tape.recorded, tape.mode = [_exchange("GET", None, stream)], "replay"
        with pytest.raises(CassetteError, match=r"http\[0\]: response\.chunks\[0\]\.after is '2'"):
            httpx.get(URL)
