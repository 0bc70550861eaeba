"""A replay needs no API key and no cloud credentials (pytester, as a user writes tests).

Recording runs against a FakeProvider on 127.0.0.1 standing in for OpenAI, with a key in the
environment. The replays then run with every key variable deleted, as on a CI runner without
secrets: from the ``agui`` fixture's setup to its teardown, the unset key variables hold
placeholders, so ``openai.OpenAI()`` with no arguments works; a variable the user set is kept;
afterwards the placeholders are gone. An agent that fails before its first model call is
reported as such, and a one-letter "key" in the environment no longer corrupts the cassette.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from agui_replay.providers import FakeProvider, LoopbackServer
from agui_replay.recording import CassetteSession
from agui_replay.recording._modes import PLACEHOLDER_ENV
from agui_replay.scrub import scrub

RECORDING_KEY = "sk-proj-withoutkeys0live0key0abcdef"
PLACEHOLDER = "sk-agui-replay-placeholder"


def _echo(request: Any) -> Iterator[str]:
    last = request.messages[-1] if request.messages else {}
    yield "echo:"
    for word in str(last.get("content", "")).split():
        yield " " + word


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with FakeProvider(function=_echo).serve() as server:
        yield server


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A CI runner without secrets: none of the variables the SDKs read is set."""
    for name in PLACEHOLDER_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


AGENT = textwrap.dedent(
    """
    def ask(client):
        def agent(ctx):
            reply = client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": ctx.last_user_text()}]
            )
            ctx.say(reply.choices[0].message.content)

        return agent
    """
)


def _record(pytester: pytest.Pytester, upstream: LoopbackServer, passed: int) -> None:
    record = pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}")
    record.assert_outcomes(passed=passed)
    upstream.close()  # the replay has nowhere to go but the cassettes


def test_a_client_built_with_no_key_replays_with_no_key_in_the_environment(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makepyfile(
        test_support=textwrap.dedent(
            """
            import os

            import openai
            from my_agent import ask

            def test_refund(agui):
                client = openai.OpenAI(max_retries=0)  # the key comes from OPENAI_API_KEY
                events = agui.run(ask(client), "refund please")
                assert events[2]["delta"] == "echo: refund please"

            def test_after_it_no_placeholder_is_left():
                assert os.environ.get("OPENAI_API_KEY") != "sk-agui-replay-placeholder"
                assert "AWS_REGION" not in os.environ
            """
        )
    )
    no_keys.setenv("OPENAI_API_KEY", RECORDING_KEY)
    _record(pytester, upstream, passed=2)
    cassette = (pytester.path / "cassettes/test_support/test_refund.json").read_text()
    assert RECORDING_KEY not in cassette
    assert PLACEHOLDER not in cassette

    no_keys.delenv("OPENAI_API_KEY")
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(passed=2)
    assert "0 cassette(s) recorded, 1 replayed" in replay.stdout.str()
    for name in PLACEHOLDER_ENV:  # restored: unset again
        assert name not in os.environ


def test_the_users_own_values_are_kept(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(my_agent=AGENT)
    pytester.makepyfile(
        test_own=textwrap.dedent(
            """
            import os

            import openai
            from my_agent import ask

            def test_own_values(agui):
                client = openai.OpenAI(max_retries=0)
                assert agui.run(ask(client), "hi")[2]["delta"] == "echo: hi"
                assert os.environ["AWS_REGION"] == "eu-west-3"
                if agui.replay_only:
                    assert os.environ["OPENAI_API_KEY"] == "sk-ci-runner-own-dummy-key"
                    assert os.environ["ANTHROPIC_API_KEY"] == "sk-agui-replay-placeholder"
                    assert os.environ["AWS_DEFAULT_REGION"] == "us-east-1"
            """
        )
    )
    no_keys.setenv("AWS_REGION", "eu-west-3")
    no_keys.setenv("OPENAI_API_KEY", RECORDING_KEY)
    _record(pytester, upstream, passed=1)
    no_keys.setenv("OPENAI_API_KEY", "sk-ci-runner-own-dummy-key")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert os.environ["OPENAI_API_KEY"] == "sk-ci-runner-own-dummy-key"
    assert os.environ["AWS_REGION"] == "eu-west-3"
    assert "ANTHROPIC_API_KEY" not in os.environ


def test_recording_from_a_real_provider_never_gets_placeholders(
    pytester: pytest.Pytester, no_keys: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_rec=textwrap.dedent(
            """
            import os

            def test_recording_sees_the_real_environment(agui):
                agui.run(lambda ctx: ctx.say("no model call"))
                assert "ANTHROPIC_API_KEY" not in os.environ
                assert "AWS_ACCESS_KEY_ID" not in os.environ
            """
        )
    )
    for upstream in ("https://api.openai.com/v1", "openai=http://127.0.0.1:9/v1"):
        # the default upstream, and a stand-in for one provider only: the others are real
        record = pytester.runpytest("--agui-record", f"--agui-upstream={upstream}")
        record.assert_outcomes(passed=1)


STAND_IN_TEST = textwrap.dedent(
    """
    import os

    import openai
    from my_agent import ask

    def test_refund(agui):
        client = openai.OpenAI(max_retries=0)  # the key comes from OPENAI_API_KEY
        events = agui.run(ask(client), "refund please")
        assert events[2]["delta"] == "echo: refund please"
    """
)


def test_recording_from_a_local_stand_in_needs_no_key(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    """Nothing real is reached, so the placeholders apply while recording too."""
    pytester.makepyfile(my_agent=AGENT, test_stand_in=STAND_IN_TEST)
    record = pytester.runpytest("--agui-record", f"--agui-upstream={upstream.base_url}")
    record.assert_outcomes(passed=1)
    cassette = (pytester.path / "cassettes/test_stand_in/test_refund.json").read_text()
    assert PLACEHOLDER not in cassette
    for name in PLACEHOLDER_ENV:  # gone after the test
        assert name not in os.environ

    # the conftest's agui_upstream fixture serving the stand-in: the same
    pytester.makeconftest(
        textwrap.dedent(
            f"""
            import pytest

            @pytest.fixture
            def agui_upstream():
                return {upstream.base_url!r}
            """
        )
    )
    pytester.runpytest("--agui-record").assert_outcomes(passed=1)


def test_an_agent_that_fails_before_its_provider_says_so(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_early=textwrap.dedent(
            """
            import os

            import openai

            def agent(ctx):
                # a variable of the application's own, set where it was recorded only
                account = os.environ["SUPPORT_DESK_ACCOUNT"]
                client = openai.OpenAI(max_retries=0)
                reply = client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": account}]
                )
                ctx.say(reply.choices[0].message.content)

            def test_desk(agui):
                agui.run(agent)
            """
        )
    )
    no_keys.setenv("OPENAI_API_KEY", RECORDING_KEY)
    no_keys.setenv("SUPPORT_DESK_ACCOUNT", "acme-42")
    _record(pytester, upstream, passed=1)
    no_keys.delenv("OPENAI_API_KEY")
    no_keys.delenv("SUPPORT_DESK_ACCOUNT")
    replay = pytester.runpytest("-p", "no:cacheprovider")
    replay.assert_outcomes(failed=1)
    out = replay.stdout.str()
    replay.stdout.fnmatch_lines(
        [
            "*run #0: the agent failed before reaching its provider: it made no provider "
            "request (the recording has 1) and ended in RUN_ERROR: *SUPPORT_DESK_ACCOUNT*",
        ]
    )
    assert "re-record" not in out
    assert "--agui-record" not in out


SHORT_KEY_TEST = textwrap.dedent(
    """
    import openai
    from my_agent import ask

    def test_xylophone(agui):
        client = openai.OpenAI(max_retries=0)
        events = agui.run(ask(client), "six xylophones")
        assert events[2]["delta"] == "echo: six xylophones"
    """
)


def _record_with_a_one_letter_key(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> pytest.RunResult:
    pytester.makepyfile(my_agent=AGENT, test_short=SHORT_KEY_TEST)
    no_keys.setenv("OPENAI_API_KEY", "x")
    record = pytester.runpytest(
        "--agui-record", f"--agui-upstream={upstream.base_url}", "-W", "always::UserWarning"
    )
    record.assert_outcomes(passed=1)
    return record


def test_a_one_letter_key_is_not_a_secret_to_scrub_and_a_warning_names_its_variable(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    record = _record_with_a_one_letter_key(pytester, upstream, no_keys)
    record.stdout.fnmatch_lines(
        ["*UserWarning: agui_replay: the value of $OPENAI_API_KEY is shorter than 8 characters*"]
    )
    warning = next(line for line in record.outlines if "$OPENAI_API_KEY" in line)
    assert "'x'" not in warning
    assert '"x"' not in warning
    data = json.loads((pytester.path / "cassettes/test_short/test_xylophone.json").read_text())
    (run,) = data["runs"]
    assert "".join(e.get("delta", "") for e in run["events"]) == "echo: six xylophones"
    assert sorted(run) == ["events", "input", "interactions"]


def test_a_one_letter_key_while_recording_leaves_a_valid_cassette(
    pytester: pytest.Pytester, upstream: LoopbackServer, no_keys: pytest.MonkeyPatch
) -> None:
    _record_with_a_one_letter_key(pytester, upstream, no_keys)
    data = json.loads((pytester.path / "cassettes/test_short/test_xylophone.json").read_text())
    (interaction,) = data["runs"][0]["interactions"]
    assert interaction["request"]["body"]["messages"] == [
        {"role": "user", "content": "six xylophones"}
    ]
    assert interaction["request"]["headers"]["authorization"] == "<scrubbed>"
    upstream.close()
    no_keys.delenv("OPENAI_API_KEY")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_scrubbing_never_rewrites_the_keys_of_json_objects() -> None:
    doc = {"index": "index 1", "headers": {"x-index": "Bearer index-token-1234"}}
    assert scrub(doc, secrets=["index"]) == {
        "index": "<scrubbed> 1",
        "headers": {"x-index": "Bearer <scrubbed>-token-1234"},
    }


def test_a_short_secret_given_to_a_session_is_ignored_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="shorter than 8 characters") as caught:
        session = CassetteSession(tmp_path / "c.json", secrets=["abc", "long-enough-secret"])
    assert session.secrets == ["long-enough-secret"]
    assert all("abc" not in str(w.message) for w in caught)
