"""The plugin's object for one pytest session (:class:`Tracker`, kept in ``config.stash``): its
options, the :class:`~._ledger.Ledger` of what its tests did to their cassettes, and the work
of its start (leftovers removed), its collection (which cassettes the collected tests own),
its end (unused cassettes found, pruned, the exit status) and its summary. The pytest hooks
call it and do nothing else.

Under pytest-xdist each worker keeps its own ledger and sends it to the controller when it
goes down; the controller merges them and does the session's end and summary alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agui_replay.pytest_plugin import _paths, _syrupy, _unused
from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._options import SessionOptions
from agui_replay.pytest_plugin._summary import Cleanup, summary_lines
from agui_replay.pytest_plugin._wiring import cassette_for

_WORKER_KEY = "agui_replay"
"""The key of a worker's ledger (JSON) in its ``workeroutput``."""


class Tracker:
    """What the plugin knows and does for one pytest session."""

    def __init__(self, options: SessionOptions, config: pytest.Config) -> None:
        self.options = options
        self.config = config
        self.ledger = Ledger()
        self.cleanup = Cleanup(unused=[], pruned=[], stale_removed=[])
        self.holds_server = False
        """The session holds the process's loopback server (its port stays the same from the
        first ``agui`` test to the end: clients built in one test keep working in the next)."""

    # --- start and collection -------------------------------------------------------------

    def start(self, session: pytest.Session) -> None:
        """Remove what killed sessions left (under xdist, the controller does it, before its
        workers start)."""
        if hasattr(session.config, "workerinput"):
            return
        self.cleanup.stale_removed = _paths.remove_stale_temp_files(self.options.cassette_dir)
        _paths.remove_stale_claims(self.options.cassette_dir)

    def ignored(self, path: Path, config: pytest.Config) -> None:
        """pytest ignored ``path``: the test modules under it keep their cassettes."""
        self.ledger.uncollected |= _unused.uncollected_folders(path, config)

    def collect_failed(self, report: pytest.CollectReport) -> None:
        """A module skipped at import (``pytest.skip(allow_module_level=True)``) or failing to
        import keeps its cassettes."""
        path = Path(str(report.fspath)) if report.fspath else None
        if report.outcome != "passed" and path is not None and path.suffix == ".py":
            self.ledger.uncollected.add("/".join(_paths.module_folder(path.resolve())))

    def collected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Note the collected modules and the cassettes their tests own, before ``-k`` / ``-m``
        deselect anything: a deselected test still owns its cassette."""
        ledger = self.ledger
        # A module picked by node id (file.py::test) was collected in part: its other tests
        # were never seen, so its folder cannot tell what is unused.
        partial = {Path(arg.split("::", 1)[0]).stem for arg in config.args if "::" in arg}
        for item in items:
            if Path(item.path).stem not in partial:
                ledger.stems.add("/".join(_paths.module_folder(Path(item.path))))
                ledger.modules.add(item.nodeid.split("::", 1)[0])
            if "agui" in getattr(item, "fixturenames", ()):
                try:
                    ledger.claimed.add(self.options.shown(cassette_for(self.options, item)))
                except pytest.UsageError:
                    continue  # reported when the test runs
        ledger.whole_suite = config.args_source in (
            pytest.Config.ArgsSource.INVOCATION_DIR,
            pytest.Config.ArgsSource.TESTPATHS,
        ) and not (config.getoption("lf", False) or config.getoption("stepwise", False))

    # --- tests ----------------------------------------------------------------------------

    def hold_server(self) -> None:
        """Hold the process's loopback server from the first ``agui`` test on."""
        if not self.holds_server:
            from agui_replay.providers import SessionProvider

            SessionProvider.hold_server()
            self.holds_server = True

    def reported(self, item: pytest.Item, report: pytest.TestReport) -> None:
        """A test that failed while it recorded, replayed or refreshed its cassette keeps its
        snapshots (see ``_syrupy``)."""
        if not _syrupy.failed_with_snapshot(item, report):
            return
        if self.options.refresh or "agui" in getattr(item, "fixturenames", ()):
            self.ledger.kept_snapshots.add(item.nodeid)
        session = getattr(item, "funcargs", {}).get("agui")
        if not self.options.refresh and getattr(session, "replay_only", True) is False:
            self.ledger.kept_recording.add(item.nodeid)

    def logged(self, report: pytest.TestReport) -> None:
        """After syrupy took the outcome: tell it to keep a failed test's snapshots."""
        if report.nodeid in self.ledger.kept_snapshots and report.when in ("setup", "call"):
            _syrupy.keep_snapshots(self.config, report.nodeid)

    # --- end ------------------------------------------------------------------------------

    def worker_down(self, node: Any) -> None:
        """Merge the ledger of an xdist worker that finished."""
        output = getattr(node, "workeroutput", None) or {}
        data = output.get(_WORKER_KEY)
        if isinstance(data, str):
            self.ledger.merge(json.loads(data))

    def finish(self, session: pytest.Session) -> None:
        """A worker sends its ledger; the controller removes the claims, finds the unused
        cassettes (pruning them when asked) and fails the session by the options."""
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:
            worker_output[_WORKER_KEY] = json.dumps(self.ledger.to_json())
            return
        options, ledger, cleanup = self.options, self.ledger, self.cleanup
        _paths.remove_claims(ledger.claims, options.cassette_dir)
        cleanup.unused = _unused.unused_cassettes(options, ledger)
        if options.prune:
            cleanup.pruned, cleanup.unused = _unused.prune(options, cleanup.unused)
        if session.exitstatus != pytest.ExitCode.OK:
            return
        if (cleanup.unused and options.fail_on_unused) or (
            ledger.stale and options.on_stale == "fail"
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """The ``agui-replay`` section of the terminal summary (left out when empty)."""
        kept_lines = self._kept_lines(config) if _syrupy.updates_snapshots(config) else []
        lines = summary_lines(
            self.options,
            self.ledger,
            self.cleanup,
            verbose=config.get_verbosity() > 0,
            kept_snapshots=kept_lines,
        )
        if lines:
            terminalreporter.section("agui-replay")
        for text, red in lines:
            terminalreporter.write_line(text, red=red)

    def _kept_lines(self, config: pytest.Config) -> list[str]:
        """The summary's lines on the snapshots kept, one per reason."""
        ledger = self.ledger
        if self.options.refresh:
            groups = {"refresh": ledger.kept_snapshots}
        else:
            recording = ledger.kept_snapshots & ledger.kept_recording
            groups = {"record": recording, "replay": ledger.kept_snapshots - recording}
        return [
            _syrupy.kept_snapshots_line(config, sorted(tests), why)
            for why, tests in groups.items()
            if tests
        ]

    def release(self) -> None:
        """Let the loopback server go at the end of pytest's configuration."""
        if self.holds_server:
            from agui_replay.providers import SessionProvider

            self.holds_server = False
            SessionProvider.release_server()
