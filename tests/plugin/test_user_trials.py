"""What new users tripped over, each met the way they met it (pytester runs of a user's
project): a wrong key while recording, the advice of a replay failure, copy-pasteable commands,
unused cassettes, tracebacks through the plugin, and the small slips of messages.

The conftest's ``agui_upstream`` is chosen by ``$AGUI_TEST_UPSTREAM``: ``echo`` (default, a
FakeProvider echoing the user's words) or an HTTP status (every request answered with it, in
OpenAI's error shape).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpcore2  # noqa: F401  (imported once here: pytester drops modules first imported
import httpx2  # noqa: F401  inside, and httpx2 maps only its own httpcore2's errors)
import openai  # noqa: F401
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.pytester_run import run

CONFTEST = textwrap.dedent(
    """
    import os
    import openai, pytest
    from agui_replay.providers import FakeProvider

    def _echo(request):
        for word in request.messages[-1]["content"].split():
            yield " " + word

    @pytest.fixture
    def agui_upstream():
        kind = os.environ.get("AGUI_TEST_UPSTREAM", "echo")
        fake = FakeProvider(function=_echo)
        if kind != "echo":
            fake = FakeProvider()
            for _ in range(3):
                fake.error(int(kind), "Incorrect API key provided: sk-wr**********")
        with fake.serve() as server:
            yield server

    @pytest.fixture
    def agent(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, max_retries=0)

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": ctx.last_user_text()}],
                stream=True,
            )
            with ctx.message("assistant") as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        return agent
    """
)

TEST_WEATHER = textwrap.dedent(
    """
    import pytest
    from agui_replay.assertions import message_text

    def test_paris(agui, agent):
        events = agui.run(agent, "sunny in Paris")
        assert message_text(events) == " sunny in Paris"
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("AGUI_TEST_UPSTREAM", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_weather=TEST_WEATHER)
    return pytester


PARIS = Path("cassettes", "test_weather", "test_paris.json")


# --- 3. a wrong or missing key while recording ------------------------------------------------


@pytest.mark.parametrize(
    ("status", "first_check"),
    [("401", "$OPENAI_API_KEY"), ("403", "$OPENAI_API_KEY"), ("404", "model name ('gpt-4o')")],
)
def test_recording_with_a_wrong_key_fails_with_the_upstream_error_and_writes_nothing(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, status: str, first_check: str
) -> None:
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", status)
    result = run(project, "--agui-record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "has no assistant message" not in out
    result.stdout.fnmatch_lines(
        [
            "*UpstreamError: *test_paris.json: run #0 was not recorded, the upstream failed:*",
            f"*POST http://127.0.0.1:*/v1/chat/completions answered {status}*Incorrect API key*",
            f"*Nothing was written*Check *{first_check}*",
        ]
    )
    for check in ("model name", "base URL", "OPENAI_API_KEY"):
        assert check in out
    assert "sk-wrong-key-0123456789" not in out
    assert not PARIS.exists()
    assert not PARIS.parent.exists()  # no empty folder left behind either
    result.stdout.fnmatch_lines(["*0 cassette(s) recorded, 0 replayed, 0 unused, 1 failed"])


def test_a_recorded_401_on_purpose_shows_its_run_error_in_message_text(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_errors=textwrap.dedent(
            """
            import pytest
            from agui_replay.assertions import message_text

            @pytest.mark.agui(record_errors=True)
            def test_bad_key(agui, agent):
                message_text(agui.run(agent, "hello"))
            """
        )
    )
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", "401")
    result = run(project, "--agui-record", "test_errors.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the stream has no assistant message with text (roles: none); the run ended in "
            "RUN_ERROR: Error code: 401 *Incorrect API key*"
        ]
    )


# --- a failing test's recording ---------------------------------------------------------------

FAILING = textwrap.dedent(
    """
    import pytest
    from agui_replay.assertions import message_text

    def test_wrong(agui, agent):
        events = agui.run(agent, "sunny in Paris")
        assert message_text(events) == "rainy"

    @pytest.mark.agui(record_on_failure=True)
    def test_kept(agui, agent):
        events = agui.run(agent, "sunny in Paris")
        assert message_text(events) == "rainy"
    """
)


def test_a_failing_test_writes_no_recording_unless_record_on_failure(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_failing=FAILING)
    result = run(project, "--agui-record", "test_failing.py")
    result.assert_outcomes(failed=2)
    assert not Path("cassettes", "test_failing", "test_wrong.json").exists()
    assert Path("cassettes", "test_failing", "test_kept.json").exists()
    result.stdout.fnmatch_lines(
        [
            "*1 cassette(s) recorded, 0 replayed, 0 unused, 1 not written",
            "*recorded: cassettes/test_failing/test_kept.json",
            "*not written: cassettes/test_failing/test_wrong.json (its test failed; "
            "record_on_failure=True keeps it)",
        ]
    )


def test_ini_agui_record_on_failure_keeps_every_failing_tests_recording(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_failing=FAILING)
    project.makeini("[pytest]\nagui_record_on_failure = true\n")
    result = run(project, "--agui-record", "test_failing.py")
    result.assert_outcomes(failed=2)
    assert Path("cassettes", "test_failing", "test_wrong.json").exists()
    result.stdout.fnmatch_lines(["*2 cassette(s) recorded, 0 replayed, 0 unused"])


# --- 5. only the agent's events changed: refresh, not re-record --------------------------------


def test_a_replay_whose_requests_all_matched_advises_refresh_not_record(
    project: pytest.Pytester,
) -> None:
    run(project, "--agui-record").assert_outcomes(passed=1)
    # the agent now says a word more after the model's answer; its model call is unchanged
    project.makeconftest(
        CONFTEST.replace(
            "                    message.delta(chunk.choices[0].delta.content)\n",
            "                    message.delta(chunk.choices[0].delta.content)\n"
            '            message.delta("!")\n',
        )
    )
    project.makepyfile(test_weather=TEST_WEATHER.replace('" sunny in Paris"', '" sunny in Paris!"'))
    result = run(project)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "--agui-record`" not in out
    result.stdout.fnmatch_lines(
        [
            "*Every provider request matched the recording: only the agent's events changed. "
            "If the change is intended, store the new events offline with "
            "`pytest test_weather.py::test_paris --agui-refresh` (no API key, no network*"
        ]
    )
    # and the advice works: offline, the cassette takes the new events, and replays
    run(project, "test_weather.py::test_paris", "--agui-refresh").assert_outcomes(passed=1)
    run(project).assert_outcomes(passed=1)


# --- 6. suggested commands are copy-pasteable ---------------------------------------------------


def test_the_suggested_command_is_relative_to_where_pytest_was_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGUI_TEST_UPSTREAM", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0123456789")
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    tests = pytester.mkdir("tests")
    (tests / "conftest.py").write_text(CONFTEST)
    (tests / "test_weather.py").write_text(TEST_WEATHER)
    monkeypatch.chdir(tests)
    result = run(pytester, "test_weather.py")
    result.assert_outcomes(errors=1)  # the agent fixture's client asks for the cassette
    result.stdout.fnmatch_lines(
        ["*Record it with `pytest test_weather.py::test_paris --agui-record`*"]
    )
    assert "tests/test_weather.py::test_paris --agui-record" not in result.stdout.str()
    # and it works from there
    run(pytester, "test_weather.py::test_paris", "--agui-record").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "test_weather" / "test_paris.json").exists()


def test_a_parametrized_tests_command_is_quoted_for_the_shell(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_cities=textwrap.dedent(
            """
            import pytest

            @pytest.mark.parametrize("city", ["Paris"])
            def test_city(agui, agent, city):
                agui.run(agent, f"sunny in {city}")
            """
        )
    )
    result = run(project, "test_cities.py")
    result.assert_outcomes(errors=1)
    # (fnmatch would read [Paris] as a character class)
    assert "Record it with `pytest 'test_cities.py::test_city[Paris]' --agui-record`" in (
        result.stdout.str()
    )


def test_a_marker_that_fixes_record_mode_none_says_so_instead_of_advising_record(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_pinned=textwrap.dedent(
            """
            import pytest

            @pytest.mark.agui(record_mode="none")
            def test_pinned(agui, agent):
                agui.run(agent, "sunny in Paris")
            """
        )
    )
    result = run(project, "test_pinned.py", "--agui-record")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*Record it with `pytest test_pinned.py::test_pinned --agui-record` after taking "
            "record_mode='none' out of the test's @pytest.mark.agui (the marker wins over the "
            "command line: as the test stands, --agui-record does not record it)*"
        ]
    )


# --- 7. unused cassettes ------------------------------------------------------------------------


def _recorded_suite(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_slow=TEST_WEATHER.replace("test_paris", "test_lisbon"),
        test_optional=TEST_WEATHER.replace("test_paris", "test_rome"),
    )
    run(project, "--agui-record").assert_outcomes(passed=3)


def test_cassettes_of_modules_not_collected_are_not_unused(project: pytest.Pytester) -> None:
    _recorded_suite(project)
    # one module ignored by the conftest, one skipped at import: their cassettes are live
    project.makeconftest(CONFTEST + '\ncollect_ignore = ["test_slow.py"]\n')
    project.makepyfile(
        test_optional="import pytest\npytest.skip('needs the extra', allow_module_level=True)\n"
        + TEST_WEATHER.replace("test_paris", "test_rome")
    )
    result = run(project, "--agui-fail-on-unused")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*0 cassette(s) recorded, 1 replayed, 0 unused"])
    assert "unused:" not in result.stdout.str()
    # --ignore too
    project.makeconftest(CONFTEST)
    result = run(project, "--ignore", "test_slow.py", "--agui-fail-on-unused")
    assert result.ret == pytest.ExitCode.OK
    assert "test_lisbon.json" not in result.stdout.str()
    # a deleted module's cassettes are unused when the whole suite runs
    Path("test_slow.py").unlink()
    result = run(project)
    result.stdout.fnmatch_lines(["*unused:   cassettes/test_slow/test_lisbon.json"])


def test_prune_unused_deletes_a_renamed_tests_old_cassette_and_says_so(
    project: pytest.Pytester,
) -> None:
    run(project, "--agui-record").assert_outcomes(passed=1)
    project.makepyfile(test_weather=TEST_WEATHER.replace("test_paris", "test_paris_sunny"))
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*unused:   cassettes/test_weather/test_paris.json",
            "did you rename a test? cassettes/test_weather/test_paris_sunny.json is missing and "
            "cassettes/test_weather/test_paris.json unused; to keep the recording: git mv "
            "cassettes/test_weather/test_paris.json cassettes/test_weather/test_paris_sunny.json",
            "*delete unused cassettes with --agui-prune-unused*",
        ]
    )
    # the hint works: the old recording replays under the new name
    Path("cassettes/test_weather/test_paris.json").rename(
        "cassettes/test_weather/test_paris_sunny.json"
    )
    run(project).assert_outcomes(passed=1)
    # prune: a stale cassette of a collected module is deleted and listed
    stale = Path("cassettes/test_weather/test_gone.json")
    stale.write_bytes(Path("cassettes/test_weather/test_paris_sunny.json").read_bytes())
    result = run(project, "--agui-prune-unused", "--agui-fail-on-unused")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 1 replayed, 0 unused, 1 deleted",
            "*deleted:  cassettes/test_weather/test_gone.json (unused; --agui-prune-unused)",
        ]
    )
    assert not stale.exists()
    assert Path("cassettes/test_weather/test_paris_sunny.json").exists()


# --- 8. the user's errors without the plugin's frames ------------------------------------------


def test_an_unrequested_scripted_turn_fails_on_the_tests_line_without_plugin_frames(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_script=textwrap.dedent(
            """
            def test_two_turns(fake_provider, openai_client):
                fake_provider.reply("hello")
                fake_provider.reply("never asked")
                openai_client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            """
        )
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ProviderError: 1 scripted turn(s) were never requested:*",
            "*(checked when test_two_turns at test_script.py:1 had passed)",
        ]
    )
    for plugin_frame in ("_provider_fixtures.py", "pluggy/", "_fake.py", "def check("):
        assert plugin_frame not in out


def test_a_sessions_error_in_a_users_own_test_points_at_the_users_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_direct=textwrap.dedent(
            """
            from agui_replay.recording import CassetteSession

            def test_direct(tmp_path):
                with CassetteSession(tmp_path / "none.json", mode="none") as session:
                    session.run(lambda ctx: None, "hello")
            """
        )
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            '>*session.run(lambda ctx: None, "hello")',
            "E*MissingCassetteError: *none.json: no cassette for this test*",
        ]
    )
    assert "_session.py" not in out


# --- 9. small slips -----------------------------------------------------------------------------


def test_a_broken_cassette_says_at_once(project: pytest.Pytester) -> None:
    PARIS.parent.mkdir(parents=True)
    PARIS.write_text('{\n  "version": 3,\n  "runs": [{"input": "unterminated', encoding="utf-8")
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*not valid JSON: Unterminated string starting at line 3*"])
    assert "at at" not in result.stdout.str()


def test_a_marker_typo_is_reported_once(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_weather=TEST_WEATHER.replace(
            "def test_paris", '@pytest.mark.agui(recod_mode="once")\ndef test_paris'
        )
    )
    result = run(project)
    result.assert_outcomes(errors=1)
    # The report itself, not the short summary (which repeats the message, cut to the
    # terminal's width or, where CI is set, whole).
    out = result.stdout.str().split("short test summary info")[0]
    assert out.count("got unknown argument(s) recod_mode") == 1
    assert "During handling of the above exception" not in out


def test_a_failed_replay_is_not_counted_replayed(project: pytest.Pytester) -> None:
    run(project, "--agui-record").assert_outcomes(passed=1)
    project.makeconftest(CONFTEST.replace('model="gpt-4o"', 'model="gpt-4.1"'))
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 0 replayed, 0 unused, 1 did not replay",
            "*did not replay: cassettes/test_weather/test_paris.json (its test says why)",
        ]
    )
