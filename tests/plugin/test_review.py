"""Pending changes and ``agui-replay review`` through real pytest runs (pytester).

Record; change how the agent turns the model's answer into events (its provider requests stay
the same); the plain replay fails and keeps the new stream beside the cassette
(``NAME.json.pending``), listed in the summary; ``agui-replay review`` shows the diff and
accepts it (``--accept-all``, or ``a`` piped on standard input), after which the plain replay
passes and the cassette's interactions are the recorded ones byte for byte; or rejects it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agui_replay.cli import main
from tests.plugin.test_plugin_refresh import CONFTEST, HELLO, TESTS, _interaction_text, _types
from tests.support.pytester_run import run

PENDING = Path(str(HELLO) + ".pending")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "AGENT_PROMPT", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def review(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = ""
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["review", *args])
    return code, capsys.readouterr().out


def _changed(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Record test_hello, change the agent's events, replay (fails): the recorded bytes."""
    run(project, "--agui-record", "-k", "test_hello").assert_outcomes(passed=1, deselected=1)
    recorded = HELLO.read_bytes()
    monkeypatch.setenv("AGENT_STYLE", "steps")
    monkeypatch.setenv("AGUI_TEST_OFFLINE", "1")
    replay = run(project, "-k", "test_hello")
    replay.assert_outcomes(failed=1, deselected=1)
    replay.stdout.fnmatch_lines(
        [
            "*review and accept them with `agui-replay review`*",
            "*pending changes: 1 (review with agui-replay review)*",
            "*pending:  cassettes/test_agent/test_hello.json.pending*",
        ]
    )
    assert PENDING.is_file()
    assert HELLO.read_bytes() == recorded  # the cassette itself is untouched
    return recorded


def test_accept_all_stores_the_new_events(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded = _changed(project, monkeypatch)
    code, out = review(capsys, monkeypatch, "--accept-all")
    assert code == 0, out
    assert "run #0: event streams differ" in out
    assert "1 accepted" in out
    assert not PENDING.exists()
    assert "STEP_STARTED" in _types(HELLO)
    assert _interaction_text(HELLO) == _interaction_text_of(recorded)
    assert json.loads(HELLO.read_bytes())["recorded_at"] == json.loads(recorded)["recorded_at"]
    green = run(project, "-k", "test_hello")
    green.assert_outcomes(passed=1, deselected=1)
    assert "pending changes" not in green.stdout.str()


def test_piped_answer_accepts_as_a_terminal_would(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _changed(project, monkeypatch)
    done = subprocess.run(
        [sys.executable, "-m", "agui_replay", "review"],
        input="a\n",
        capture_output=True,
        text=True,
        cwd=project.path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accept / reject / skip / quit [a/r/s/q]?" in done.stdout
    assert _interaction_text(HELLO) == _interaction_text_of(recorded)
    run(project, "-k", "test_hello").assert_outcomes(passed=1, deselected=1)


def test_skip_then_end_of_input_leaves_it_and_reject_deletes_it(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded = _changed(project, monkeypatch)
    code, out = review(capsys, monkeypatch, stdin="what\ns\n")
    assert code == 0
    assert "unknown answer 'what'" in out
    assert "1 skipped" in out
    assert PENDING.exists()
    code, out = review(capsys, monkeypatch, stdin="")  # end of input: quit
    assert code == 0
    assert PENDING.exists()
    code, out = review(capsys, monkeypatch, stdin="r\n")
    assert code == 0
    assert "1 rejected" in out
    assert not PENDING.exists()
    assert HELLO.read_bytes() == recorded
    run(project, "-k", "test_hello").assert_outcomes(failed=1, deselected=1)  # still changed


def test_a_pending_change_of_a_changed_cassette_is_refused(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded = _changed(project, monkeypatch)
    HELLO.write_bytes(recorded.replace(b'"recorded_at"', b'"recorded_at" ', 1))
    code, out = review(capsys, monkeypatch, "--accept-all")
    assert code == 1
    assert "refused: its cassette cassettes/test_agent/test_hello.json changed since" in out
    assert PENDING.exists()
    code, out = review(capsys, monkeypatch, "--reject-all")
    assert code == 0
    assert not PENDING.exists()


def test_nothing_pending(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.path / "cassettes").mkdir()
    code, out = review(capsys, monkeypatch)
    assert code == 0
    assert out == "nothing pending under cassettes\n"


def _interaction_text_of(data: bytes) -> list[str]:
    path = Path("recorded.json")
    path.write_bytes(data)
    try:
        return _interaction_text(path)
    finally:
        path.unlink()
