"""``faults.timeout()`` on a model provider's requests sent by ``requests``, ``aiohttp``,
``urllib.request`` (``http.client``) and ``boto3`` (``urllib3``), through real pytest runs.

The project is what a user has: small agents that call OpenAI's chat completions API with each
of those libraries (no SDK, the URL written whole) and one that calls AWS Bedrock with boto3.
A FakeProvider on 127.0.0.1 stands in for both providers while ``test_record.py`` records one
conversation per agent; it is stopped before the faulted tests run. Each faulted test replays
its cassette with ``faults.timeout()`` and checks that the agent's code caught the library's
own read-timeout exception (or, retried by urllib3's ``Retry``, reached the recording);
afterwards every cassette file is byte-identical to what was recorded. The tape's requests
(a tool's own) are checked the same way in ``test_faults_tape.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import aiohttp  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest
import requests  # noqa: F401

import agui_replay.faults
import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from agui_replay.providers import FakeProvider, LoopbackServer
from tests.support.project import cassette_bytes

boto3 = pytest.importorskip("boto3")

AGENTS = """
import asyncio
import json
import urllib.request

import aiohttp
import boto3
import requests
from botocore.config import Config

URL = "https://api.openai.com/v1/chat/completions"
HEADERS = {"authorization": "Bearer sk-timeouts-test-key", "content-type": "application/json"}


def _body(question):
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}


def ask_requests(question, session=requests):
    response = session.post(URL, json=_body(question), headers=HEADERS, timeout=30)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"]


def ask_aiohttp(question):
    async def ask():
        async with aiohttp.ClientSession(raise_for_status=True) as session:
            async with session.post(URL, json=_body(question), headers=HEADERS) as response:
                return (await response.json())["choices"][0]["message"]["content"]

    return asyncio.run(ask())


def ask_urllib(question):
    data = json.dumps(_body(question)).encode()
    request = urllib.request.Request(URL, data=data, headers=HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["choices"][0]["message"]["content"]


def ask_bedrock(question):
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIAIOSFODNN7TIMEOUTS",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYTIMEOUTSKEY",
        config=Config(retries={"total_max_attempts": 1}),
    )
    response = client.converse(
        modelId="anthropic.claude-3-haiku-20240307-v1:0",
        messages=[{"role": "user", "content": [{"text": question}]}],
    )
    return response["output"]["message"]["content"][0]["text"]


def assistant(ask, failures=None, **options):
    # answers with the model's words; with failures=[...] it keeps what the call raised
    def agent(ctx):
        try:
            answer = ask(ctx.last_user_text(), **options)
        except Exception as exc:
            if failures is None:
                raise
            failures.append(exc)
            ctx.say("the model did not answer in time")
            return
        ctx.say(answer)

    return agent
"""

ASKS = ("requests", "aiohttp", "urllib", "bedrock")

RECORD = "from agents import *\nfrom agui_replay.assertions import message_text\n" + "".join(
    f"""

def test_{ask}(agui):
    events = agui.run(assistant(ask_{ask}), "what colour is the sky?")
    assert message_text(events) == "The sky is blue."
"""
    for ask in ASKS
)

FAULTS = """
import asyncio
import socket

import aiohttp
import botocore.exceptions
import pytest
import requests
import urllib3
from agents import *
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from agui_replay import faults
from agui_replay.assertions import message_text

QUESTION = "what colour is the sky?"


def timed_out(agui, ask, **options):
    failures = []
    events = agui.run(assistant(ask, failures=failures, **options), QUESTION)
    assert message_text(events) == "the model did not answer in time"
    assert len(failures) == 1
    return failures[0]


@pytest.mark.agui(cassette="test_record/test_requests.json", faults=[faults.timeout()])
def test_requests_read_timeout(agui):
    error = timed_out(agui, ask_requests)
    assert isinstance(error, requests.exceptions.ReadTimeout)
    assert isinstance(error.args[0], urllib3.exceptions.ReadTimeoutError)
    assert "HTTPSConnectionPool(host='api.openai.com', port=443)" in str(error)


@pytest.mark.agui(cassette="test_record/test_requests.json", faults=[faults.timeout(times=2)])
def test_requests_retried_by_urllib3_reaches_the_recording(agui):
    session = requests.Session()
    retry = Retry(total=3, read=3, allowed_methods=None, backoff_factor=0)
    session.mount("https://", HTTPAdapter(max_retries=retry))
    events = agui.run(assistant(ask_requests, session=session), QUESTION)
    assert message_text(events) == "The sky is blue."


@pytest.mark.agui(cassette="test_record/test_requests.json", faults=[faults.timeout(times=3)])
def test_requests_retried_past_its_read_retries(agui):
    session = requests.Session()
    retry = Retry(total=3, read=2, allowed_methods=None, backoff_factor=0)
    session.mount("https://", HTTPAdapter(max_retries=retry))
    error = timed_out(agui, ask_requests, session=session)
    assert isinstance(error, requests.exceptions.ConnectionError)  # MaxRetryError inside
    assert "Max retries exceeded" in str(error)
    assert "ReadTimeoutError" in str(error)


@pytest.mark.agui(cassette="test_record/test_aiohttp.json", faults=[faults.timeout()])
def test_aiohttp_read_timeout(agui):
    error = timed_out(agui, ask_aiohttp)
    assert isinstance(error, aiohttp.SocketTimeoutError)  # what a real read timeout raises
    assert isinstance(error, aiohttp.ServerTimeoutError)
    assert isinstance(error, asyncio.TimeoutError)


@pytest.mark.agui(cassette="test_record/test_urllib.json", faults=[faults.timeout()])
def test_urllib_read_timeout(agui):
    error = timed_out(agui, ask_urllib)
    assert isinstance(error, socket.timeout)  # TimeoutError, as http.client raises it


@pytest.mark.agui(cassette="test_record/test_bedrock.json", faults=[faults.timeout()])
def test_bedrock_read_timeout(agui):
    error = timed_out(agui, ask_bedrock)
    assert isinstance(error, botocore.exceptions.ReadTimeoutError)
    assert "bedrock-runtime.us-east-1.amazonaws.com" in str(error)


@pytest.mark.agui(cassette="test_record/test_urllib.json", faults=[faults.timeout(times=2)])
def test_urllib_after_its_own_retry_loop(agui):
    def ask(question):
        for _ in range(3):  # the agent's own retries
            try:
                return ask_urllib(question)
            except TimeoutError:
                continue
        raise TimeoutError("gave up")

    events = agui.run(assistant(ask), QUESTION)
    assert message_text(events) == "The sky is blue."
"""

FAULTED = 7


def _answer(request: object) -> Iterator[str]:
    yield from ("The sky ", "is blue.")


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with FakeProvider(function=_answer).serve() as server:
        yield server


def test_read_timeouts_of_provider_requests_through_each_library(
    pytester: pytest.Pytester, upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(agents=AGENTS, test_record=RECORD)
    record = pytester.runpytest(
        "-p", "no:cacheprovider", "--agui-record", "test_record.py",
        f"--agui-upstream={upstream.base_url}", f"--agui-upstream=bedrock={upstream.url}",
    )  # fmt: skip
    record.assert_outcomes(passed=len(ASKS))
    upstream.close()  # the faulted replays have nowhere to go but the cassettes
    recorded = cassette_bytes(pytester.path)
    assert sorted(recorded) == sorted(f"test_record/test_{ask}.json" for ask in ASKS)

    pytester.makepyfile(test_faults=FAULTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore", "test_faults.py")
    result.assert_outcomes(passed=FAULTED)
    assert f"replayed with faults: {FAULTED} tests" in result.stdout.str()
    assert cassette_bytes(pytester.path) == recorded
