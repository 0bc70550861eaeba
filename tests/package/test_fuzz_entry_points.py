"""Fuzzing every entry point: whatever goes in, only an AguiReplayError (or a clean result)
comes out.

Inputs: random bytes and text, random JSON (deep, huge integers, NaN tokens, lone surrogates),
values of the wrong Python type, and mutations of valid data (a real cassette from
``cassettes/``, generated event streams, valid patches) with hostile pieces spliced in.

``AGUI_FUZZ_EXAMPLES`` sets the examples per test (default 300, quick enough for every run);
a thorough run takes 10,000 each::

    AGUI_FUZZ_EXAMPLES=10000 .venv/bin/pytest tests/package/test_fuzz_entry_points.py -q
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay.cassette import Cassette, load_cassette, loads_cassette
from agui_replay.cassette._recordings import load_recording, state_at, verify_recording
from agui_replay.cli._parser import main
from agui_replay.client import Session, apply_events
from agui_replay.errors import AguiReplayError
from agui_replay.events import (
    event_type,
    parse_event,
    parse_events,
    to_wire,
)
from agui_replay.patch import apply_patch, apply_patch_in_place
from agui_replay.sse import SSEDecoder, SSEParser, decode_sse, encode_sse
from agui_replay.strategies import event_streams
from agui_replay.verify import verify_stream

EXAMPLES = int(os.environ.get("AGUI_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
# The smallest real cassette (17 KB): mutations of it reach every part of the format.
REAL = CASSETTES / "test_packing_agent" / "test_a_city_without_a_forecast_packs_nothing.json"
REAL_TEXT = REAL.read_text(encoding="utf-8")
REAL_DOC = json.loads(REAL_TEXT)
REAL_EVENTS: list[dict[str, Any]] = [e for run in REAL_DOC["runs"] for e in run["events"]]


def ours(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call; an AguiReplayError is a fine answer, anything else fails the test."""
    try:
        return call(*args, **kwargs)
    except AguiReplayError:
        return None


# --- hostile pieces -------------------------------------------------------------------------

HOSTILE_TOKENS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "9" * 4301,
    "-" + "9" * 5000,
    "1" * 19,
    "18446744073709551616",
    "1" * 400,
    "[" * 300,
    "]" * 300,
    "[" * 1100 + "]" * 1100,
    '{"a":' * 250 + "1" + "}" * 250,
    '"\\ud800"',
    '"\\udc00x"',
    '"\ud800"',
    "\x00",
    "\ufeff",
    "\u2028",
    '"',
    "\\",
    ",",
    ":",
    "{",
    "}",
    "null",
    "true",
    "-",
    "0.",
    "1e",
    "01",
    '"type"',
    '"RUN_STARTED"',
    '"STATE_DELTA"',
    "\r\n",
    "\n\n",
]


def _nest(depth: int, kind: str, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        as_list = kind == "list" or (kind == "mixed" and level % 2 == 0)
        value = [value] if as_list else {"k": value}
    return value


deep_values = st.builds(
    _nest,
    st.integers(0, 700),
    st.sampled_from(["list", "dict", "mixed"]),
    st.sampled_from([1, "x", None, [], {}]),
)


big_ints = st.integers(10, 6000).map(lambda n: 10**n - 1) | st.integers(2**63, 2**70)
odd_floats = st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308, 5e-324])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
wrong_types = st.sampled_from(
    [
        object(),
        {1, 2},
        frozenset(),
        b"bytes",
        bytearray(b"x"),
        1j,
        Ellipsis,
        type,
        print,
        (1, 2),
        range(3),
        memoryview(b"{}"),
    ]
)
json_values = st.recursive(
    scalars | big_ints | odd_floats,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
hostile_values = st.recursive(
    scalars | big_ints | odd_floats | wrong_types | deep_values,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
        | st.dictionaries(st.integers() | st.none(), children, max_size=2)
    ),
    max_leaves=8,
)


@st.composite
def mutated_text(draw: st.DrawFn, base: str) -> str:
    """``base`` with a few hostile edits: tokens spliced in, slices cut, duplicated, truncated."""
    text = base
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            text = draw(st.sampled_from(HOSTILE_TOKENS))
            continue
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "replace", "cut", "dup", "truncate"]))
        token = draw(st.sampled_from(HOSTILE_TOKENS) | st.text(max_size=4))
        if kind == "insert":
            text = text[:at] + token + text[at:]
        elif kind == "replace":
            end = min(len(text), at + draw(st.integers(1, 12)))
            text = text[:at] + token + text[end:]
        elif kind == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 200)) :]
        elif kind == "dup":
            text = text[:at] + text[at : at + draw(st.integers(1, 200))] + text[at:]
        else:
            text = text[:at]
    return text


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates too: bytes that are no UTF-8


def _hostile_json_text(value: Any) -> str:
    # json.dumps writes NaN/Infinity tokens and any integer's digits (no str() limit here).
    try:
        return json.dumps(value, default=repr)
    except ValueError:  # an integer beyond Python's str conversion limit
        return "9" * 5000


texts = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
    st.lists(st.sampled_from(HOSTILE_TOKENS), max_size=8).map("".join),
    json_values.map(_hostile_json_text),
    mutated_text(REAL_TEXT),
)
byte_inputs = st.one_of(
    st.binary(max_size=300),
    texts.map(_utf8),
)


@st.composite
def mutated_doc(draw: st.DrawFn, doc: Any) -> Any:
    """A copy of JSON ``doc`` with a few subtrees replaced by hostile values (or dropped)."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        node, key = doc, None
        path: list[Any] = []
        while isinstance(node, (dict, list)) and node and draw(st.integers(0, 4)) > 0:
            key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
            path.append((node, key))
            node = node[key]
        if not path:
            continue
        parent, key = path[-1]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = draw(hostile_values)
    return doc


@st.composite
def streams(draw: st.DrawFn) -> list[Any]:
    """A generated valid stream or the real cassette's, mutated (or as it is)."""
    base = draw(event_streams(max_runs=2) | st.just(REAL_EVENTS))
    if draw(st.integers(0, 5)) == 0:
        return list(base)
    mutated = draw(mutated_doc(base))
    return mutated if isinstance(mutated, list) else [mutated]


# --- cassettes ------------------------------------------------------------------------------


@FUZZ
@given(
    data=st.one_of(texts, byte_inputs, mutated_text(REAL_TEXT).map(_utf8)),
    validate=st.sampled_from(["full", "shape"]),
)
def test_loads_cassette_text(data: str | bytes, validate: Any) -> None:
    ours(loads_cassette, data, validate=validate)


@FUZZ
@given(doc=mutated_doc(REAL_DOC) | hostile_values, validate=st.sampled_from(["full", "shape"]))
def test_cassette_documents(doc: Any, validate: Any) -> None:
    # from_dict on the value, and the text of the value through the reader
    ours(Cassette.from_dict, doc, validate=validate)
    ours(loads_cassette, _hostile_json_text(doc), validate=validate)


@FUZZ
@given(
    path=hostile_values
    | st.text(max_size=40)
    | st.sampled_from(["a\x00b.json", "", ".", "/", "x" * 5000, "/proc/self/mem"]),
    validate=hostile_values | st.sampled_from(["full", "shape"]),
)
def test_load_cassette_arguments(path: Any, validate: Any) -> None:
    ours(load_cassette, path, validate=validate)
    ours(loads_cassette, path, validate=validate)
    ours(load_recording, path)


# --- recordings and the command line --------------------------------------------------------

SUFFIXES = [".json", ".jsonl", ".ndjson", ".sse", ".txt", ".log", ""]


def _sse_text(events: list[Any]) -> str:
    return "".join(f"data: {_hostile_json_text(e)}\n\n" for e in events)


def _jsonl_text(events: list[Any]) -> str:
    return "".join(_hostile_json_text(e) + "\n" for e in events)


file_texts = st.one_of(
    texts,
    mutated_text(REAL_TEXT),
    streams().map(_sse_text),
    streams().map(_jsonl_text),
    streams().map(_sse_text).flatmap(mutated_text),
    streams().map(_hostile_json_text),
)


@FUZZ
@given(text=file_texts, suffix=st.sampled_from(SUFFIXES), at=st.integers(-5, 50))
def test_load_recording_and_walk(text: str, suffix: str, at: int, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.mktemp("rec") / f"input{suffix}"
    path.write_bytes(_utf8(text))
    recording = ours(load_recording, path)
    if recording is None:
        return
    ours(state_at, recording)
    if recording.events:
        ours(state_at, recording, at % len(recording.events))
    ours(verify_recording, recording, "strict")


COMMANDS = [
    ["show"],
    ["show", "--full", "--run", "0"],
    ["verify"],
    ["verify", "--json", "--mode", "strict"],
    ["state"],
    ["state", "--at", "-1"],
    ["view", "-o", "-"],
    ["diff"],
    ["diff", "--raw"],
]


@FUZZ
@given(text=file_texts, suffix=st.sampled_from(SUFFIXES), command=st.sampled_from(COMMANDS))
def test_cli_commands(text: str, suffix: str, command: list[str], tmp_path_factory: Any) -> None:
    path = tmp_path_factory.mktemp("cli") / f"input{suffix}"
    path.write_bytes(_utf8(text))
    files = [str(path), str(REAL)] if command[0] == "diff" else [str(path)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([command[0], *files, *command[1:]])
    assert code in (0, 1, 2)
    assert "Traceback" not in err.getvalue()
    assert "bug in agui-replay" not in err.getvalue(), err.getvalue()
    if code == 2:
        assert err.getvalue().startswith(f"agui-replay {command[0]}: error: ")


# --- events and SSE -------------------------------------------------------------------------


@FUZZ
@given(data=texts | byte_inputs | hostile_values | streams().map(lambda s: s[0] if s else {}))
def test_event_functions(data: Any) -> None:
    ours(parse_event, data, index=3, source="x")
    ours(parse_events, data)
    ours(parse_events, [data, data])
    ours(to_wire, data)
    ours(encode_sse, data)
    ours(event_type, data)


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


sse_bytes = st.one_of(
    byte_inputs,
    streams().map(_sse_text).map(_utf8),
    streams().map(_sse_text).flatmap(mutated_text).map(_utf8),
    st.lists(
        st.sampled_from(
            [b"data: ", b"event: x", b"id: 1", b"retry: ", b"9" * 5000, b": c", b"\r", b"\n"]
        )
        | st.sampled_from(HOSTILE_TOKENS).map(_utf8),
        max_size=12,
    ).map(b"".join),
)


@FUZZ
@given(
    data=sse_bytes.flatmap(splits),
    strict=st.booleans(),
    limit=st.sampled_from([1, 16, 100, 16 * 1024 * 1024]),
)
def test_sse_decoding(data: list[bytes], strict: bool, limit: int) -> None:
    decoder = SSEDecoder(limit, strict=strict)
    parser = SSEParser(limit, strict=strict)
    for chunk in data:
        ours(decoder.feed, chunk)
        ours(parser.feed, chunk)
    ours(decoder.close)
    ours(parser.close)
    ours(decode_sse, b"".join(data), strict=strict, max_frame_bytes=limit)


@FUZZ
@given(limit=hostile_values, strict=hostile_values, chunk=hostile_values | texts)
def test_sse_arguments(limit: Any, strict: Any, chunk: Any) -> None:
    decoder = ours(SSEDecoder, limit, strict=strict)
    ours(SSEParser, limit, strict=strict)
    ours(SSEDecoder().feed, chunk)
    ours(SSEParser().feed, chunk)
    ours(decode_sse, chunk)
    if decoder is not None:
        ours(decoder.feed, chunk)


# --- patches --------------------------------------------------------------------------------

OPS = ["add", "remove", "replace", "move", "copy", "test"]
pointers = st.lists(
    st.sampled_from(["a", "b", "0", "1", "-", "~0", "~1", "", "~", "x/y"]), max_size=4
)
valid_ops = st.builds(
    lambda op, path, source, value: {
        "op": op,
        "path": "".join("/" + p for p in path),
        "from": "".join("/" + p for p in source),
        "value": value,
    },
    st.sampled_from(OPS),
    pointers,
    pointers,
    json_values,
)


@FUZZ
@given(
    doc=json_values | hostile_values | st.just({"a": [1, {"b": 2}], "0": None}),
    ops=st.lists(valid_ops, max_size=4).flatmap(lambda ops: st.just(ops) | mutated_doc(ops))
    | hostile_values,
)
def test_apply_patch(doc: Any, ops: Any) -> None:
    ours(apply_patch, doc, ops)
    ours(apply_patch_in_place, doc, ops)


# --- the client and the verifier ------------------------------------------------------------


@FUZZ
@given(
    events=streams() | hostile_values,
    verify=st.booleans(),
    mode=st.sampled_from(["client", "strict"]),
)
def test_session_and_verify_stream(events: Any, verify: bool, mode: Any) -> None:
    ours(verify_stream, events, mode)
    session = ours(Session, verify=verify, mode=mode)
    if session is None:
        return
    with contextlib.suppress(AguiReplayError):
        session.apply_all(events).finish()
    # whatever was applied reads back without error
    session.state  # noqa: B018
    session.messages  # noqa: B018
    ours(apply_events, events, verify=verify, mode=mode)


@FUZZ
@given(state=hostile_values, messages=hostile_values, mode=hostile_values, verify=hostile_values)
def test_session_arguments(state: Any, messages: Any, mode: Any, verify: Any) -> None:
    ours(Session, state=state, messages=messages, mode=mode, verify=verify)
    ours(Session, state=state)
    ours(Session, messages=messages)
    ours(verify_stream, [state], mode)


# --- the endpoint ---------------------------------------------------------------------------


def _endpoint_agent(ctx: Any) -> None:
    ctx.say("hi")


_ENDPOINT: Any = None


def _endpoint() -> Any:
    global _ENDPOINT
    if _ENDPOINT is None:
        from agui_replay.server import agui_app

        _ENDPOINT = agui_app(_endpoint_agent)
    return _ENDPOINT


def _valid_input_body() -> Any:
    return {
        "threadId": "t",
        "runId": "r",
        "messages": [],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


endpoint_bodies = st.one_of(
    byte_inputs.map(lambda b: b if isinstance(b, bytes) else _utf8(b)),
    hostile_values.map(lambda v: _utf8(_hostile_json_text(v))),
    st.builds(
        lambda key, value: _utf8(_hostile_json_text({**_valid_input_body(), key: value})),
        st.sampled_from([*sorted(_valid_input_body()), "resume", "parentRunId", "x"]),
        hostile_values,
    ),
)


@FUZZ
@given(
    body=endpoint_bodies,
    content_type=st.sampled_from(
        ["application/json", "text/plain", "application/json; charset=latin-1", ""]
    ),
)
def test_endpoint_answers_every_body_with_a_stream_or_a_4xx(body: bytes, content_type: str) -> None:
    # Through the ASGI app in process (tests/server/test_endpoint_hardening.py: over loopback):
    # a body is either run (200, an SSE stream) or refused with a 4xx {code, message}; never
    # a 500, never an exception out of the app.
    import httpx

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=_endpoint(), raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = {"content-type": content_type} if content_type else {}
            return await client.post("/", content=body, headers=headers)

    import asyncio

    response = asyncio.run(post())
    if response.status_code == 200:
        assert response.headers["content-type"].startswith("text/event-stream")
        return
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    problem = response.json()
    assert set(problem) >= {"code", "message"}, problem
