"""Background traffic, import-time downloads and failed requests, as a suite meets them (issue
41 items 2 and 3).

- a thread started at import posts telemetry on a random timer during the tests: whatever the
  timer does, every offline replay passes (the requests the cassette lacks are answered
  locally, and counted in the summary);
- a test module downloads a file while it is imported (urllib, requests, tiktoken's BPE
  loader with an empty cache) and a session-scoped fixture downloads another: both are
  recorded once into the session cassette and replayed offline;
- a download that failed while recording (a refused connection) is stored as that failure
  and replayed as it, at import and in a test.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.support.project import free_port
from tests.support.pytester_run import run

STANDINS = """
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, body, kind="application/json"):
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/weather"):
            self._send(json.dumps({"sky": "sunny"}).encode())
        elif self.path.endswith(".tiktoken"):
            self._send(b"YQ== 0\\nYg== 1\\nYWI= 2\\n", "application/octet-stream")
        else:
            self._send(("file " + self.path).encode(), "text/plain")

    def do_POST(self):  # telemetry
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self._send(b"{}")


def serve(port):
    server = ThreadingHTTPServer(("127.0.0.1", port), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


SERVERS = []
if os.environ.get("STANDINS_UP"):  # up for the collection too: the modules download then
    SERVERS = [serve(int(os.environ["API_PORT"])), serve(int(os.environ["TELEMETRY_PORT"]))]
"""


TIMER_TESTS = """
import itertools
import os
import random
import threading
import time

import requests

API = "http://127.0.0.1:" + os.environ["API_PORT"]
TELEMETRY = "http://127.0.0.1:" + os.environ["TELEMETRY_PORT"] + "/v1/traces"


def export_on_a_timer():
    for tick in itertools.count():
        time.sleep(random.uniform(0.0, 0.03))
        try:
            requests.post(TELEMETRY, json={"tick": tick, "at": time.time()}, timeout=2)
        except Exception:
            pass  # an exporter never lets the app see its failures


threading.Thread(target=export_on_a_timer, daemon=True).start()


def agent(ctx):
    sky = requests.get(API + "/weather?city=Paris", timeout=5).json()["sky"]
    time.sleep(0.06)  # the timer fires while the test runs, or not
    ctx.say("Paris: " + sky)


def test_one(agui):
    assert agui.run(agent)[-2]["type"] == "TEXT_MESSAGE_END"


def test_two(agui):
    assert agui.run(agent)[-2]["type"] == "TEXT_MESSAGE_END"


def test_three(agui):
    assert agui.run(agent)[-2]["type"] == "TEXT_MESSAGE_END"
"""


def _stand_ins(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_PORT", str(free_port()))
    monkeypatch.setenv("TELEMETRY_PORT", str(free_port()))
    pytester.makeconftest(STANDINS)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # in a subprocess: the exporter thread of one run must not post into the next
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def _http(root: Path) -> list[dict[str, object]]:
    exchanges: list[dict[str, object]] = []
    for path in sorted(root.rglob("*.json")):
        exchanges += json.loads(path.read_text()).get("http", [])
    return exchanges


def test_telemetry_on_a_timer_never_fails_a_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand_ins(pytester, monkeypatch)
    pytester.makepyfile(test_timer=textwrap.dedent(TIMER_TESTS))
    monkeypatch.setenv("STANDINS_UP", "1")
    _run(pytester, "--agui-record").assert_outcomes(passed=3)
    exchanges = _http(pytester.path / "cassettes")
    telemetry = [e for e in exchanges if "/v1/traces" in str(e["request"]["url"])]  # type: ignore[index]
    assert telemetry, "the timer never fired while a test recorded"
    assert all(e.get("background") for e in telemetry)
    assert not any(e.get("background") for e in exchanges if e not in telemetry)

    monkeypatch.delenv("STANDINS_UP")  # offline from here: the stand-ins are down
    answered_locally = 0
    for _ in range(20):
        replay = _run(pytester)
        replay.assert_outcomes(passed=3)
        answered_locally += "background requests answered locally" in replay.stdout.str()
    assert answered_locally, "no replay met a telemetry request its cassette lacks"


IMPORT_TESTS = """
import json
import os
import urllib.request

import pytest
import requests

BASE = "http://127.0.0.1:" + os.environ["API_PORT"]

with urllib.request.urlopen(BASE + "/model/vocab.txt", timeout=5) as response:
    VOCAB = response.read().decode()  # a file downloaded at import, as tokenizers do
CONFIG = requests.get(BASE + "/model/config.json", timeout=5).text

try:  # a mirror that is down while recording: the module falls back
    MIRROR = requests.get("http://127.0.0.1:" + os.environ["DOWN_PORT"] + "/x", timeout=5).text
except requests.ConnectionError as exc:
    MIRROR = "down: " + type(exc).__name__


@pytest.fixture(scope="session")
def dataset():
    return requests.get(BASE + "/dataset.csv", timeout=5).text


def test_downloaded_at_import(agui, dataset):
    assert VOCAB == "file /model/vocab.txt"
    assert CONFIG == "file /model/config.json"
    assert MIRROR == "down: ConnectionError"
    assert dataset == "file /dataset.csv"

    def agent(ctx):
        try:
            requests.get("http://127.0.0.1:" + os.environ["DOWN_PORT"] + "/y", timeout=5)
        except requests.ConnectionError:
            ctx.say("the mirror is down")

    assert agui.run(agent)[2]["delta"] == "the mirror is down"
"""

TIKTOKEN_TESTS = """
import os

from tiktoken.load import load_tiktoken_bpe

# tiktoken's loader downloads the BPE file into TIKTOKEN_CACHE_DIR (empty at each run)
RANKS = load_tiktoken_bpe("http://127.0.0.1:" + os.environ["API_PORT"] + "/tiny.tiktoken")


def test_tiktoken_ranks(agui):
    assert RANKS == {b"a": 0, b"b": 1, b"ab": 2}
"""


def test_downloads_at_import_and_in_session_fixtures_replay_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stand_ins(pytester, monkeypatch)
    monkeypatch.setenv("DOWN_PORT", str(free_port()))  # nothing listens there, ever
    pytester.makepyfile(test_imports=textwrap.dedent(IMPORT_TESTS))
    tiktoken = pytest.importorskip("tiktoken")
    assert tiktoken
    pytester.makepyfile(test_tiktoken=textwrap.dedent(TIKTOKEN_TESTS))
    cache = tmp_path / "tiktoken-cache"

    def empty_cache() -> None:
        cache.mkdir(exist_ok=True)
        for path in cache.iterdir():
            path.unlink()
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))

    empty_cache()
    monkeypatch.setenv("STANDINS_UP", "1")
    record = _run(pytester, "--agui-record")
    record.assert_outcomes(passed=2)
    assert any(cache.iterdir())  # tiktoken downloaded and cached it
    session = json.loads((pytester.path / "cassettes" / "_session.json").read_text())
    assert session["runs"] == []
    urls = [e["request"]["url"].split("/", 3)[-1] for e in session["http"]]
    assert urls == ["model/vocab.txt", "model/config.json", "x", "tiny.tiktoken", "dataset.csv"]
    failed = session["http"][2]["response"]
    assert failed["failure"] == "unreachable"
    assert "status" not in failed
    [test_cassette] = (pytester.path / "cassettes").glob("test_imports/*.json")
    [stored] = json.loads(test_cassette.read_text())["http"]
    assert stored["response"]["failure"] == "unreachable"

    monkeypatch.delenv("STANDINS_UP")  # offline from here, with an empty tiktoken cache
    for _ in range(2):
        empty_cache()
        replay = _run(pytester)
        replay.assert_outcomes(passed=2)
    before = (pytester.path / "cassettes" / "_session.json").read_bytes()
    monkeypatch.setenv("STANDINS_UP", "1")
    empty_cache()
    _run(pytester, "--agui-record").assert_outcomes(passed=2)
    assert (pytester.path / "cassettes" / "_session.json").read_bytes() == before


FAILED_DOWNLOAD_TESTS = """
import os

import requests


def test_mirror_down(agui):
    def agent(ctx):
        try:
            requests.get("http://127.0.0.1:" + os.environ["DOWN_PORT"] + "/data.csv", timeout=5)
        except requests.ConnectionError:
            ctx.say("the mirror is down")

    assert agui.run(agent)[2]["delta"] == "the mirror is down"
"""


def test_a_download_that_failed_while_recording_replays_as_that_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWN_PORT", str(free_port()))  # nothing listens there, ever
    pytester.makepyfile(test_mirror=textwrap.dedent(FAILED_DOWNLOAD_TESTS))
    run(pytester, "--agui-record").assert_outcomes(passed=1)
    [stored] = _http(pytester.path / "cassettes")
    assert stored["response"]["failure"] == "unreachable"  # type: ignore[index]
    replay = run(pytester)
    replay.assert_outcomes(passed=1)
    assert "none was recorded" not in replay.stdout.str()
