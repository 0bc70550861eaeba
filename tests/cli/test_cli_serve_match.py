"""``agui-replay serve`` for front ends: each posted input gets the recorded run it matches,
whatever order a front end posts them in; faults (a cut connection, a RUN_ERROR, a slow start);
the preflights a browser sends.

The conversations are the shipped recipe cassettes: run 1 streams a recipe and stops on an
approval interrupt, run 2 resumes it (approved in one cassette, rejected in the other). A front
end posts them with ids of its own: its thread and run ids, random user message ids, and the
interrupt id the served stream gave it (the recorded input names the interrupt differently).
"""

from __future__ import annotations

import copy
import io
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_replay.cassette import load_recording
from agui_replay.cli import main, replay_app
from agui_replay.cli._serve import ReplayApp
from agui_replay.cli._serve_match import closeness, difference, input_view
from agui_replay.errors import InvalidArgumentError
from agui_replay.server.testing import serve
from agui_replay.sse import decode_sse, encode_sse
from tests.cli.test_cli import as_posted
from tests.support.serve_cli import serving

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "cassettes" / "test_recipe_cassettes"
APPROVED = RECIPES / "test_confirming_then_approving_the_recipe.json"
REJECTED = RECIPES / "test_confirming_then_rejecting_restores_the_recipe.json"


def recorded_inputs(path: Path) -> list[dict[str, Any]]:
    return [run["input"] for run in json.loads(path.read_text(encoding="utf-8"))["runs"]]


def as_front_end(body: dict[str, Any], thread: str = "browser-thread") -> dict[str, Any]:
    """A recorded input as a front end would post it: its own thread, run and user message ids,
    and the interrupt id the served run 1 stream announced."""
    posted = copy.deepcopy(body)
    posted["threadId"] = thread
    posted["runId"] = str(uuid.uuid4())
    for message in posted["messages"]:
        if message["role"] == "user":
            message["id"] = str(uuid.uuid4())
    for entry in posted.get("resume", []):
        entry["interruptId"] = "run-1-interrupt-1"
    return posted


def post(client: httpx.Client, url: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(url, json=body, headers={"accept": "text/event-stream"})


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30.0) as http:
        yield http


def test_a_resume_posted_first_gets_the_recorded_resume_run(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    first, second = (as_front_end(b) for b in recorded_inputs(APPROVED))
    log = io.StringIO()
    with serve(ReplayApp(recording, speed=0, log=log)) as url:
        # The front end opens on the interrupt (say, a page reload) and approves it first.
        answered = decode_sse(post(client, url, second).content)
        assert answered == as_posted(recording.runs[1].events, second)
        assert answered[0]["threadId"] == "browser-thread"
        # Then the conversation from its start: run 1, not "the next run in order".
        answered = decode_sse(post(client, url, first).content)
        assert answered == as_posted(recording.runs[0].events, first)
        assert answered[-1]["outcome"]["type"] == "interrupt"
    assert log.getvalue().splitlines() == [
        "POST / → run 1 (19 events, input matched)",
        "POST / → run 0 (80 events, input matched)",
    ]


def test_a_folder_answers_from_the_conversation_the_input_belongs_to(
    client: httpx.Client,
) -> None:
    recordings = [load_recording(p) for p in sorted(RECIPES.glob("*.json"))]
    rejected = recordings[[r.path for r in recordings].index(REJECTED)]
    approved = recordings[[r.path for r in recordings].index(APPROVED)]
    log = io.StringIO()
    with serve(ReplayApp(recordings, speed=0, log=log, root=RECIPES)) as url:
        # Both cassettes resume the same interrupt: the resume status tells them apart.
        for body, expected in (
            (recorded_inputs(REJECTED)[1], rejected.runs[1]),
            (recorded_inputs(APPROVED)[1], approved.runs[1]),
        ):
            posted = as_front_end(body)
            assert decode_sse(post(client, url, posted).content) == as_posted(
                expected.events, posted
            )
    assert log.getvalue().splitlines() == [
        f"POST / → {REJECTED.name} run 1 (17 events, input matched)",
        f"POST / → {APPROVED.name} run 1 (19 events, input matched)",
    ]


def test_equal_inputs_are_served_in_order_and_the_thread_stays_with_its_recording(
    client: httpx.Client,
) -> None:
    # Two cassettes open with the same input ("carbonara"): the first request gets the first
    # file's run, the next the other's; a thread that was answered from one file keeps it.
    streams = RECIPES / "test_the_recipe_streams_into_the_state.json"
    recordings = [load_recording(APPROVED), load_recording(streams)]
    opening = recorded_inputs(APPROVED)[0]
    assert opening["messages"] == recorded_inputs(streams)[0]["messages"]
    log = io.StringIO()
    with serve(ReplayApp(recordings, speed=0, log=log)) as url:
        for thread in ("a", "b", "b", "a"):
            post(client, url, as_front_end(opening, thread))
    served = [line.split(" run ")[0].rsplit("/", 1)[-1] for line in log.getvalue().splitlines()]
    assert served == [APPROVED.name, streams.name, streams.name, APPROVED.name]


def test_an_input_no_run_matches_gets_a_404_naming_the_closest_run(
    client: httpx.Client,
) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    body["messages"][0]["content"] = "lasagne"
    log = io.StringIO()
    with serve(ReplayApp(recording, speed=0, log=log)) as url:
        refused = post(client, url, body)
        resumed = as_front_end(recorded_inputs(APPROVED)[1])
        resumed["resume"][0]["status"] = "cancelled"
        refused_resume = post(client, url, resumed)
    assert refused.status_code == 404
    answer = refused.json()
    assert answer["code"] == "NO_MATCHING_RUN"
    assert answer["closestRun"] == "run 0"
    assert answer["difference"] == "/messages/0/content: posted 'lasagne', recorded 'carbonara'"
    assert (
        f"the closest is run 0 of {APPROVED}, first difference: /messages/0/content"
        in answer["message"]
    )
    assert "--in-order" in answer["message"]
    assert refused.headers["access-control-allow-origin"] == "*"
    assert refused_resume.json()["difference"] == (
        "/resume/0/status: posted 'cancelled', recorded 'resolved'"
    )
    assert log.getvalue().splitlines()[0] == (
        "POST / → 404 refused: no recorded run matches; the closest is run 0, first "
        "difference: /messages/0/content: posted 'lasagne', recorded 'carbonara'"
    )


def test_the_closest_run_is_the_one_that_agrees_on_the_most_fields(
    client: httpx.Client,
) -> None:
    # Run 1's input with other words from the user: both runs differ at the same first place,
    # but run 1 agrees on everything after it (the assistant's call, the resume, the state)
    # and run 0 on almost nothing.
    body = as_front_end(recorded_inputs(APPROVED)[1])
    body["messages"][0]["content"] = "lasagne"
    with serve(ReplayApp(load_recording(APPROVED), speed=0, log=io.StringIO())) as url:
        refused = post(client, url, body)
    assert refused.status_code == 404
    assert refused.json()["closestRun"] == "run 1"
    assert refused.json()["difference"] == (
        "/messages/0/content: posted 'lasagne', recorded 'carbonara'"
    )


def test_in_order_and_a_fixed_run_ignore_the_input(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    stranger = as_front_end(recorded_inputs(APPROVED)[0])
    stranger["messages"][0]["content"] = "anything at all"
    with serve(replay_app(recording, speed=0, in_order=True)) as url:
        got = [len(decode_sse(post(client, url, stranger).content)) for _ in range(3)]
    assert got == [80, 19, 80]
    with serve(replay_app(recording, speed=0, run=-1)) as url:
        assert len(decode_sse(post(client, url, stranger).content)) == 19


def test_an_input_with_nothing_to_match_on_is_served_in_order(client: httpx.Client) -> None:
    # A probe (curl with no messages) matches no recorded run and has nothing to be told
    # apart by: it gets the runs in turn rather than a 404.
    probe = {"threadId": "t", "runId": "r", "messages": []}
    log = io.StringIO()
    with serve(ReplayApp(load_recording(APPROVED), speed=0, log=log)) as url:
        got = [len(decode_sse(post(client, url, probe).content)) for _ in range(3)]
    assert got == [80, 19, 80]
    assert log.getvalue().splitlines()[0] == "POST / → run 0 (80 events, in order)"


def test_a_capture_without_inputs_is_served_in_order(client: httpx.Client, tmp_path: Path) -> None:
    events = load_recording(APPROVED).events
    capture = tmp_path / "capture.sse"
    capture.write_bytes(b"".join(encode_sse(e) for e in events))
    body = as_front_end(recorded_inputs(APPROVED)[1])
    with serve(replay_app(load_recording(capture), speed=0)) as url:
        # No recorded input to match: the first request gets the first run, whatever it says.
        assert len(decode_sse(post(client, url, body).content)) == 80
        assert len(decode_sse(post(client, url, body).content)) == 19


# --- faults ------------------------------------------------------------------------------------


def test_error_after_ends_the_stream_with_a_run_error(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    log = io.StringIO()
    with serve(ReplayApp(recording, speed=0, error_after=3, log=log)) as url:
        response = post(client, url, body)
    events = decode_sse(response.content)
    assert events[:3] == as_posted(recording.runs[0].events, body)[:3]
    assert events[3] == {
        "type": "RUN_ERROR",
        "message": "agui-replay serve --error-after 3: an injected fault after 3 of 80 "
        "recorded event(s)",
        "code": "INJECTED_FAULT",
    }
    assert len(events) == 4
    assert "RUN_ERROR sent after 3 of 80 event(s) (--error-after)" in log.getvalue()


def test_cut_after_drops_the_connection_mid_stream(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    log = io.StringIO()
    received = bytearray()

    def read(url: str) -> None:
        with client.stream("POST", url, json=body) as response:
            assert response.status_code == 200
            for chunk in response.iter_bytes():
                received.extend(chunk)

    with serve(ReplayApp(recording, speed=0, cut_after=5, log=log)) as url:
        with pytest.raises(httpx.RemoteProtocolError):
            read(url)
        # The server goes on serving: the next request is cut at the same place.
        with pytest.raises(httpx.RemoteProtocolError):
            post(client, url, body)
    assert decode_sse(bytes(received)) == as_posted(recording.runs[0].events, body)[:5]
    assert "connection cut after 5 of 80 event(s) (--cut-after)" in log.getvalue()
    # A planned cut is not an error with a traceback in the server's log.
    assert not [r for r in caplog.records if r.name.startswith("uvicorn")]


def test_delay_sends_the_headers_and_holds_the_first_event(client: httpx.Client) -> None:
    recording = load_recording(APPROVED)
    body = as_front_end(recorded_inputs(APPROVED)[0])
    log = io.StringIO()
    # The response starts at once (a front end shows its "thinking" state) and the client
    # that gives up during the delay has received no event.
    with (
        serve(ReplayApp(recording, speed=0, delay=600, log=log)) as url,
        client.stream("POST", url, json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
    for _ in range(200):  # the server notices the disconnect on its own loop
        if "client disconnected" in log.getvalue():
            break
        time.sleep(0.05)
    assert "client disconnected after 0 of 80 event(s)" in log.getvalue()


def test_the_faults_and_options_refuse_bad_values() -> None:
    recording = load_recording(APPROVED)
    with pytest.raises(InvalidArgumentError, match="cut_after must be a whole number"):
        ReplayApp(recording, cut_after=-1)
    with pytest.raises(InvalidArgumentError, match="choose one"):
        ReplayApp(recording, cut_after=1, error_after=1)
    with pytest.raises(InvalidArgumentError, match="delay must be"):
        ReplayApp(recording, delay=float("nan"))
    with pytest.raises(InvalidArgumentError, match="run 2 is out of range: 2 run"):
        ReplayApp(recording, run=2)


# --- the browser's preflights --------------------------------------------------------------


def test_preflights_allow_any_origin_and_a_private_network_caller(
    client: httpx.Client,
) -> None:
    with serve(replay_app(load_recording(APPROVED), speed=0)) as url:
        plain = client.options(
            url,
            headers={
                "origin": "http://localhost:5173",
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
        )
        private = client.options(
            url,
            headers={
                "origin": "https://app.example.com",
                "access-control-request-method": "POST",
                "access-control-request-private-network": "true",
            },
        )
    assert plain.status_code == private.status_code == 204
    for answer in (plain, private):
        assert answer.headers["access-control-allow-origin"] == "*"
        assert "POST" in answer.headers["access-control-allow-methods"]
        assert answer.headers["access-control-allow-headers"] == "*"
    assert "access-control-allow-private-network" not in plain.headers
    assert private.headers["access-control-allow-private-network"] == "true"


# --- the command line ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cut-after", "-1"], "--cut-after -1: give how many events to send first"),
        (["--error-after", "-2"], "--error-after -2: give how many events"),
        (["--cut-after", "1", "--error-after", "1"], "both end the stream: give one"),
        (["--delay", "-1"], "--delay -1: give the seconds to wait before the first event"),
        (["--run", "1", "--in-order"], "--run N serves one run every time"),
        (["--run", "5"], "--run 5 is out of range: the cassettes under"),
    ],
)
def test_bad_serve_options_exit_2_with_the_fix(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(RECIPES), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_a_folder_without_cassettes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(tmp_path)]) == 2
    assert "a folder with no cassette (*.json) in it" in capsys.readouterr().err


def test_the_console_script_serves_a_folder_with_faults(tmp_path: Path) -> None:
    with serving(str(RECIPES), "--error-after", "2") as server:
        body = as_front_end(recorded_inputs(REJECTED)[1])
        events = decode_sse(httpx.post(server.url, json=body, timeout=30.0).content)
        assert [e["type"] for e in events] == ["RUN_STARTED", "TOOL_CALL_START", "RUN_ERROR"]
    assert server.returncode == 0, server.err
    lines = server.err.splitlines()
    assert lines[0].startswith(f"serving {RECIPES} (3 cassette(s), 5 run(s), instant, ")
    assert "--error-after 2" in lines[0]
    assert lines[1] == f"POST / → {REJECTED.name} run 1 (17 events, input matched)"


def test_the_first_difference_reads_as_a_fix() -> None:
    said = {"messages": [{"id": "u-1", "role": "user", "content": "hi"}]}
    answered = {
        "messages": [
            {"id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "role": "user", "content": "hi"},
            {"id": "m", "role": "assistant", "content": "hello"},
        ]
    }
    resumed = {**said, "resume": [{"interruptId": "i-9", "status": "resolved"}]}
    # The ids differ and do not count; what is missing on either side is named.
    assert difference(input_view(said), input_view(answered)) == (
        "messages: 1 posted, 2 recorded (the recorded /messages/1 is an assistant message 'hello')"
    )
    assert difference(input_view(said), input_view(resumed)) == (
        "resume: 0 entries posted, 1 recorded (a resume answers the interrupt the run before "
        "ended on)"
    )
    assert difference(input_view(resumed), input_view(said)) == (
        "resume: 1 entry posted, 0 recorded (a resume answers the interrupt the run before "
        "ended on)"
    )
    assert difference(input_view(resumed), input_view(resumed)) == ""
    # Within a message, the place is a pointer; a key only one side has is "nothing" there.
    call = {"id": "c", "function": {"name": "f"}}
    called = {"messages": [{"id": "a", "role": "assistant", "toolCalls": [call]}]}
    assert difference(input_view(said), input_view(called)) == (
        "/messages/0/role: posted 'user', recorded 'assistant'"
    )
    plain = {"messages": [{"id": "b", "role": "assistant"}]}
    assert difference(input_view(called), input_view(plain)) == (
        "/messages/0/toolCalls: posted [{'id': 'posted-call-1', 'name': 'f', 'arguments': None}],"
        " recorded nothing"
    )


def test_closeness_counts_what_agrees_not_where_the_first_difference_is() -> None:
    def view(words: str, *more: str, state: Any = None, tools: Any = None) -> dict[str, Any]:
        messages = [{"id": f"m{i}", "role": "user", "content": w} for i, w in enumerate(more)]
        first = {"id": "u", "role": "user", "content": words}
        return input_view({"messages": [first, *messages], "state": state, "tools": tools})

    posted = view("lasagne", "and a salad", "for two")
    # The same first difference; one agrees on the two messages after it.
    assert closeness(posted, view("carbonara", "and a salad", "for two")) == (4, -1)
    assert closeness(posted, view("carbonara")) == (2, -3)
    # State and tools count once each, whatever their size; a missing state is an empty one.
    assert closeness(posted, view("lasagne", "and a salad", "for two", state={})) == (5, 0)
    assert closeness(posted, view("lasagne", "and a salad", "for two", state={"n": 1})) == (4, -1)
    assert closeness(posted, view("lasagne", "and a salad", "for two", tools=[{}])) == (4, -1)
    # Among runs that agree as much, the one with fewer differences is closer.
    assert closeness(posted, view("lasagne", "and a salad")) == (4, -1)
    assert closeness(posted, view("lasagne", "and a salad", "for one", "today")) == (4, -2)
