"""``agui-replay serve``: a fault per request (the ``X-AGUI-Replay-Fault`` header), the list of
served runs (``GET /_agui/runs``), the ids of a conversation as the front end posted them, and
``--host``.

Driven with httpx against the ASGI app on a real loopback server; what ``@ag-ui/client`` and
Chromium make of the same faults is in ``test_cli_serve_conversation`` and
``test_front_end_browser``.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_replay.cassette import load_recording
from agui_replay.cli._serve import ReplayApp
from agui_replay.cli._serve_faults import Faults, parse_faults
from agui_replay.cli._serve_match import posted_ids
from agui_replay.server.testing import serve
from agui_replay.sse import decode_sse, encode_sse
from tests.cli.test_cli import as_posted
from tests.cli.test_cli_serve_match import APPROVED, as_front_end, recorded_inputs
from tests.support.serve_cli import SCRIPT, stop

ROOT = Path(__file__).resolve().parents[2]
CONVERTER = (
    ROOT / "cassettes" / "test_langgraph_agent" / "test_a_second_conversion_on_the_same_thread.json"
)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30.0) as http:
        yield http


def faulty(client: httpx.Client, url: str, body: dict[str, Any], fault: str) -> httpx.Response:
    return client.post(url, json=body, headers={"X-AGUI-Replay-Fault": fault})


# --- the header ----------------------------------------------------------------------------


def test_the_header_reads_every_fault_and_says_what_is_wrong() -> None:
    assert parse_faults("cut-after=3") == Faults(cut_after=3)
    assert parse_faults(" Delay=1.5 , drop=0,duplicate=2, garble=4") == Faults(
        delay=1.5, drop=0, duplicate=2, garble=4
    )
    assert parse_faults("error-after=0") == Faults(error_after=0)
    assert parse_faults("none") == Faults()
    assert str(Faults(delay=0.5, cut_after=3)) == "delay=0.5, cut-after=3"
    for value, why in [
        ("cut=3", "'cut=3' is not a fault"),
        ("cut-after", "'cut-after' is not a fault"),
        ("cut-after=-1", "needs a whole number of events >= 0"),
        ("drop=1.5", "needs a whole number of events >= 0"),
        ("delay=nan", "needs a whole number"),
        ("drop=1, drop=2", "'drop=2' is given twice"),
        ("cut-after=1, error-after=1", "both end the stream: give one"),
        ("none, drop=1", "'none' is not a fault"),
    ]:
        with pytest.raises(ValueError, match="accepted: cut-after=N, error-after=N") as raised:
            parse_faults(value)
        assert str(raised.value).startswith(f"X-AGUI-Replay-Fault: {value!r}: "), value
        assert why in str(raised.value), value


def test_a_bad_header_is_answered_400_naming_it(client: httpx.Client) -> None:
    body = as_front_end(recorded_inputs(APPROVED)[0])
    log = io.StringIO()
    with serve(ReplayApp(load_recording(APPROVED), speed=0, log=log)) as url:
        answer = faulty(client, url, body, "cut-after=soon")
        served = client.post(url, json=body)  # the next request is served as ever
    assert answer.status_code == 400
    assert answer.headers["access-control-allow-origin"] == "*"
    said = answer.json()
    assert said["code"] == "INVALID_FAULT"
    assert said["message"].startswith("X-AGUI-Replay-Fault: 'cut-after=soon': ")
    assert "drop=N, duplicate=N or garble=N" in said["message"]
    assert served.status_code == 200
    assert "POST / → 400 refused: X-AGUI-Replay-Fault: 'cut-after=soon'" in log.getvalue()


def test_each_fault_changes_that_request_only(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    expected = as_posted(recording.runs[0].events, body)
    log = io.StringIO()
    with serve(ReplayApp(recording, speed=0, log=log)) as url:
        dropped = decode_sse(faulty(client, url, body, "drop=2").content)
        doubled = decode_sse(faulty(client, url, body, "duplicate=2").content)
        garbled = faulty(client, url, body, "garble=2").content
        errored = decode_sse(faulty(client, url, body, "error-after=3").content)
        with pytest.raises(httpx.RemoteProtocolError):
            faulty(client, url, body, "cut-after=3")
        past = decode_sse(faulty(client, url, body, "drop=80, cut-after=99").content)
        plain = decode_sse(client.post(url, json=body).content)
    assert dropped == expected[:2] + expected[3:]
    assert doubled == [*expected[:3], expected[2], *expected[3:]]
    frames = garbled.split(b"\n\n")
    assert decode_sse(b"\n\n".join(frames[:2]) + b"\n\n") == expected[:2]
    assert frames[2].startswith(b"data: {")
    with pytest.raises(json.JSONDecodeError):
        json.loads(frames[2].removeprefix(b"data: "))
    assert decode_sse(b"\n\n".join(frames[3:])) == expected[3:]
    assert errored[:3] == expected[:3]
    assert errored[3]["code"] == "INJECTED_FAULT"
    assert errored[3]["message"].startswith("agui-replay serve error-after=3 (X-AGUI-Replay-Fault)")
    assert past == plain == expected
    said = log.getvalue()
    assert "(80 events, input matched), X-AGUI-Replay-Fault: drop=2" in said
    assert "connection cut after 3 of 80 event(s) (X-AGUI-Replay-Fault: cut-after=3)" in said
    assert "drop=80: this run has only 80 event(s)" in said
    assert "cut-after=99: this run has only 80 event(s)" in said


def test_the_header_replaces_the_flags_for_its_request(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    with serve(ReplayApp(recording, speed=0, cut_after=3)) as url:
        whole = decode_sse(faulty(client, url, body, "none").content)
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(url, json=body)
    assert whole == as_posted(recording.runs[0].events, body)


def test_the_events_before_a_fault_come_first_and_the_fault_after_a_pause(
    client: httpx.Client,
) -> None:
    """``@ag-ui/client`` drops the events it has not applied yet when an error arrives with
    them: the events before a fault are written, and the fault waits."""
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    for fault in ("cut-after=3", "garble=3", "duplicate=2", "drop=3"):
        arrived: list[tuple[float, bytes]] = []
        cut = pytest.raises(httpx.RemoteProtocolError) if "cut" in fault else nullcontext()
        headers = {"X-AGUI-Replay-Fault": fault}
        with (
            serve(ReplayApp(recording, speed=0)) as url,
            client.stream("POST", url, json=body, headers=headers) as response,
            cut,
        ):
            for chunk in response.iter_raw():
                arrived.append((time.monotonic(), chunk))
        before = b"".join(chunk for _, chunk in arrived).split(b"\n\n")[:3]
        before_done = next(at for at, _ in _upto(arrived, len(b"\n\n".join(before)) + 2))
        after = [at for at, _ in arrived if at > before_done]
        gap = (after[0] if after else time.monotonic()) - before_done
        assert gap >= 0.4, (fault, gap)  # GRACE, 0.5 s, less the clocks' slack


def _upto(arrived: list[tuple[float, bytes]], size: int) -> Iterator[tuple[float, bytes]]:
    """The chunk with which ``size`` bytes have arrived."""
    total = 0
    for at, chunk in arrived:
        total += len(chunk)
        if total >= size:
            yield at, chunk
            return


# --- the list of runs and the preflight ----------------------------------------------------


def test_get_runs_lists_what_the_server_holds(client: httpx.Client) -> None:
    with serve(ReplayApp([load_recording(CONVERTER), load_recording(APPROVED)], speed=0)) as url:
        listed = client.get(url.rstrip("/") + "/_agui/runs")
        other = client.get(url)
    assert listed.status_code == 200
    assert listed.headers["access-control-allow-origin"] == "*"
    runs = listed.json()["runs"]
    assert [(r["run"], r["threadId"], r["runId"], r["events"]) for r in runs[:2]] == [
        (0, "kitchen", "run-1", 67),
        (1, "kitchen", "run-2", 67),
    ]
    assert runs[1]["input"] == {
        "messages": 5,
        "resume": 0,
        "lastRole": "user",
        "lastContent": "And 2.5 kg in pounds?",
    }
    assert runs[1]["label"].endswith("run 1")
    assert runs[1]["file"] == str(CONVERTER)
    assert [r["run"] for r in runs] == [0, 1, 2, 3]
    assert runs[3]["input"]["resume"] == 1
    assert other.status_code == 405
    assert "GET /_agui/runs lists the runs" in other.json()["message"]


def test_a_preflight_allows_the_fault_header(client: httpx.Client) -> None:
    with serve(ReplayApp(load_recording(APPROVED), speed=0)) as url:
        answer = client.options(
            url,
            headers={
                "origin": "http://localhost:5173",
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type,x-agui-replay-fault",
            },
        )
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-headers"] == "*"
    assert set(answer.headers["access-control-allow-methods"].split(", ")) == {
        "GET",
        "POST",
        "OPTIONS",
    }


# --- ids as the front end posted them -----------------------------------------------------


def test_a_messages_snapshot_names_the_posted_messages_by_their_posted_ids(
    client: httpx.Client,
) -> None:
    recording = load_recording(CONVERTER)
    second = json.loads(json.dumps(recording.runs[1].input))
    second["messages"][0]["id"] = "page-1"
    second["messages"][4]["id"] = "page-2"
    second["messages"][1]["toolCalls"][0]["id"] = "page-call"
    second["messages"][3]["toolCallId"] = "page-call"
    assert posted_ids(second, recording.runs[1].input) == {
        "user-1": "page-1",
        "run-1-call-1": "page-call",
        "user-2": "page-2",
    }
    with serve(ReplayApp(recording, speed=0)) as url:
        events = decode_sse(client.post(url, json=second).content)
    (snapshot,) = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    ids = [m["id"] for m in snapshot["messages"]]
    assert ids[0] == "page-1"
    assert "page-2" in ids
    assert "user-1" not in ids
    assert "user-2" not in ids
    assert snapshot["messages"][1]["toolCalls"][0]["id"] == "page-call"
    # What the agent minted keeps its recorded ids (the page got them in run 1).
    assert {"run-1-msg-1", "run-1-msg-2", "run-2-msg-1", "run-2-msg-2"} <= set(ids)
    # The state's LangChain messages too.
    (state,) = [e for e in events if e["type"] == "STATE_SNAPSHOT" and "snapshot" in e][-1:]
    assert state["snapshot"]["messages"][0]["id"] == "page-1"
    # Nothing else changed.
    renamed = json.dumps(events)
    for was, now in (("page-1", "user-1"), ("page-2", "user-2"), ("page-call", "run-1-call-1")):
        renamed = renamed.replace(f'"{was}"', f'"{now}"')
    assert json.loads(renamed) == as_posted(recording.runs[1].events, second)


def test_posted_ids_pair_messages_up_to_the_first_other_role() -> None:
    recorded = {
        "messages": [
            {"id": "a", "role": "user", "content": "x"},
            {"id": "act", "role": "activity", "content": {}},
            {"id": "b", "role": "assistant", "content": "y"},
            {"id": "c", "role": "user", "content": "z"},
        ],
        "resume": [{"interruptId": "i-1", "status": "resolved"}],
    }
    posted = {
        "messages": [
            {"id": "A", "role": "user", "content": "x"},
            {"id": "b", "role": "assistant", "content": "y"},
            {"id": "C", "role": "assistant", "content": "z"},
        ],
        "resume": [{"interruptId": "I-1", "status": "resolved"}],
    }
    assert posted_ids(posted, recorded) == {"a": "A", "i-1": "I-1"}


# --- --host ----------------------------------------------------------------------------------


def _outward_address() -> str | None:
    """An address of this machine other than loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route is only looked up
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_host_serves_on_another_address_with_a_warning(tmp_path: Path) -> None:
    body = recorded_inputs(APPROVED)[0]
    process = subprocess.Popen(
        [str(SCRIPT), "serve", str(APPROVED), "--host", "0.0.0.0", "--speed", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://0.0.0.0:"), stop(process)
        port = url.rsplit(":", 1)[1].rstrip("/")
        for address in filter(None, ("127.0.0.1", _outward_address())):
            answer = httpx.post(f"http://{address}:{port}/", json=body, timeout=30.0)
            assert answer.status_code == 200, address
            assert len(decode_sse(answer.content)) == 80
    finally:
        _, err = stop(process)
    assert process.returncode == 0, err
    assert err.startswith(
        "agui-replay serve: warning: --host 0.0.0.0 is not loopback: every machine that can "
        "reach this one on any of its network interfaces can replay the recordings"
    ), err


def test_loopback_hosts_get_no_warning(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "localhost", "127.0.0.2"):
        process = subprocess.Popen(
            [str(SCRIPT), "serve", str(APPROVED), "--host", host, "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline().startswith("http://127.0.0."), host
        _, err = stop(process)
        assert err == "", (host, err)


def test_capture_listens_on_another_address_with_a_warning(tmp_path: Path) -> None:
    events = load_recording(APPROVED).runs[0].events
    agent_body = b"".join(encode_sse(e) for e in events)

    async def agent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": agent_body})

    out = tmp_path / "captured.json"
    with serve(agent) as target:
        process = subprocess.Popen(
            [str(SCRIPT), "capture", "--target", target, "--out", str(out), "--host", "0.0.0.0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://0.0.0.0:"), stop(process)
            port = url.rsplit(":", 1)[1].rstrip("/")
            body = recorded_inputs(APPROVED)[0]
            answer = httpx.post(f"http://127.0.0.1:{port}/", json=body, timeout=30.0)
            assert decode_sse(answer.content) == events
        finally:
            _, err = stop(process)
    assert process.returncode == 0, err
    assert (
        "agui-replay capture: warning: --host 0.0.0.0 is not loopback: every machine that can "
        f"reach this one on any of its network interfaces can run the agent at {target}"
    ) in err
    assert len(load_recording(out).runs) == 1
