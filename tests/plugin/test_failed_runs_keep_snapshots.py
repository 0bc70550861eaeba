"""``--snapshot-update`` never deletes the snapshot of a test whose recording or replay failed
(pytester, as a user meets it).

The story: the tests compare their events with ``agui_snapshot``. A re-record with
``pytest --agui-record --snapshot-update`` while the upstream is down writes no cassette, and
must not delete the snapshots either: the cassettes and their snapshots stay in step. A replay
that no longer matches (the prompt changed) fails; following syrupy's advice,
``pytest --snapshot-update``, must not delete its snapshot as unused. A snapshot whose test is
gone is still deleted (``test_refresh_keeps_snapshots``).
"""

from __future__ import annotations

import pytest

from tests.plugin.test_refresh_keeps_snapshots import (
    CASSETTE,
    CONFTEST,
    GOODBYE,
    HELLO,
    TESTS,
)
from tests.support.pytester_run import run

DOWN = "http://127.0.0.1:9/v1"
"""An upstream nothing listens on."""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # as in test_refresh_keeps_snapshots: the inner runs are no xdist workers
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    run(pytester, "--agui-record", "--snapshot-update").assert_outcomes(passed=2)
    assert HELLO.exists()
    assert GOODBYE.exists()
    return pytester


def test_a_recording_whose_upstream_is_down_keeps_the_snapshots(project: pytest.Pytester) -> None:
    snapshots = (HELLO.read_bytes(), GOODBYE.read_bytes())
    cassette = CASSETTE.read_bytes()
    result = run(project, "--agui-record", "--snapshot-update", f"--agui-upstream={DOWN}")
    result.assert_outcomes(failed=2)
    assert CASSETTE.read_bytes() == cassette  # nothing written
    assert (HELLO.read_bytes(), GOODBYE.read_bytes()) == snapshots
    result.stdout.fnmatch_lines(
        [
            "*snapshots kept: test_agent.py::test_goodbye, test_agent.py::test_hello (failed "
            "while recording, which wrote nothing for them: --snapshot-update would have "
            "deleted their snapshots as unused)*",
        ]
    )
    result.stdout.no_fnmatch_line("*unused snapshot* deleted*")


def test_a_replay_that_mismatched_keeps_its_snapshot_under_snapshot_update(
    project: pytest.Pytester,
) -> None:
    snapshot = HELLO.read_bytes()
    project.makepyfile(test_agent=TESTS.replace('"hello there"', '"hello here"'))
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ReplayMismatchError*"])

    result = run(project, "--snapshot-update")  # what syrupy advises
    result.assert_outcomes(passed=1, failed=1)
    assert HELLO.read_bytes() == snapshot
    result.stdout.fnmatch_lines(
        [
            "*snapshots kept: test_agent.py::test_hello (failed its replay, which leaves its "
            "cassette as it was: --snapshot-update would have deleted its snapshots as unused)*",
        ]
    )
    result.stdout.no_fnmatch_line("*unused snapshot* deleted*")
