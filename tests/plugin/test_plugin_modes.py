"""The pytest plugin through real pytest runs (pytester): record modes, precedence, replay.

Each project gets a conftest whose ``agui_upstream`` is a FakeProvider on loopback standing in
for the real provider (it echoes the user's words, prefixed by ``$AGUI_TEST_TAG``), and an
agent that calls the real ``openai`` SDK at ``agui.provider.base_url`` and names its message
with a random UUID, as frameworks do.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.pytester_run import run

CONFTEST = textwrap.dedent(
    """
    import os, socket, uuid
    import openai, pytest
    from agui_replay.providers import FakeProvider

    def _echo(request):
        yield "[" + os.environ.get("AGUI_TEST_TAG", "v1") + "]"
        for word in request.messages[-1]["content"].split():
            yield " " + word

    @pytest.fixture
    def agui_upstream():
        if os.environ.get("AGUI_TEST_NO_UPSTREAM"):
            pytest.fail("the upstream was started although the test only replays")
        fake = FakeProvider(function=_echo)
        with fake.serve() as server:
            yield server

    @pytest.fixture
    def make_agent(agui):
        def make(model="gpt-4o"):
            client = openai.OpenAI(
                base_url=agui.provider.base_url,
                api_key=os.environ.get("OPENAI_API_KEY", "dummy"),
                max_retries=0,
            )

            def agent(ctx):
                stream = client.chat.completions.create(
                    model=model,
                    messages=[{"role": "user", "content": ctx.last_user_text()}],
                    stream=True,
                )
                with ctx.message_with_id(str(uuid.uuid4())) as message:
                    for chunk in stream:
                        if chunk.choices and chunk.choices[0].delta.content:
                            message.delta(chunk.choices[0].delta.content)
                if os.environ.get("AGUI_TEST_EXTRA"):
                    ctx.emit({"type": "CUSTOM", "name": "extra", "value": 1})
                if os.environ.get("AGUI_TEST_DIAL_OUT"):
                    # 0.0.0.0 is not loopback for the guard, yet never leaves this machine
                    try:
                        socket.create_connection(("0.0.0.0", 9), timeout=1).close()
                    except OSError:
                        pass  # swallowed, as agents do: the guard must still fail the test

            return agent

        return make
    """
)

TEST_AGENT = textwrap.dedent(
    """
    import os

    def test_hello(agui, make_agent):
        events = agui.run(make_agent(), "hello there")
        text = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text.endswith(" hello there")
        assert events[-1]["type"] == "RUN_FINISHED"

    def test_runs(agui, make_agent):
        agent = make_agent(os.environ.get("AGUI_TEST_MODEL", "gpt-4o"))
        for n in range(int(os.environ.get("AGUI_TEST_RUNS", "1"))):
            events = agui.run(agent, f"question {n}")
            assert events[0]["runId"] == f"run-{n + 1}"
    """
)

HELLO = Path("cassettes", "test_agent", "test_hello.json")
RUNS = Path("cassettes", "test_agent", "test_runs.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_TAG", "AGUI_TEST_NO_UPSTREAM", "AGUI_TEST_EXTRA", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    return pytester


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def deltas(run: dict[str, Any]) -> str:
    return "".join(e.get("delta", "") for e in run["events"] if e["type"] == "TEXT_MESSAGE_CONTENT")


# --- none (the default) -------------------------------------------------------------------------


def test_a_missing_cassette_fails_naming_the_file_and_the_command(project: pytest.Pytester) -> None:
    result = run(project, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert str(HELLO) in out or HELLO.as_posix() in out
    assert "`pytest test_agent.py::test_hello --agui-record`" in out
    assert "Traceback" not in out  # the message explains itself
    assert not (project.path / "cassettes").exists()


def test_record_then_replay_offline_with_random_ids(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(project, "test_agent.py::test_hello", "--agui-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 cassette(s) recorded, 0 replayed*", f"*recorded: {HELLO}*"])

    cassette = load(project.path / HELLO)
    assert cassette["version"] == 3
    (recorded,) = cassette["runs"]
    assert recorded["input"]["messages"][0]["content"] == "hello there"
    (interaction,) = recorded["interactions"]
    assert interaction["request"]["path"] == "/v1/chat/completions"
    chunks = [c["data"] for c in interaction["response"]["chunks"]]
    assert any('"content":"[v1]"' in c for c in chunks)  # the upstream's own chunks
    assert deltas(recorded) == "[v1] hello there"
    # the agent's random UUID became a run-id-derived id, the same on every recording
    ids = {e["messageId"] for e in recorded["events"] if "messageId" in e}
    assert ids == {"run-1-msg-1"}
    text = (project.path / HELLO).read_text()
    assert '"type": "TEXT_MESSAGE_CONTENT"' in text.splitlines()[-8]  # one event per line

    # replay: no upstream, another tag (the upstream would answer differently), still passes
    monkeypatch.setenv("AGUI_TEST_NO_UPSTREAM", "1")
    monkeypatch.setenv("AGUI_TEST_TAG", "v2")
    before = (project.path / HELLO).read_bytes()
    result = run(project, "test_agent.py::test_hello", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*0 cassette(s) recorded, 1 replayed*", f"*replayed: {HELLO}*"])
    assert (project.path / HELLO).read_bytes() == before


def test_replay_fails_with_a_readable_diff_when_the_stream_changes(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGUI_TEST_EXTRA", "1")
    result = run(project, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ReplayMismatchError*run #0 does not replay as recorded*",
            "*event streams differ at event #6: type RUN_FINISHED != CUSTOM*",
            "*recorded:*",
            '*> #6 {"type": "RUN_FINISHED"*',
            "*replayed:*",
            '*> #6 {"type": "CUSTOM"*',
            "*Every provider request matched the recording: only the agent's events changed.*"
            "store the new events offline with `pytest test_agent.py::test_hello "
            "--agui-refresh`*",
        ]
    )


def test_replay_fails_when_the_agent_asks_the_provider_something_else(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "test_agent.py::test_runs", "--agui-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGUI_TEST_MODEL", "gpt-4o-mini")
    result = run(project, "test_agent.py::test_runs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*provider requests differ from the recorded ones*",
            "*does not match recorded interaction #0*",
            "*first difference at /body/model*",
            '*recorded: "gpt-4o"*',
            '*received: "gpt-4o-mini"*',
        ]
    )


def test_replay_refuses_a_changed_input(project: pytest.Pytester) -> None:
    run(project, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    project.makepyfile(
        test_agent=TEST_AGENT.replace(
            'agui.run(make_agent(), "hello there")', 'agui.run(make_agent(), "hi")'
        )
    )
    result = run(project, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*starts from another input than the recorded one*",
            '*recorded "hello there" != now "hi"*',
        ]
    )


# --- once, rewrite, new --------------------------------------------------------------------------


def test_once_records_what_is_missing_and_then_only_replays(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "test_agent.py::test_hello", "--agui-record-mode=once").assert_outcomes(passed=1)
    first = (project.path / HELLO).read_bytes()
    monkeypatch.setenv("AGUI_TEST_TAG", "v2")
    result = run(project, "--agui-record-mode=once")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 cassette(s) recorded, 1 replayed*", f"*recorded: {RUNS}*"])
    assert (project.path / HELLO).read_bytes() == first  # existing cassette left alone
    assert deltas(load(project.path / RUNS)["runs"][0]) == "[v2] question 0"

    # once never grows an existing cassette: a second run is missing, and it says what to do
    monkeypatch.setenv("AGUI_TEST_RUNS", "2")
    result = run(project, "test_agent.py::test_runs", "--agui-record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*run #1 (agui.run call 2) is not in the cassette*--agui-record-mode=new*"]
    )


def test_rewrite_records_everything_again(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGUI_TEST_RUNS", "2")
    run(project, "test_agent.py::test_runs", "--agui-record").assert_outcomes(passed=1)
    assert [deltas(r) for r in load(project.path / RUNS)["runs"]] == [
        "[v1] question 0",
        "[v1] question 1",
    ]
    monkeypatch.setenv("AGUI_TEST_TAG", "v2")
    monkeypatch.setenv("AGUI_TEST_RUNS", "1")
    run(project, "test_agent.py::test_runs", "--agui-record-mode=rewrite").assert_outcomes(passed=1)
    # everything used is recorded again, and runs no longer used are gone
    assert [deltas(r) for r in load(project.path / RUNS)["runs"]] == ["[v2] question 0"]


def test_new_keeps_recorded_runs_and_appends_new_ones(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "test_agent.py::test_runs", "--agui-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGUI_TEST_RUNS", "2")
    result = run(project, "test_agent.py::test_runs")  # replay only: run #1 is missing
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*run #1 (agui.run call 2) is not in the cassette, which holds 1*"]
    )

    monkeypatch.setenv("AGUI_TEST_TAG", "v2")
    result = run(project, "test_agent.py::test_runs", "--agui-record-mode=new")
    result.assert_outcomes(passed=1)
    runs = load(project.path / RUNS)["runs"]
    # run 0 replayed from the recording (v1), run 1 recorded now (v2)
    assert [deltas(r) for r in runs] == ["[v1] question 0", "[v2] question 1"]
    monkeypatch.setenv("AGUI_TEST_NO_UPSTREAM", "1")
    run(project, "test_agent.py::test_runs").assert_outcomes(passed=1)


def test_a_test_that_makes_fewer_runs_than_recorded_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGUI_TEST_RUNS", "2")
    run(project, "test_agent.py::test_runs", "--agui-record").assert_outcomes(passed=1)
    monkeypatch.setenv("AGUI_TEST_RUNS", "1")
    result = run(project, "test_agent.py::test_runs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the test made 1 run(s) but the cassette holds 2*"])


# --- precedence: marker, then command line, then the conftest fixture -------------------------


def test_precedence_marker_then_command_line_then_fixture(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST
        + textwrap.dedent(
            """
            @pytest.fixture
            def agui_record_mode():
                return "once"
            """
        )
    )
    project.makepyfile(
        test_prec=textwrap.dedent(
            """
            import pytest

            def test_fixture_mode(agui, make_agent):
                agui.run(make_agent(), "a")

            @pytest.mark.agui(record_mode="none")
            def test_marker_mode(agui, make_agent):
                agui.run(make_agent(), "b")

            @pytest.mark.agui(cassette="custom/place")
            def test_marker_cassette(agui, make_agent):
                agui.run(make_agent(), "c")
            """
        )
    )
    # the conftest fixture says once: both unmarked tests record; the marker says none: fails
    result = run(project, "test_prec.py")
    result.assert_outcomes(passed=2, failed=1)
    folder = project.path / "cassettes"
    assert (folder / "test_prec" / "test_fixture_mode.json").is_file()
    assert (folder / "custom" / "place.json").is_file()
    result.stdout.fnmatch_lines(["*test_marker_mode*record mode 'none' only replays*"])

    # the command line beats the fixture: none replays what exists, fails on the rest
    (folder / "test_prec" / "test_fixture_mode.json").unlink()
    result = run(project, "test_prec.py", "--agui-record-mode=none")
    result.assert_outcomes(passed=1, failed=2)
    assert not (folder / "test_prec" / "test_fixture_mode.json").exists()

    # the marker beats the command line: --agui-record does not record test_marker_mode
    result = run(project, "test_prec.py", "--agui-record")
    result.assert_outcomes(passed=2, failed=1)
    assert not (folder / "test_prec" / "test_marker_mode.json").exists()


def test_ini_record_mode_is_the_fixtures_default(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nagui_record_mode = once\n")
    run(project, "test_agent.py::test_hello").assert_outcomes(passed=1)
    assert (project.path / HELLO).is_file()


def test_cassette_dir_option_and_ini(project: pytest.Pytester) -> None:
    run(project, "test_agent.py::test_hello", "--agui-record", "--agui-cassette-dir=tapes")
    assert (project.path / "tapes" / "test_agent" / "test_hello.json").is_file()
    project.makeini("[pytest]\nagui_cassette_dir = recorded/agui\n")
    run(project, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    assert (project.path / "recorded" / "agui" / "test_agent" / "test_hello.json").is_file()


# --- configuration errors -----------------------------------------------------------------------


def test_bad_settings_fail_with_the_valid_values(project: pytest.Pytester) -> None:
    result = run(project, "--agui-record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid choice: 'sometimes'*none*once*rewrite*new*"])

    result = run(project, "--agui-record", "--agui-record-mode=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agui-record means --agui-record-mode=rewrite*"])

    project.makepyfile(
        test_bad=textwrap.dedent(
            """
            import pytest

            @pytest.mark.agui(record_mode="always")
            def test_bad_mode(agui):
                pass

            @pytest.mark.agui(recordmode="once")
            def test_bad_key(agui):
                pass
            """
        )
    )
    result = run(project, "test_bad.py")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*'always' is not a record mode; use one of 'none', 'once', 'rewrite', 'new'*",
            "*unknown argument(s) recordmode; it takes record_mode, cassette*",
        ]
    )


def test_help_lists_every_option_in_one_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "agui-replay: record and replay AG-UI agents:",
            "*--agui-record *",
            "*--agui-record-mode={none,once,rewrite,new}*",
            "*--agui-cassette-dir=DIR*",
            "*--agui-upstream=URL*",
            "*--agui-secret-env=NAME*",
            "*--agui-fail-on-unused*",
        ]
    )
    for ini in ("agui_cassette_dir", "agui_record_mode", "agui_upstream", "agui_secret_env"):
        result.stdout.fnmatch_lines([f"*{ini} (*"])
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.agui(record_mode=None, cassette=None, *"])


# --- scrubbing -----------------------------------------------------------------------------------

KEY = "sk-proj-Zx81live0key0recorded0here"
PASSWORD = "correct-horse-battery-staple"


def test_keys_and_configured_secrets_never_reach_the_cassette(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the agent's client sends it as its bearer token
    monkeypatch.setenv("MY_DB_PASSWORD", PASSWORD)
    project.makepyfile(
        test_secret=textwrap.dedent(
            f"""
            def test_secret(agui, make_agent):
                # the secret goes into the input, the provider request body, the streamed
                # chunks (the upstream echoes it) and the AG-UI events
                events = agui.run(make_agent(), "my password is {PASSWORD} ok")
                assert events[-1]["type"] == "RUN_FINISHED"
            """
        )
    )
    result = run(project, "test_secret.py", "--agui-record", "--agui-secret-env=MY_DB_PASSWORD")
    result.assert_outcomes(passed=1)
    path = project.path / "cassettes" / "test_secret" / "test_secret.json"
    text = path.read_text()
    assert KEY not in text
    assert PASSWORD not in text
    assert "horse-battery" not in text  # not even a piece of it, in any chunk
    cassette = load(path)
    interaction = cassette["runs"][0]["interactions"][0]
    assert interaction["request"]["headers"]["authorization"] == "<scrubbed>"
    assert "<scrubbed>" in json.dumps(interaction["request"]["body"])
    assert "<scrubbed>" in deltas(cassette["runs"][0])

    # the replay scrubs what it compares the same way, so it still passes offline
    monkeypatch.setenv("AGUI_TEST_NO_UPSTREAM", "1")
    run(project, "test_secret.py", "--agui-secret-env=MY_DB_PASSWORD").assert_outcomes(passed=1)


def test_marker_secrets_are_scrubbed_too(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_secret=textwrap.dedent(
            """
            import pytest

            @pytest.mark.agui(secrets=["tiramisu-recipe-42"])
            def test_secret(agui, make_agent):
                agui.run(make_agent(), "the tiramisu-recipe-42 is here")
            """
        )
    )
    run(project, "test_secret.py", "--agui-record").assert_outcomes(passed=1)
    text = (project.path / "cassettes" / "test_secret" / "test_secret.json").read_text()
    assert "tiramisu" not in text
    assert text.count("<scrubbed>") >= 3  # input, request body, chunks, events


# --- the network guard ---------------------------------------------------------------------------


def test_replay_fails_when_the_agent_opens_a_real_connection(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGUI_TEST_DIAL_OUT", "1")
    # recording may use the network: the same agent passes
    run(project, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    result = run(project, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*NetworkBlockedError: agui-replay blocked a connection to 0.0.0.0:9 while replaying*"]
    )


def test_the_guard_covers_connections_outside_agui_run(project: pytest.Pytester) -> None:
    run(project, "test_agent.py::test_hello", "--agui-record").assert_outcomes(passed=1)
    project.makepyfile(
        test_agent=TEST_AGENT.replace(
            'assert events[-1]["type"] == "RUN_FINISHED"',
            'assert events[-1]["type"] == "RUN_FINISHED"\n'
            "    import socket\n"
            "    try:\n"
            '        socket.create_connection(("0.0.0.0", 9), timeout=1)\n'
            "    except OSError:\n"
            "        pass",
        )
    )
    result = run(project, "test_agent.py::test_hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*blocked a connection to 0.0.0.0:9*"])


# --- assertion output ----------------------------------------------------------------------------


def test_assert_on_two_streams_explains_the_first_difference(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            """
            def test_streams():
                a = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hello"}]
                b = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Help"}]
                assert a == b
            """
        )
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*event streams differ at event #1 (TEXT_MESSAGE_CONTENT): field /delta*",
            '*/delta: left "Hello" != right "Help"*',
            '*> #1 {"type": "TEXT_MESSAGE_CONTENT"*',
        ]
    )
