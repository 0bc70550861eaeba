"""Session-wide behaviour: the summary, unused cassettes, xdist, and a process killed mid-write."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.recording  # noqa: F401
from agui_replay.cassette import load_cassette
from tests.plugin.test_plugin_modes import CONFTEST, HELLO, RUNS, TEST_AGENT, deltas, load
from tests.support.pytester_run import run


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_TAG", "AGUI_TEST_NO_UPSTREAM", "AGUI_TEST_RUNS", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    return pytester


def stale(project: pytest.Pytester, *parts: str) -> Path:
    """A copy of a real cassette under a name no test uses, as the plugin recorded it for the
    test the name says (``cassettes/test_a/test_b.json``: ``test_a.py::test_b``)."""
    target = project.path.joinpath("cassettes", *parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads((project.path / HELLO).read_bytes())
    data["name"] = f"{parts[-2]}.py::{Path(parts[-1]).stem}"
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def test_unused_cassettes_are_reported_and_can_fail_the_session(project: pytest.Pytester) -> None:
    run(project, "--agui-record").assert_outcomes(passed=2)
    stale(project, "test_agent", "test_removed.json")
    stale(project, "test_deleted_module", "test_x.json")

    result = run(project)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 2 replayed, 2 unused*",
            "*unused:   cassettes/test_agent/test_removed.json*",
            "*unused:   cassettes/test_deleted_module/test_x.json*",
            "*--agui-fail-on-unused*",
        ]
    )
    result = run(project, "--agui-fail-on-unused")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*unused cassettes fail the session*"])


def test_unused_respects_the_selection(project: pytest.Pytester) -> None:
    run(project, "--agui-record").assert_outcomes(passed=2)
    project.makepyfile(test_other="def test_plain():\n    pass\n")
    stale(project, "test_other", "test_gone.json")

    # -k deselects test_runs: its cassette is still owned, not unused
    result = run(project, "-k", "hello", "--agui-fail-on-unused")
    result.assert_outcomes(passed=1)
    assert "test_runs.json" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*1 unused*", "*unused:   cassettes/test_other/test_gone.json*"])

    # a run of one file looks only at that module's folder
    result = run(project, "test_agent.py", "--agui-fail-on-unused")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert "unused:" not in result.stdout.str()

    # node ids: the other tests of the module still own their cassettes
    result = run(project, "test_agent.py::test_hello", "--agui-fail-on-unused")
    assert result.ret == pytest.ExitCode.OK


def test_xdist_records_several_cassettes_and_sums_them_up(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_many=textwrap.dedent(
            """
            import pytest

            @pytest.mark.parametrize("n", range(4))
            def test_many(agui, make_agent, n):
                events = agui.run(make_agent(), f"number {n}")
                assert events[-1]["type"] == "RUN_FINISHED"
            """
        )
    )
    stale_dir = project.path / "cassettes" / "test_many"
    result = project.runpytest_subprocess(
        "-p", "no:hypothesispytest", "-n", "2", "test_many.py", "--agui-record"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*4 cassette(s) recorded, 0 replayed, 0 unused*"])
    files = sorted(p.name for p in stale_dir.iterdir())
    assert files == [f"test_many[{n}].json" for n in range(4)]  # no temporary files left
    for n in range(4):
        cassette = load(stale_dir / f"test_many[{n}].json")
        assert deltas(cassette["runs"][0]) == f"[v1] number {n}"

    (stale_dir / "test_many[9].json").write_bytes((stale_dir / "test_many[0].json").read_bytes())
    result = project.runpytest_subprocess(
        "-p", "no:hypothesispytest", "-n", "2", "test_many.py", "--agui-fail-on-unused"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 4 replayed, 1 unused*",
            "*unused:   cassettes/test_many/test_many[[]9].json*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_process_killed_while_writing_leaves_the_old_cassette_intact(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "test_agent.py::test_runs", "--agui-record").assert_outcomes(passed=1)
    before = (project.path / RUNS).read_bytes()
    project.makeconftest(
        CONFTEST
        + textwrap.dedent(
            """
            import signal

            _fsync = os.fsync

            def _die(fd):
                # the new text is written and flushed to the temporary file: die before the
                # rename, the worst moment for a non-atomic writer
                _fsync(fd)
                os.kill(os.getpid(), signal.SIGKILL)

            os.fsync = _die
            """
        )
    )
    monkeypatch.setenv("AGUI_TEST_TAG", "v2")
    monkeypatch.setenv("AGUI_TEST_RUNS", "2")
    result = project.runpytest_subprocess(
        "-p", "no:hypothesispytest", "test_agent.py::test_runs", "--agui-record"
    )
    assert result.ret == -signal.SIGKILL
    assert (project.path / RUNS).read_bytes() == before
    assert [deltas(r.to_dict()) for r in load_cassette(project.path / RUNS).runs] == [
        "[v1] question 0"
    ]
    leftovers = [p.name for p in (project.path / RUNS).parent.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1  # the half-finished write is a hidden temporary file
    assert leftovers[0].startswith(".test_runs.json.")
    tmp = json.loads(((project.path / RUNS).parent / leftovers[0]).read_text())
    assert [deltas(r) for r in tmp["runs"]] == ["[v2] question 0", "[v2] question 1"]
    assert os.path.getsize(project.path / RUNS) == len(before)
