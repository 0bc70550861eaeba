"""``pytest --agui-refresh --snapshot-update`` keeps the snapshot of a test that failed.

The story: a test checks its agent's reply with a plain assertion and then compares the
events with ``agui_snapshot``. The agent's logic changes, so the plain assertion is outdated:
the test fails before it reaches the snapshot. A refresh writes nothing for a failing test,
and syrupy's ``--snapshot-update`` would see the snapshot unused and delete it, leaving the
cassette and its snapshot out of step. The plugin keeps the snapshot of a test that failed
during a refresh and says so in the session summary; a truly unused snapshot (its test is
gone) is still deleted.
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
        if os.environ.get("AGUI_TEST_OFFLINE"):
            raise AssertionError("the upstream was asked for although the run is offline")
        with FakeProvider(function=_echo).serve() as server:
            yield server

    @pytest.fixture
    def agent(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="dummy", max_retries=0)
        shout = os.environ.get("AGENT_STYLE") == "shout"

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": ctx.last_user_text()}],
                stream=True,
            )
            with ctx.message("assistant") as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        text = chunk.choices[0].delta.content
                        message.delta(text.upper() if shout else text)

        return agent
    """
)

TESTS = textwrap.dedent(
    """
    def reply(events):
        return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")

    def test_hello(agui, agent, agui_snapshot):
        events = agui.run(agent, "hello there")
        assert reply(events) == " hello there"
        assert events == agui_snapshot

    def test_goodbye(agui, agent, agui_snapshot):
        events = agui.run(agent, "goodbye")
        assert events == agui_snapshot
    """
)

SNAPSHOTS = Path("__snapshots__", "test_agent")
HELLO = SNAPSHOTS / "test_hello.agui.jsonl"
GOODBYE = SNAPSHOTS / "test_goodbye.agui.jsonl"
CASSETTE = Path("cassettes", "test_agent", "test_hello.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # Run under xdist, this file's worker sets it, and syrupy would take the in-process
    # pytester runs for xdist workers, which leave the deleting of snapshots to a controller.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def _record(project: pytest.Pytester) -> None:
    run(project, "--agui-record", "--snapshot-update").assert_outcomes(passed=2)
    assert HELLO.exists()
    assert GOODBYE.exists()


def test_a_test_failing_during_a_refresh_keeps_its_snapshot(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(project)
    hello_snapshot = HELLO.read_bytes()
    hello_cassette = CASSETTE.read_bytes()

    monkeypatch.setenv("AGENT_STYLE", "shout")  # test_hello's plain assertion is now outdated
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    result = run(project, "--agui-refresh", "--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)

    # the failing test: nothing refreshed, and its snapshot is still there, unchanged
    assert CASSETTE.read_bytes() == hello_cassette
    assert HELLO.read_bytes() == hello_snapshot
    result.stdout.fnmatch_lines(
        [
            "*snapshots kept: test_agent.py::test_hello (failed during --agui-refresh, which "
            "wrote nothing for it: --snapshot-update would have deleted its snapshots as "
            "unused)*",
        ]
    )
    result.stdout.no_fnmatch_line("*unused snapshot*deleted*")
    # the passing test: its cassette refreshed and its snapshot updated as usual
    assert '" GOODBYE"' in GOODBYE.read_text()

    # once the assertion is brought up to date, the refresh goes through for both
    project.makepyfile(test_agent=TESTS.replace('" hello there"', '" HELLO THERE"'))
    again = run(project, "--agui-refresh", "--snapshot-update")
    again.assert_outcomes(passed=2)
    again.stdout.no_fnmatch_line("*snapshots kept*")
    assert '" HELLO"' in HELLO.read_text()
    run(project).assert_outcomes(passed=2)


def test_a_refresh_that_cannot_replay_keeps_the_snapshot_too(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(project)
    project.makepyfile(test_agent=TESTS.replace('"hello there"', '"hello here"'))
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    result = run(project, "--agui-refresh", "--snapshot-update", "-k", "test_hello")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*cannot be refreshed*", "*snapshots kept: *test_hello*"])
    assert HELLO.exists()
    assert GOODBYE.exists()


def test_truly_unused_snapshots_are_still_deleted(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(project)
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    # test_goodbye is gone: its snapshot is unused, a refresh or not
    project.makepyfile(test_agent=TESTS.split("def test_goodbye")[0])
    result = run(project, "--agui-refresh", "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert HELLO.exists()
    assert not GOODBYE.exists()
    result.stdout.fnmatch_lines(["*1 unused snapshot deleted*"])
    result.stdout.no_fnmatch_line("*snapshots kept*")


def test_without_a_refresh_snapshot_update_is_syrupy_s_own(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain replay is not a refresh: the plugin leaves syrupy's handling alone."""
    _record(project)
    project.makepyfile(test_agent=TESTS.split("def test_goodbye")[0])
    result = run(project, "--snapshot-update")
    result.assert_outcomes(passed=1)
    assert not GOODBYE.exists()
    result.stdout.no_fnmatch_line("*snapshots kept*")


def test_the_snapshot_is_kept_under_xdist_too(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers run the tests and tell syrupy; the controller's summary names them."""
    _record(project)
    hello_snapshot = HELLO.read_bytes()
    monkeypatch.setenv("AGENT_STYLE", "shout")
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    result = project.runpytest_subprocess(
        "-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-n", "2",
        "--agui-refresh", "--snapshot-update",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    assert HELLO.read_bytes() == hello_snapshot
    result.stdout.fnmatch_lines(["*snapshots kept: test_agent.py::test_hello (failed during*"])


def test_a_test_without_a_cassette_keeps_its_snapshot(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It errors in its setup, before its snapshot fixture is set up."""
    _record(project)
    CASSETTE.unlink()
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    result = run(project, "--agui-refresh", "--snapshot-update")
    result.assert_outcomes(passed=1, errors=1)
    assert HELLO.exists()
    assert GOODBYE.exists()
    result.stdout.fnmatch_lines(["*snapshots kept: test_agent.py::test_hello (failed during*"])

    # the same when no test of the session got as far as a snapshot
    Path("cassettes", "test_agent", "test_goodbye.json").unlink()
    result = run(project, "--agui-refresh", "--snapshot-update")
    result.assert_outcomes(errors=2)
    assert HELLO.exists()
    assert GOODBYE.exists()
    result.stdout.fnmatch_lines(["*snapshots kept: test_agent.py::test_goodbye, *test_hello (*"])
    result.stdout.no_fnmatch_line("*unused snapshot* deleted*")


def test_a_syrupy_that_cannot_be_told_is_named_in_the_summary() -> None:
    """Without ``SnapshotSession.ran_item`` nothing is kept, and the summary says so."""
    from types import SimpleNamespace

    from agui_replay.pytest_plugin._syrupy import keep_snapshots, kept_snapshots_line

    told: list[tuple[str, str]] = []
    current = SimpleNamespace(_syrupy=SimpleNamespace(ran_item=lambda *a: told.append(a)))
    keep_snapshots(current, "t.py::test_a")  # type: ignore[arg-type]
    assert told == [("t.py::test_a", "skipped")]
    line = kept_snapshots_line(current, ["t.py::test_a"])  # type: ignore[arg-type]
    assert line.startswith("snapshots kept: t.py::test_a (failed during --agui-refresh")

    old = SimpleNamespace(_syrupy=SimpleNamespace())
    keep_snapshots(old, "t.py::test_a")  # type: ignore[arg-type]
    line = kept_snapshots_line(old, ["t.py::test_a", "t.py::test_b"])  # type: ignore[arg-type]
    assert line.startswith("snapshots NOT kept: t.py::test_a, t.py::test_b failed during")
    assert "restore any that --snapshot-update deleted" in line
