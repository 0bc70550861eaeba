"""An agent on AWS Bedrock (boto3's ``bedrock-runtime`` client) recorded and replayed with no
AWS credentials (pytester, as a user writes tests).

The user's tests build ``boto3.client("bedrock-runtime", region_name="us-east-1")`` with no
endpoint: the requests go to ``bedrock-runtime.us-east-1.amazonaws.com``, a known provider
host (provider ``bedrock``), and never leave the process. Recording redirects them to a
FakeProvider serving Bedrock's ConverseStream (``--agui-upstream bedrock=URL``), with dummy
AWS credentials in the environment; the replays run with every ``AWS_*`` variable deleted, as
on a CI runner without secrets. A conftest watches the process's sockets: nothing may try the
instance metadata address (169.254.169.254), and no replay opens a connection at all.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")

from agui_replay.providers import (  # noqa: E402
    FakeProvider,
    LoopbackServer,
    ProviderRequest,
    ToolCallDelta,
)
from tests.plugin.test_offline_namespace import _namespace_problem  # noqa: E402

ACCESS_KEY = "AKIAIOSFODNN7RECORDS"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYRECORDINGKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLErecordingTOKEN0123456789"

CONFTEST = """
import sys

import pytest

TOUCHED = []


def _watch(event, args):
    if event == "socket.connect":
        TOUCHED.append(("connect", str(args[1])))
    elif event == "socket.getaddrinfo":
        TOUCHED.append(("lookup", str(args[0])))


sys.addaudithook(_watch)


@pytest.fixture(autouse=True)
def no_metadata_service():
    del TOUCHED[:]
    yield
    assert not [t for t in TOUCHED if t[0] == "connect" and "169.254.169.254" in t[1]], TOUCHED
"""

AGENT = """
import datetime
import json

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Weather of a city",
                "inputSchema": {"json": {"type": "object"}},
            }
        }
    ]
}


def user(text):
    return [{"role": "user", "content": [{"text": text}]}]


def stream_text(ctx, response):
    with ctx.assistant_message() as message:
        for event in response["stream"]:
            delta = event.get("contentBlockDelta", {}).get("delta", {})
            if "text" in delta:
                message.delta(delta["text"])


def chat(client):
    def agent(ctx):
        response = client.converse_stream(modelId=MODEL, messages=user(ctx.last_user_text()))
        stream_text(ctx, response)

    return agent


def weather(client):
    def agent(ctx):
        messages = user(ctx.last_user_text())
        response = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOLS)
        uses, call = [], None
        for event in response["stream"]:
            if "contentBlockStart" in event:
                use = event["contentBlockStart"]["start"]["toolUse"]
                call = ctx.tool_call(use["name"])
                uses.append((use["toolUseId"], use["name"], call))
            elif "contentBlockDelta" in event and call is not None:
                call.args(event["contentBlockDelta"]["delta"]["toolUse"]["input"])
            elif "contentBlockStop" in event:
                call = None  # its arguments are whole; it ends with its result below
        content, results = [], []
        for use_id, name, handle in uses:
            arguments = handle.parse_args()
            answer = {"city": arguments["city"], "sky": "sunny"}
            handle.result(json.dumps(answer))
            content.append({"toolUse": {"toolUseId": use_id, "name": name, "input": arguments}})
            results.append({"toolResult": {"toolUseId": use_id, "content": [{"json": answer}]}})
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": results})
        stream_text(ctx, client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOLS))

    return agent
"""

TESTS = """
import boto3
from botocore.config import Config

from my_agent import chat, weather


def bedrock():
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1}),
    )


def test_chat(agui, agui_snapshot):
    events = agui.run(chat(bedrock()), "hello there")
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert deltas == ["echo:", " hello", " there"]
    assert events == agui_snapshot


def test_weather_tool(agui, agui_snapshot):
    events = agui.run(weather(bedrock()), "weather in Paris?")
    kinds = [e["type"] for e in events]
    assert kinds.count("TOOL_CALL_ARGS") == 2
    assert "TOOL_CALL_RESULT" in kinds, events[-1]
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "Paris", " is", " sunny."
    ]
    assert events == agui_snapshot
"""

PASSED = 2


def _bedrock_model(request: ProviderRequest) -> Iterator[object]:
    """Bedrock stand-in: echo the user's words, or call get_weather once, then answer it."""
    last = request.messages[-1]
    if any("toolResult" in part for part in last["content"]):
        yield from ("Paris", " is", " sunny.")
        return
    text = " ".join(part.get("text", "") for part in last["content"])
    if request.tool_names:
        yield ToolCallDelta('{"city": ', name="get_weather", id="tooluse_weather0001")
        yield ToolCallDelta('"Paris"}')
        return
    yield "echo:"
    for word in text.split():
        yield " " + word


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No AWS variable at all (profiles, regions, tokens...); pytester's HOME has no ~/.aws."""
    for name in list(os.environ):
        if name.upper().startswith("AWS_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _snapshots(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.agui.jsonl"))}


def _cassettes(root: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted(root.rglob("cassettes/**/*.json"))}


def _fresh_boto3() -> None:
    """As in a new process: boto3's default session (and the credentials it resolved and
    keeps) is made again, so each pytester run finds the environment it is given."""
    boto3.DEFAULT_SESSION = None


def _record(pytester: pytest.Pytester, env: pytest.MonkeyPatch, *extra: str) -> FakeProvider:
    _fresh_boto3()
    env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    env.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    env.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    upstream = FakeProvider(function=_bedrock_model)
    server: LoopbackServer
    with upstream.serve() as server:
        done = pytester.runpytest(
            "-p", "no:cacheprovider", "--agui-record", f"--agui-upstream=bedrock={server.url}",
            *extra,
        )  # fmt: skip
        done.assert_outcomes(passed=PASSED)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.delenv(name)
    return upstream


def _replay(pytester: pytest.Pytester) -> None:
    _fresh_boto3()
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=PASSED)
    assert f"0 cassette(s) recorded, {PASSED} replayed" in replay.stdout.str()


def test_bedrock_records_with_credentials_and_replays_without_any(
    pytester: pytest.Pytester, no_aws: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(my_agent=textwrap.dedent(AGENT), test_bedrock=textwrap.dedent(TESTS))
    upstream = _record(pytester, no_aws, "--snapshot-update")

    # the stand-in got the real client's signed requests, addressed to the real host's paths
    first = upstream.requests[0]
    assert first.api == "bedrock.converse"
    assert first.path.startswith("/model/anthropic.claude-3-5-haiku-20241022-v1")
    assert first.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert first.headers["x-amz-security-token"] == SESSION_TOKEN
    assert len(upstream.requests) == 3

    cassettes = _cassettes(pytester.path)
    assert sorted(cassettes) == ["test_chat.json", "test_weather_tool.json"]
    stored = json.dumps(cassettes)
    for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, "AWS4-HMAC-SHA256", "Signature="):
        assert secret not in stored
    for cassette in cassettes.values():
        assert cassette["version"] == 3
        for interaction in cassette["runs"][0]["interactions"]:
            assert interaction["provider"] == "bedrock"
            headers = {k.lower(): v for k, v in interaction["request"]["headers"].items()}
            assert headers.get("authorization", "<scrubbed>") == "<scrubbed>"
            assert headers.get("x-amz-security-token", "<scrubbed>") == "<scrubbed>"
            assert "x-amz-date" not in headers
    assert len(cassettes["test_weather_tool.json"]["runs"][0]["interactions"]) == 2
    snapshots = _snapshots(pytester.path)
    assert len(snapshots) == PASSED

    # CI without secrets: no AWS variable, the stand-in gone; twice, and off the network
    for _ in range(2):
        _replay(pytester)
    problem = _namespace_problem()
    if problem is None:
        done = subprocess.run(
            [
                "unshare", "-n", "sh", "-c",
                f'ip link set lo up && exec "{sys.executable}" -m pytest -p no:cacheprovider',
            ],
            cwd=pytester.path, capture_output=True, text=True, timeout=300,
            env={k: v for k, v in os.environ.items() if not k.upper().startswith("AWS_")},
        )  # fmt: skip
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert f"{PASSED} passed" in out, out

    # recorded again (new signatures, new request ids): the snapshots do not move
    _record(pytester, no_aws)
    _replay(pytester)
    assert _snapshots(pytester.path) == snapshots


CHECKS = """
import socket

import boto3
import pytest
from botocore.config import Config

from agui_replay.errors import NetworkBlockedError
from my_agent import chat

import conftest


def test_replay_signs_with_placeholders_and_opens_no_socket(agui):
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )
    credentials = client._request_signer._credentials
    assert credentials is not None and credentials.method == "env"
    if agui.replay_only:  # the placeholders, not the recording's key
        assert credentials.access_key == "AKIAAGUIREPLAYPLACE0"
    events = agui.run(chat(client), "hello there")
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"][0] == "echo:"
    if agui.replay_only:
        assert not [t for t in conftest.TOUCHED if t[0] == "connect"], conftest.TOUCHED


def test_the_metadata_address_is_refused(agui):
    agui.run(lambda ctx: ctx.say("no model call"))
    if not agui.replay_only:
        return
    with pytest.raises(NetworkBlockedError, match="169.254.169.254"):
        socket.create_connection(("169.254.169.254", 80), timeout=1)
    agui.guard.violations.clear()  # refused, as it must be: not this test's failure
"""


def test_replay_needs_no_credentials_and_never_asks_the_metadata_service(
    pytester: pytest.Pytester, no_aws: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(my_agent=textwrap.dedent(AGENT), test_checks=textwrap.dedent(CHECKS))
    _record(pytester, no_aws)
    _replay(pytester)


CLOCKS = """
import datetime

import boto3
from botocore.config import Config

from my_agent import chat

SEEN = []


def test_chat(agui):
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
    )

    def agent(ctx):
        SEEN.append(datetime.datetime.now(datetime.timezone.utc))
        chat(client)(ctx)

    agui.run(agent, "hello there")
    assert [moment.year for moment in SEEN] == [2025]  # the run sees the frozen instant


def test_seen_again(agui):  # the second test keeps PASSED at 2
    agui.run(lambda ctx: ctx.say("no model call"))
"""


def test_the_frozen_clock_does_not_reach_the_sigv4_signature(
    pytester: pytest.Pytester, no_aws: pytest.MonkeyPatch
) -> None:
    # AWS refuses a request signed minutes away from its own clock: recording from AWS itself
    # with the default frozen clock works only if botocore signs with the real time.
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(my_agent=textwrap.dedent(AGENT), test_clocks=textwrap.dedent(CLOCKS))
    before = datetime.datetime.now(datetime.timezone.utc)
    upstream = _record(pytester, no_aws)
    after = datetime.datetime.now(datetime.timezone.utc)
    signed = datetime.datetime.strptime(
        upstream.requests[0].headers["x-amz-date"], "%Y%m%dT%H%M%SZ"
    ).replace(tzinfo=datetime.timezone.utc)
    assert before - datetime.timedelta(seconds=1) <= signed <= after
    import botocore.auth  # restored after the run: the next test's client freezes as usual

    assert botocore.auth.get_current_datetime is botocore.compat.get_current_datetime
    _replay(pytester)


EARLY = """
import boto3
from botocore.config import Config

from my_agent import chat

# built at import, as applications do: in a replay with no AWS variable it has no credentials
CLIENT = boto3.client(
    "bedrock-runtime", region_name="us-east-1", config=Config(retries={"total_max_attempts": 1})
)


def test_chat(agui):
    events = agui.run(chat(CLIENT), "hello there")
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"][0] == "echo:"


def test_again(agui):
    events = agui.run(chat(CLIENT), "hello again")
    assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"][-1] == " again"
"""


def test_a_client_built_at_import_with_no_credentials_replays(
    pytester: pytest.Pytester, no_aws: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(my_agent=textwrap.dedent(AGENT), test_early=textwrap.dedent(EARLY))
    _record(pytester, no_aws)
    for module in ("test_early", "my_agent"):  # imported again, as in a new process
        sys.modules.pop(module, None)
    _replay(pytester)
