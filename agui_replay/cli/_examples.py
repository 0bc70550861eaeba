"""``agui-replay examples``: replay the example agents' cassette tests offline, with a report."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from agui_replay.cli._common import EXIT_DIFFERENT, EXIT_OK, _UsageError
from agui_replay.cli._progress import isatty
from agui_replay.cli._style import _Style, _want_color

__all__ = [
    "ExampleTest",
    "ExamplesReport",
    "replay_examples",
]


@dataclass
class ExampleTest:
    """One test of an ``agui-replay examples`` run, with the cassette it replayed."""

    nodeid: str
    example: str
    """The folder right below the examples path (``.`` for a test file directly in it)."""
    name: str
    """``file.py::test`` below the example folder."""
    outcome: Literal["passed", "failed", "skipped"] = "passed"
    cassette: str | None = None
    runs: int = 0
    events: int = 0
    replayed: bool = False
    failure: str = ""


@dataclass
class ExamplesReport:
    """What :func:`replay_examples` found: every test, pytest's exit code and its output."""

    root: Path
    tests: list[ExampleTest]
    exit_code: int
    output: str
    seconds: float
    unused: list[str] = field(default_factory=list)
    skipped_modules: list[tuple[str, str]] = field(default_factory=list)
    """(node id, reason) of each test module that skipped itself while being collected."""

    @property
    def ok(self) -> bool:
        """Every test passed, at least one ran, and pytest itself had nothing to say."""
        return (
            self.exit_code == 0
            and bool(self.tests)
            and all(t.outcome == "passed" for t in self.tests)
        )

    def examples(self) -> dict[str, list[ExampleTest]]:
        grouped: dict[str, list[ExampleTest]] = {}
        for test in self.tests:
            grouped.setdefault(test.example, []).append(test)
        return dict(sorted(grouped.items()))


class _ExamplesCollector:
    """A pytest plugin, registered for one in-process run: keeps the cassette tests (unless
    ``all_tests``) and notes what each one replayed and how it ended."""

    def __init__(self, root: Path, all_tests: bool, progress: TextIO | None) -> None:
        self.root = root.resolve()
        self.all_tests = all_tests
        self.progress = progress
        self.tests: dict[str, ExampleTest] = {}
        self.total = 0
        self.skipped_modules: list[tuple[str, str]] = []

    def _shown(self, path: Path) -> str:
        resolved = path.resolve()
        with contextlib.suppress(ValueError):
            return resolved.relative_to(Path.cwd()).as_posix()
        return resolved.as_posix()

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if not self.all_tests:
            keep = [i for i in items if "agui" in getattr(i, "fixturenames", ())]
            dropped = [i for i in items if "agui" not in getattr(i, "fixturenames", ())]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = keep
        for item in items:
            path = Path(item.path).resolve()
            try:
                parts = path.relative_to(self.root).parts
            except ValueError:
                parts = (path.name,)
            example = parts[0] if len(parts) > 1 else "."
            test_name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
            self.tests[item.nodeid] = ExampleTest(item.nodeid, example, f"{path.name}::{test_name}")
        self.total = len(items)

    def pytest_collectreport(self, report: Any) -> None:
        # A module that skips itself on import (pytest.importorskip of a framework this venv
        # lacks, e.g. agent-framework-ag-ui beside ag-ui-protocol 1.x) has no tests to list:
        # keep its reason for a note. It fails nothing.
        if report.skipped and isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            self.skipped_modules.append((report.nodeid, reason))

    def pytest_runtest_teardown(self, item: Any) -> None:
        # Before the fixtures go: the agui session still holds its runs here.
        from agui_replay.recording import CassetteSession

        test = self.tests.get(item.nodeid)
        session = getattr(item, "funcargs", {}).get("agui")
        if test is None or not isinstance(session, CassetteSession):
            return
        test.cassette = self._shown(session.path)
        test.runs = len(session.runs)
        test.events = sum(len(run.events) for run in session.runs)
        test.replayed = session.outcome == "replayed"

    def pytest_runtest_logreport(self, report: Any) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:
            return
        if report.failed:
            test.outcome = "failed"
            text = str(report.longreprtext).strip()
            test.failure = f"{test.failure}\n{text}".strip() if test.failure else text
        elif report.skipped and test.outcome == "passed":
            test.outcome = "skipped"
            test.failure = str(report.longreprtext).strip()
        if report.when == "teardown" and self.progress is not None:
            done = sum(1 for t in self.tests.values() if t.outcome != "passed" or t.runs) or 0
            self.progress.write(f"\rreplaying: {min(done, self.total)}/{self.total} tests")
            self.progress.flush()


def replay_examples(
    path: str | os.PathLike[str] = "examples",
    *,
    all_tests: bool = False,
    progress: TextIO | None = None,
) -> ExamplesReport:
    """Run the cassette tests under ``path`` in this process, replay only, and report.

    pytest runs with ``--agui-record-mode=none`` (no network, no key: a missing or changed
    cassette fails), ``--agui-fail-on-unused``, quiet, and without the cache plugin or
    bytecode files, so nothing is written. ``all_tests`` also runs the tests that use no
    cassette.
    """
    import io

    import pytest

    root = Path(path)
    collector = _ExamplesCollector(root, all_tests, progress)
    args = [
        str(root),
        "--agui-record-mode=none",
        "--agui-fail-on-unused",
        "-q",
        "-p",
        "no:cacheprovider",
        "--color=no",
        # This process imported agui_replay (the plugin) before pytest could rewrite its asserts;
        # an ini `filterwarnings = error` would turn that notice into a failure.
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    ]
    buffer = io.StringIO()
    started = time.monotonic()
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = int(pytest.main(args, plugins=[collector]))
    finally:
        sys.dont_write_bytecode = dont_write
        if progress is not None and collector.total:
            progress.write("\r\033[K")
            progress.flush()
    output = buffer.getvalue()
    unused = [
        line.split("unused:", 1)[1].strip()
        for line in output.splitlines()
        if line.lstrip().startswith("unused:")
    ]
    return ExamplesReport(
        root,
        list(collector.tests.values()),
        code,
        output,
        time.monotonic() - started,
        unused,
        collector.skipped_modules,
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _examples(args: argparse.Namespace, out: TextIO) -> int:
    root = Path(args.path) if args.path else Path.cwd() / "examples"
    if not root.exists():
        raise _UsageError(
            f"{root} does not exist: run this in the repository root, or pass the folder of "
            "the examples (agui-replay examples PATH)"
        )
    style = _Style(_want_color(args, out))
    tty = isatty(sys.stderr) and not os.environ.get("AGUI_REPLAY_NO_PROGRESS")
    shown_root = os.path.relpath(root) if root.is_absolute() else str(root)
    out.write(f"agui-replay examples: replaying the cassettes under {shown_root} offline\n\n")
    out.flush()
    report = replay_examples(root, all_tests=args.all, progress=sys.stderr if tty else None)
    mark = {
        "passed": style.green("pass"),
        "failed": style.red("FAIL"),
        "skipped": style.yellow("skip"),
    }
    for example, tests in report.examples().items():
        passed = sum(1 for t in tests if t.outcome == "passed")
        verdict = style.green("ok") if passed == len(tests) else style.red("FAILED")
        out.write(
            f"{style.bold(example)}  {passed}/{_plural(len(tests), 'test')} passed  {verdict}\n"
        )
        for test in tests:
            out.write(f"  {mark[test.outcome]}  {test.name}\n")
            if test.cassette is not None:
                detail = f"{_plural(test.runs, 'run')}, {_plural(test.events, 'event')}"
                out.write(style.dim(f"        {test.cassette}  ({detail})") + "\n")
            if test.outcome != "passed" and test.failure:
                lines = test.failure.splitlines()
                shown = lines[: args.max_lines] if args.max_lines else lines
                for line in shown:  # whole lines: a clipped path or diff helps nobody
                    out.write(f"        {line}\n")
                if len(shown) < len(lines):
                    more = len(lines) - len(shown)
                    out.write(style.dim(f"        … {more} more line(s) (--max-lines 0)") + "\n")
        out.write("\n")
    tests = report.tests
    failed = sum(1 for t in tests if t.outcome == "failed")
    skipped = sum(1 for t in tests if t.outcome == "skipped")
    cassettes = [t for t in tests if t.replayed]
    runs = sum(t.runs for t in cassettes)
    events = sum(t.events for t in cassettes)
    for module, reason in report.skipped_modules:
        out.write(style.yellow(f"skipped here, not replayed: {module}: {reason}") + "\n")
    for path in report.unused:
        out.write(style.red(f"unused cassette (no test replays it): {path}") + "\n")
    if not tests and report.exit_code in (0, 5):
        out.write(f"no cassette tests under {shown_root}\n")
    elif report.exit_code not in (0, 1) or (report.exit_code == 1 and not failed):
        # Collection or usage errors, or an unused cassette: pytest's own words say which.
        tail = [line for line in report.output.splitlines() if line.strip()][-25:]
        out.write("pytest reported:\n" + "".join(f"  {line}\n" for line in tail))
    skipped_text = f", {skipped} skipped" if skipped else ""
    total = (
        f"total: {_plural(len(tests), 'test')}, {len(tests) - failed - skipped} passed, "
        f"{failed} failed{skipped_text} · {_plural(len(cassettes), 'cassette')} replayed: "
        f"{_plural(runs, 'run')}, {_plural(events, 'event')} · {report.seconds:.1f} s"
    )
    out.write((style.green(total) if report.ok else style.red(total)) + "\n")
    return EXIT_OK if report.ok else EXIT_DIFFERENT
