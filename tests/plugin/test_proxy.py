"""A proxy is no way out of a replay, not even one on loopback.

A small forwarding proxy (CONNECT tunnels and absolute-form requests) runs as a process of its
own on 127.0.0.1, as a developer's local proxy would: the guard's audit hook does not reach
into it, so whatever it is asked to do it does. It writes each request line it receives to a
log. The tests give it to their clients explicitly: ``httpx.Client(proxy=...)``, ``requests``
with ``proxies=``, ``openai.OpenAI(http_client=httpx.Client(proxy=...))``, ``urllib.request``
with a ``ProxyHandler``, ``aiohttp`` with ``proxy=``.

While replaying, a provider's request and a recorded tool request are answered from the
cassette before the proxy is reached (the routing runs first), and an unrecorded request fails
the test as a tape miss; the proxy's log stays empty. With the routing off, the guard refuses
to write a proxy request for a host beyond loopback into a socket.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai  # imported once here too: pytester drops modules first imported inside
import pytest
import requests

from agui_replay.providers import FakeProvider
from agui_replay.recording._guard import NetworkGuard
from tests.plugin.test_offline_namespace import _namespace_problem

OPENAI_KEY = "sk-proj-proxytests0live0key0abcdef"

PROXY = r'''
"""A forwarding HTTP proxy: CONNECT tunnels and absolute-form requests, each request line
logged. Usage: proxy.py LOG PORTFILE"""
import socket
import sys
import threading
from socketserver import StreamRequestHandler, ThreadingTCPServer
from urllib.parse import urlsplit

LOG, PORTFILE = sys.argv[1], sys.argv[2]
lock = threading.Lock()


def pipe(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Proxy(StreamRequestHandler):
    rbufsize = 0  # the head is read byte by byte: nothing after it stays in a buffer

    def handle(self):
        line = self.rfile.readline()
        if not line:
            return
        with lock, open(LOG, "a") as log:
            log.write(line.decode("latin-1").rstrip() + "\n")
        head = [line]
        while (header := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            head.append(header)
        method, target, version = line.decode("latin-1").split()
        try:
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)), timeout=5)
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                upstream = socket.create_connection((parts.hostname, parts.port or 80), timeout=5)
                path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
                head[0] = f"{method} {path} {version}\r\n".encode()
                upstream.sendall(b"".join(head) + b"\r\n")
        except OSError as exc:
            message = str(exc).encode()
            head = b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: %d\r\n\r\n" % len(message)
            self.wfile.write(head)
            self.wfile.write(message)
            return
        self.wfile.flush()
        back = threading.Thread(target=pipe, args=(upstream, self.connection), daemon=True)
        back.start()
        pipe(self.connection, upstream)
        back.join(5)


ThreadingTCPServer.daemon_threads = True
ThreadingTCPServer.allow_reuse_address = True
server = ThreadingTCPServer(("127.0.0.1", 0), Proxy)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.replace(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
'''


def start_proxy(folder: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """The proxy as a process of its own; its URL and its log."""
    script, log, portfile = folder / "proxy.py", folder / "proxy.log", folder / "proxy.port"
    script.write_text(PROXY)
    log.write_text("")
    portfile.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, str(script), str(log), str(portfile)])
    deadline = time.monotonic() + 30
    while not portfile.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the test proxy did not start")
        time.sleep(0.02)
    return proc, f"http://127.0.0.1:{portfile.read_text()}", log


CONFTEST = """
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


def start_proxy(folder):
    portfile = folder / "proxy.port"
    portfile.unlink(missing_ok=True)
    command = [sys.executable, str(folder / "proxy.py"), str(folder / "proxy.log"), str(portfile)]
    proc = subprocess.Popen(command)
    deadline = time.monotonic() + 30
    while not portfile.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.02)
    return proc, "http://127.0.0.1:" + portfile.read_text(), None


class WeatherAPI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"sunny in " + self.path.rsplit("=", 1)[-1].encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="session")
def proxy_url():
    proc, url, _ = start_proxy(Path(__file__).parent)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="session", autouse=True)
def weather_api():
    if not os.environ.get("WEATHER_UP"):
        yield None  # stopped: a replay must not need it
        return
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["WEATHER_PORT"])), WeatherAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
"""

TESTS = f'''
import os
import urllib.request

import httpx
import openai
import requests

WEATHER = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]


def test_openai_through_a_proxy(agui, proxy_url):
    client = openai.OpenAI(
        api_key="{OPENAI_KEY}", max_retries=0, http_client=httpx.Client(proxy=proxy_url)
    )

    def agent(ctx):
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{{"role": "user", "content": ctx.last_user_text()}}]
        )
        ctx.say(reply.choices[0].message.content)

    events = agui.run(agent, "hi")
    assert events[2]["delta"] == "recorded answer"


def test_tools_through_a_proxy(agui, proxy_url):
    def agent(ctx):
        with httpx.Client(proxy=proxy_url) as client:
            ctx.say(client.get(WEATHER + "/w?city=Paris").text)
        proxies = {{"http": proxy_url, "https": proxy_url}}
        ctx.say(requests.get(WEATHER + "/w?city=Rome", proxies=proxies, timeout=5).text)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
        with opener.open(WEATHER + "/w?city=Lima", timeout=5) as response:
            ctx.say(response.read().decode())

    events = agui.run(agent)
    texts = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["sunny in Paris", "sunny in Rome", "sunny in Lima"]


def _unrecorded(kind, proxy_url):
    proxies = {{"http": proxy_url, "https": proxy_url}}
    if kind == "httpx":
        with httpx.Client(proxy=proxy_url) as client:
            return client.get("https://api.example.com/secret").text
    if kind == "requests":
        return requests.get("http://api.example.com/secret", proxies=proxies, timeout=5).text
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
    with opener.open("http://api.example.com/secret", timeout=5) as response:
        return response.read().decode()


import pytest


@pytest.mark.parametrize("kind", ["httpx", "requests", "urllib"])
def test_an_unrecorded_request_through_a_proxy(agui, proxy_url, kind):
    def agent(ctx):
        if agui.replay_only:
            try:
                ctx.say(_unrecorded(kind, proxy_url))
            except Exception as exc:
                ctx.say(type(exc).__name__)
        else:
            ctx.say("recorded without it")

    agui.run(agent)
'''


@pytest.fixture
def weather_port(monkeypatch: pytest.MonkeyPatch) -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    monkeypatch.setenv("WEATHER_PORT", str(port))
    return port


def _proxied(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "proxy.log"
    return log.read_text().splitlines() if log.exists() else []


def test_replays_through_an_explicit_proxy_never_reach_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, weather_port: int
) -> None:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "proxy.py").write_text(PROXY)
    pytester.makepyfile(test_through_proxy=textwrap.dedent(TESTS))
    upstream = FakeProvider()
    upstream.reply("recorded answer")
    with upstream.serve() as server:
        monkeypatch.setenv("WEATHER_UP", "1")
        record = pytester.runpytest(
            "-p", "no:cacheprovider", "--agui-record", f"--agui-upstream={server.base_url}"
        )
        record.assert_outcomes(passed=5)
    monkeypatch.delenv("WEATHER_UP")
    # recording too: the routing and the tape came before the proxy
    assert _proxied(pytester) == []

    for _ in range(2):
        replay = pytester.runpytest("-p", "no:cacheprovider")
        replay.assert_outcomes(passed=2, failed=3)
        out = replay.stdout.str()
        for url in (
            "GET https://api.example.com/secret",
            "GET http://api.example.com/secret",
        ):
            assert f"{url} matches no recorded HTTP exchange" in out, out
        assert out.count("matches no recorded HTTP exchange") >= 3
        assert _proxied(pytester) == []

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
        assert "2 passed" in out, out
        assert "3 failed" in out, out
        assert _proxied(pytester) == []


# --- the guard alone (no routing): a proxy request for another host is never written --------


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    proc, url, log = start_proxy(tmp_path_factory.mktemp("proxy"))
    try:
        yield url, log
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def local_api() -> Iterator[str]:
    with FakeProvider().serve() as server:  # answers GET .../models: a loopback server
        yield server.url


def test_the_proxy_forwards_when_nothing_guards(proxy: tuple[str, Path], local_api: str) -> None:
    url, log = proxy
    with httpx.Client(proxy=url) as client:
        assert client.get(f"{local_api}/v1/models").json() == {"object": "list", "data": []}
    assert log.read_text().splitlines()[-1].startswith(f"GET {local_api}/v1/models ")


def _through(kind: str, url: str, target: str) -> Any:
    proxies = {"http": url, "https": url}
    if kind == "httpx":
        with httpx.Client(proxy=url) as client:
            return client.get(target)
    if kind == "httpx-async":

        async def go() -> Any:
            async with httpx.AsyncClient(proxy=url) as client:
                return await client.get(target)

        return asyncio.run(go())
    if kind == "requests":
        return requests.get(target, proxies=proxies, timeout=5)
    if kind == "urllib":
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
        return opener.open(target, timeout=5)
    if kind == "aiohttp":
        aiohttp = pytest.importorskip("aiohttp")

        async def fetch() -> Any:
            async with (
                aiohttp.ClientSession() as session,
                session.get(target, proxy=url) as response,
            ):
                return await response.read()

        return asyncio.run(fetch())
    if kind == "openai":
        client = openai.OpenAI(
            api_key=OPENAI_KEY, max_retries=0, http_client=httpx.Client(proxy=url)
        )
        return client.models.list()
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("httpx", "https://api.example.com/x"),
        ("httpx", "http://api.example.com/x"),
        ("httpx-async", "https://api.example.com/x"),
        ("requests", "https://api.example.com/x"),
        ("requests", "http://api.example.com/x"),
        ("urllib", "http://api.example.com/x"),
        ("urllib", "https://api.example.com/x"),
        ("aiohttp", "http://api.example.com/x"),
        ("aiohttp", "https://api.example.com/x"),
        ("openai", "https://api.openai.com/v1/models"),
    ],
)
def test_the_guard_refuses_a_proxy_request_for_another_host(
    proxy: tuple[str, Path], kind: str, target: str
) -> None:
    url, log = proxy
    before = log.read_text()
    guard = NetworkGuard("replaying proxy.json")
    with guard.guarding(True), pytest.raises(Exception) as caught:  # noqa: PT011
        _through(kind, url, target)
    # the client reports it its own way (some take a failed write for an early answer and
    # read on); the guard keeps the refusal, which fails the test in the plugin
    assert guard.violations, caught.value
    assert "blocked a request through a proxy to 'api." in guard.violations[0]
    assert log.read_text() == before  # the proxy was never asked


def test_the_guard_lets_a_loopback_destination_through_a_proxy(
    proxy: tuple[str, Path], local_api: str
) -> None:
    url, _ = proxy
    guard = NetworkGuard("replaying proxy.json")
    with guard.guarding(True), httpx.Client(proxy=url) as client:
        assert client.get(f"{local_api}/v1/models").status_code == 200
    assert guard.violations == []
