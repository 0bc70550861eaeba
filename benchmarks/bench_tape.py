"""What one recorded tool request adds to a replayed test: the HTTP tape against vcrpy.

Run:  .venv/bin/python benchmarks/bench_tape.py [--tests 200] [--chunks 50] [--rounds 3] [--calls]
(vcrpy installed in the venv for its arms: ``pip install vcrpy``; a benchmark's dependency only)

A sibling of ``bench_routing.py`` rather than more arms in it: that script times a provider's
stream through the routes an SDK can take, one project per chunk count; this one times a
request to a host that is not a provider (a tool's API) and needs a different project (a
stand-in API on a fixed loopback port, a test without the request in every arm to subtract,
and a timer per test). It borrows ``bench_routing``'s environment (bytecode cached as on a
developer's machine).

Every test runs the same tiny agent (one ``TEXT_MESSAGE`` saying what the tool returned) and
makes at most one ``GET`` to the stand-in API on 127.0.0.1, with ``requests`` (a module
``requests.Session``) or ``httpx`` (a module ``httpx.Client``; module clients so that no arm
pays for building a client, or its SSL context, per test), for either a JSON answer of about
300 bytes or a chunked answer of ``--chunks`` HTTP chunks (read chunk by chunk). Arms, each a
whole ``pytest`` process with ``--tests`` tests, interleaved round by round:

* ``agui``: the ``agui`` fixture replays the test's cassette (the run's events, compared, and
  the tool's exchange on the tape), the stand-in API stopped; the request made by the agent
  inside ``agui.run(...)``, or in the test body before the run; the base is the same test
  with no request (its cassette has no ``http``);
* ``vcrpy``: vcrpy 9 (``vcr.use_cassette``, ``record_mode="none"``, its default matching)
  replays the same request, made by the agent run with ``run_agent_sync``, the stand-in
  API stopped; two bases: the same test with no cassette and no request (``plain``: what a
  test that adopts vcrpy for this request pays), and the cassette entered with no request made
  (what the request alone costs once the cassette is in use);
* ``live``: no recording, the stand-in API running in the pytest process (its thread's CPU is
  the process's), the request sent over the loopback socket; base ``plain``.

A conftest hook times each test's protocol (setup, call, teardown: wall and the process's CPU);
an arm's per-test figure is the median over its tests, and over rounds the median of those. What
a request adds is the arm's per-test figure less its base's, reported beside the same figure
from whole-process wall times ((process - base process) / tests), and as a ratio to what vcrpy's
request adds for the same client and answer. vcrpy stores a chunked answer as one body and
replays it in one piece; the tape replays each recorded chunk as its own read. With ``--calls``
each arm then runs once more with a profile hook on every thread counting Python and builtin
calls per test: counted, not timed, so the same from run to run on a loaded machine (where CPU
medians of separate processes move by tenths of a millisecond per test).

One cassette per arm (and one vcrpy cassette per request) is recorded against the stand-in API
and copied to every test, so every test of an arm replays the same bytes. A script, not a test:
nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench_routing import bench_env
from bench_routing import run as run_pytest

CONFTEST = textwrap.dedent(
    """
    import json
    import os
    import socket
    import sys
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    import pytest

    ROOT = Path(__file__).parent
    CHUNKS = int(os.environ["BENCH_CHUNKS"])
    N = int(os.environ["BENCH_TESTS"])
    PACE = float(os.environ.get("BENCH_PACE", "0"))
    JSON = json.dumps(
        {"city": "Paris", "sky": "sunny", "celsius": 21, "wind": {"kmh": 12, "from": "west"},
         "days": [{"day": d, "low": 9 + n, "high": 18 + n, "rain_mm": n * 1.5}
                  for n, d in enumerate(("mon", "tue", "wed", "thu"))]}
    ).encode()


    class API(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self):
            if self.path.startswith("/weather"):
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(JSON)))
                self.end_headers()
                self.wfile.write(JSON)
                return
            self.send_response(200)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for n in range(CHUNKS):
                data = b"hour %04d: sunny, 21 C;" % n
                self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
                if PACE:  # recording: each chunk its own read, as a real API's would be
                    self.wfile.flush()
                    time.sleep(PACE)
            self.wfile.write(b"0\\r\\n\\r\\n")


    @pytest.fixture(scope="session", autouse=True)
    def stand_in_api():
        if not os.environ.get("BENCH_LIVE"):
            yield None  # stopped: a replay must not need it
            return
        server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["BENCH_PORT"])), API)
        thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
        thread.start()
        yield server
        server.shutdown()
        server.server_close()


    @pytest.fixture
    def agui_cassette_path(request):
        name = request.module.__name__
        return ROOT / "cassettes" / name / f"c{request.node.callspec.params['i']}.json"


    TIMES = []
    CALLS = [0]


    def count(frame, event, arg):
        if event == "call" or event == "c_call":
            CALLS[0] += 1


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        if os.environ.get("BENCH_CALLS"):  # Python and builtin calls, on every thread
            CALLS[0] = 0
            threading.setprofile(count)
            sys.setprofile(count)
            yield
            sys.setprofile(None)
            threading.setprofile(None)
            TIMES.append((CALLS[0], CALLS[0]))
            return
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        TIMES.append((time.perf_counter() - wall, time.process_time() - cpu))


    def pytest_sessionfinish(session):
        if os.environ.get("BENCH_TIMES"):
            Path(os.environ["BENCH_TIMES"]).write_text(json.dumps(TIMES))
    """
)

TOOLS = textwrap.dedent(
    """
    import os

    import httpx
    import requests

    BASE = "http://127.0.0.1:" + os.environ["BENCH_PORT"]
    SESSION = requests.Session()
    CLIENT = httpx.Client()


    def requests_json():
        response = SESSION.get(BASE + "/weather", params={"city": "Paris"}, timeout=5)
        response.raise_for_status()
        return len(response.json()["days"])


    def requests_stream():
        with SESSION.get(
            BASE + "/hourly", params={"city": "Paris"}, stream=True, timeout=5
        ) as response:
            return len(b"".join(response.iter_content(chunk_size=None)))


    def httpx_json():
        return len(CLIENT.get(BASE + "/weather", params={"city": "Paris"}).json()["days"])


    def httpx_stream():
        with CLIENT.stream("GET", BASE + "/hourly", params={"city": "Paris"}) as response:
            return len(b"".join(response.iter_bytes()))


    def agent_of(tool=None, given=None):
        def agent(ctx):
            ctx.say(f"the tool says {tool() if tool else given}")

        return agent
    """
)

HEAD = textwrap.dedent(
    """
    import pytest

    import tools
    from conftest import CHUNKS, N, ROOT

    EXPECTED = {"json": 4, "stream": 23 * CHUNKS, None: None}
    """
)

REQUESTS = {
    "requests, JSON": ("requests_json", "json"),
    "requests, stream": ("requests_stream", "stream"),
    "httpx, JSON": ("httpx_json", "json"),
    "httpx, stream": ("httpx_stream", "stream"),
}
"""Each request: its tool's name in ``tools`` and the kind of answer."""


def agui_test(tool: str | None, kind: str | None, in_body: bool) -> str:
    if tool is None:
        made = "agui.run(tools.agent_of(given=None))"
    elif in_body:
        made = f"agui.run(tools.agent_of(given=tools.{tool}()))"
    else:
        made = f"agui.run(tools.agent_of(tools.{tool}))"
    return f"""
    @pytest.mark.parametrize("i", range(N))
    def test_arm(agui, i):
        events = {made}
        assert events[2]["delta"] == f"the tool says {{EXPECTED[{kind!r}]}}"
    """


def plain_test(tool: str | None, kind: str | None, vcr: str | None) -> str:
    agent = f"tools.agent_of(tools.{tool})" if tool else "tools.agent_of(given=None)"
    run = f"run_agent_sync({agent}, run_input('thread', 'run-1'))"
    if vcr is not None:
        cassette = f'str(ROOT / "vcr" / {vcr!r} / f"c{{i}}.yaml")'
        run = f"""with vcr.use_cassette({cassette}, record_mode="none"):
            events = {run}"""
    else:
        run = f"events = {run}"
    return f"""
    import vcr
    from agui_replay.server import run_agent_sync, run_input

    @pytest.mark.parametrize("i", range(N))
    def test_arm(i):
        {run}
        assert events[2].delta == f"the tool says {{EXPECTED[{kind!r}]}}"
    """


def arms() -> dict[str, tuple[str, bool]]:
    """Each arm's test module body, and whether the stand-in API runs in its process."""
    out: dict[str, tuple[str, bool]] = {"agui, no request": (agui_test(None, None, False), False)}
    for name, (tool, kind) in REQUESTS.items():
        out[f"agui, {name}, in run"] = (agui_test(tool, kind, False), False)
        out[f"agui, {name}, in body"] = (agui_test(tool, kind, True), False)
    out["plain, no request"] = (plain_test(None, None, None), True)
    out["vcrpy, cassette, no request"] = (plain_test(None, None, "requests_json"), False)
    for name, (tool, kind) in REQUESTS.items():
        out[f"vcrpy, {name}"] = (plain_test(tool, kind, tool), False)
    for name, (tool, kind) in REQUESTS.items():
        out[f"live, {name}"] = (plain_test(tool, kind, None), True)
    return out


RECORD_VCR = textwrap.dedent(
    """
    import os
    import sys
    import threading
    from http.server import ThreadingHTTPServer

    import vcr

    import conftest
    import tools

    port = int(os.environ["BENCH_PORT"])
    server = ThreadingHTTPServer(("127.0.0.1", port), conftest.API)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    for name in sys.argv[1:]:
        with vcr.use_cassette(f"vcr/{name}/c0.yaml", record_mode="all"):
            getattr(tools, name)()
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(
    folder: Path, env: dict[str, str], *args: str
) -> tuple[float, float, list[tuple[float, float]]]:
    """Wall and CPU seconds of one ``pytest`` process (``bench_routing.run``), and each test's
    (wall, CPU)."""
    times = folder / "times.json"
    times.unlink(missing_ok=True)
    took, cpu = run_pytest(folder, {**env, "BENCH_TIMES": str(times)}, *args)
    pairs = json.loads(times.read_text()) if times.exists() else []
    return took, cpu, [(float(w), float(c)) for w, c in pairs]


def project(
    folder: Path, tests: int, chunks: int
) -> tuple[dict[str, str], dict[str, tuple[str, bool]]]:
    env = bench_env(folder, tests, chunks)
    env["BENCH_PORT"] = str(free_port())
    live = {**env, "BENCH_LIVE": "1"}
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "tools.py").write_text(TOOLS)
    (folder / "pytest.ini").write_text("[pytest]\n")
    files: dict[str, tuple[str, bool]] = {}
    for n, (arm, (body, up)) in enumerate(arms().items()):
        name = f"test_arm{n:02d}.py"
        (folder / name).write_text(HEAD + textwrap.dedent(body))
        files[arm] = (name, up)
    # one recording per agui arm (the stand-in API up, paced so each chunk is its own read),
    # copied to every test
    paced = {**live, "BENCH_PACE": "0.001"}
    for arm, (name, _) in files.items():
        if arm.startswith("agui"):
            run(folder, paced, name, "-k", "test_arm[0]", "--agui-record")
            stored = folder / "cassettes" / name[:-3]
            for i in range(1, tests):
                shutil.copy(stored / "c0.json", stored / f"c{i}.json")
    cassette = json.loads((folder / "cassettes" / "test_arm04" / "c0.json").read_text())
    print(f"  the tape's chunked answer: {len(cassette['http'][0]['response']['chunks'])} chunks")
    # one vcrpy cassette per request, recorded in a script with the stand-in API up
    (folder / "record_vcr.py").write_text(RECORD_VCR)
    tools = [tool for tool, _ in REQUESTS.values()]
    subprocess.run([sys.executable, "record_vcr.py", *tools], cwd=folder, env=paced, check=True)
    for tool in tools:
        for i in range(1, tests):
            shutil.copy(folder / "vcr" / tool / "c0.yaml", folder / "vcr" / tool / f"c{i}.yaml")
    return env, files


def measure(
    folder: Path, env: dict[str, str], files: dict[str, tuple[str, bool]], rounds: int
) -> dict[str, dict[str, list[float]]]:
    """Each arm's process wall and CPU, and median per-test wall and CPU, per round (arms
    interleaved round by round; each arm's modules compiled once first, untimed)."""
    live = {**env, "BENCH_LIVE": "1"}
    run(folder, live, *(name for name, _ in files.values()), "--collect-only")
    out: dict[str, dict[str, list[float]]] = {
        arm: {"wall": [], "cpu": [], "test wall": [], "test cpu": []} for arm in files
    }
    for n in range(rounds):
        for arm, (name, up) in files.items():
            wall, cpu, per_test = run(folder, live if up else env, name)
            figures = out[arm]
            figures["wall"].append(wall)
            figures["cpu"].append(cpu)
            figures["test wall"].append(statistics.median(w for w, _ in per_test))
            figures["test cpu"].append(statistics.median(c for _, c in per_test))
        print(f"  round {n + 1} of {rounds} done, load {load()}", flush=True)
    return out


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


BASES = ("agui, no request", "plain, no request", "vcrpy, cassette, no request")


def report(tests: int, chunks: int, rounds: int, out: dict[str, dict[str, list[float]]]) -> None:
    med = {arm: {k: statistics.median(v) for k, v in f.items()} for arm, f in out.items()}
    print(
        f"\n{tests} tests an arm, chunked answer of {chunks} chunks; medians of {rounds}"
        " interleaved rounds; a test: median of the process's per-test protocol times"
    )
    width = max(map(len, med)) + 1
    print(f"  {'arm':{width}} {'process':>8} {'cpu':>8} {'a test':>9} {'cpu':>9}")
    for arm, m in med.items():
        print(
            f"  {arm:{width}} {m['wall']:7.2f}s {m['cpu']:7.2f}s"
            f" {m['test wall'] * 1000:7.3f}ms {m['test cpu'] * 1000:7.3f}ms"
        )

    def added(arm: str, base: str, key: str) -> float:
        return (med[arm][key] - med[base][key]) * 1000

    def whole(arm: str, base: str) -> float:
        return (med[arm]["wall"] - med[base]["wall"]) / tests * 1000

    print(
        "\nwhat the request adds to a test, ms: a test's wall and cpu less its base's, and"
        " (process - base process) / tests; x vcrpy: over what vcrpy's request adds against a"
        " plain test / against its cassette entered with no request"
    )
    rows = []
    for name in REQUESTS:
        for arm, base in (
            (f"agui, {name}, in run", "agui, no request"),
            (f"agui, {name}, in body", "agui, no request"),
            (f"vcrpy, {name}", "plain, no request"),
            (f"vcrpy, {name}", "vcrpy, cassette, no request"),
            (f"live, {name}", "plain, no request"),
        ):
            rows.append((arm, base, name))
    label_of = dict(zip(BASES, ("", "", " (its cassette entered)"), strict=True))
    width = max(len(arm + label_of[base]) for arm, base, _ in rows) + 1
    print(
        f"  {'request':{width}} {'wall':>7} {'cpu':>7} {'process':>8}"
        f" {'wall x vcrpy':>15} {'cpu x vcrpy':>15}"
    )
    for arm, base, name in rows:
        wall, cpu = added(arm, base, "test wall"), added(arm, base, "test cpu")
        ratios = ""
        if arm.startswith("agui"):
            vcrpy, plain, entered = f"vcrpy, {name}", "plain, no request", BASES[2]
            ratios = (
                f" {wall / added(vcrpy, plain, 'test wall'):6.2f}x"
                f"/{wall / added(vcrpy, entered, 'test wall'):5.2f}x"
                f" {cpu / added(vcrpy, plain, 'test cpu'):6.2f}x"
                f"/{cpu / added(vcrpy, entered, 'test cpu'):5.2f}x"
            )
        print(
            f"  {arm + label_of[base]:{width}} {wall:7.3f} {cpu:7.3f} {whole(arm, base):8.3f}"
            f"{ratios}"
        )


def calls(
    folder: Path, env: dict[str, str], files: dict[str, tuple[str, bool]], tests: int
) -> None:
    """Each arm's calls per test (the median over its tests), and what the request adds."""
    counting = {**env, "BENCH_CALLS": "1"}
    live = {**counting, "BENCH_LIVE": "1"}
    counted = {
        arm: statistics.median(c for c, _ in run(folder, live if up else counting, name)[2])
        for arm, (name, up) in files.items()
    }
    print(f"\ncalls per test (Python and builtin, every thread; median of {tests} tests)")
    width = max(map(len, counted)) + 1
    for arm, n in counted.items():
        print(f"  {arm:{width}} {n:9.0f}")
    print(
        "what the request adds, in calls; x vcrpy: over vcrpy's against a plain test / against"
        " its cassette entered"
    )
    for name in REQUESTS:
        vcrpy = counted[f"vcrpy, {name}"]
        over_plain, over_entered = vcrpy - counted[BASES[1]], vcrpy - counted[BASES[2]]
        for where in ("in run", "in body"):
            added = counted[f"agui, {name}, {where}"] - counted[BASES[0]]
            print(
                f"  {f'agui, {name}, {where}':{width}} {added:9.0f}"
                f" {added / over_plain:6.2f}x / {added / over_entered:5.2f}x"
            )
        print(f"  {f'vcrpy, {name}':{width}} {over_plain:9.0f} / {over_entered:.0f}")
        print(f"  {f'live, {name}':{width}} {counted[f'live, {name}'] - counted[BASES[1]]:9.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--calls",
        action="store_true",
        help="then count each arm's Python and builtin calls per test (a profile hook on every"
        " thread; counted, not timed: steady on a loaded machine)",
    )
    options = parser.parse_args()
    print(f"load average at the start: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env, files = project(folder, options.tests, options.chunks)
        out = measure(folder, env, files, options.rounds)
        report(options.tests, options.chunks, options.rounds, out)
        if options.calls:
            calls(folder, env, files, options.tests)
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
