"""The pytest plugin (entry point ``pytest11: agui_replay``): hooks and fixtures that wire the
recording engine (:mod:`agui_replay.recording`) into pytest, each a few lines handing on to
the session's :class:`~._tracker.Tracker` or to the module that owns the concern. The user guide
is ``docs/plugin.md``.

Only this package imports pytest; ``import agui_replay`` never does. It is loaded in every
pytest run of an environment with agui_replay installed, so its load imports no engine (the
engine's pydantic event models are slow to import): the modules below import it inside the
functions that need it, when a test uses the fixtures.

Where things live (all private):

* ``_options``: the command-line options and ini keys, read once per session
  (``SessionOptions``);
* ``_marker``: the ``@pytest.mark.agui`` keys, one table for the parsing and ``--markers``;
* ``_settings``: one test's settings as one value (``CassetteSettings``), marker over command
  line over the conftest fixtures (``agui_record_mode``, ``agui_upstream``), whose default
  reads the ini file;
* ``_wiring``: one test's cassette: its path, its session, the guard, its failures;
* ``_suite_tape``: the session cassette (``_session.json``): the requests of collection and
  of session-scoped fixtures, recorded once per suite and replayed;
* ``_tracker``: the session object, with the ``_ledger`` its xdist workers merge, the
  ``_unused`` cassettes and the ``_summary``; ``_paths``: cassette folders, claims, leftovers;
* ``_syrupy``: the event snapshot fixtures, and snapshots kept through a failed run;
* ``_provider_fixtures``: the fake provider's fixtures.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agui_replay.pytest_plugin._marker import MARKER_DOC
from agui_replay.pytest_plugin._options import DEFAULT_UPSTREAM, SessionOptions, register
from agui_replay.pytest_plugin._provider_fixtures import *  # noqa: F403  (the provider fixtures, by __all__)
from agui_replay.pytest_plugin._provider_fixtures import pytest_configure as _providers_configure
from agui_replay.pytest_plugin._settings import build_settings
from agui_replay.pytest_plugin._suite_tape import SuiteHooks, SuiteTape
from agui_replay.pytest_plugin._syrupy import (
    agui_session_of,
    snapshot_fixtures_first,
    snapshot_rules,
    updates_snapshots,
)
from agui_replay.pytest_plugin._tracker import Tracker
from agui_replay.pytest_plugin._wiring import (
    cassette_for,
    checked_setup,
    guarded_call,
    new_session,
    record_command,
    run_session,
)

if TYPE_CHECKING:
    from agui_replay.recording import CassetteSession

_TRACKER = pytest.StashKey[Tracker]()


def pytest_addoption(parser: pytest.Parser) -> None:
    register(parser)


# Replaces the providers module's pytest_configure (star-imported above) and calls it first.
def pytest_configure(config: pytest.Config) -> None:  # type: ignore[no-redef]
    _providers_configure(config)
    config.addinivalue_line("markers", MARKER_DOC)
    tracker = Tracker(SessionOptions.read(config), config)
    config.stash[_TRACKER] = tracker
    config.pluginmanager.register(_Hooks(tracker), "agui_replay.session")
    suite = SuiteTape(tracker.options, config, tracker.ledger)
    config.pluginmanager.register(SuiteHooks(suite), "agui_replay.suite_tape")


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """``assert events == expected`` on two event streams: one event per line, first change."""
    # Every failing `==` in the session comes here: a look at the items before importing the
    # assertions module (and ag_ui.core with it).
    if op != "==" or not (_is_event_stream(left) and _is_event_stream(right)):
        return None
    from agui_replay.assertions import explain_stream_diff

    lines = explain_stream_diff(left, right)  # type: ignore[arg-type]
    return lines or None


def _is_event_stream(value: object) -> bool:
    """A non-empty list or tuple of event dicts (each a mapping with a string ``type``)."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    return all(isinstance(e, Mapping) and isinstance(e.get("type"), str) for e in value)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def agui_record_mode(pytestconfig: pytest.Config) -> str:
    """The record mode when neither the marker nor the command line sets one.

    Override it in a conftest (``return "once"``); the default reads ini ``agui_record_mode``.
    """
    return str(pytestconfig.getini("agui_record_mode"))


@pytest.fixture
def agui_upstream(pytestconfig: pytest.Config) -> Any:
    """The real provider to record from: a base URL or an object with ``base_url``, or a
    mapping of provider name (``openai``, ``anthropic``, ``gemini``...) to either.

    Requested only when a run records. Override it in a conftest to record from another
    provider (``return "https://api.anthropic.com"``) or a local server.
    """
    return pytestconfig.getini("agui_upstream") or DEFAULT_UPSTREAM


@pytest.fixture
def agui_secrets(pytestconfig: pytest.Config) -> list[str]:
    """Values scrubbed from cassettes besides auth headers and key-shaped strings.

    Default: the values of the common provider key variables (``OPENAI_API_KEY``...) and of
    those named by ini ``agui_secret_env`` / ``--agui-secret-env``. Extend it in a conftest.
    """
    from agui_replay.recording import DEFAULT_SECRET_ENV, secrets_from_env

    options = pytestconfig.stash[_TRACKER].options
    return secrets_from_env([*DEFAULT_SECRET_ENV, *options.secret_env])


@pytest.fixture
def agui_normalizers() -> list[Any]:
    """User normalizers for this test's events and snapshots (default: none).

    Override it in a conftest to return rules such as
    ``agui_replay.normalize.replace(r"order-\\d+", "<order>")``,
    ``agui_replay.normalize.ignore("/snapshot/*/updated_at")`` or any callable
    ``event -> event``; the marker's ``normalize=[...]`` adds to them.
    """
    return []


@pytest.fixture
def agui_cassette_path(request: pytest.FixtureRequest) -> Path:
    """This test's cassette file (the marker's ``cassette=`` or the default location)."""
    try:
        return cassette_for(request.config.stash[_TRACKER].options, _item(request))
    except pytest.UsageError as exc:  # a bad marker value: this test fails, the others run
        raise pytest.fail.Exception(str(exc), pytrace=False) from None


@pytest.fixture
def agui(
    request: pytest.FixtureRequest,
    agui_record_mode: str,
    agui_secrets: list[str],
    agui_cassette_path: Path,
    agui_normalizers: list[Any],
) -> Iterator[CassetteSession]:
    """Record or replay this test's agent runs: ``events = agui.run(agent, input)``.

    ``agui.provider.base_url`` is the model provider to point the agent's SDK at.
    """
    __tracebackhide__ = True  # its setup and teardown checks report the test's errors
    tracker = request.config.stash[_TRACKER]
    item = _item(request)
    if tracker.options.refresh or updates_snapshots(request.config):
        snapshot_fixtures_first(request, item)
    settings = build_settings(
        item,
        tracker.options,
        fixture_mode=agui_record_mode,
        secrets=agui_secrets,
        normalizers=agui_normalizers,
        cassette=agui_cassette_path,
        upstream_fixture=lambda: request.getfixturevalue("agui_upstream"),
        record_command=record_command(item),
    )
    session = new_session(item, agui_cassette_path, settings)
    tracker.hold_server()
    yield from run_session(session, item, tracker.options, tracker.ledger)


@pytest.fixture
def agui_snapshot(
    snapshot: Any, request: pytest.FixtureRequest, agui_normalizers: list[Any]
) -> Any:
    """syrupy's ``snapshot`` storing event streams one event per line (normalized, with the
    ``agui_normalizers`` fixture's rules and the marker's ``normalize=[...]``)."""
    from agui_replay.snapshot import use_agui_extension

    item = _item(request)
    return use_agui_extension(
        snapshot, rules=snapshot_rules(item, agui_normalizers), session=agui_session_of(item)
    )


@pytest.fixture
def agui_folded_snapshot(
    snapshot: Any, request: pytest.FixtureRequest, agui_normalizers: list[Any]
) -> Any:
    """Like ``agui_snapshot``, with each message's deltas folded into one event."""
    from agui_replay.snapshot import use_agui_extension

    item = _item(request)
    return use_agui_extension(
        snapshot,
        fold=True,
        rules=snapshot_rules(item, agui_normalizers),
        session=agui_session_of(item),
    )


def _item(request: pytest.FixtureRequest) -> pytest.Item:
    item = request.node
    assert isinstance(item, pytest.Item)
    return item


# --- session hooks ------------------------------------------------------------------------------


class _Hooks:
    """The hooks that need the session's :class:`Tracker` (registered in ``pytest_configure``);
    each hands on to it, or to ``_wiring`` for a test's setup and call."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        self.tracker.reported(item, report)
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # After syrupy's own hook took the outcome: syrupy keeps the snapshots of a test it
        # counts as skipped (its outcome in pytest's report stays "failed").
        self.tracker.logged(report)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from guarded_call(item, self.tracker.options, self.tracker.ledger))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from checked_setup(item, self.tracker.options, self.tracker.ledger))

    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(
        self, collection_path: Path, config: pytest.Config
    ) -> Generator[None, bool | None, bool | None]:
        ignored = yield
        if ignored:
            self.tracker.ignored(collection_path, config)
        return ignored

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self.tracker.collect_failed(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        self.tracker.collected(config, items)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.tracker.start(session)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.tracker.worker_down(node)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.tracker.finish(session)

    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        self.tracker.summary(terminalreporter, config)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.tracker.release()
