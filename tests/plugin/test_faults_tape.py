"""Faults on a tool's own recorded requests (``host=``), through real pytest runs (pytester).

The project is what a user has: a weather tool written once per HTTP library the tape serves
(``requests``, ``httpx`` and ``httpx2`` sync and async, ``aiohttp``, ``urllib.request``), each
asking a weather API on 127.0.0.1 for a JSON answer (``/weather``) and a forecast streamed in
three HTTP chunks (``/forecast``), and an agent that reports what its tool got or that it
failed. ``test_record.py`` records one conversation per library with the stand-in API up; the
API is stopped before the faulted tests run, which point at those cassettes with ``cassette=``
and name the API's host in each fault. Each checks what the tool's caller saw: the exception
the library raises on a dropped connection, a read timeout or a body it cannot parse, the 503
status, or (through a ``Retry`` that retries) the recorded answer. Afterwards every cassette
file is byte-identical to what was recorded.
"""

from __future__ import annotations

import aiohttp  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import httpx  # noqa: F401
import httpx2  # noqa: F401
import pytest
import requests  # noqa: F401

import agui_replay.faults
import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.project import cassette_bytes, free_port
from tests.support.weather_api import WEATHER_CONFTEST

TOOLS = """
import json
import os
import urllib.request

import aiohttp
import httpx
import httpx2
import requests

BASE = "http://127.0.0.1:" + os.environ["WEATHER_PORT"]


def weather_requests(city, session=requests):
    response = session.get(BASE + "/weather", params={"city": city}, timeout=5)
    response.raise_for_status()
    return response.json()


def forecast_requests(city, session=requests):
    with session.get(
        BASE + "/forecast", params={"city": city}, stream=True, timeout=5
    ) as response:
        response.raise_for_status()
        return [piece.decode() for piece in response.iter_content(chunk_size=None)]
"""

# the httpx tools, written once and again for httpx2 (the same API under another name)
HTTPX_TOOLS = """

def weather_httpx(city):
    response = httpx.get(BASE + "/weather", params={"city": city})
    response.raise_for_status()
    return response.json()


def forecast_httpx(city):
    with httpx.stream("GET", BASE + "/forecast", params={"city": city}) as response:
        response.raise_for_status()
        return [piece.decode() for piece in response.iter_raw()]


async def weather_httpx_async(city):
    async with httpx.AsyncClient() as client:
        response = await client.get(BASE + "/weather", params={"city": city})
        response.raise_for_status()
        return response.json()


async def forecast_httpx_async(city):
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", BASE + "/forecast", params={"city": city}) as r:
            r.raise_for_status()
            return [piece.decode() async for piece in r.aiter_raw()]
"""

TOOLS += HTTPX_TOOLS + HTTPX_TOOLS.replace("httpx", "httpx2")
TOOLS += """

async def weather_aiohttp(city):
    async with aiohttp.ClientSession(raise_for_status=True) as session:
        async with session.get(BASE + "/weather", params={"city": city}) as response:
            return await response.json()


async def forecast_aiohttp(city):
    async with aiohttp.ClientSession(raise_for_status=True) as session:
        async with session.get(BASE + "/forecast", params={"city": city}) as response:
            return [piece.decode() async for piece, _ in response.content.iter_chunks()]


def weather_urllib(city):
    with urllib.request.urlopen(BASE + "/weather?city=" + city, timeout=5) as response:
        return json.loads(response.read())


def forecast_urllib(city):
    pieces = []
    with urllib.request.urlopen(BASE + "/forecast?city=" + city, timeout=5) as response:
        while piece := response.read1(65536):
            pieces.append(piece.decode())
    return pieces
"""

AGENTS = """
import asyncio
import inspect

import tools


def forecaster(library, city="Paris", failures=None, **options):
    # asks the library's weather tool, then its forecast tool; reports what it got, or
    # (with failures=[...]) keeps the exception and says the service failed
    weather = getattr(tools, "weather_" + library)
    forecast = getattr(tools, "forecast_" + library)

    async def both():
        if inspect.iscoroutinefunction(weather):
            return await weather(city, **options), await forecast(city, **options)
        return weather(city, **options), forecast(city, **options)

    def agent(ctx):
        try:
            got, days = asyncio.run(both())
        except Exception as exc:
            if failures is None:
                raise
            failures.append(exc)
            ctx.say("the weather service failed")
            return
        ctx.say(f"{got['city']}: {got['sky']}, " + "".join(days))

    return agent
"""

LIBRARIES = (
    "requests",
    "httpx",
    "httpx_async",
    "httpx2",
    "httpx2_async",
    "aiohttp",
    "urllib",
)

SAID = "Paris: sunny, Paris mon sunny;Paris tue rain;Paris wed snow;"

RECORD = (
    "from agents import forecaster\nfrom agui_replay.assertions import message_text\n"
    f"SAID = {SAID!r}\n"
) + "".join(
    f"""

def test_{library}(agui):
    events = agui.run(forecaster("{library}"))
    assert message_text(events) == SAID
"""
    for library in LIBRARIES
)

FAULTS_HEAD = """
import asyncio
import http.client
import json
import os
import urllib.error

import aiohttp
import httpx
import httpx2
import pytest
import requests
from agents import forecaster

from agui_replay import faults
from agui_replay.assertions import message_text

SAID = "Paris: sunny, Paris mon sunny;Paris tue rain;Paris wed snow;"
API = "127.0.0.1:" + os.environ["WEATHER_PORT"]  # the weather API's host, as its URLs write it
WEATHER, FORECAST = 0, 1  # its recorded requests, in order

CUT = {
    "requests": requests.exceptions.ChunkedEncodingError,
    "httpx": httpx.RemoteProtocolError,
    "httpx_async": httpx.RemoteProtocolError,
    "httpx2": httpx2.RemoteProtocolError,
    "httpx2_async": httpx2.RemoteProtocolError,
    "aiohttp": aiohttp.ClientPayloadError,
    "urllib": http.client.IncompleteRead,
}
STATUS = {
    "requests": requests.exceptions.HTTPError,
    "httpx": httpx.HTTPStatusError,
    "httpx_async": httpx.HTTPStatusError,
    "httpx2": httpx2.HTTPStatusError,
    "httpx2_async": httpx2.HTTPStatusError,
    "aiohttp": aiohttp.ClientResponseError,
    "urllib": urllib.error.HTTPError,
}
TIMEOUT = {
    "requests": requests.exceptions.ReadTimeout,
    "httpx": httpx.ReadTimeout,
    "httpx_async": httpx.ReadTimeout,
    "httpx2": httpx2.ReadTimeout,
    "httpx2_async": httpx2.ReadTimeout,
    "aiohttp": aiohttp.SocketTimeoutError,  # a ServerTimeoutError, as a real read timeout
    "urllib": TimeoutError,  # socket.timeout
}


def status_of(exc):
    response = getattr(exc, "response", None)
    if response is not None:
        return response.status_code
    return getattr(exc, "status", None) or exc.code


def failed(agui, library, **options):
    failures = []
    events = agui.run(forecaster(library, failures=failures, **options))
    assert message_text(events) == "the weather service failed"
    assert len(failures) == 1
    return failures[0]
"""

PER_LIBRARY = """

@pytest.mark.agui(
    cassette="test_record/test_{lib}.json",
    faults=[faults.cut(after_chunks=1, host=API, request=FORECAST)],
)
def test_{lib}_forecast_cut(agui):
    assert isinstance(failed(agui, "{lib}"), CUT["{lib}"])


@pytest.mark.agui(
    cassette="test_record/test_{lib}.json",
    faults=[faults.cut(after_chunks=0, host=API, request=WEATHER)],
)
def test_{lib}_weather_cut_before_its_body(agui):
    assert isinstance(failed(agui, "{lib}"), CUT["{lib}"])


@pytest.mark.agui(
    cassette="test_record/test_{lib}.json", faults=[faults.status(503, host=API)]
)
def test_{lib}_service_unavailable(agui):
    error = failed(agui, "{lib}")
    assert isinstance(error, STATUS["{lib}"])
    assert status_of(error) == 503


@pytest.mark.agui(
    cassette="test_record/test_{lib}.json",
    faults=[faults.delay(0.05, host="127.0.0.1", request=FORECAST)],  # any port of the host
)
def test_{lib}_slow_forecast(agui):
    events = agui.run(forecaster("{lib}"))
    assert message_text(events) == SAID


@pytest.mark.agui(
    cassette="test_record/test_{lib}.json",
    faults=[faults.malformed(after_chunks=0, host=API, request=WEATHER)],
)
def test_{lib}_weather_unparsable(agui):
    error = failed(agui, "{lib}")
    assert isinstance(error, ValueError)  # json.JSONDecodeError, requests' own subclass of it


@pytest.mark.agui(
    cassette="test_record/test_{lib}.json",
    faults=[faults.malformed(after_chunks=2, host=API, request=FORECAST)],
)
def test_{lib}_forecast_garbled(agui):
    events = agui.run(forecaster("{lib}"))
    assert "{{\\"truncated\\": " in message_text(events)


@pytest.mark.agui(cassette="test_record/test_{lib}.json", faults=[faults.timeout(host=API)])
def test_{lib}_read_timeout(agui):
    assert isinstance(failed(agui, "{lib}"), TIMEOUT["{lib}"])
"""

RETRYING = """

def retrying_session(**retry):
    # what a user mounts to retry: urllib3's Retry, in requests' adapter
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=Retry(backoff_factor=0, **retry)))
    return session


@pytest.mark.agui(
    cassette="test_record/test_requests.json",
    faults=[faults.status(503, headers={"retry-after": "0"}, times=2, host=API)],
)
def test_requests_retries_a_503_and_reaches_the_recording(agui):
    session = retrying_session(total=3, status_forcelist=[503])
    events = agui.run(forecaster("requests", session=session))
    assert message_text(events) == SAID


@pytest.mark.agui(
    cassette="test_record/test_requests.json",
    faults=[faults.status(503, times=3, host=API)],
)
def test_requests_gives_up_after_its_retries(agui):
    session = retrying_session(total=2, status_forcelist=[503])
    error = failed(agui, "requests", session=session)
    assert isinstance(error, requests.exceptions.RetryError)


@pytest.mark.agui(
    cassette="test_record/test_requests.json",
    faults=[faults.timeout(times=2, host=API, request=FORECAST)],
)
def test_requests_retries_a_read_timeout_and_reaches_the_recording(agui):
    session = retrying_session(total=3, read=3)
    events = agui.run(forecaster("requests", session=session))
    assert message_text(events) == SAID


@pytest.mark.agui(
    cassette="test_record/test_aiohttp.json", faults=[faults.timeout(host=API)]
)
def test_aiohttp_read_timeout_is_an_asyncio_timeout(agui):
    assert isinstance(failed(agui, "aiohttp"), asyncio.TimeoutError)
"""

PER_TEST = 7
EXTRA = 4


@pytest.fixture
def recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.setenv("WEATHER_PORT", str(free_port()))
    pytester.makeconftest(WEATHER_CONFTEST)
    pytester.makepyfile(tools=TOOLS, agents=AGENTS, test_record=RECORD)
    monkeypatch.setenv("WEATHER_UP", "1")
    record = pytester.runpytest("-p", "no:cacheprovider", "--agui-record", "test_record.py")
    record.assert_outcomes(passed=len(LIBRARIES))
    monkeypatch.delenv("WEATHER_UP")  # the faulted replays have nowhere to go but the cassettes
    files = cassette_bytes(pytester.path)
    assert sorted(files) == sorted(f"test_record/test_{lib}.json" for lib in LIBRARIES)
    return files


def test_faults_on_a_tools_requests_through_every_library(
    pytester: pytest.Pytester, recorded: dict[str, bytes]
) -> None:
    tests = FAULTS_HEAD + "".join(PER_LIBRARY.format(lib=lib) for lib in LIBRARIES) + RETRYING
    pytester.makepyfile(test_faults=tests)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore", "test_faults.py")
    total = PER_TEST * len(LIBRARIES) + EXTRA
    result.assert_outcomes(passed=total)
    assert f"replayed with faults: {total} tests" in result.stdout.str()
    assert cassette_bytes(pytester.path) == recorded
    # --agui-record leaves a faulted test's cassette alone: it replays, the API still down
    again = pytester.runpytest(
        "-p", "no:cacheprovider", "-W", "ignore", "test_faults.py", "-k", "requests",
        "--agui-record",
    )  # fmt: skip
    again.assert_outcomes(passed=PER_TEST + 3)
    assert cassette_bytes(pytester.path) == recorded


MISTAKES = """
import os

import pytest
from agents import forecaster

from agui_replay import faults

API = "127.0.0.1:" + os.environ["WEATHER_PORT"]
CASSETTE = "test_record/test_httpx.json"


@pytest.mark.agui(cassette=CASSETTE, faults=[faults.cut(after_chunks=1, host="api.other.test")])
def test_fault_on_a_host_never_recorded(agui):
    agui.run(forecaster("httpx"))


@pytest.mark.agui(cassette=CASSETTE, faults=[faults.timeout(host=API, request=2)])
def test_fault_on_a_request_never_recorded(agui):
    agui.run(forecaster("httpx"))


@pytest.mark.agui(cassette=CASSETTE, faults=[faults.status(500, host="api.openai.com")])
def test_fault_on_a_provider_host(agui):
    agui.run(forecaster("httpx"))


@pytest.mark.agui(cassette=CASSETTE, faults=[faults.delay(0.01, host=API, request=1)])
def test_fault_on_a_request_the_test_does_not_make(agui):
    agui.run(lambda ctx: ctx.say("no forecast today"))
"""


def test_host_fault_mistakes_fail_naming_what_the_cassette_has(
    pytester: pytest.Pytester, recorded: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mistakes=MISTAKES)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_mistakes.py")
    result.assert_outcomes(failed=4)
    out = " ".join(result.stdout.str().split())
    port = __import__("os").environ["WEATHER_PORT"]
    api = f"127.0.0.1:{port}"
    assert (
        "faults.cut(after_chunks=1, host='api.other.test', request=0): the cassette recorded "
        f"no request to api.other.test; it recorded requests to {api}. Point host= at one"
    ) in out
    assert (
        f"faults.timeout(host='{api}', request=2): the cassette recorded 2 request(s) to "
        f"{api}, counted from 0 in the order its http list holds them (request=0: GET "
        f"http://{api}/weather?city=Paris; request=1: GET http://{api}/forecast?city=Paris)"
    ) in out
    assert "names api.openai.com, a model provider's host (openai)" in out
    assert f"1 fault(s) never hit a response: faults.delay(0.01, host='{api}', request=1)" in out
    assert cassette_bytes(pytester.path) == recorded
