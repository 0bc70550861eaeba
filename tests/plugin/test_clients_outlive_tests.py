"""An SDK client outlives the test that built it (pytester, written the way a user writes tests).

Applications cache their clients: built on first use and kept at module level, built in one
test and kept in a module dict, built at import. During a run the base-URL variables
(``OPENAI_BASE_URL``...) point at the session's loopback server, so a client built lazily inside
the agent keeps that address: it must keep working in every later test of the session,
recording and replaying, whatever the order of the tests, and under ``-n 2``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from agui_replay.providers import FakeProvider, LoopbackServer

OPENAI_KEY = "sk-proj-outlive0tests0live0key0abcdef"


def _echo(request: Any) -> Iterator[str]:
    last = request.messages[-1] if request.messages else {}
    yield "echo:"
    for word in str(last.get("content", "")).split():
        yield " " + word


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with FakeProvider(function=_echo).serve() as server:
        yield server


CACHED_AGENT = textwrap.dedent(
    f"""
    import openai

    _CLIENT = None


    def client():
        # built on first use, inside the first run that needs it, then kept for the process
        global _CLIENT
        if _CLIENT is None:
            _CLIENT = openai.OpenAI(api_key="{OPENAI_KEY}", max_retries=0)
        return _CLIENT


    def agent(ctx):
        reply = client().chat.completions.create(
            model="gpt-4o", messages=[{{"role": "user", "content": ctx.last_user_text()}}]
        )
        ctx.say(reply.choices[0].message.content)
    """
)


def _tests(names: list[str]) -> str:
    body = ["from cached_agent import agent", ""]
    for name in names:
        body += [
            f"def test_{name}(agui):",
            f'    events = agui.run(agent, "hello {name}")',
            f'    assert events[2]["delta"] == "echo: hello {name}"',
            "",
        ]
    return "\n".join(body)


def _cassettes(pytester: pytest.Pytester) -> list[str]:
    root = pytester.path / "cassettes"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))


def test_a_client_cached_on_first_use_serves_every_later_test(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytester.makepyfile(cached_agent=CACHED_AGENT)
    pytester.makepyfile(test_cached=_tests(["first", "second", "third"]))
    record = pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}")
    record.assert_outcomes(passed=3)
    assert _cassettes(pytester) == [
        "test_cached/test_first.json",
        "test_cached/test_second.json",
        "test_cached/test_third.json",
    ]
    upstream.close()  # the replays have nowhere to go but the cassettes
    replay = pytester.runpytest()
    replay.assert_outcomes(passed=3)
    assert "0 cassette(s) recorded, 3 replayed" in replay.stdout.str()
    # the other order: another test builds the client, the others reuse it
    pytester.makepyfile(test_cached=_tests(["third", "second", "first"]))
    pytester.runpytest().assert_outcomes(passed=3)
    # one test alone, then the rest: the cached client is only ever as old as the process
    pytester.runpytest("-k", "second").assert_outcomes(passed=1, deselected=2)


def test_recording_in_reverse_order_then_replaying_forward(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytester.makepyfile(cached_agent=CACHED_AGENT)
    pytester.makepyfile(test_cached=_tests(["third", "second", "first"]))
    pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}").assert_outcomes(
        passed=3
    )
    upstream.close()
    pytester.makepyfile(test_cached=_tests(["first", "second", "third"]))
    pytester.runpytest().assert_outcomes(passed=3)


def test_a_client_built_in_one_test_from_agui_provider_serves_the_next(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytester.makepyfile(
        test_kept=textwrap.dedent(
            f"""
            import openai

            KEPT = {{}}

            def ask(ctx):
                reply = KEPT["client"].chat.completions.create(
                    model="gpt-4o",
                    messages=[{{"role": "user", "content": ctx.last_user_text()}}],
                )
                ctx.say(reply.choices[0].message.content)

            def test_builds_it(agui):
                KEPT["client"] = openai.OpenAI(
                    base_url=agui.provider.base_url, api_key="{OPENAI_KEY}", max_retries=0
                )
                assert agui.run(ask, "one")[2]["delta"] == "echo: one"

            def test_reuses_it(agui):
                assert agui.run(ask, "two")[2]["delta"] == "echo: two"
                assert str(KEPT["client"].base_url).rstrip("/") == agui.provider.base_url
            """
        )
    )
    pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}").assert_outcomes(
        passed=2
    )
    upstream.close()
    pytester.runpytest().assert_outcomes(passed=2)


def test_under_xdist_each_worker_keeps_its_clients(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(cached_agent=CACHED_AGENT)
    names = [f"t{i}" for i in range(8)]
    pytester.makepyfile(test_cached_a=_tests(names[:4]), test_cached_b=_tests(names[4:]))
    record = pytester.runpytest_subprocess(
        "-n", "2", "--agui-record", f"--agui-upstream={upstream.base_url}"
    )
    record.assert_outcomes(passed=8)
    assert len(_cassettes(pytester)) == 8
    upstream.close()
    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=8)


def test_a_request_between_tests_says_no_test_is_running(
    pytester: pytest.Pytester, upstream: LoopbackServer
) -> None:
    pytester.makepyfile(
        test_between=textwrap.dedent(
            """
            import openai, pytest

            KEPT = {}

            def test_builds_it(agui):
                KEPT["url"] = agui.provider.base_url

            def test_uses_it_outside_any_test_session():
                client = openai.OpenAI(base_url=KEPT["url"], api_key="k", max_retries=0)
                with pytest.raises(openai.APIStatusError) as info:
                    client.chat.completions.create(model="m", messages=[])
                assert "no test's agui session is open" in str(info.value)
            """
        )
    )
    pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}").assert_outcomes(
        passed=2
    )
