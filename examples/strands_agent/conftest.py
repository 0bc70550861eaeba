"""The stand-ins the Strands cassettes were recorded against, started only while recording.

* the model: a scripted Bedrock (``FakeProvider`` speaking ConverseStream) as ``agui_upstream``,
  which the plugin asks for only while a test records;
* the weather API the ``forecast`` tool calls with ``requests``, on 127.0.0.1:18631;
* the city-events MCP server (``events_server.py``, the ``mcp`` package's ``MCPServer`` over
  streamable HTTP), a process on 127.0.0.1:18632.

The two services are started the first time a test records (``agui.replay_only`` is false) and
stopped at the end of the session; a replay starts nothing and answers the agent's requests to
them from its cassette. They listen on fixed ports because a replay matches each request by its
URL: record without ``-n`` (two workers would both start them).

Imports nothing from Strands, so this file loads in any venv; the test module skips itself where
ag-ui-strands is not installed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_replay.providers import FakeProvider
from agui_replay.recording import CassetteSession

from . import weather_api
from .scripted_model import scripted_model

# agent.py's addresses (it imports Strands, so it is not imported here).
WEATHER_PORT = 18631
EVENTS_PORT = 18632


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(
        f"the city-events MCP server did not start on 127.0.0.1:{port} "
        f"(exit code {process.poll()}); is the port taken? Run "
        f"`{sys.executable} {Path(__file__).with_name('events_server.py')} {port}` to see why"
    )


@pytest.fixture(scope="session")
def weather_service() -> Iterator[None]:
    """The weather API, in a thread of the test process."""
    with weather_api.serve(WEATHER_PORT):
        yield


@pytest.fixture(scope="session")
def events_service() -> Iterator[None]:
    """The MCP server, as a process of its own (the way it runs in production)."""
    server = Path(__file__).with_name("events_server.py")
    process = subprocess.Popen(
        [sys.executable, str(server), str(EVENTS_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(EVENTS_PORT, process)
        yield
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(autouse=True)
def services(agui: CassetteSession, request: pytest.FixtureRequest) -> None:
    """Start the weather API and the MCP server when this test records; a replay needs neither."""
    if not agui.replay_only:
        request.getfixturevalue("weather_service")
        request.getfixturevalue("events_service")


@pytest.fixture
def agui_upstream() -> Iterator[dict[str, Any]]:
    """The provider a recording forwards to: the scripted model on 127.0.0.1, speaking Bedrock's
    ConverseStream, with random ids as a real provider has. Named ``bedrock`` with the bare
    origin boto3 wants. The plugin asks for this fixture only while a test records."""
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as server:
        yield {"bedrock": server.url}
    fake.check()


@pytest.fixture(autouse=True)
def aws_credentials(agui: CassetteSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 signs every request. While recording, dummy credentials (the stand-in checks no
    signature) unless real ones are in the environment; while replaying none: the plugin's
    placeholders sign requests that never leave the process."""
    if not agui.replay_only:
        for name, dummy in [
            ("AWS_ACCESS_KEY_ID", "AKIASTRANDSEXAMPLE00"),
            ("AWS_SECRET_ACCESS_KEY", "strands-example-dummy-secret-access-key0"),
        ]:
            monkeypatch.setenv(name, os.environ.get(name, dummy))
