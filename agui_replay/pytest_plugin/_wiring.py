"""One test's cassette, wired into pytest: where the file is, the session the ``agui`` fixture
opens on it (guarded while it only replays, claimed before it records), what its end adds to
the ledger, and the failures of its setup and call told in their own words, without the
plugin's frames.

A replaying test is guarded from the ``agui`` fixture's setup to the end of its teardown: the
fixtures set up after it (the agent's SDK client), the test, and their teardown. For as long,
the unset key variables hold placeholders (the SDKs demand a key; a replay sends nothing with
it), and so do they while it records from loopback stand-ins only.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agui_replay.errors import CassetteError
from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._marker import MARKER, marker_kwargs, read_marker
from agui_replay.pytest_plugin._options import SessionOptions
from agui_replay.pytest_plugin._paths import default_cassette
from agui_replay.pytest_plugin._settings import CassetteSettings

REPORTED = pytest.StashKey[int]()
"""How many of the test's guard violations a failure has reported so far."""
REPLAY_FAILED = pytest.StashKey[bool]()
"""The test's replay failed (its cassette is not counted ``replayed``)."""
SETTINGS = pytest.StashKey[CassetteSettings]()
"""The settings the test's ``agui`` session was built with."""


def cassette_for(options: SessionOptions, item: pytest.Item) -> Path:
    """The marker's ``cassette=`` inside the cassette folder, else the default location.

    A value that is not a usable path, or that leaves the folder without
    ``cassette_outside=True``, raises ``pytest.UsageError`` naming the test and the value; the
    ``agui_cassette_path`` fixture turns it into a failure of that test alone.
    """
    given = marker_kwargs(item).get("cassette")
    if given is None:
        parts = item.nodeid.split("::")
        test_name = ".".join(parts[1:]) if len(parts) > 1 else item.name
        migrate = (
            options.cli_mode == "rewrite"
        )  # --agui-record writes a packaged module's new place
        return default_cassette(options.cassette_dir, Path(item.path), test_name, migrate=migrate)
    outside = read_marker(item, ("cassette_outside",))["cassette_outside"]
    from agui_replay._files import contained_cassette_path
    from agui_replay.errors import InvalidArgumentError

    try:
        return contained_cassette_path(
            options.cassette_dir, given, allow_outside=outside, opt_in="cassette_outside=True"
        )
    except InvalidArgumentError as exc:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}(cassette={given!r}) {exc}"
        ) from None


def record_command(item: pytest.Item) -> str:
    """``pytest <node id> --agui-record``, to paste where pytest was invoked."""
    return f"pytest {test_argument(item)} --agui-record"


def test_argument(item: pytest.Item) -> str:
    """The test's node id as pytest takes it where it was invoked: its file relative to the
    invocation folder (not the rootdir), quoted for the shell when it needs it (``[0]`` of a
    parametrized test globs in zsh)."""
    node = item.nodeid
    file_part, sep, rest = node.partition("::")
    try:
        relative = os.path.relpath(item.path, item.config.invocation_params.dir)
    except ValueError:  # another drive (Windows): the rootdir-relative id is all there is
        relative = file_part
    if Path(relative).name == Path(file_part).name:
        node = Path(relative).as_posix() + sep + rest
    return shlex.quote(node)


def _marker_mode_note(item: pytest.Item, message: str) -> str:
    """``message`` with its ``--agui-record`` advice corrected when the test's marker fixes a
    record mode other than ``rewrite``: the marker wins over the command line, so the advised
    command alone would not record the test."""
    mode = marker_kwargs(item).get("record_mode")
    command = record_command(item)
    if mode is None or str(mode) == "rewrite" or f"`{command}`" not in message:
        return message
    return message.replace(
        f"`{command}`",
        f"`{command}` after taking record_mode={str(mode)!r} out of the test's "
        f"@pytest.mark.{MARKER} (the marker wins over the command line: as the test stands, "
        "--agui-record does not record it)",
    )


def _failure(item: pytest.Item, exc: BaseException) -> BaseException:
    # Our failures explain themselves; a traceback through the plugin would bury that.
    return pytest.fail.Exception(
        _marker_mode_note(item, f"{type(exc).__name__}: {exc}"), pytrace=False
    )


def new_session(item: pytest.Item, path: Path, settings: CassetteSettings) -> Any:
    """The test's ``CassetteSession``; a bad rule or id generator fails the test alone."""
    from agui_replay.errors import InvalidArgumentError
    from agui_replay.recording import CassetteSession

    try:
        session = CassetteSession(path, **settings.session_options())
    except InvalidArgumentError as exc:
        raise pytest.fail.Exception(f"{item.nodeid}: {exc}", pytrace=False) from None
    item.stash[SETTINGS] = settings
    return session


def run_session(
    session: Any, item: pytest.Item, options: SessionOptions, ledger: Ledger
) -> Iterator[Any]:
    """The ``agui`` fixture's span: the session guarded, with placeholders and the tape of the
    test's other requests; at its end, the outcome in the ledger."""
    __tracebackhide__ = True  # its teardown checks report the test's errors
    session.before_record = _claimer(options, ledger, item, session.path)
    session.guard.share_tls = options.share_tls
    with (
        session.guard.guarding(session.replay_only),
        session.placeholders(),
        session.taping(),
    ):
        try:
            yield session
        finally:
            written = session.finish()
            _note_outcome(options, ledger, item, session, written)
    unreported = session.guard.violations[item.stash.get(REPORTED, 0) :]
    if unreported:  # blocked during teardown (and swallowed there)
        pytest.fail(f"NetworkBlockedError: {unreported[0]}", pytrace=False)


def _note_outcome(
    options: SessionOptions, ledger: Ledger, item: pytest.Item, session: Any, written: Any
) -> None:
    key = options.shown(session.path)
    replayed = session.outcome == "replayed"
    settings = item.stash.get(SETTINGS, None)
    stale_days = settings.stale_days if settings is not None else None
    if written is not None and session.refresh:
        ledger.refreshed.add(key)
    elif written is not None:
        ledger.recorded.add(key)
        if stale_days is not None:
            ledger.renewed.add(f"{key} ({_age(stale_days)} old)")
        if session.unchanged:
            ledger.unchanged.add(key)
    elif session.upstream_failures:
        ledger.failed.add(key)
    elif session.discarded:
        ledger.discarded.add(key)
    elif replayed and item.stash.get(REPLAY_FAILED, False):
        ledger.mismatched.add(key)
    elif replayed:
        ledger.replayed.add(key)
    if session.pending_path is not None:
        ledger.pending.add(options.shown(session.pending_path))
    days = options.too_old(session.recorded_at) if replayed else None
    if days is not None:
        ledger.stale.add(f"{key} ({_age(days)} old)")
        ledger.stale_tests.add(test_argument(item))
    if session.faults and replayed:
        ledger.faulted.add(item.nodeid)
    tape = getattr(session, "tape", None)
    if tape is not None:  # background work answered locally, and oversized exchanges
        ledger.background.update(urlsplit(r.partition(" ")[2]).netloc for r in tape.background)
        ledger.large.update(f"{key}: {note}" for note in tape.large)
    if session.ignored_matches:
        ledger.ignored.add(f"{item.nodeid} ({'; '.join(session.ignored_matches)})")


def _age(days: int) -> str:
    from agui_replay._age import describe_age

    return describe_age(days)


def _claimer(
    options: SessionOptions, ledger: Ledger, item: pytest.Item, path: Path
) -> Callable[[], None]:
    """The session's ``before_record``: claim the cassette for this test, or refuse."""

    def claim() -> None:
        from agui_replay.pytest_plugin._paths import claim_cassette, claim_path

        other = claim_cassette(path, options.run_id, item.nodeid)
        if other is None:
            ledger.claims.add(str(claim_path(path)))
            return
        pytest.fail(
            f"CassetteError: two tests of this session record the same cassette "
            f"{options.shown(path)}: {other} (first) and {item.nodeid}; the second would "
            "overwrite the first. Give each its own file: another "
            f"`@pytest.mark.{MARKER}(cassette=...)`, or leave cassette= out (the default is one "
            "file per test).",
            pytrace=False,
        )

    return claim


def guarded_call(
    item: pytest.Item, options: SessionOptions, ledger: Ledger
) -> Generator[None, None, None]:
    """Around the test's call: the guard up, the session's checks after it, and its failures
    told as themselves; a failed test's recording (or refresh) is not written."""
    session = getattr(item, "funcargs", {}).get("agui")
    # No CassetteSession can exist before its module was imported (by the agui fixture).
    if "agui_replay.recording" not in sys.modules:
        return (yield)
    from agui_replay.errors import NetworkBlockedError, ReplayMismatchError, UpstreamError
    from agui_replay.recording import CassetteSession

    if not isinstance(session, CassetteSession):
        return (yield)
    failures = (CassetteError, ReplayMismatchError, NetworkBlockedError, UpstreamError)
    passed = False
    try:
        with session.guard.guarding(session.replay_only):
            result = yield
        session.check_complete()
        passed = True
    except failures as exc:
        note_missing(options, ledger, exc)
        item.stash[REPLAY_FAILED] = True
        raise _failure(item, exc) from None
    except Exception:
        # The test caught agui.run's UpstreamError and failed on something else: the
        # upstream's failure is the cause, so it comes first.
        if session.upstream_failures and not session.record_errors:
            first = session.upstream_failures[0]
            raise pytest.fail.Exception(f"UpstreamError: {first}", pytrace=False) from None
        raise
    finally:
        item.stash[REPORTED] = len(session.guard.violations)
        if not passed:
            # a refresh stores only what a passing test produced; a recording too, unless
            # record_on_failure says to keep it
            session.abandon(recording=not _keeps_failed(item, options))
    return result


def _keeps_failed(item: pytest.Item, options: SessionOptions) -> bool:
    """Whether a failed test's recording is written: ``record_on_failure`` of its settings (of
    the marker, else the ini when a conftest built the session)."""
    if SETTINGS in item.stash:
        return item.stash[SETTINGS].record_on_failure
    value = read_marker(item, ("record_on_failure",))["record_on_failure"]
    return bool(options.record_on_failure if value is None else value)


def checked_setup(
    item: pytest.Item, options: SessionOptions, ledger: Ledger
) -> Generator[None, None, None]:
    """Around the test's setup: the guard is up from the ``agui`` fixture's setup on, so a
    fixture set up after it that dialed out and swallowed the refusal fails the setup."""
    try:
        result = yield
    except CassetteError as exc:
        # A fixture built on `agui` (the agent's client reads agui.provider.base_url) met a
        # missing or broken cassette: the message says what to do, the plugin's frames not.
        item.stash[REPORTED] = len(_violations(item))
        note_missing(options, ledger, exc)
        raise _failure(item, exc) from None
    except BaseException:
        item.stash[REPORTED] = len(_violations(item))
        raise
    violations = _violations(item)
    item.stash[REPORTED] = len(violations)
    if violations:
        raise pytest.fail.Exception(
            f"NetworkBlockedError: {violations[0]}", pytrace=False
        ) from None
    return result


def _violations(item: pytest.Item) -> list[str]:
    session = getattr(item, "funcargs", {}).get("agui")
    guard = getattr(session, "guard", None)
    violations = getattr(guard, "violations", None)
    return list(violations) if isinstance(violations, list) else []


def note_missing(options: SessionOptions, ledger: Ledger, exc: BaseException) -> None:
    """A replay that found its cassette missing: noted, to name a likely rename."""
    from agui_replay.errors import MissingCassetteError

    path = getattr(exc, "path", None)
    if isinstance(exc, MissingCassetteError) and path and not Path(path).exists():
        ledger.missing.add(options.shown(Path(path)))
