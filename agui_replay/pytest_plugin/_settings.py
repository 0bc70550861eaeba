"""One test's cassette settings as one value: :class:`CassetteSettings`, built once per test
from its marker, the command line, the ini file and the conftest fixtures, in that order of
precedence for the record mode and the upstream (the lists add up: ini, then marker).

The ``agui`` fixture hands it on whole: ``CassetteSession(path, **settings.session_options())``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agui_replay.errors import CassetteError
from agui_replay.pytest_plugin._marker import KEYS, read_marker
from agui_replay.pytest_plugin._options import SessionOptions

if TYPE_CHECKING:
    from agui_replay.recording import RecordMode

_PLUGIN_ONLY = {"plugin": True}
"""Field metadata: a setting the plugin uses itself, not handed to the session."""

_KEYS = tuple(k for k in KEYS if k not in ("cassette", "cassette_outside"))
"""The marker keys read here (the cassette path is the ``agui_cassette_path`` fixture's)."""


@dataclass(frozen=True)
class CassetteSettings:
    """Everything one test's :class:`~agui_replay.recording.CassetteSession` is built with,
    and what the plugin does with its outcome."""

    mode: RecordMode
    """The record mode: marker, command line, then the ``agui_record_mode`` fixture."""
    upstream: Any
    """Marker, command line, then a factory of the ``agui_upstream`` fixture (requested only
    when a run records, so a replay never starts a conftest upstream)."""
    secrets: tuple[str, ...]
    record_command: str
    name: str
    normalize: bool
    match: Any
    freeze_time: Any
    hosts: tuple[str, ...]
    intercept: bool
    normalizers: tuple[Any, ...]
    deterministic_ids: bool
    record_errors: bool
    id_generators: tuple[str, ...]
    refresh: bool
    ignore_hosts: tuple[str, ...]
    drop_hosts: tuple[str, ...]
    match_on: tuple[Any, ...]
    faults: tuple[Any, ...]
    match_ignore: tuple[str, ...]
    compare_raw: bool
    renew_recorded_at: bool
    """A stale cassette re-recorded (``agui_on_stale = record``): written with today's date."""
    keep_pending: bool = True
    record_on_failure: bool = field(default=False, metadata=_PLUGIN_ONLY)
    stale_days: int | None = field(default=None, metadata=_PLUGIN_ONLY)
    """The age in days of the stale cassette this test re-records (``agui_on_stale = record``)."""

    def session_options(self) -> dict[str, Any]:
        """The keyword arguments of ``CassetteSession`` (sequences as lists)."""
        return {
            f.name: list(value) if isinstance(value, tuple) else value
            for f in dataclasses.fields(self)
            if not f.metadata.get("plugin")
            for value in [getattr(self, f.name)]
        }


def build_settings(
    item: pytest.Item,
    options: SessionOptions,
    *,
    fixture_mode: str,
    secrets: list[str],
    normalizers: list[Any],
    cassette: Path,
    upstream_fixture: Callable[[], Any],
    record_command: str,
) -> CassetteSettings:
    """The test's settings; a bad marker value or record mode fails the test alone."""
    from agui_replay.recording import RecordMode

    try:
        marker = read_marker(item, _KEYS)
        mode = _mode(marker["record_mode"], options, fixture_mode)
    except pytest.UsageError as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None
    stale_days = None
    if options.on_stale == "record" and mode is RecordMode.NONE and secrets:
        # a provider key is set: a stale cassette is recorded again, with today's date
        stale_days = None if options.refresh else _stale_days(options, cassette)
        mode = RecordMode.REWRITE if stale_days is not None else mode
    normalize, rules = marker["normalize"]
    upstream = marker["upstream"]
    if upstream is None:
        upstream = list(options.cli_upstream) if options.cli_upstream else upstream_fixture
    deterministic = marker["deterministic_ids"]
    record_on_failure = marker["record_on_failure"]
    return CassetteSettings(
        mode=mode,
        upstream=upstream,
        secrets=(*secrets, *marker["secrets"]),
        record_command=record_command,
        name=item.nodeid,
        normalize=normalize,
        match=marker["match"],
        freeze_time=marker["freeze_time"],
        hosts=(*options.provider_hosts, *marker["hosts"]),
        intercept=marker["intercept"],
        normalizers=(*normalizers, *rules),
        deterministic_ids=bool(
            options.deterministic_ids if deterministic is None else deterministic
        ),
        record_errors=marker["record_errors"],
        id_generators=(*options.id_generators, *marker["id_generators"]),
        refresh=options.refresh,
        ignore_hosts=(*options.ignore_hosts, *marker["ignore_hosts"]),
        drop_hosts=(*options.drop_hosts, *marker["drop_hosts"]),
        match_on=options.match_on if marker["match_on"] is None else marker["match_on"],
        faults=marker["faults"],
        match_ignore=(*options.match_ignore, *marker["match_ignore"]),
        compare_raw=marker["compare_raw"],
        renew_recorded_at=stale_days is not None,
        stale_days=stale_days,
        record_on_failure=bool(
            options.record_on_failure if record_on_failure is None else record_on_failure
        ),
    )


def _mode(marked: RecordMode | None, options: SessionOptions, fixture_mode: str) -> RecordMode:
    if marked is not None:
        return marked
    if options.cli_mode is not None:
        return options.cli_mode
    from agui_replay.errors import RecordModeError
    from agui_replay.recording import RecordMode

    try:
        return RecordMode.parse(fixture_mode, source="the agui_record_mode fixture")
    except RecordModeError as exc:
        raise pytest.UsageError(str(exc)) from None


def _stale_days(options: SessionOptions, path: Path) -> int | None:
    """The age in days of the cassette at ``path`` when it is older than ``agui_max_age``."""
    if options.max_age is None or not path.exists():
        return None
    from agui_replay.cassette import load_cassette

    try:
        recorded_at = load_cassette(path, validate="shape").recorded_at
    except (OSError, ValueError, CassetteError):
        return None  # the replay says what is wrong with it
    return options.too_old(recorded_at)
