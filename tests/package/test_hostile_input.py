"""Hostile inputs, one test each: every entry point raises an AguiReplayError
(with the place and what to fix), never a RecursionError, ValueError, TypeError...

The limits are agui_replay/_limits.py's (docs/reference/errors.md lists them);
tests/package/test_fuzz_entry_points.py throws random input at the same entry points.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any

import pytest

from agui_replay._limits import (
    MAX_JSON_DEPTH,
    MAX_JSON_INT_DIGITS,
    MAX_SSE_RETRY_DIGITS,
    depth_limited_dumps,
)
from agui_replay.cassette import Cassette, load_cassette, load_recording, loads_cassette
from agui_replay.cassette._lines import document_line
from agui_replay.cli._parser import main
from agui_replay.client import Session
from agui_replay.errors import (
    AguiReplayError,
    CassetteError,
    EventDecodeError,
    InputFileError,
    InvalidArgumentError,
    PatchError,
    SSEDecodeError,
)
from agui_replay.events import parse_event, parse_events, to_wire
from agui_replay.patch import apply_patch
from agui_replay.sse import SSEDecoder, decode_sse
from agui_replay.verify import verify_stream
from tests.plugin.test_plugin_modes import CONFTEST, HELLO, TEST_AGENT, run

RUN = {"threadId": "t", "runId": "r"}
STARTED = {"type": "RUN_STARTED", **RUN}
INPUT = {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": []}
INPUT["forwardedProps"] = {}


def deep(n: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(n):
        value = [value]
    return value


def cassette_text(*events: Any) -> str:
    return json.dumps({"version": 2, "runs": [{"input": INPUT, "events": [STARTED, *events]}]})


def with_token(text: str, token: str) -> str:
    """``text`` (a cassette) with the placeholder string "TOKEN" replaced by raw JSON text."""
    return text.replace('"TOKEN"', token)


RAW = {"type": "RAW", "event": "TOKEN"}

# --- deep JSON ------------------------------------------------------------------------------


def test_a_broken_cassette_nested_1000_deep_is_a_cassette_error_with_a_line() -> None:
    text = '{"version": 2,\n"runs": [' + "[" * 1000 + "]" * 999
    with pytest.raises(CassetteError, match=f"MAX_JSON_DEPTH={MAX_JSON_DEPTH}") as info:
        loads_cassette(text)
    assert info.value.line == 2
    # the line finder on such text answers None rather than recursing
    assert document_line(text, ["runs", 0, 5]) in (None, 2)
    assert document_line("[" * 100_000, [0, 0]) is not None


def test_a_valid_cassette_nested_too_deep_is_refused_at_load() -> None:
    text = cassette_text({"type": "STATE_SNAPSHOT", "snapshot": deep(MAX_JSON_DEPTH)})
    with pytest.raises(CassetteError, match="nested deeper than MAX_JSON_DEPTH") as info:
        loads_cassette(text)
    assert info.value.line == 1
    # the deepest document allowed loads (a state of 195 levels in 5 levels of envelope)
    ok = cassette_text({"type": "STATE_SNAPSHOT", "snapshot": deep(MAX_JSON_DEPTH - 5)})
    assert loads_cassette(ok).runs[0].events[1]["type"] == "STATE_SNAPSHOT"


def test_parse_event_of_10000_deep_brackets() -> None:
    with pytest.raises(EventDecodeError, match="MAX_JSON_DEPTH"):
        parse_event("[" * 10000 + "]" * 10000)
    with pytest.raises(EventDecodeError, match="line 1 column"):
        parse_event('{"type": "RAW", "event": ' + "[" * 10000 + "]" * 10000 + "}")


def test_an_sse_frame_nested_too_deep_is_an_sse_decode_error() -> None:
    frame = b'data: {"type":"RAW","event":' + b"[" * 5000 + b"]" * 5000 + b"}\n\n"
    with pytest.raises(SSEDecodeError, match="MAX_JSON_DEPTH"):
        decode_sse(frame)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "STATE_SNAPSHOT", "snapshot": deep(500)},
        {"type": "RUN_FINISHED", **RUN, "result": deep(500)},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "u", "role": "user", "content": "x", "extra": deep(500)}],
        },
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "x",
            "content": {"a": deep(500)},
        },
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m",
            "role": "assistant",
            "metadata": {"a": deep(500)},
        },
    ],
    ids=lambda event: event["type"],
)
@pytest.mark.parametrize("verify", [True, False])
def test_session_refuses_a_value_nested_500_deep(event: dict[str, Any], verify: bool) -> None:
    session = Session(verify=verify)
    session.apply(STARTED)
    with pytest.raises(EventDecodeError, match="MAX_JSON_DEPTH") as info:
        session.apply(event)
    assert info.value.index == 1
    assert info.value.event_type == event["type"]


def test_session_refuses_a_tool_call_result_content_nested_500_deep() -> None:
    # content is a string in AG-UI: the verifier refuses it; unverified, the copy does
    session = Session(verify=False)
    session.apply_all(
        [STARTED, {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}]
    )
    result = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": deep(500)}
    with pytest.raises(AguiReplayError):
        session.apply(result)
    with pytest.raises(AguiReplayError):
        Session().apply_all([STARTED, result])


def test_session_refuses_a_deep_or_nan_initial_state() -> None:
    with pytest.raises(InvalidArgumentError, match="MAX_JSON_DEPTH"):
        Session(state=deep(500))
    with pytest.raises(InvalidArgumentError, match="NaN"):
        Session(state={"a": float("nan")})


@pytest.mark.parametrize("where", ["expected", "actual"])
def test_a_failing_patch_test_with_a_deep_value(where: str) -> None:
    doc, value = ({"a": 1}, deep(5000)) if where == "expected" else ({"a": deep(5000)}, 1)
    with pytest.raises(PatchError, match=r"test failed: the value at '/a' is .*\.\.\."):
        apply_patch(doc, [{"op": "test", "path": "/a", "value": value}])


def test_a_failing_patch_test_with_a_huge_integer() -> None:
    with pytest.raises(PatchError, match="an integer of about 5000 digits"):
        apply_patch({"a": 10**5000}, [{"op": "test", "path": "/a", "value": 1}])


# --- big numbers ----------------------------------------------------------------------------


def test_a_cassette_with_a_4301_digit_integer() -> None:
    text = with_token(cassette_text(RAW), "9" * (MAX_JSON_INT_DIGITS + 1))
    with pytest.raises(CassetteError, match=f"MAX_JSON_INT_DIGITS={MAX_JSON_INT_DIGITS}"):
        loads_cassette(text)
    exact = with_token(cassette_text(RAW), "9" * MAX_JSON_INT_DIGITS)
    assert loads_cassette(exact).runs[0].events[1]["event"] == 10**MAX_JSON_INT_DIGITS - 1


def test_parse_event_of_a_4301_digit_integer() -> None:
    with pytest.raises(EventDecodeError, match="MAX_JSON_INT_DIGITS"):
        parse_event('{"type": "RAW", "event": ' + "9" * 4301 + "}")


def test_an_sse_retry_of_5000_digits_is_ignored() -> None:
    decoder = SSEDecoder(strict=True)
    body = b"retry: " + b"9" * 5000 + b'\ndata: {"type":"RAW","event":1}\n\n'
    assert decoder.feed(body) == [{"type": "RAW", "event": 1}]
    parser = decoder._parser
    assert parser.feed(b"retry: " + b"1" * MAX_SSE_RETRY_DIGITS + b"\ndata: x\n\n")[0].retry == int(
        "1" * MAX_SSE_RETRY_DIGITS
    )


# --- NaN and Infinity -----------------------------------------------------------------------


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_and_infinity_are_refused_as_not_json(token: str) -> None:
    with pytest.raises(CassetteError, match="line 1"):
        loads_cassette(with_token(cassette_text(RAW), token))
    with pytest.raises(EventDecodeError, match="not valid JSON"):
        parse_event('{"type": "RAW", "event": ' + token + "}")
    with pytest.raises(SSEDecodeError):
        decode_sse(b'data: {"type": "RAW", "event": ' + token.encode() + b"}\n\n")


def test_a_nan_handed_to_a_session_is_refused_not_turned_into_null() -> None:
    session = Session()
    session.apply(STARTED)
    with pytest.raises(EventDecodeError, match="NaN"):
        session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"a": [1, float("nan")]}})
    assert session.state == {}
    session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"a": None}})  # null is fine
    assert session.state == {"a": None}


# --- wrong argument types -------------------------------------------------------------------


def test_sse_decoder_feed_of_a_str() -> None:
    with pytest.raises(InvalidArgumentError, match=r"encode the text first"):
        SSEDecoder().feed("data: {}\n\n")  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", ["x", 0, -1, 1.5, None, True])
def test_sse_decoder_with_a_bad_max_frame_bytes(limit: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="max_frame_bytes"):
        SSEDecoder(limit)


def test_parse_events_of_an_int() -> None:
    with pytest.raises(InvalidArgumentError, match="iterable"):
        parse_events(5)  # type: ignore[arg-type]
    # one event where a stream is expected: the message says what to call instead
    with pytest.raises(InvalidArgumentError, match="for one event use parse_event"):
        parse_events({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})  # type: ignore[arg-type]


def test_to_wire_of_a_list() -> None:
    with pytest.raises(EventDecodeError, match="not list"):
        to_wire([1])  # type: ignore[arg-type]


@pytest.mark.parametrize("messages", [[5], 5, "hi", [["a"]]])
def test_session_with_messages_that_are_not_messages(messages: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="messages"):
        Session(messages=messages)


def test_load_cassette_of_a_path_with_a_nul(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="cannot read"):
        load_cassette("a\x00b.json")
    with pytest.raises(InputFileError, match="cannot read"):
        load_recording("a\x00b.json")
    with pytest.raises(InvalidArgumentError):
        load_cassette(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        loads_cassette(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("base_path", ["x", "v1", "/v 1", "/v1?x=1", 5])
def test_a_provider_base_path_that_is_no_url_path_is_refused_at_load(base_path: Any) -> None:
    doc = {"version": 2, "meta": {"provider": {"base_path": base_path}}, "runs": []}
    with pytest.raises(CassetteError, match=r"meta\.provider\.base_path"):
        loads_cassette(json.dumps(doc))


@pytest.mark.parametrize("base_path", ["", "/", "/v1", "/openai/v1"])
def test_a_provider_base_path_that_is_a_url_path_loads(base_path: str) -> None:
    doc = {"version": 2, "meta": {"provider": {"base_path": base_path}}, "runs": []}
    assert loads_cassette(json.dumps(doc)).meta["provider"]["base_path"] == base_path


def test_a_replayed_input_with_one_added_field_names_the_field(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    run(pytester, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    path = pytester.path / HELLO
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["runs"][0]["input"]["context"]  # so the replayed input has one field more
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = run(pytester, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*starts from another input than the recorded one*"])
    result.stdout.fnmatch_lines(["*/context: recorded <missing> != now []*"])
    assert "is not JSON serializable" not in result.stdout.str()


# --- the command line -----------------------------------------------------------------------

FILES = {
    "deep.json": '{"version": 2, "runs": [' + "[" * 1000 + "]" * 999,
    "deep-valid.json": cassette_text({"type": "STATE_SNAPSHOT", "snapshot": deep(500)}),
    "big.json": with_token(cassette_text(RAW), "9" * 4301),
    "nan.json": with_token(cassette_text(RAW), "NaN"),
    "retry.sse": "retry: " + "9" * 5000 + "\ndata: " + json.dumps(STARTED) + "\n\n",
    "deep.sse": 'data: {"type":"RAW","event":' + "[" * 2000 + "]" * 2000 + "}\n\n",
    "deep.jsonl": '{"type":"RAW","event":' + "[" * 2000 + "]" * 2000 + "}\n",
    "deep-array.json": '[{"type":"RAW","event":' + "[" * 2000 + "]" * 2000 + "}]",
    "nan.jsonl": '{"type":"RAW","event":NaN}\n',
}
COMMANDS = [["show"], ["verify"], ["verify", "--json"], ["state"], ["view", "-o", "-"], ["diff"]]


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_on_a_hostile_file_is_one_message_not_a_traceback(
    name: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(FILES[name], encoding="utf-8")
    extra = [str(path)] if command[0] == "diff" else []
    code = main([command[0], str(path), *extra, *command[1:]])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "bug in agui-replay" not in err
    if name == "retry.sse":  # the absurd retry: is ignored, the stream is fine
        assert code == 0, err
        return
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"agui-replay {command[0]}: error: {path}")


def test_a_patch_operation_named_by_a_list_is_no_type_error() -> None:
    # found by the fuzzer: the schema check looked the op name up in a dict
    verify_stream(
        [
            STARTED,
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "a",
                "activityType": "p",
                "patch": [{"op": []}],
            },
        ]
    )


def test_an_absurd_cassette_version_is_quoted_briefly() -> None:
    with pytest.raises(CassetteError, match="an integer of about 5000 digits"):
        Cassette.from_dict({"version": 10**5000, "runs": []})


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_the_depth_limited_encoder_holds_its_limit_when_its_shared_wrappers_are_busy() -> None:
    """``depth_limited_dumps`` writes through one shared chain of wrapper lists, under a lock
    it does not wait for: a call made while the chain is in use (here from inside the outer
    call, since orjson reads an enum's ``value`` in Python) is answered at once, through
    wrappers of its own (waiting for the lock would hang here), and both calls still refuse
    exactly what is nested deeper than the limit."""
    limited = depth_limited_dumps(10)
    inner: dict[str, Any] = {}

    class Member(enum.Enum):
        ONE = 1

        @property
        def value(self) -> Any:  # type: ignore[override]
            inner["fits"] = limited(_nested(10))
            with pytest.raises(TypeError, match=r"[Rr]ecursion"):
                limited(_nested(11))
            return "one"

    assert limited([Member.ONE]) == b'["one"]'
    assert inner["fits"] == json.dumps(_nested(10), separators=(",", ":")).encode()
    assert limited(_nested(10)) == inner["fits"]  # the shared chain is free again
    with pytest.raises(TypeError, match=r"[Rr]ecursion"):
        limited(_nested(11))
    with pytest.raises(TypeError, match=r"[Rr]ecursion"):
        limited([_nested(9), Member.ONE, _nested(10)])  # the outer call's own limit
