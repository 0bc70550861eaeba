"""The recording engine without pytest: targets (agent, ASGI app, URL), modes, the guard."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import openai
import pytest

from agui_replay.errors import (
    AguiReplayError,
    MissingCassetteError,
    NetworkBlockedError,
    RecordModeError,
    ReplayMismatchError,
    TargetError,
)
from agui_replay.providers import FakeProvider
from agui_replay.recording import CassetteSession, RecordMode
from agui_replay.recording._guard import NetworkGuard
from agui_replay.recording._targets import target_kind
from agui_replay.server import agui_app
from agui_replay.server.testing import serve


def make_agent(session: CassetteSession) -> Any:
    client = openai.OpenAI(base_url=session.provider.base_url, api_key="dummy", max_retries=0)

    def agent(ctx: Any) -> None:
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": ctx.last_user_text() or ""}],
            stream=True,
        )
        with ctx.assistant_message() as message:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    message.delta(chunk.choices[0].delta.content)

    return agent


@pytest.fixture
def upstream() -> Any:
    fake = FakeProvider()
    for _ in range(3):
        fake.reply("Bon", "jour")
    with fake.serve() as server:
        yield server


def text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_record_modes_parse_and_list_the_valid_values() -> None:
    assert RecordMode.parse(" Once ") is RecordMode.ONCE
    assert RecordMode("new") == "new"  # a str Enum
    with pytest.raises(RecordModeError, match="'none', 'once', 'rewrite', 'new'"):
        RecordMode.parse("sometimes")


def test_target_kinds() -> None:
    assert target_kind(lambda ctx: None) == "agent"
    assert target_kind(agui_app(lambda ctx: None)) == "asgi"
    assert target_kind("http://127.0.0.1:1/agent") == "url"
    with pytest.raises(AguiReplayError, match="URL of an AG-UI endpoint"):
        target_kind("not a url")


@pytest.mark.parametrize("kind", ["asgi", "url"])
def test_asgi_apps_and_endpoints_record_and_replay(
    tmp_path: Path, upstream: Any, kind: str
) -> None:
    path = tmp_path / "c.json"

    def once(mode: str) -> list[dict[str, Any]]:
        with CassetteSession(path, mode=mode, upstream=upstream.base_url) as session:
            app = agui_app(make_agent(session), path="/agent")
            if kind == "asgi":
                return session.run(app, "hi", path="/agent")
            with serve(app) as url:
                return session.run(url + "/agent", "hi")

    recorded = once("once")
    assert text(recorded) == "Bonjour"
    replayed = once("none")
    assert replayed == recorded
    assert len(json.loads(path.read_text())["runs"]) == 1


def test_outside_pytest_a_missing_cassette_names_file_and_command(tmp_path: Path) -> None:
    session = CassetteSession(tmp_path / "none.json")
    with pytest.raises(MissingCassetteError) as caught:
        session.run(lambda ctx: ctx.say("x"))
    assert str(tmp_path / "none.json") in str(caught.value)
    assert "pytest --agui-record" in str(caught.value)


def test_the_driver_agent_replays_and_a_changed_agent_fails(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with CassetteSession(path, mode="rewrite") as session:
        session.run(lambda ctx: ctx.say("one"))
        session.run(lambda ctx: ctx.say("two"), {"threadId": "t", "runId": "custom"})
    with CassetteSession(path) as session:
        assert text(session.run(lambda ctx: ctx.say("one"))) == "one"
        with pytest.raises(ReplayMismatchError, match=r"field /delta\n.*\"two\" != .*\"zwei\""):
            session.run(lambda ctx: ctx.say("zwei"), {"threadId": "t", "runId": "custom"})
        assert [r.action for r in session.runs] == ["replayed", "replayed"]


@pytest.mark.anyio
async def test_arun_runs_an_async_agent_on_the_current_loop(tmp_path: Path) -> None:
    async def agent(ctx: Any) -> None:
        ctx.say("async")

    path = tmp_path / "c.json"
    with CassetteSession(path, mode="once") as session:
        assert text(await session.arun(agent)) == "async"
        assert text(await session.arun(agent)) == "async"
    with CassetteSession(path) as session:
        assert text(await session.arun(agent)) == "async"
        assert text(session.run(agent)) == "async"  # sync run inside a loop: a helper thread


def test_the_guard_refuses_non_loopback_and_allows_loopback(upstream: Any) -> None:
    guard = NetworkGuard()
    with guard.guarding():
        with pytest.raises(NetworkBlockedError, match=r"0\.0\.0\.0:9"):
            socket.create_connection(("0.0.0.0", 9), timeout=1)
        with pytest.raises(NetworkBlockedError, match=r"name lookup of 'api\.openai\.com'"):
            socket.getaddrinfo("api.openai.com", 443)
        with socket.create_connection(("127.0.0.1", upstream.port), timeout=5):
            pass  # loopback stays open: the fake providers live there
        assert socket.getaddrinfo("localhost", 80)
    assert len(guard.violations) == 2
    assert socket.socket.connect is not None
    with guard.guarding(active=False):
        assert not guard.active


# -- ASGI lifespan --------------------------------------------------------------------------------

LIFESPAN_TESTS = """
import contextlib
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from agui_replay.server import AguiEndpoint

LOG = Path(__file__).parent / "lifespan.log"


def log(line):
    with LOG.open("a") as f:
        f.write(line + "\\n")


def make_app(name):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        log(f"{name} startup")
        yield {"greeting": f"bonjour from {name}"}  # the endpoint fails without it
        log(f"{name} shutdown")

    async def endpoint(request):
        greeting = request.state.greeting
        log(f"{name} run")
        return await AguiEndpoint(lambda ctx: ctx.say(greeting)).respond(request)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])], lifespan=lifespan)


def said(events):
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_1_sync(agui):
    app = make_app("sync")
    assert said(agui.run(app, "a")) == "bonjour from sync"
    assert said(agui.run(app, "b")) == "bonjour from sync"


@pytest.mark.anyio
async def test_2_async(agui):
    app = make_app("async")
    assert said(await agui.arun(app, "a")) == "bonjour from async"
    assert said(await agui.arun(app, "b")) == "bonjour from async"


def test_3_after(agui):
    print("LOG:" + "|".join(LOG.read_text().splitlines()))
"""


@pytest.mark.parametrize("mode", ["once", "none"])
def test_an_asgi_app_starts_once_per_test_and_shuts_down_after_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_app=LIFESPAN_TESTS)
    args = ("-p", "no:hypothesispytest", "-p", "no:randomly", "-s")
    if mode == "none":  # replay: record first, then run again from the cassettes
        pytester.runpytest(*args, "--agui-record-mode=once").assert_outcomes(passed=3)
        (pytester.path / "lifespan.log").unlink()
    result = pytester.runpytest(*args, f"--agui-record-mode={mode}")
    result.assert_outcomes(passed=3)
    # Each test's app started once for its two runs and shut down when its test ended.
    result.stdout.fnmatch_lines(
        [
            "*LOG:sync startup|sync run|sync run|sync shutdown"
            "|async startup|async run|async run|async shutdown"
        ]
    )


def _lifespan_app(startup: Any) -> Any:
    import contextlib

    from starlette.applications import Starlette
    from starlette.routing import Route

    from agui_replay.server import AguiEndpoint

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        startup()
        yield

    async def endpoint(request: Any) -> Any:
        return await AguiEndpoint(lambda ctx: ctx.say("ok")).respond(request)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])], lifespan=lifespan)


def test_a_failing_startup_is_a_target_error_naming_the_app(tmp_path: Path) -> None:
    def startup() -> None:
        raise RuntimeError("the database is unreachable")

    app = _lifespan_app(startup)
    with CassetteSession(tmp_path / "c.json", mode="rewrite") as session:
        with pytest.raises(TargetError, match="lifespan startup") as caught:
            session.run(app, "hi")
        assert "starlette.applications.Starlette" in str(caught.value)
        assert "the database is unreachable" in str(caught.value)
        # Later runs of the same app see the same failure rather than a half-started app.
        with pytest.raises(TargetError, match="the database is unreachable"):
            session.run(app, "hi")


def test_an_app_raising_inside_its_startup_is_a_target_error(tmp_path: Path) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            raise ConnectionError("no pool")
        raise AssertionError("never reached")

    session = CassetteSession(tmp_path / "c.json", mode="rewrite")
    with session, pytest.raises(TargetError, match=r"raised during its lifespan startup.*no pool"):
        session.run(app, "hi", kind="asgi")


@pytest.mark.parametrize("refusal", ["raises", "returns"])
def test_an_app_without_lifespan_support_runs_without_it(tmp_path: Path, refusal: str) -> None:
    from agui_replay.server import AguiEndpoint

    endpoint = AguiEndpoint(lambda ctx: ctx.say("plain"))
    scopes: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scopes.append(scope["type"])
        if scope["type"] != "http":
            if refusal == "raises":
                raise ValueError(f"unsupported scope {scope['type']}")
            return
        await endpoint(scope, receive, send)

    with CassetteSession(tmp_path / "c.json", mode="rewrite") as session:
        assert text(session.run(app, "hi")) == "plain"
        assert text(session.run(app, "hi")) == "plain"
    # Asked once, then only requests.
    assert scopes == ["lifespan", "http", "http"]
