"""The routes from an agent's SDK to the replayer, against vcrpy replaying the same responses.

Run:  .venv/bin/python benchmarks/bench_routing.py [--tests 200] [--chunks 50 2000] [--rounds 3]

For each chunk count, one pytest project with ``--tests`` replayed tests per arm, every test
running the same OpenAI streaming agent (the real ``openai`` SDK, ``stream=True``, one AG-UI
delta per chunk) and checking its events. Arms, each a whole ``pytest`` process (start-up
included), interleaved round by round; medians of wall time and of CPU time (user + system of
the process, every thread: steadier than wall time on a shared machine); ratios to the vcrpy
arm of the same round set:

* ``vcrpy``: vcrpy 9 replays the recorded response (``record_mode="none"``, matched on method
  and path) to a client built in the test; the events are checked by count (no cassette of
  events, no comparison: vcrpy has none);
* ``zero-config, module client``: ``openai.OpenAI(api_key=...)`` with no ``base_url``, built
  once at import time, replayed by the ``agui`` fixture (routed in process);
* ``zero-config, client per test``: the same client built in each test (the SDK builds its
  default ``httpx2.Client``, an SSL context, every time, as in the vcrpy arm);
* ``agui.provider.transport()``: a client built per test on the in-process transport (no SSL
  context);
* ``agui.provider.base_url``: a client built per test at the loopback server's URL; during a
  run an httpx / httpx2 client's requests to it are answered in process;
* ``base_url over the socket``: the same with ``@pytest.mark.agui(intercept=False)``: every
  chunk crosses a real loopback socket (what a non-httpx client or another language gets),
  each its own HTTP chunk, so the client's HTTP parser (h11 here) handles 2,000 of them.

The closing lines compare the loopback path with the in-process ones: with ``transport()``
(the loopback path should cost little more than it), and with ``base_url`` answered in
process, which builds the same client, so the two differ only by the socket. ``base_url`` in
process against ``transport()`` is the SDK's default ``httpx2.Client()`` built in every test
(an SSL context loading the CA bundle), which a client built on ``transport()`` never builds.

Bytecode is cached in the project's temporary folder (``PYTHONPYCACHEPREFIX``), as on a
developer's machine, even where ``PYTHONDONTWRITEBYTECODE`` is set.
The ``agui`` arms also compare every event with the cassette. One cassette (and one vcrpy
cassette) is recorded and copied to every test, so the arms replay identical bytes.
A script, not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

UPSTREAM = textwrap.dedent(
    """
    import os
    from pathlib import Path

    import pytest

    from agui_replay.providers import FakeProvider

    CHUNKS = int(os.environ["BENCH_CHUNKS"])
    ROOT = Path(__file__).parent


    @pytest.fixture
    def agui_upstream():
        fake = FakeProvider(function=lambda request: (f"w{i} " for i in range(CHUNKS)))
        with fake.serve() as server:
            yield server
    """
)
"""The start of a benchmark project's conftest: the scripted upstream a recording uses."""

CONFTEST = UPSTREAM + textwrap.dedent(
    """

    @pytest.fixture
    def agui_cassette_path(request):
        return ROOT / "cassettes" / f"c{request.node.callspec.params['i']}.json"


    def stream_agent(client):
        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "count"}], stream=True
            )
            with ctx.assistant_message() as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        return agent
    """
)

HEAD = textwrap.dedent(
    """
    import os
    import httpx2, openai, pytest
    from conftest import CHUNKS, ROOT, stream_agent

    N = int(os.environ["BENCH_TESTS"])
    KEY = "sk-bench"
    """
)

ARMS = {
    "vcrpy": """
    import vcr
    from agui_replay.server import run_agent_sync, run_input

    @pytest.mark.parametrize("i", range(N))
    def test_arm(i):
        client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0)
        with vcr.use_cassette(
            str(ROOT / "vcr" / f"c{i}.yaml"), record_mode="none", match_on=["method", "path"]
        ):
            events = run_agent_sync(stream_agent(client), run_input("thread", "run-1"))
        assert len(events) == CHUNKS + 4
    """,
    "zero-config, module client": """
    CLIENT = openai.OpenAI(api_key=KEY, max_retries=0)

    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        assert len(agui.run(stream_agent(CLIENT), "count")) == CHUNKS + 4
    """,
    "zero-config, client per test": """
    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        client = openai.OpenAI(api_key=KEY, max_retries=0)
        assert len(agui.run(stream_agent(client), "count")) == CHUNKS + 4
    """,
    "agui.provider.transport()": """
    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        client = openai.OpenAI(
            base_url="http://replay.invalid/v1", api_key=KEY, max_retries=0,
            http_client=httpx2.Client(transport=agui.provider.transport()),
        )
        assert len(agui.run(stream_agent(client), "count")) == CHUNKS + 4
    """,
    "agui.provider.base_url": """
    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key=KEY, max_retries=0)
        assert len(agui.run(stream_agent(client), "count")) == CHUNKS + 4
    """,
    "base_url over the socket": """
    @pytest.mark.agui(intercept=False)
    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key=KEY, max_retries=0)
        assert len(agui.run(stream_agent(client), "count")) == CHUNKS + 4
    """,
}

RECORD_VCR = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import openai, vcr
    from agui_replay.providers import FakeProvider
    from agui_replay.server import run_agent_sync, run_input
    from conftest import stream_agent

    chunks, target = int(sys.argv[1]), Path(sys.argv[2])
    fake = FakeProvider(function=lambda request: (f"w{i} " for i in range(chunks)))
    with fake.serve() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
        with vcr.use_cassette(str(target), record_mode="all", match_on=["method", "path"]):
            run_agent_sync(stream_agent(client), run_input("thread", "run-1"))
    """
)


def run(folder: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, every thread) of one ``pytest`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{result.stdout[-3000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return took, cpu


def bench_env(folder: Path, tests: int, chunks: int) -> dict[str, str]:
    """The environment of a benchmark project's pytest processes."""
    import os

    env = {**os.environ, "BENCH_CHUNKS": str(chunks), "BENCH_TESTS": str(tests)}
    # bytecode (and pytest's rewritten modules) cached as on a developer's machine, in the
    # project's folder: with PYTHONDONTWRITEBYTECODE every process would compile all of them
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


def record_vcr(folder: Path, env: dict[str, str], script: str, tests: int, chunks: int) -> None:
    """Record ``vcr/c0.yaml`` with ``script`` and copy it for every test."""
    (folder / "record_vcr.py").write_text(script)
    (folder / "vcr").mkdir()
    subprocess.run(
        [sys.executable, "record_vcr.py", str(chunks), "vcr/c0.yaml"],
        cwd=folder,
        env=env,
        check=True,
    )
    for i in range(1, tests):
        shutil.copy(folder / "vcr" / "c0.yaml", folder / "vcr" / f"c{i}.yaml")


def measure(
    folder: Path, env: dict[str, str], files: dict[str, str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each arm's pytest process, arms interleaved round by round
    (each arm's modules compiled once first, untimed)."""
    for name in files.values():
        run(folder, env, name, "--collect-only")
    walls: dict[str, list[float]] = {arm: [] for arm in files}
    cpus: dict[str, list[float]] = {arm: [] for arm in files}
    for _ in range(rounds):
        for arm, name in files.items():
            wall, cpu = run(folder, env, name)
            walls[arm].append(wall)
            cpus[arm].append(cpu)
    return walls, cpus


def project(folder: Path, tests: int, chunks: int) -> tuple[dict[str, str], dict[str, str]]:
    env = bench_env(folder, tests, chunks)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    files = {}
    for n, (arm, body) in enumerate(ARMS.items()):
        name = f"test_arm{n}.py"
        (folder / name).write_text(HEAD + textwrap.dedent(body))
        files[arm] = name
    # one recording of each kind, copied to every test
    run(folder, env, files["agui.provider.transport()"], "-k", "test_arm[0]", "--agui-record")
    for i in range(1, tests):
        shutil.copy(folder / "cassettes" / "c0.json", folder / "cassettes" / f"c{i}.json")
    record_vcr(folder, env, RECORD_VCR, tests, chunks)
    return env, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--chunks", type=int, nargs="+", default=[50, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for chunks in options.chunks:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            env, files = project(folder, options.tests, chunks)
            walls, cpus = measure(folder, env, files, options.rounds)
            report(options.tests, chunks, options.rounds, walls, cpus)


def table(
    title: str,
    tests: int,
    rounds: int,
    walls: dict[str, list[float]],
    cpus: dict[str, list[float]],
) -> tuple[dict[str, float], dict[str, float]]:
    """Print each arm's median wall time (whole and per test) and CPU time, with their ratios
    to the vcrpy arm; returns the medians."""
    wall = {arm: statistics.median(t) for arm, t in walls.items()}
    cpu = {arm: statistics.median(t) for arm, t in cpus.items()}
    print(
        f"\n{title}; whole pytest process, median of {rounds} interleaved rounds;"
        " cpu: user + system of the process"
    )
    width = max(map(len, wall)) + 1
    print(f"  {'arm':{width}} {'wall':>8} {'a test':>9} {'x vcrpy':>8} {'cpu':>8} {'x vcrpy':>8}")
    for arm in wall:
        per_test = wall[arm] / tests * 1000
        print(
            f"  {arm:{width}} {wall[arm]:7.2f}s {per_test:7.1f}ms {wall[arm] / wall['vcrpy']:7.3f}x"
            f" {cpu[arm]:7.2f}s {cpu[arm] / cpu['vcrpy']:7.3f}x"
        )
    return wall, cpu


def report(
    tests: int,
    chunks: int,
    rounds: int,
    walls: dict[str, list[float]],
    cpus: dict[str, list[float]],
) -> None:
    wall, cpu = table(f"{tests} replayed tests, {chunks} chunks each", tests, rounds, walls, cpus)

    def ratio(a: str, b: str) -> str:
        return f"{wall[a] / wall[b]:.3f}x (cpu {cpu[a] / cpu[b]:.3f}x)"

    socket, base_url = "base_url over the socket", "agui.provider.base_url"
    inproc, same_client = "agui.provider.transport()", "zero-config, client per test"
    print(f"  loopback / in process: socket / transport() {ratio(socket, inproc)};")
    print(
        f"    socket / base_url in process (the same client) {ratio(socket, base_url)};"
        f" socket / zero-config per test {ratio(socket, same_client)}"
    )
    print(
        f"  base_url in process / transport() {ratio(base_url, inproc)}"
        " (the SDK's default httpx2.Client, an SSL context, built in every test)"
    )


if __name__ == "__main__":
    main()
