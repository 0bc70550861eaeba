"""The package as pip builds it: one pure-Python wheel for every platform and interpreter, with
its type marker and the viewer's assets."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _wheel(tmp_path: Path) -> Path:
    """Build a wheel of a copy of the project, as pip does, and return its path."""
    project = tmp_path / "project"
    project.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, project / part)
    shutil.copytree(
        ROOT / "agui_replay",
        project / "agui_replay",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    out = tmp_path / "wheel"
    # --no-build-isolation: the test extra installs setuptools, so no registry is asked.
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    result = subprocess.run(
        [*command, "-q", "-w", str(out), str(project)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def test_the_wheel_is_pure_python_with_its_marker_and_viewer_assets(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    assert wheel.name.endswith("py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "agui_replay/py.typed" in names
    assert "agui_replay/state/__init__.py" in names or "agui_replay/state.py" in names
    viewer = ROOT / "agui_replay" / "cli" / "viewer_assets"
    assets = {path.relative_to(ROOT).as_posix() for path in viewer.rglob("*") if path.is_file()}
    assert assets, f"no viewer assets under {viewer}"
    assert assets <= names, sorted(assets - names)
    compiled = [name for name in names if name.endswith((".so", ".pyd", ".c", ".pyi"))]
    assert not compiled, compiled
