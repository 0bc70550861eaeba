"""``agui-replay examples`` beside an example this venv cannot import.

An example on a framework that needs its own venv (agent-framework-ag-ui pins
``ag-ui-protocol<0.2``) skips its test module with ``pytest.importorskip``. Run from another
venv, the command replays the other examples, names the skipped module with its reason, does
not call its cassette unused, and still exits 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

TEST_BOARD = textwrap.dedent(
    """
    def test_a_greeting(agui):
        def agent(ctx):
            with ctx.assistant_message() as message:
                message.delta("Hello")

        events = agui.run(agent, "hi")
        assert events[-1]["type"] == "RUN_FINISHED"
    """
)

TEST_FRAMEWORK = textwrap.dedent(
    """
    import pytest

    pytest.importorskip("no_such_agent_framework", reason="needs the framework's own venv")

    def test_a_greeting(agui):
        raise AssertionError("never collected here")
    """
)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AGUI_"))}
    env["AGUI_REPLAY_NO_PROGRESS"] = "1"
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_module_that_skips_itself_is_named_with_its_reason_and_fails_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n', encoding="utf-8"
    )
    for folder, name, text in [
        ("board", "test_board.py", TEST_BOARD),
        ("framework", "test_framework.py", TEST_FRAMEWORK),
    ]:
        (tmp_path / "examples" / folder).mkdir(parents=True)
        (tmp_path / "examples" / folder / name).write_text(text, encoding="utf-8")
    recorded = _run(tmp_path, "-m", "pytest", "examples", "--agui-record", "-p", "no:cacheprovider")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    # The framework example's cassette, recorded in its own venv, is in the repository too.
    board = tmp_path / "cassettes" / "test_board" / "test_a_greeting.json"
    framework = tmp_path / "cassettes" / "test_framework" / "test_a_greeting.json"
    framework.parent.mkdir()
    shutil.copyfile(board, framework)

    result = _run(tmp_path, "-m", "agui_replay.cli", "examples")

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    note = "skipped here, not replayed: examples/framework/test_framework.py: "
    assert f"{note}needs the framework's own venv" in lines
    assert "unused" not in result.stdout
    assert lines[-1].startswith("total: 1 test, 1 passed, 0 failed · 1 cassette replayed")
