"""The package stays clean under `ruff` and `mypy --strict` (the project's own standard)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed in this environment (pip install -e '.[test]')")
    return found


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "agui_replay", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = subprocess.run(
        [_tool("mypy"), "--strict", "agui_replay"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
