"""The plugin's side of syrupy: the event-stream snapshot fixtures' settings, and the snapshots
of a test whose recording, replay or refresh failed kept from ``--snapshot-update``'s clean-up.

A failing test writes nothing (its cassette keeps the old events), so its snapshots must stay
too; syrupy deletes the snapshots of a failed test it counts as ran and unused, but keeps
those of a test it counts as skipped, so that is what it is told.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agui_replay.pytest_plugin._marker import read_marker

SNAPSHOT_FIXTURES = ("agui_snapshot", "agui_folded_snapshot")


def snapshot_rules(item: pytest.Item, normalizers: list[Any]) -> list[Any]:
    """The ``agui_normalizers`` fixture's rules and the marker's ``normalize=[...]``."""
    try:
        _, rules = read_marker(item, ("normalize",))["normalize"]
    except pytest.UsageError as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None
    return [*normalizers, *rules]


def agui_session_of(item: pytest.Item) -> Callable[[], Any]:
    """The test's ``agui`` session when it uses one (looked up when a snapshot is taken), so
    a snapshot of ``agui.run``'s events shows the ids the cassette gives them."""

    def session() -> Any:
        return getattr(item, "funcargs", {}).get("agui")

    return session


def updates_snapshots(config: pytest.Config) -> bool:
    """Whether the session runs syrupy's ``--snapshot-update``."""
    return bool(getattr(config.option, "update_snapshots", False))


def snapshot_fixtures_first(request: pytest.FixtureRequest, item: pytest.Item) -> None:
    """Set up the test's event snapshot fixtures before its cassette is opened: syrupy then
    knows the extension of the test's snapshot files even when the setup fails (no cassette),
    and keeps them."""
    for name in SNAPSHOT_FIXTURES:
        if name in getattr(item, "fixturenames", ()):
            request.getfixturevalue(name)


def failed_with_snapshot(item: pytest.Item, report: pytest.TestReport) -> bool:
    """Whether ``report`` is a failure, in setup or call, of a test using syrupy's snapshot."""
    return (
        report.failed
        and report.when in ("setup", "call")
        and "snapshot" in getattr(item, "fixturenames", ())
    )


KEPT_BECAUSE = {
    "refresh": "failed during --agui-refresh, which wrote nothing for {it}",
    "record": "failed while recording, which wrote nothing for {it}",
    "replay": "failed {its} replay, which leaves {its} cassette as it was",
}
"""Why a failed test's snapshots are kept, by what its session did."""


def _syrupy_session(config: pytest.Config | None) -> Any:
    """syrupy's session object when syrupy is loaded and can be told an item's outcome."""
    syrupy = getattr(config, "_syrupy", None)
    return syrupy if callable(getattr(syrupy, "ran_item", None)) else None


def keep_snapshots(config: pytest.Config | None, nodeid: str) -> None:
    """Tell syrupy that the test ``nodeid`` is to be counted as skipped: the snapshots of a
    skipped test are never unused, so ``--snapshot-update`` does not delete them."""
    syrupy = _syrupy_session(config)
    if syrupy is not None:
        syrupy.ran_item(nodeid, "skipped")


def kept_snapshots_line(config: pytest.Config, tests: list[str], why: str = "refresh") -> str:
    """The summary's line on the snapshots kept for ``tests``, whose ``why`` (a key of
    :data:`KEPT_BECAUSE`) failed."""
    names = ", ".join(tests)
    one = len(tests) == 1
    because = KEPT_BECAUSE[why].format(it="it" if one else "them", its="its" if one else "their")
    if _syrupy_session(config) is None:  # a syrupy without SnapshotSession.ran_item
        return (
            f"snapshots NOT kept: {names} {because}, but this syrupy cannot be told to keep "
            f"{'its' if one else 'their'} snapshots: restore any that --snapshot-update "
            "deleted (git checkout), or upgrade syrupy"
        )
    return (
        f"snapshots kept: {names} ({because}: --snapshot-update would have deleted "
        f"{'its' if one else 'their'} snapshots as unused)"
    )
