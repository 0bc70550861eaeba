"""Where the pytest plugin puts a test's cassette, and the claims that keep two tests of one
session from writing the same cassette (across pytest-xdist workers too).

No pytest here (only ``pytest_plugin`` imports it); the file-name helpers are imported inside the
functions that need them, so the plugin's session start stays cheap.

Default folders: a test module that is not in a package (its folder has no ``__init__.py``)
keeps ``<cassettes>/<module>/``; a module in a package gets its package path in front,
``<cassettes>/<package>/<subpackage>/<module>/``, so same-named modules of two packages never
share a folder. A packaged module's cassette recorded before this rule (at
``<cassettes>/<module>/``) is still read from there until ``--agui-record`` writes the new
place.

Claims: before a run records, the plugin creates ``.<cassette name>.claim`` next to the
cassette with ``O_EXCL``; it holds the session's run id and the test's node id. A second test
of the same run finds it and is refused, naming both. The claims a session made are removed
at its end; any left by a killed session are removed at the next session's start (by the
xdist controller before its workers start), with the temporary files of the cassette writes a
killed process left behind.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import time
from pathlib import Path

CLAIM_SUFFIX = ".claim"
STALE_TEMP_SECONDS = 60.0
"""A temporary cassette file older than this was left by a killed process: removed."""


@functools.lru_cache(maxsize=4096)
def module_folder(module_path: Path) -> tuple[str, ...]:
    """The folder parts of a test module's cassettes: its package path and its stem."""
    parts = [module_path.stem]
    folder = module_path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return tuple(parts)


def folder_path(root: Path, parts: tuple[str, ...] | list[str]) -> Path:
    """``root`` joined with each part made a safe file name."""
    from agui_replay._files import safe_file_name

    return root.joinpath(*(safe_file_name(p) for p in parts))


def default_cassette(root: Path, module_path: Path, test_name: str, *, migrate: bool) -> Path:
    """A test's default cassette (see the module docstring); ``migrate`` (``--agui-record``)
    ignores a packaged module's cassette at its former place."""
    from agui_replay._files import safe_file_name

    parts = module_folder(module_path)
    name = f"{safe_file_name(test_name)}.json"
    path = folder_path(root, parts) / name
    if len(parts) > 1 and not migrate and not path.exists():
        former = folder_path(root, parts[-1:]) / name
        if former.exists():
            return former
    return path


def claim_path(cassette: Path) -> Path:
    return cassette.parent / f".{cassette.name}{CLAIM_SUFFIX}"


def claim_cassette(cassette: Path, run: str, test: str) -> str | None:
    """Claim ``cassette`` for ``test`` in session ``run``: ``None`` when it is this test's now
    (the claim file's path is then the caller's to remove at the end), else the node id of the
    test of this run that claimed it first."""
    claim = claim_path(cassette)
    claim.parent.mkdir(parents=True, exist_ok=True)
    record = json.dumps({"run": run, "test": test})
    for _ in range(200):
        try:
            fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                held = json.loads(claim.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                held = None  # being written right now, or gone: look again
            if isinstance(held, dict) and held.get("run") == run:
                other = str(held.get("test"))
                return None if other == test else other
            if isinstance(held, dict):  # another session's, left behind: taken over
                claim.write_text(record, encoding="utf-8")
                return None
            time.sleep(0.01)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(record)
        return None
    claim.write_text(record, encoding="utf-8")
    return None


def remove_claims(paths: list[str] | set[str], root: Path | None = None) -> None:
    """Remove the claim files a session made (``paths``; under xdist, its workers'), and the
    folders under ``root`` they leave empty (a recording that failed writes no folder)."""
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            continue
        folder = Path(path).parent
        while root is not None and folder != root and root in folder.parents:
            try:
                folder.rmdir()  # only an empty one: a cassette or another claim keeps it
            except OSError:
                break
            folder = folder.parent


def remove_stale_claims(folder: Path) -> None:
    """Remove every claim file under ``folder``: at a session's start, all are left over."""
    if not folder.is_dir():
        return
    for base, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith(".") and name.endswith(CLAIM_SUFFIX):
                try:
                    os.unlink(os.path.join(base, name))
                except OSError:
                    continue


def remove_stale_temp_files(
    folder: Path, *, older_than: float = STALE_TEMP_SECONDS, now: float | None = None
) -> list[str]:
    """Delete, under ``folder``, the temporary files of cassette writes that a killed process
    left behind: only names of ``atomic_write_text``'s pattern (``.<name>.<pid>.<hex>.tmp``),
    regular files, last modified more than ``older_than`` seconds ago (a write in progress in
    another process is younger). Returns the paths removed."""
    from agui_replay._files import is_temp_file

    removed: list[str] = []
    if not folder.is_dir():
        return removed
    limit = (time.time() if now is None else now) - older_than
    for base, _dirs, files in os.walk(folder):
        for name in files:
            if not is_temp_file(name):
                continue
            path = os.path.join(base, name)
            try:
                info = os.lstat(path)  # a symlink is not ours: never followed, never removed
                if not stat.S_ISREG(info.st_mode) or info.st_mtime > limit:
                    continue
                os.unlink(path)
            except OSError:
                continue  # gone meanwhile, or not ours to remove
            removed.append(path)
    return sorted(removed)
