"""google-genai's async client over aiohttp, answered in process by the zero-config routing,
against the same client over the loopback socket, the same SDK sent through httpx2, and vcrpy
replaying the same responses.

Run:  .venv/bin/python benchmarks/bench_routing_aiohttp.py [--tests 40] [--chunks 50 2000]
      [--rounds 3]

``google-genai``'s async client sends through aiohttp whenever aiohttp is installed (Google ADK
agents call it so); during a run the zero-config routing hands those requests an in-memory
connection from aiohttp's own connector (``providers/_aiohttp.py``), so aiohttp's HTTP parser
reads every chunk with no socket. For each chunk count, one pytest project with ``--tests``
replayed tests per arm, each arm's module building one ``genai.Client`` at import time, as an
app does (building one per test would add the SDK's own set-up, an SSL context from certifi for
aiohttp, to some arms only; the socket arm, whose URL changes with each test's loopback server,
builds a client per test on one SSL context made at import), and
each test streaming ``generate_content_stream`` through ``client.aio`` (one AG-UI delta per
chunk); arms interleaved round by round, medians of wall and CPU time of each whole pytest
process (start-up included):

* ``vcrpy``: vcrpy 9 replays the recorded response to the aiohttp client (``record_mode="none"``,
  matched on method and path); events counted, nothing compared;
* ``aiohttp, zero-config (in process)``: ``genai.Client(api_key=...)`` as a user builds it,
  replayed by the ``agui`` fixture through the in-memory connection;
* ``aiohttp, zero-config, client per test``: the same, a client built in each test on one SSL
  context made at import;
* ``aiohttp, over the socket``: the same SDK, a client built in each test the same way, at the
  loopback server's Gemini URL with ``@pytest.mark.agui(intercept=False)``: every chunk crosses a
  real socket (what the first version of the aiohttp routing did, and what a client in another
  process gets). It differs from the arm before it by the route alone;
* ``httpx2, zero-config (in process)``: ``HttpOptions(async_client_args={"transport":
  httpx2.AsyncHTTPTransport()})``, which makes the SDK use httpx2; the routing answers it in
  process.

Closing lines: aiohttp over the socket / in process (clients built alike), and aiohttp / httpx2,
both in process (the two differ in more than the transport: google-genai reads an aiohttp stream
a line at a time and an httpx2 stream by blocks). A script, not a test: nothing here passes or
fails on time.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_routing import UPSTREAM, bench_env, measure, record_vcr, run, table  # shared

CONFTEST = UPSTREAM + textwrap.dedent(
    """

    @pytest.fixture
    def agui_cassette_path(request):
        arm = request.node.module.__name__
        return ROOT / "cassettes" / arm / f"c{request.node.callspec.params['i']}.json"


    @pytest.fixture
    def anyio_backend():
        return "asyncio"


    def stream_agent(client):
        async def agent(ctx):
            with ctx.assistant_message() as message:
                stream = await client.aio.models.generate_content_stream(
                    model="gemini-2.0-flash", contents="count"
                )
                async for chunk in stream:
                    if chunk.text:
                        message.delta(chunk.text)

        return agent
    """
)

HEAD = textwrap.dedent(
    """
    import os
    import pytest
    from google import genai
    from google.genai import types
    from conftest import CHUNKS, ROOT, stream_agent

    N = int(os.environ["BENCH_TESTS"])
    KEY = "AIza-bench-key"
    """
)

ARMS = {
    "vcrpy": """
    import vcr
    from agui_replay.server import run_agent, run_input

    CLIENT = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url="http://127.0.0.1:9"))

    @pytest.mark.anyio
    @pytest.mark.parametrize("i", range(N))
    async def test_arm(i):
        with vcr.use_cassette(
            str(ROOT / "vcr" / f"c{i}.yaml"), record_mode="none", match_on=["method", "path"]
        ):
            events = [e async for e in run_agent(stream_agent(CLIENT), run_input("t", "run-1"))]
        assert len(events) == CHUNKS + 4
    """,
    "aiohttp, zero-config (in process)": """
    CLIENT = genai.Client(api_key=KEY)  # its async half sends through aiohttp

    @pytest.mark.anyio
    @pytest.mark.parametrize("i", range(N))
    async def test_arm(agui, i):
        assert CLIENT._api_client._use_aiohttp()
        assert len(await agui.arun(stream_agent(CLIENT), "count")) == CHUNKS + 4
    """,
    "aiohttp, zero-config, client per test": """
    import ssl

    SSL = ssl.create_default_context()  # as in the socket arm below

    @pytest.mark.anyio
    @pytest.mark.parametrize("i", range(N))
    async def test_arm(agui, i):
        options = types.HttpOptions(async_client_args={"ssl": SSL})
        client = genai.Client(api_key=KEY, http_options=options)
        assert client._api_client._use_aiohttp()
        assert len(await agui.arun(stream_agent(client), "count")) == CHUNKS + 4
    """,
    "aiohttp, over the socket": """
    import ssl

    # a client per test (each test has its own loopback server), on one SSL context built at
    # import, as the other arms' module clients build theirs once
    SSL = ssl.create_default_context()

    @pytest.mark.anyio
    @pytest.mark.agui(intercept=False)
    @pytest.mark.parametrize("i", range(N))
    async def test_arm(agui, i):
        options = types.HttpOptions(
            base_url=agui.provider.gemini_base_url, async_client_args={"ssl": SSL}
        )
        client = genai.Client(api_key=KEY, http_options=options)
        assert client._api_client._use_aiohttp()
        assert len(await agui.arun(stream_agent(client), "count")) == CHUNKS + 4
    """,
    "httpx2, zero-config (in process)": """
    import httpx2

    # the same SDK told to send through httpx2: the routing answers it in process
    OPTIONS = types.HttpOptions(async_client_args={"transport": httpx2.AsyncHTTPTransport()})
    CLIENT = genai.Client(api_key=KEY, http_options=OPTIONS)

    @pytest.mark.anyio
    @pytest.mark.parametrize("i", range(N))
    async def test_arm(agui, i):
        assert not CLIENT._api_client._use_aiohttp()
        assert len(await agui.arun(stream_agent(CLIENT), "count")) == CHUNKS + 4
    """,
}

RECORD_VCR = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    import vcr
    from google import genai
    from google.genai import types
    from agui_replay.providers import FakeProvider
    from agui_replay.server import run_agent, run_input
    from conftest import stream_agent

    chunks, target = int(sys.argv[1]), Path(sys.argv[2])
    fake = FakeProvider(function=lambda request: (f"w{i} " for i in range(chunks)))

    async def main():
        with fake.serve() as server:
            client = genai.Client(
                api_key="AIza-bench-key",
                http_options=types.HttpOptions(base_url=server.gemini_base_url),
            )
            with vcr.use_cassette(str(target), record_mode="all", match_on=["method", "path"]):
                return [e async for e in run_agent(stream_agent(client), run_input("t", "run-1"))]

    assert len(asyncio.run(main())) == chunks + 4
    """
)


def project(folder: Path, tests: int, chunks: int) -> tuple[dict[str, str], dict[str, str]]:
    env = bench_env(folder, tests, chunks)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = ignore::DeprecationWarning\n")
    files = {}
    for n, (arm, body) in enumerate(ARMS.items()):
        name = f"test_arm{n}.py"
        (folder / name).write_text(HEAD + textwrap.dedent(body))
        files[arm] = name
    for arm, name in files.items():  # one recording per agui arm, copied to every test
        if arm == "vcrpy":
            continue
        run(folder, env, name, "-k", "test_arm[0]", "--agui-record")
        made = folder / "cassettes" / name.removesuffix(".py")
        for i in range(1, tests):
            shutil.copy(made / "c0.json", made / f"c{i}.json")
    record_vcr(folder, env, RECORD_VCR, tests, chunks)
    return env, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=40)
    parser.add_argument("--chunks", type=int, nargs="+", default=[50, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for chunks in options.chunks:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            env, files = project(folder, options.tests, chunks)
            walls, cpus = measure(folder, env, files, options.rounds)
            title = f"{options.tests} replayed tests, {chunks} chunks each (google-genai async)"
            wall, cpu = table(title, options.tests, options.rounds, walls, cpus)
            ours, socket = "aiohttp, zero-config, client per test", "aiohttp, over the socket"
            module, httpx2 = "aiohttp, zero-config (in process)", "httpx2, zero-config (in process)"
            for a, b in ((socket, ours), (module, httpx2)):
                print(f"  {a} / {b}: {wall[a] / wall[b]:.3f}x (cpu {cpu[a] / cpu[b]:.3f}x)")


if __name__ == "__main__":
    main()
