"""A whole replayed test as a user pays for it: agui_replay against pytest-recording (vcrpy).

Run (pytest-recording registers a pytest plugin, so it gets a venv of its own):

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -e '.[test]' vcrpy pytest-recording
    .venv-bench/bin/python benchmarks/bench_whole_test.py [--tests 100] [--chunks 50 2000]

Every test runs the same agent through the package's run driver: it calls a weather API with
``requests`` (a module ``requests.Session``: the tool call), then streams an OpenAI answer of
``--chunks`` chunks with the real ``openai`` SDK (a module client) and says it as one assistant
message, a delta per chunk. Arms, each a whole ``pytest`` process of ``--tests`` tests,
interleaved round by round, nothing listening on the network while they replay:

* ``plain, no HTTP``: the baseline: the same agent given the weather and the answer's chunks,
  no HTTP at all (``run_agent_sync``);
* ``agui``: the ``agui`` fixture replays the test's cassette: the OpenAI client built with no
  ``base_url`` (zero-config: ``api.openai.com`` is routed to the replay), the weather request
  on the tape; the run's events compared with the recorded ones, as every agui test does;
* ``pytest-recording``: ``@pytest.mark.vcr`` (record mode ``none``, vcrpy's default matching)
  replays both requests to the agent run by ``run_agent_sync``; the client's ``base_url`` is
  the stand-in the cassette was recorded from.

A conftest hook times each test's protocol (setup, call, teardown) in CPU seconds of the
process (every thread) and wall seconds; an arm's figure is the median over its tests, and over
rounds the median of those. What a test costs beyond the baseline is the arm's figure less the
baseline's; the closing line is agui's cost over pytest-recording's. Each arm's cassette is
recorded once against the stand-ins and copied to every test, so every test replays the same
bytes. A script, not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench_routing import bench_env
from bench_tape import free_port, load
from bench_tape import run as run_timed

CONFTEST = textwrap.dedent(
    """
    import json
    import os
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    import pytest

    from agui_replay.providers import FakeProvider

    ROOT = Path(__file__).parent
    CHUNKS = int(os.environ["BENCH_CHUNKS"])
    N = int(os.environ["BENCH_TESTS"])
    WEATHER = json.dumps({"city": "Paris", "sky": "sunny", "celsius": 21}).encode()


    class API(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(WEATHER)))
            self.end_headers()
            self.wfile.write(WEATHER)


    def serve_weather():
        server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["BENCH_PORT"])), API)
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        return server


    def upstream():
        return FakeProvider(function=lambda request: (f"w{i} " for i in range(CHUNKS)))


    @pytest.fixture(scope="session", autouse=True)
    def weather_api():
        if not os.environ.get("BENCH_LIVE"):
            yield None  # stopped: a replay must not need it
            return
        server = serve_weather()
        yield server
        server.shutdown()
        server.server_close()


    @pytest.fixture
    def agui_upstream():
        with upstream().serve() as server:
            yield server


    @pytest.fixture
    def agui_cassette_path(request):
        return ROOT / "cassettes" / f"c{request.node.callspec.params['i']}.json"


    @pytest.fixture
    def vcr_config():
        return {"record_mode": "none"}


    @pytest.fixture
    def vcr_cassette_dir():
        return str(ROOT / "vcr")


    @pytest.fixture
    def default_cassette_name(request):
        return f"c{request.node.callspec.params['i']}"


    TIMES = []


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        TIMES.append((time.perf_counter() - wall, time.process_time() - cpu))


    def pytest_sessionfinish(session):
        if os.environ.get("BENCH_TIMES"):
            Path(os.environ["BENCH_TIMES"]).write_text(json.dumps(TIMES))
    """
)

AGENT = textwrap.dedent(
    """
    import os

    import openai
    import requests

    WEATHER_URL = "http://127.0.0.1:" + os.environ["BENCH_PORT"] + "/weather"
    SESSION = requests.Session()


    def weather():
        response = SESSION.get(WEATHER_URL, params={"city": "Paris"}, timeout=5)
        response.raise_for_status()
        return response.json()["sky"]


    def client(base_url=None):
        return openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)


    def agent_of(client, weather=weather, chunks=None):
        def agent(ctx):
            sky = weather()
            if chunks is not None:
                pieces = chunks
            else:
                stream = client.chat.completions.create(
                    model="gpt-4o",
                    messages=[{"role": "user", "content": f"the sky is {sky}: say so"}],
                    stream=True,
                )
                pieces = (c.choices[0].delta.content for c in stream if c.choices)
            with ctx.assistant_message() as message:
                for piece in pieces:
                    if piece:
                        message.delta(piece)

        return agent
    """
)

HEAD = textwrap.dedent(
    """
    import os

    import pytest

    import agent
    from conftest import CHUNKS, N

    EVENTS = CHUNKS + 4
    """
)

ARMS = {
    "plain, no HTTP": """
    from agui_replay.server import run_agent_sync, run_input

    GIVEN = [f"w{i} " for i in range(CHUNKS)]

    @pytest.mark.parametrize("i", range(N))
    def test_arm(i):
        run = agent.agent_of(None, weather=lambda: "sunny", chunks=GIVEN)
        assert len(run_agent_sync(run, run_input("thread", "run-1"))) == EVENTS
    """,
    "agui": """
    CLIENT = agent.client()

    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        assert len(agui.run(agent.agent_of(CLIENT), "weather")) == EVENTS
    """,
    "pytest-recording": """
    from agui_replay.server import run_agent_sync, run_input

    CLIENT = agent.client(os.environ["BENCH_LLM_URL"])

    @pytest.mark.vcr
    @pytest.mark.parametrize("i", range(N))
    def test_arm(i):
        assert len(run_agent_sync(agent.agent_of(CLIENT), run_input("thread", "run-1"))) == EVENTS
    """,
}

RECORD_VCR = textwrap.dedent(
    """
    import sys

    import vcr

    import agent
    import conftest
    from agui_replay.server import run_agent_sync, run_input

    weather = conftest.serve_weather()
    with conftest.upstream().serve() as server:
        print(server.base_url)
        with vcr.use_cassette("vcr/c0.yaml", record_mode="all"):
            run_agent_sync(agent.agent_of(agent.client(server.base_url)), run_input("t", "r"))
    weather.shutdown()
    """
)


def project(folder: Path, tests: int, chunks: int) -> tuple[dict[str, str], dict[str, str]]:
    env = bench_env(folder, tests, chunks)
    env["BENCH_PORT"] = str(free_port())
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "agent.py").write_text(AGENT)
    (folder / "pytest.ini").write_text("[pytest]\n")
    files: dict[str, str] = {}
    for n, (arm, body) in enumerate(ARMS.items()):
        name = f"test_arm{n}.py"
        (folder / name).write_text(HEAD + textwrap.dedent(body))
        files[arm] = name
    # one recording of each kind, the stand-ins up, copied to every test
    env["BENCH_LLM_URL"] = "http://127.0.0.1:9/v1"  # read at import; replaced below
    live = {**env, "BENCH_LIVE": "1"}
    run_timed(folder, live, files["agui"], "-k", "test_arm[0]", "--agui-record")
    (folder / "record_vcr.py").write_text(RECORD_VCR)
    recorded = subprocess.run(
        [sys.executable, "record_vcr.py"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    env["BENCH_LLM_URL"] = recorded.stdout.split()[-1]
    for i in range(1, tests):
        shutil.copy(folder / "cassettes" / "c0.json", folder / "cassettes" / f"c{i}.json")
        shutil.copy(folder / "vcr" / "c0.yaml", folder / "vcr" / f"c{i}.yaml")
    return env, files


def measure(
    folder: Path, env: dict[str, str], files: dict[str, str], rounds: int
) -> dict[str, dict[str, list[float]]]:
    """Per round, each arm's median per-test wall and CPU (arms interleaved round by round;
    each arm's modules compiled once first, untimed)."""
    run_timed(folder, env, *files.values(), "--collect-only")
    out: dict[str, dict[str, list[float]]] = {arm: {"wall": [], "cpu": []} for arm in files}
    for n in range(rounds):
        for arm, name in files.items():
            _, _, per_test = run_timed(folder, env, name)
            out[arm]["wall"].append(statistics.median(w for w, _ in per_test))
            out[arm]["cpu"].append(statistics.median(c for _, c in per_test))
        print(f"  round {n + 1} of {rounds} done, load {load()}", flush=True)
    return out


def report(tests: int, chunks: int, rounds: int, out: dict[str, dict[str, list[float]]]) -> None:
    med = {arm: {k: statistics.median(v) * 1000 for k, v in f.items()} for arm, f in out.items()}
    base = med["plain, no HTTP"]
    print(
        f"\n{tests} tests an arm, {chunks} chunks; per test (ms): the median over the tests,"
        f" then over {rounds} interleaved rounds"
    )
    print(f"  {'arm':18} {'wall':>8} {'cpu':>8} {'wall - base':>12} {'cpu - base':>11}")
    for arm, m in med.items():
        print(
            f"  {arm:18} {m['wall']:8.2f} {m['cpu']:8.2f}"
            f" {m['wall'] - base['wall']:12.2f} {m['cpu'] - base['cpu']:11.2f}"
        )
    ours, theirs = med["agui"], med["pytest-recording"]
    cpu = (ours["cpu"] - base["cpu"]) / (theirs["cpu"] - base["cpu"])
    wall = (ours["wall"] - base["wall"]) / (theirs["wall"] - base["wall"])
    print(f"  agui / pytest-recording beyond the baseline: cpu {cpu:.2f}x, wall {wall:.2f}x")
    print(json.dumps({"chunks": chunks, "cpu_ratio": round(cpu, 3), "wall_ratio": round(wall, 3)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--chunks", type=int, nargs="+", default=[50, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for chunks in options.chunks:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            env, files = project(folder, options.tests, chunks)
            report(
                options.tests, chunks, options.rounds, measure(folder, env, files, options.rounds)
            )


if __name__ == "__main__":
    main()
