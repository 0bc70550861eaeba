"""Which cassettes no test uses, found at the end of a session (one definition, in
:func:`unused_cassettes`, for the listing, the failure and the pruning); a missing cassette
beside an unused one is named as a likely rename.

A test module pytest did not collect (``--ignore``, ``collect_ignore``, skipped or failing at
import) keeps its cassettes out of the count: its folders are noted while pytest collects.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shlex
from pathlib import Path

import pytest

from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._options import SessionOptions
from agui_replay.pytest_plugin._paths import folder_path, module_folder


def unused_cassettes(options: SessionOptions, ledger: Ledger) -> list[str]:
    """The unused cassettes, as shown, sorted: the one list the summary shows,
    ``--agui-fail-on-unused`` fails on and ``--agui-prune-unused`` deletes.

    A cassette is unused when the plugin recorded it for a test (its ``name`` is the test's
    node id) that no collected test claims, records or replays, and it lies in the folder of a
    test module collected in full, or, when the whole suite was collected, its test's module
    was collected (a packaged module's cassette left at its former place) or is gone from
    disk. A file the plugin did not record (a script's, ``agui-replay capture``'s) is no
    test's, and a test module on disk that pytest did not collect keeps its cassettes.
    """
    root = options.cassette_dir
    if not root.is_dir():
        return []
    folders = collected_folders(options, ledger)
    # the folders of the test modules on disk that pytest did not collect: their
    # cassettes are not known to be unused
    uncollected = {folder_path(root, f.split("/")) for f in ledger.uncollected}
    used = ledger.claimed | ledger.recorded | ledger.replayed | ledger.mismatched
    found: list[str] = []
    for path in sorted(root.rglob("*.json")):
        shown = options.shown(path)
        if path.name.startswith(".") or shown in used:
            continue
        in_folder = options.shown(path.parent) in folders
        if not (in_folder or (ledger.whole_suite and path.parent.resolve() not in uncollected)):
            continue  # read no more files than the collected modules' and the whole suite's
        test_module = _recorded_test_module(path)
        if test_module is None:
            continue  # not the plugin's recording
        if (
            in_folder
            or test_module in ledger.modules
            or not (options.rootdir / test_module).exists()
        ):
            found.append(shown)
    return found


def _recorded_test_module(path: Path) -> str | None:
    """The test module (as its node id names it) the plugin recorded ``path`` for; ``None``
    for a file the plugin did not record (no node id in its ``name``) or cannot read."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or "::" not in name:
        return None
    return name.split("::", 1)[0]


def collected_folders(options: SessionOptions, ledger: Ledger) -> set[str]:
    """The cassette folders (as shown) of the test modules collected in full."""
    root = options.cassette_dir
    return {options.shown(folder_path(root, f.split("/"))) for f in ledger.stems}


def prune(options: SessionOptions, unused: list[str]) -> tuple[list[str], list[str]]:
    """Delete the unused cassettes (and the folders they leave empty). Returns (deleted,
    left): left are those that could not be deleted."""
    deleted: list[str] = []
    left: list[str] = []
    for shown in unused:
        path = Path(shown) if Path(shown).is_absolute() else options.rootdir / shown
        try:
            path.unlink()
        except OSError:
            left.append(shown)
            continue
        deleted.append(shown)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when nothing is left in it
    return deleted, left


def uncollected_folders(path: Path, config: pytest.Config) -> set[str]:
    """The cassette folders (``a/b`` parts) of the test modules at or under ``path``, which
    pytest ignored; none when pytest skips it by ``norecursedirs``."""
    if is_norecurse(path, config):
        return set()
    if path.suffix == ".py":
        return {"/".join(module_folder(path.resolve()))}
    found: set[str] = set()
    if not path.is_dir():
        return found
    for base, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not is_norecurse(Path(base, d), config)]
        for name in files:
            if name.endswith(".py"):
                found.add("/".join(module_folder(Path(base, name).resolve())))
    return found


def is_norecurse(path: Path, config: pytest.Config) -> bool:
    """Whether pytest skips ``path`` by ini ``norecursedirs`` (a virtualenv, ``build``...) rather
    than by an explicit ignore: such folders hold no tests whose cassettes matter."""
    if path.name.startswith(".") or (path / "pyvenv.cfg").exists():
        return True
    patterns = config.getini("norecursedirs")
    return any(fnmatch.fnmatch(path.name, str(p)) for p in patterns)


def rename_hints(missing: set[str], unused: list[str]) -> list[str]:
    """For each cassette folder with a missing cassette and an unused one: a renamed test?"""
    lines: list[str] = []
    for folder in sorted({str(Path(m).parent) for m in missing}):
        gone = sorted(m for m in missing if str(Path(m).parent) == folder)
        spare = sorted(u for u in unused if str(Path(u).parent) == folder)
        if not spare:
            continue
        if len(gone) == 1 and len(spare) == 1:
            lines.append(
                f"did you rename a test? {gone[0]} is missing and {spare[0]} unused; to keep "
                f"the recording: git mv {shlex.quote(spare[0])} {shlex.quote(gone[0])}"
            )
        else:
            lines.append(
                f"did you rename a test? {folder}/ has {len(gone)} missing and {len(spare)} "
                "unused cassette(s): `git mv` each unused one to its test's new name"
            )
    return lines
