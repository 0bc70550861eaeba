"""``agui-replay capture``, run as the installed console script, the way a user runs it.

Two agents stand behind the proxy: the LangGraph example served by ag-ui-langgraph (its model a
``FakeProvider`` on loopback, reached through ``OPENAI_BASE_URL``), and a small ASGI agent whose
answers each test steers through ``forwardedProps.mode`` (a normal run, one held at a gate the
test opens, a 422, JSON, a stream that breaks off, a frame that is no event...). Nothing here
depends on timing: streaming chunk by chunk is shown by a run that only goes on once the test
has received its first event through the proxy.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_replay.cassette import load_cassette
from agui_replay.client import Session
from agui_replay.providers import FakeProvider
from agui_replay.server import run_input
from agui_replay.server.testing import serve
from agui_replay.sse import decode_sse, encode_sse
from tests.package.test_docs import extract_blocks

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("agui-replay")
TOKEN = "Bearer capture-secret-0123456789"


# --- the command, as a user runs it -------------------------------------------------------------


@contextmanager
def capturing(target: str, out: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``agui-replay capture --target TARGET --out OUT``; yields the process and its URL."""
    process = subprocess.Popen(
        [str(SCRIPT), "capture", "--target", target, "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), process.communicate(timeout=30)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[int, str, str]:
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


def body(thread: str, run: str, mode: str = "ok", **extra: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"{run}-q", "role": "user", "content": "hello"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"mode": mode, **extra},
    }


# --- a small agent, steered by the test -----------------------------------------------------------


class SteeredAgent:
    """An AG-UI endpoint whose answer ``forwardedProps.mode`` chooses; it tells in its text the
    ``authorization`` and ``x-trace`` headers it was sent."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        posted = json.loads(raw)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        mode = posted["forwardedProps"]["mode"]
        if mode == "status":
            await self._whole(send, 422, b'{"detail": "the agent refused"}', "application/json")
            return
        if mode == "json":
            await self._whole(send, 200, b'{"answer": 42}', "application/json")
            return
        said = f"auth={headers.get('authorization')}; trace={headers.get('x-trace')}"
        events = run_events(posted["threadId"], posted["runId"], said)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"x-agent", b"steered")],
            }
        )
        for n, event in enumerate(events):
            if mode == "no-end" and event["type"] == "RUN_FINISHED":
                break
            if mode == "broken" and n == 2:
                return  # the server cuts the connection mid-body
            if mode == "gated" and n == 2:
                opened = await asyncio.to_thread(self.gate.wait, 60)
                event = {**event, "delta": "gate opened" if opened else "gate timed out"}
            if mode == "bad-frame" and n == 2:
                await send(
                    {"type": "http.response.body", "body": b"data: oops\n\n", "more_body": True}
                )
            await send({"type": "http.response.body", "body": encode_sse(event), "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _whole(self, send: Any, status: int, data: bytes, content_type: str) -> None:
        headers = [(b"content-type", content_type.encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def run_events(thread: str, run: str, said: str) -> list[dict[str, Any]]:
    message = f"{run}-msg-1"
    return [
        {"type": "RUN_STARTED", "threadId": thread, "runId": run},
        {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": said},
        {"type": "TEXT_MESSAGE_END", "messageId": message},
        {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
    ]


@pytest.fixture
def steered() -> Iterator[tuple[SteeredAgent, str]]:
    agent = SteeredAgent()
    with serve(agent) as url:
        yield agent, f"{url}/agent"
    agent.gate.set()


# --- a real framework: LangGraph served by ag-ui-langgraph ------------------------------------


@pytest.fixture
def langgraph_agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    pytest.importorskip("ag_ui_langgraph")
    if str(ROOT) not in sys.path:
        monkeypatch.syspath_prepend(str(ROOT))
    from examples.langgraph_agent.agent import app_from_env
    from examples.langgraph_agent.test_langgraph_agent import scripted_model

    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as provider:
        monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-capture-test-0123456789abcdef")
        with serve(app_from_env()) as url:
            yield f"{url}/agent"


def post_run(url: str, posted: dict[str, Any], **headers: str) -> list[dict[str, Any]]:
    response = httpx.post(url, json=posted, headers=headers, timeout=120.0)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return decode_sse(response.content)


@pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated")
def test_a_langgraph_agent_is_captured_verified_and_served_back_identically(
    langgraph_agent: str, tmp_path: Path
) -> None:
    out = tmp_path / "captured" / "converter.json"
    first = run_input("kitchen", "run-1", messages=["What is 180 C in Fahrenheit?"])
    first_body = first.model_dump(by_alias=True, mode="json", exclude_none=True)
    with capturing(langgraph_agent, out) as (process, url):
        converted = post_run(url, first_body, authorization=TOKEN)
        # The run is in the file as soon as its response has ended.
        assert [run.events for run in load_cassette(out).runs] == [converted]
        # The front end sends the conversation back with the next question.
        client = Session(state=first.state, messages=first.messages).apply_all(converted).finish()
        said = {"id": "user-2", "role": "user", "content": "And 2.5 kg in pounds?"}
        second = run_input(
            "kitchen", "run-2", state=client.state, messages=[*client.messages, said]
        )
        second_body = second.model_dump(by_alias=True, mode="json", exclude_none=True)
        weighed = post_run(url, second_body, authorization=TOKEN)
        code, _, err = stop(process)

    assert code == 0, err
    assert "Traceback" not in err
    assert "recorded as run 0" in err
    assert "recorded as run 1" in err
    assert f"stopped: 2 run(s) recorded in {out}" in err
    texts = [e["delta"] for e in converted + weighed if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(texts) == "That makes 356.00 F.That makes 5.51 lb."
    cassette = load_cassette(out)
    assert [run.input for run in cassette.runs] == [first_body, second_body]
    assert [run.events for run in cassette.runs] == [converted, weighed]
    assert "capture-secret" not in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.parent.iterdir()) == ["converter.json"]  # no temp file

    verified = command("verify", "--mode", "strict", str(out))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert command("show", str(out)).returncode == 0
    assert command("view", str(out), "-o", str(tmp_path / "converter.html")).returncode == 0

    # `serve` streams the same runs back to the same inputs, event for event.
    server = subprocess.Popen(
        [str(SCRIPT), "serve", str(out), "--speed", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        replay = server.stdout.readline().strip()
        assert post_run(replay, first_body) == converted
        assert post_run(replay, second_body) == weighed
    finally:
        server.terminate()
        server.communicate(timeout=30)


# --- passing through -----------------------------------------------------------------------------


def test_the_stream_passes_through_unchanged_chunk_by_chunk_and_secrets_stay_out(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    agent, target = steered
    out = tmp_path / "steered.json"
    headers = {"authorization": TOKEN, "x-trace": "trace-7"}
    direct = httpx.post(target, json=body("t", "direct"), headers=headers, timeout=30.0)
    with capturing(target, out) as (process, url):
        proxied = httpx.post(url, json=body("t", "direct"), headers=headers, timeout=30.0)
        # A run that goes on only once its first event has come through the proxy.
        received = bytearray()
        with httpx.stream("POST", url, json=body("t", "gated", "gated"), timeout=30.0) as gated:
            chunks = gated.iter_raw()
            while not decode_sse(bytes(received), strict=False):
                received += next(chunks)
            agent.gate.set()
            for chunk in chunks:
                received += chunk
        code, _, err = stop(process)

    assert code == 0, err
    assert proxied.status_code == 200
    assert proxied.content == direct.content  # byte for byte, the headers forwarded too
    assert proxied.headers["x-agent"] == "steered"
    assert proxied.headers["access-control-allow-origin"] == "*"
    said = "auth=Bearer capture-secret-0123456789; trace=trace-7"
    assert decode_sse(proxied.content)[2]["delta"] == said
    gated_events = decode_sse(bytes(received))
    assert gated_events[2]["delta"] == "gate opened"

    cassette = load_cassette(out)
    assert [run.input for run in cassette.runs] == [
        body("t", "direct"),
        body("t", "gated", "gated"),
    ]
    assert cassette.runs[1].events == gated_events
    assert cassette.runs[0].events[2]["delta"] == "auth=<scrubbed>; trace=trace-7"
    assert "capture-secret" not in out.read_text(encoding="utf-8")
    assert cassette.meta == {"capture": {"target": target}}


def read_into(came: bytearray, http: httpx.Client, url: str, posted: dict[str, Any]) -> None:
    with http.stream("POST", url, json=posted) as response:
        for chunk in response.iter_raw():
            came += chunk


def test_what_is_not_a_completed_run_is_passed_on_and_not_recorded(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    _, target = steered
    out = tmp_path / "partial.json"
    with capturing(target, out) as (process, url), httpx.Client(timeout=30.0) as http:
        refused = http.post(url, json=body("t", "r1", "status"))
        assert (refused.status_code, refused.content) == (422, b'{"detail": "the agent refused"}')
        answered = http.post(url, json=body("t", "r2", "json"))
        assert (answered.status_code, answered.json()) == (200, {"answer": 42})
        came = bytearray()
        with pytest.raises(httpx.RemoteProtocolError):  # broken off as the agent's stream was
            read_into(came, http, url, body("t", "r3", "broken"))
        assert [e["type"] for e in decode_sse(bytes(came))] == [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
        ]
        bad = http.post(url, json=body("t", "r4", "bad-frame"))
        assert b"data: oops" in bad.content
        invalid = http.post(url, json={"threadId": 7})
        assert invalid.status_code == 400
        assert invalid.json()["type"] == "RUN_ERROR"
        assert "RunAgentInput" in invalid.json()["message"]
        deep = http.post(url, content=b"[" * 5000, headers={"content-type": "application/json"})
        assert deep.status_code == 400
        assert "nested deeper than" in deep.json()["message"]
        assert http.get(url).status_code == 405
        preflight = http.options(
            url,
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
                "access-control-request-private-network": "true",
            },
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "*"
        assert preflight.headers["access-control-allow-headers"] == "authorization, content-type"
        assert preflight.headers["access-control-allow-private-network"] == "true"
        # Nothing so far was a completed run: no file yet.
        assert not out.exists()
        http.post(url, json=body("t", "r5"))
        unfinished = http.post(url, json=body("t", "r6", "no-end"))
        assert unfinished.status_code == 200
        code, _, err = stop(process)

    assert code == 0, err
    assert "Traceback" not in err
    assert "without completing response" not in err
    lines = err.splitlines()
    assert any(
        "422 application/json from the agent" in line and "not recorded" in line for line in lines
    )
    assert any("200 application/json from the agent" in line for line in lines)
    assert any("stream broke off after 2 event(s)" in line for line in lines), err
    assert any("not recorded: SSE frame at byte" in line for line in lines), err
    assert any("400: not a valid RunAgentInput" in line for line in lines), err
    assert any("GET / → 405" in line for line in lines), err
    assert any("last event is TEXT_MESSAGE_END" in line for line in lines), err
    assert [run.input["runId"] for run in load_cassette(out).runs] == ["r5", "r6"]
    # A stream that ended without RUN_FINISHED is recorded as it was; strict verify says so.
    verified = command("verify", "--mode", "strict", str(out))
    assert verified.returncode == 1
    assert 'the stream ended inside run "r6" without RUN_FINISHED' in verified.stdout


def test_an_agent_that_cannot_be_reached_gets_a_502_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    out = tmp_path / "nothing.json"
    secret = "?token=query-secret-0123456789"  # a query is not shown, nor stored
    with capturing(f"http://127.0.0.1:{port}/agent{secret}", out) as (process, url):
        response = httpx.post(url, json=body("t", "r"), timeout=30.0)
        code, _, err = stop(process, signal.SIGINT)
    assert response.status_code == 502
    error = response.json()
    assert error["type"] == "RUN_ERROR"
    assert error["code"] == "AGENT_UNREACHABLE"
    assert f"cannot reach the agent at http://127.0.0.1:{port}/agent" in error["message"]
    assert code == 0, err
    assert f"POST / → 502: cannot reach the agent at http://127.0.0.1:{port}/agent" in err
    assert f"stopped: no run recorded, {out} not written" in err
    assert "query-secret" not in err + response.text
    assert not out.exists()


def test_a_run_in_flight_at_ctrl_c_is_waited_for_and_recorded(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    agent, target = steered
    out = tmp_path / "in-flight.json"
    with capturing(target, out) as (process, url):
        assert process.stderr is not None
        process.stderr.readline()  # the banner
        with httpx.stream("POST", url, json=body("t", "late", "gated"), timeout=60.0) as gated:
            chunks = gated.iter_raw()
            received = bytearray(next(chunks))
            process.send_signal(signal.SIGINT)
            assert "stopping: waiting for 1 run(s) in flight" in process.stderr.readline()
            agent.gate.set()
            for chunk in chunks:
                received += chunk
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"stopped: 1 run(s) recorded in {out}" in err
    assert load_cassette(out).runs[0].events == decode_sse(bytes(received))


def test_append_quiet_and_bad_command_lines(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    _, target = steered
    out = tmp_path / "session.json"
    with capturing(target, out, "--quiet") as (process, url):
        httpx.post(url, json=body("t", "one"), timeout=30.0)
        code, stdout, err = stop(process)
    assert (code, stdout, err) == (0, "", "")  # the URL line was all (read before)

    again = command("capture", "--target", target, "--out", str(out))
    assert again.returncode == 2
    assert "exists: add --append" in again.stderr
    with capturing(target, out, "--append", "--quiet") as (process, url):
        httpx.post(url, json=body("t", "two"), timeout=30.0)
        code, _, err = stop(process)
    assert code == 0, err
    assert [run.input["runId"] for run in load_cassette(out).runs] == ["one", "two"]

    for args, says in [
        (["--target", "ftp://127.0.0.1/agent"], "is not an http:// or https:// URL"),
        (["--target", "127.0.0.1:8000/agent"], "is not an http:// or https:// URL"),
        (["--target", target, "--host", "203.0.113.254"], "cannot listen on 203.0.113.254:0"),
    ]:
        done = command("capture", *args, "--out", str(tmp_path / "x.json"))
        assert done.returncode == 2, done.stderr
        assert says in done.stderr
    shown = command("capture", "--help")
    assert shown.returncode == 0
    assert "exit codes: 0 stopped by Ctrl-C or SIGTERM, 2 a wrong command line" in shown.stdout
    done = command("capture", "--target", target, "--out", str(tmp_path / "x.sse"))
    assert done.returncode == 2
    assert "ends in .json" in done.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_failed_write_keeps_the_run_and_is_tried_again_even_when_quiet(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    _, target = steered
    folder = tmp_path / "captures"
    out = folder / "kept.json"
    with capturing(target, out, "--quiet") as (process, url):
        folder.rmdir()
        folder.write_text("a file where the folder was", encoding="utf-8")
        answered = httpx.post(url, json=body("t", "kept"), timeout=30.0)
        assert answered.status_code == 200  # the caller is not affected
        folder.unlink()
        code, _, err = stop(process)
    assert code == 0, err
    assert f"agui-replay capture: cannot write {out}:" in err
    assert "the run is kept in memory" in err
    assert [run.input["runId"] for run in load_cassette(out).runs] == ["kept"]


def test_runs_that_cannot_be_written_by_the_end_fail_the_command(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    _, target = steered
    folder = tmp_path / "captures"
    out = folder / "lost.json"
    with capturing(target, out) as (process, url):
        folder.rmdir()
        folder.write_text("a file where the folder was", encoding="utf-8")
        httpx.post(url, json=body("t", "lost"), timeout=30.0)
        code, _, err = stop(process)
    assert code == 2
    assert "the captured runs are lost" in err
    assert "stopped: 1 run(s) recorded" not in err


def test_runs_streamed_at_once_are_recorded_in_the_order_they_end(
    steered: tuple[SteeredAgent, str], tmp_path: Path
) -> None:
    agent, target = steered
    out = tmp_path / "overlapping.json"
    with capturing(target, out) as (process, url), httpx.Client(timeout=60.0) as http:
        with http.stream("POST", url, json=body("t", "slow", "gated")) as slow:
            chunks = slow.iter_raw()
            next(chunks)  # the slow run is under way, held at the gate
            quick = http.post(url, json=body("t", "quick"))
            assert quick.status_code == 200
            assert [run.input["runId"] for run in load_cassette(out).runs] == ["quick"]
            agent.gate.set()
            rest = b"".join(chunks)
        assert rest
        code, _, err = stop(process)
    assert code == 0, err
    assert [run.input["runId"] for run in load_cassette(out).runs] == ["quick", "slow"]


def test_the_capture_pages_script_run_twice_stops_at_the_refusal(tmp_path: Path) -> None:
    """The how-to's "From a script" block, saved and run twice in a fresh folder: the second
    run's capture refuses the existing file, and the script stops there with that reason (not
    with httpx's complaint about the empty URL it would post to next)."""
    page = ROOT / "docs" / "howto" / "capture-any-agent.md"
    heading = page.read_text(encoding="utf-8").splitlines().index("## From a script") + 1
    (block,) = [b for b in extract_blocks(page) if b.lang == "python" and b.line > heading][:1]
    (tmp_path / "capture_script.py").write_text(block.text, encoding="utf-8")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "capture_script.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )

    first = run()
    assert first.returncode == 0, first.stderr
    second = run()
    assert second.returncode == 2  # what the page says: capture's exit code
    assert "--out captured.json exists: add --append" in second.stderr
    assert "Traceback" not in second.stderr, second.stderr
    assert "missing an 'http://'" not in second.stderr
