"""The package as pip builds it: the optional C extension (agui_replay/_speedups.c) goes into
the wheel where a C compiler and the Python headers are at hand, and a machine without them
still gets a working wheel, without it (the StateManager then runs in pure Python)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from agui_replay import _compiled

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = "agui_replay/_speedups" + str(sysconfig.get_config_var("EXT_SUFFIX"))


def _compiler_at_hand() -> bool:
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and headers.is_file()


def test_the_installed_package_has_its_extension_where_a_compiler_is_at_hand() -> None:
    if not _compiler_at_hand():
        pytest.skip("no C compiler or no Python headers here: the extension cannot be built")
    assert _compiled.BUILT, (
        "agui_replay._speedups is not importable although a C compiler and the Python headers "
        "are here: reinstall the package (pip install -e .) and read pip's build output"
    )


def _wheel(tmp_path: Path, name: str, env: dict[str, str]) -> set[str]:
    """Build a wheel of a copy of the project, as pip does, and list its files."""
    project = tmp_path / name
    project.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, project / part)
    shutil.copytree(
        ROOT / "agui_replay",
        project / "agui_replay",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    out = tmp_path / f"{name}-wheel"
    # --no-build-isolation: the test extra installs setuptools, so no registry is asked.
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    result = subprocess.run(
        [*command, "-q", "-w", str(out), str(project)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_carries_the_extension_only_where_it_can_be_built(tmp_path: Path) -> None:
    # No compiler: CC names a command that always fails. The build must still succeed.
    without = _wheel(tmp_path, "without", dict(os.environ, CC="false"))
    assert "agui_replay/state.py" in without
    assert "agui_replay/_viewer/viewer.js" in without
    assert "agui_replay/py.typed" in without
    assert EXTENSION not in without
    if not _compiler_at_hand():
        pytest.skip("no C compiler or no Python headers here: only the wheel without it built")
    assert EXTENSION in _wheel(tmp_path, "with", dict(os.environ))
