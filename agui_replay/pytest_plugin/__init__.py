"""The pytest plugin (entry point ``pytest11: agui_replay``).

Only this package (with the fake provider's fixtures in ``_provider_fixtures``) imports
pytest; ``import agui_replay`` never does. The engine is :mod:`agui_replay.recording`; this module
wires it into pytest: options, markers, fixtures, the network guard around replaying tests,
failure output and the session summary. The user guide is ``docs/plugin.md``.

Precedence of every per-test setting (record mode, upstream): the ``@pytest.mark.agui(...)``
marker, then the command line, then the conftest fixture (``agui_record_mode``,
``agui_upstream``), whose default reads the ini file.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agui_replay.errors import CassetteError
from agui_replay.pytest_plugin._paths import default_cassette, module_folder
from agui_replay.pytest_plugin._provider_fixtures import *  # noqa: F403  (the provider fixtures, by __all__)
from agui_replay.pytest_plugin._provider_fixtures import pytest_configure as _providers_configure

if TYPE_CHECKING:
    from agui_replay.recording import CassetteSession, RecordMode

# This module is loaded in every pytest run of an environment that has agui_replay installed,
# so it imports the engine (recording, cassette, assertions: ag_ui.core's pydantic models, slow
# to import) only inside the hooks and fixtures that need it. What registering the options needs
# is copied here and kept equal to the engine by tests/package/test_exported_members.py.
RECORD_MODES = ("none", "once", "rewrite", "new")
"""The values of :class:`agui_replay.recording.RecordMode`, in its order."""

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
"""Same as the recording session's default upstream."""

MARKER = "agui"
MARKER_KWARGS = (
    "record_mode",
    "cassette",
    "cassette_outside",
    "upstream",
    "secrets",
    "normalize",
    "match",
    "freeze_time",
    "hosts",
    "intercept",
    "deterministic_ids",
    "id_generators",
    "record_errors",
    "ignore_hosts",
    "drop_hosts",
    "match_on",
    "match_ignore",
    "record_on_failure",
    "faults",
)
DEFAULT_DROP_HOSTS = (
    "api.agno.com",
    "os-api.agno.com",
    "us.i.posthog.com",
    "eu.i.posthog.com",
    "app.posthog.com",
    "api.smith.langchain.com",
    "eu.api.smith.langchain.com",
)
"""Same as ``DEFAULT_DROP_HOSTS`` of the providers' tape (the default of ini
``agui_drop_hosts``); copied so that pytest's start does not import the transports."""
_MARKER_DOC = (
    f"{MARKER}(record_mode=None, cassette=None, cassette_outside=False, upstream=None, "
    "secrets=(), normalize=True, "
    "match='order', freeze_time=True, hosts=(), intercept=True, deterministic_ids=True, "
    "id_generators=(), record_errors=False, ignore_hosts=(), drop_hosts=(), match_on=None, "
    "match_ignore=(), record_on_failure=False, faults=()): "
    "agui-replay settings for "
    "this test; the marker wins over the command line and the conftest fixtures"
)


@dataclass
class _State:
    """What the plugin knows for one pytest session (kept in ``config.stash``)."""

    cassette_dir: Path
    rootdir: Path
    cli_mode: RecordMode | None
    cli_upstream: list[str]
    secret_env: list[str]
    provider_hosts: list[str]
    fail_on_unused: bool
    share_tls: bool = True
    refresh: bool = False
    recorded: set[str] = field(default_factory=set)
    refreshed: set[str] = field(default_factory=set)
    """Cassettes whose events ``--agui-refresh`` changed."""
    failed: set[str] = field(default_factory=set)
    """Cassettes not written: their recorded runs' upstream failed."""
    mismatched: set[str] = field(default_factory=set)
    """Cassettes whose replay failed (a mismatch, a blocked connection): not ``replayed``."""
    discarded: set[str] = field(default_factory=set)
    """Cassettes not written: their test failed (``record_on_failure`` keeps them)."""
    replayed: set[str] = field(default_factory=set)
    faulted: set[str] = field(default_factory=set)
    """Tests that replayed with ``faults=`` (their events not compared with the recording)."""
    ignored: set[str] = field(default_factory=set)
    """Tests whose replays matched a provider request only with fields left out
    (``match_ignore``): ``"nodeid (run #0 request #0: /messages/0/content)"``."""
    claimed: set[str] = field(default_factory=set)
    # Stems of the test modules collected in full; their cassette folders are worked out in
    # _unused (a run without cassettes never works them out).
    stems: set[str] = field(default_factory=set)
    whole_suite: bool = False
    uncollected: set[str] = field(default_factory=set)
    """Cassette folders (``a/b`` parts) of test modules on disk that were not collected
    (``--ignore``, ``collect_ignore``, skipped at import): their cassettes are never unused."""
    missing: set[str] = field(default_factory=set)
    """Cassettes a replaying test found missing (with an unused one beside it: a rename)."""
    prune: bool = False
    max_age: int | None = None
    """Ini ``agui_max_age`` in days (``None``: cassettes never go stale)."""
    on_stale: str = "warn"
    pending: set[str] = field(default_factory=set)
    """Cassettes whose changed events wait beside them for ``agui-replay review``."""
    stale: set[str] = field(default_factory=set)
    """``"path (N days old)"`` of the replayed cassettes older than ``agui_max_age``."""
    kept_snapshots: set[str] = field(default_factory=set)
    """Tests that failed during ``--agui-refresh`` and use syrupy's ``snapshot``: the refresh
    wrote nothing for them, so syrupy is told to keep their snapshots (see
    ``_Hooks.pytest_runtest_logreport``)."""
    unused: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    stale_removed: list[str] = field(default_factory=list)
    run_id: str = ""
    """This session's id in the claim files (under xdist, the run's id shared by the workers)."""
    claims: set[str] = field(default_factory=set)
    """The claim files this session made (see ``_plugin_paths``): removed at its end."""
    holds_server: bool = False
    """The session holds the process's loopback server (its port stays the same from the
    first ``agui`` test to the end: clients built in one test keep working in the next)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "recorded": sorted(self.recorded),
            "refreshed": sorted(self.refreshed),
            "replayed": sorted(self.replayed),
            "faulted": sorted(self.faulted),
            "ignored": sorted(self.ignored),
            "failed": sorted(self.failed),
            "discarded": sorted(self.discarded),
            "mismatched": sorted(self.mismatched),
            "claimed": sorted(self.claimed),
            "stems": sorted(self.stems),
            "whole_suite": self.whole_suite,
            "uncollected": sorted(self.uncollected),
            "missing": sorted(self.missing),
            "pending": sorted(self.pending),
            "stale": sorted(self.stale),
            "kept_snapshots": sorted(self.kept_snapshots),
            "claims": sorted(self.claims),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.recorded.update(data.get("recorded", []))
        self.refreshed.update(data.get("refreshed", []))
        self.replayed.update(data.get("replayed", []))
        self.faulted.update(data.get("faulted", []))
        self.ignored.update(data.get("ignored", []))
        self.failed.update(data.get("failed", []))
        self.discarded.update(data.get("discarded", []))
        self.mismatched.update(data.get("mismatched", []))
        self.claimed.update(data.get("claimed", []))
        self.stems.update(data.get("stems", []))
        self.whole_suite = self.whole_suite or bool(data.get("whole_suite"))
        self.uncollected.update(data.get("uncollected", []))
        self.missing.update(data.get("missing", []))
        self.pending.update(data.get("pending", []))
        self.stale.update(data.get("stale", []))
        self.kept_snapshots.update(data.get("kept_snapshots", []))
        self.claims.update(data.get("claims", []))


_STATE = pytest.StashKey[_State]()
# The temporary file of agui_replay._files.atomic_write_text (".<name>.<pid>.<8 hex>.tmp"),
# copied here so the session start imports no engine; tests/plugin/test_paths.py keeps them equal.
_TEMP_FILE = re.compile(r"\A\..+\.[0-9]+\.[0-9a-f]{8}\.tmp\Z", re.DOTALL)
STALE_TEMP_SECONDS = 60.0
"""A temporary cassette file older than this was left by a killed process: removed."""
_REPORTED = pytest.StashKey[int]()
"""How many of the test's guard violations a failure has reported so far."""
_REPLAY_FAILED = pytest.StashKey[bool]()
"""The test's replay failed (its cassette is not counted ``replayed``)."""
_WORKER_KEY = "agui_replay"


# --- options ------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agui-replay", "agui-replay: record and replay AG-UI agents")
    modes = list(RECORD_MODES)
    group.addoption(
        "--agui-record",
        action="store_true",
        default=False,
        help="record the cassettes of the selected tests again against the real provider "
        "(record mode 'rewrite')",
    )
    group.addoption(
        "--agui-refresh",
        action="store_true",
        default=False,
        help="re-derive the stored AG-UI events of the selected tests' cassettes from their "
        "recorded provider interactions, offline (interactions unchanged; a test whose "
        "provider requests changed fails and asks for --agui-record)",
    )
    group.addoption(
        "--agui-record-mode",
        choices=modes,
        default=None,
        help="none: replay only (default); once: record missing cassettes; rewrite: record "
        "everything used; new: keep recorded runs, record runs beyond them",
    )
    group.addoption(
        "--agui-cassette-dir",
        default=None,
        metavar="DIR",
        help="folder of the cassettes (default: ini agui_cassette_dir, 'cassettes' at the "
        "rootdir); relative to the current directory",
    )
    group.addoption(
        "--agui-upstream",
        action="append",
        default=[],
        metavar="URL",
        help="base URL of the real provider to record from; NAME=URL sets provider NAME's "
        "(openai, anthropic, gemini, azure, or a name of agui_provider_hosts); repeatable; "
        f"a bare URL serves every provider without its own (default: ini agui_upstream, "
        f"{DEFAULT_UPSTREAM}, and each intercepted provider's real host)",
    )
    group.addoption(
        "--agui-secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="scrub the value of environment variable NAME from cassettes (repeatable; "
        "common provider key variables are always scrubbed)",
    )
    group.addoption(
        "--agui-fail-on-unused",
        action="store_true",
        default=None,
        help="fail the session when a cassette under the cassette folder is used by no test",
    )
    group.addoption(
        "--agui-prune-unused",
        action="store_true",
        default=False,
        help="delete the unused cassettes of the collected test modules (and the folders "
        "left empty), and list what was deleted",
    )
    parser.addini(
        "agui_cassette_dir", "agui-replay cassette folder, relative to the rootdir", "string"
    )
    parser.addini(
        "agui_record_mode",
        "agui-replay default record mode (none, once, rewrite, new)",
        "string",
        default="none",
    )
    parser.addini(
        "agui_upstream",
        "agui-replay: base URL of the real provider to record from",
        "string",
        default=DEFAULT_UPSTREAM,
    )
    parser.addini(
        "agui_provider_hosts",
        "agui-replay: more provider hosts routed to the recorder during runs, one per line "
        "(HOST, HOST:PORT, *.DOMAIN, or NAME=HOST)",
        "linelist",
        default=[],
    )
    parser.addini(
        "agui_secret_env",
        "agui-replay: environment variables whose values are scrubbed from cassettes",
        "linelist",
        default=[],
    )
    parser.addini(
        "agui_deterministic_ids",
        "agui-replay: make uuid.uuid1/uuid4/uuid7 (and known framework helpers) deterministic "
        "during each run",
        "bool",
        default=True,
    )
    parser.addini(
        "agui_id_generators",
        "agui-replay: more id generators made deterministic during runs, one "
        "package.module.function per line",
        "linelist",
        default=[],
    )
    parser.addini(
        "agui_fail_on_unused",
        "agui-replay: fail the session when a cassette is used by no test",
        "bool",
        default=False,
    )
    parser.addini(
        "agui_record_on_failure",
        "agui-replay: write the recording of a test that failed (default: a failing test's "
        "recording is not written)",
        "bool",
        default=False,
    )
    parser.addini("agui_share_tls", "agui-replay: replays share an SSL context", "bool", True)
    parser.addini(
        "agui_max_age",
        "agui-replay: a replayed cassette recorded longer ago than this is stale (90d, 12w, "
        "6m; empty: never)",
        "string",
        default="",
    )
    parser.addini(
        "agui_on_stale",
        "agui-replay: what a stale cassette does: warn (listed), fail (the session fails), "
        "record (re-recorded when a provider key is set, else warned)",
        "string",
        default="warn",
    )
    parser.addini(
        "agui_ignore_hosts",
        "agui-replay: hosts whose requests are neither recorded nor replayed (a local service "
        "the tests start), one HOST, HOST:PORT or *.DOMAIN per line",
        "linelist",
        default=[],
    )
    parser.addini(
        "agui_drop_hosts",
        "agui-replay: hosts answered with an empty 204, never sent nor recorded (telemetry); "
        "replaces the built-in list",
        "linelist",
        default=list(DEFAULT_DROP_HOSTS),
    )
    parser.addini(
        "agui_match_on",
        "agui-replay: what a replayed HTTP request to a non-provider host is compared on "
        "besides method and URL (body, headers), one per line",
        "linelist",
        default=[],
    )
    parser.addini(
        "agui_match_ignore",
        "agui-replay: JSON-pointer globs (/messages/0/content, /tools/*/description) left out "
        "of the provider request bodies a replay compares, one per line",
        "linelist",
        default=[],
    )


def _cli_mode(config: pytest.Config) -> RecordMode | None:
    record = bool(config.getoption("agui_record"))
    named = config.getoption("agui_record_mode")
    if config.getoption("agui_refresh") and (record or named):
        given = "--agui-record" if record else f"--agui-record-mode={named}"
        raise pytest.UsageError(
            f"--agui-refresh replays the recorded provider interactions offline; it cannot be "
            f"combined with {given}, which records new ones"
        )
    if not (record or named):
        return None
    from agui_replay.recording import RecordMode

    if record and named not in (None, RecordMode.REWRITE.value):
        raise pytest.UsageError(
            f"--agui-record means --agui-record-mode=rewrite; it cannot be combined with "
            f"--agui-record-mode={named}"
        )
    if record:
        return RecordMode.REWRITE
    return _parse_mode(named, "--agui-record-mode")


def _stale_settings(config: pytest.Config) -> tuple[int | None, str]:
    from agui_replay._age import AGE_FORMS, parse_max_age

    raw = str(config.getini("agui_max_age") or "").strip()
    days = parse_max_age(raw) if raw else None
    if raw and days is None:
        raise pytest.UsageError(f"ini agui_max_age = {raw!r} is not an age: use {AGE_FORMS}")
    on_stale = str(config.getini("agui_on_stale") or "warn").strip()
    if on_stale not in ("warn", "fail", "record"):
        raise pytest.UsageError(
            f"ini agui_on_stale = {on_stale!r} is not one of warn, fail, record"
        )
    return days, on_stale


def _stale_age(state: _State, path: Path) -> int | None:
    """The age in days of the cassette at ``path`` when it is older than ``agui_max_age``."""
    if state.max_age is None or not path.exists():
        return None
    from agui_replay.cassette import load_cassette

    try:
        recorded_at = load_cassette(path, validate="shape").recorded_at
    except (OSError, ValueError, CassetteError):
        return None  # the replay says what is wrong with it
    return _older(state, recorded_at)


def _older(state: _State, recorded_at: str | None) -> int | None:
    from agui_replay._age import age_days

    days = age_days(recorded_at)
    if state.max_age is None or days is None or days <= state.max_age:
        return None
    return days


def _parse_mode(value: str, source: str) -> RecordMode:
    from agui_replay.recording import RecordMode, RecordModeError

    try:
        return RecordMode.parse(value, source=source)
    except RecordModeError as exc:
        raise pytest.UsageError(str(exc)) from None


# Replaces the providers module's pytest_configure (star-imported above) and calls it first.
def pytest_configure(config: pytest.Config) -> None:  # type: ignore[no-redef]
    _providers_configure(config)
    config.addinivalue_line("markers", _MARKER_DOC)
    option_dir = config.getoption("agui_cassette_dir")
    if option_dir:
        cassette_dir = Path(config.invocation_params.dir, option_dir)
    else:
        ini_dir = config.getini("agui_cassette_dir") or "cassettes"
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        cassette_dir = Path(base, str(ini_dir))
    cli_mode = _cli_mode(config)
    ini_mode = str(config.getini("agui_record_mode"))
    if ini_mode not in RECORD_MODES:  # the engine says what is wrong with it
        _parse_mode(ini_mode, "ini agui_record_mode")
    fail = config.getoption("agui_fail_on_unused")
    state = _State(
        refresh=bool(config.getoption("agui_refresh")),
        cassette_dir=cassette_dir.resolve(),
        rootdir=config.rootpath,
        cli_mode=cli_mode,
        cli_upstream=list(config.getoption("agui_upstream") or []),
        provider_hosts=list(config.getini("agui_provider_hosts")),
        secret_env=[*config.getini("agui_secret_env"), *config.getoption("agui_secret_env")],
        fail_on_unused=bool(config.getini("agui_fail_on_unused")) if fail is None else fail,
        share_tls=bool(config.getini("agui_share_tls")),
        prune=bool(config.getoption("agui_prune_unused")),
    )
    state.max_age, state.on_stale = _stale_settings(config)
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None
    state.run_id = str(run_id or uuid.uuid4().hex)
    config.stash[_STATE] = state
    config.pluginmanager.register(_Hooks(state, config), "agui_replay.session")


# --- per-test settings --------------------------------------------------------------------------


def _marker_kwargs(node: pytest.Item) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    # The closest marker wins per key (a function's over its class's over its module's).
    for marker in reversed(list(node.iter_markers(MARKER))):
        if marker.args:
            raise pytest.UsageError(
                f"{node.nodeid}: @pytest.mark.{MARKER} takes keyword arguments only "
                f"({', '.join(MARKER_KWARGS)})"
            )
        unknown = sorted(set(marker.kwargs) - set(MARKER_KWARGS))
        if unknown:
            raise pytest.UsageError(
                f"{node.nodeid}: @pytest.mark.{MARKER} got unknown argument(s) "
                f"{', '.join(unknown)}; it takes {', '.join(MARKER_KWARGS)}"
            )
        kwargs.update(marker.kwargs)
    return kwargs


def _default_cassette(state: _State, item: pytest.Item) -> Path:
    parts = item.nodeid.split("::")
    test_name = ".".join(parts[1:]) if len(parts) > 1 else item.name
    migrate = state.cli_mode == "rewrite"  # --agui-record writes a packaged module's new place
    return default_cassette(state.cassette_dir, Path(item.path), test_name, migrate=migrate)


def _claimer(state: _State, item: pytest.Item, path: Path) -> Any:
    """The session's ``before_record``: claim the cassette for this test, or refuse."""

    def claim() -> None:
        from agui_replay.pytest_plugin._paths import claim_cassette, claim_path

        other = claim_cassette(path, state.run_id, item.nodeid)
        if other is None:
            state.claims.add(str(claim_path(path)))
            return
        pytest.fail(
            f"CassetteError: two tests of this session record the same cassette "
            f"{_show_path(state, path)}: {other} (first) and {item.nodeid}; the second would "
            "overwrite the first. Give each its own file: another "
            "`@pytest.mark.agui(cassette=...)`, or leave cassette= out (the default is one "
            "file per test).",
            pytrace=False,
        )

    return claim


def _cassette_for(state: _State, item: pytest.Item) -> Path:
    """The marker's ``cassette=`` inside the cassette folder, else the default location.

    A value that is not a usable path, or that leaves the folder without
    ``cassette_outside=True``, raises ``pytest.UsageError`` naming the test and the value; the
    ``agui_cassette_path`` fixture turns it into a failure of that test alone.
    """
    marker = _marker_kwargs(item)
    given = marker.get("cassette")
    if given is None:
        return _default_cassette(state, item)
    outside = marker.get("cassette_outside", False)
    if not isinstance(outside, bool):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}(cassette_outside=...) takes True or False, "
            f"not {outside!r}"
        )
    from agui_replay._files import contained_cassette_path
    from agui_replay.errors import InvalidArgumentError

    try:
        return contained_cassette_path(
            state.cassette_dir, given, allow_outside=outside, opt_in="cassette_outside=True"
        )
    except InvalidArgumentError as exc:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}(cassette={given!r}) {exc}"
        ) from None


def _record_on_failure(item: pytest.Item) -> bool:
    """The marker's ``record_on_failure``, else ini ``agui_record_on_failure``."""
    value = _marker_kwargs(item).get("record_on_failure")
    if value is None:
        return bool(item.config.getini("agui_record_on_failure"))
    return bool(value)


def _record_command(item: pytest.Item) -> str:
    """``pytest <node id> --agui-record``, to paste where pytest was invoked: the node id's
    file relative to the invocation folder (not the rootdir), quoted for the shell when it
    needs it (``[0]`` of a parametrized test globs in zsh)."""
    import shlex

    node = item.nodeid
    file_part, sep, rest = node.partition("::")
    try:
        relative = os.path.relpath(item.path, item.config.invocation_params.dir)
    except ValueError:  # another drive (Windows): the rootdir-relative id is all there is
        relative = file_part
    if Path(relative).name == Path(file_part).name:
        node = Path(relative).as_posix() + sep + rest
    return f"pytest {shlex.quote(node)} --agui-record"


def _marker_mode_note(item: pytest.Item, message: str) -> str:
    """``message`` with its ``--agui-record`` advice corrected when the test's marker fixes a
    record mode other than ``rewrite``: the marker wins over the command line, so the advised
    command alone would not record the test."""
    mode = _marker_kwargs(item).get("record_mode")
    command = _record_command(item)
    if mode is None or str(mode) == "rewrite" or f"`{command}`" not in message:
        return message
    return message.replace(
        f"`{command}`",
        f"`{command}` after taking record_mode={str(mode)!r} out of the test's "
        "@pytest.mark.agui (the marker wins over the command line: as the test stands, "
        "--agui-record does not record it)",
    )


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

    state = pytestconfig.stash[_STATE]
    return secrets_from_env([*DEFAULT_SECRET_ENV, *state.secret_env])


@pytest.fixture
def agui_normalizers() -> list[Any]:
    """User normalizers for this test's events and snapshots (default: none).

    Override it in a conftest to return rules such as
    ``agui_replay.normalize.replace(r"order-\\d+", "<order>")``,
    ``agui_replay.normalize.ignore("/snapshot/*/updated_at")`` or any callable
    ``event -> event``; the marker's ``normalize=[...]`` adds to them.
    """
    return []


def _normalize_setting(item: pytest.Item, marker: dict[str, Any]) -> tuple[bool, list[Any]]:
    """The marker's ``normalize``: ``True``/``False``, or a list of rules (normalization on)."""
    value = marker.get("normalize", True)
    if isinstance(value, bool):
        return value, []
    if isinstance(value, (list, tuple)):
        return True, list(value)
    if callable(value):
        return True, [value]
    pytest.fail(
        f"{item.nodeid}: @pytest.mark.agui(normalize=...) takes True, False or a list of rules "
        f"(agui_replay.normalize.replace/ignore/blank or callables), not {value!r}",
        pytrace=False,
    )


def _id_generators(item: pytest.Item, marker: dict[str, Any], ini: list[str]) -> list[str]:
    value = marker.get("id_generators", ())
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        pytest.fail(
            f"{item.nodeid}: @pytest.mark.agui(id_generators=...) takes a list of "
            f"'package.module.function' names, not {value!r}",
            pytrace=False,
        )
    return [*ini, *value]


@pytest.fixture
def agui_cassette_path(request: pytest.FixtureRequest) -> Path:
    """This test's cassette file (the marker's ``cassette=`` or the default location)."""
    item = request.node
    assert isinstance(item, pytest.Item)
    try:
        return _cassette_for(request.config.stash[_STATE], item)
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
    from agui_replay.recording import CassetteSession, RecordMode, RecordModeError

    state = request.config.stash[_STATE]
    item = request.node
    assert isinstance(item, pytest.Item)
    if state.refresh:
        _snapshot_fixtures_first(request, item)
    marker = _marker_kwargs(item)
    try:
        if marker.get("record_mode") is not None:
            mode = RecordMode.parse(marker["record_mode"], source="@pytest.mark.agui(record_mode)")
        elif state.cli_mode is not None:
            mode = state.cli_mode
        else:
            mode = RecordMode.parse(agui_record_mode, source="the agui_record_mode fixture")
    except RecordModeError as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None
    renew = False
    if state.on_stale == "record" and mode is RecordMode.NONE and agui_secrets:
        # a provider key is set: a stale cassette is recorded again, with today's date
        renew = _stale_age(state, agui_cassette_path) is not None and not state.refresh
        mode = RecordMode.REWRITE if renew else mode
    normalize, rules = _normalize_setting(item, marker)
    deterministic = marker.get("deterministic_ids")
    if deterministic is None:
        deterministic = bool(request.config.getini("agui_deterministic_ids"))
    generators = _id_generators(item, marker, list(request.config.getini("agui_id_generators")))

    upstream: Any
    if marker.get("upstream") is not None:
        upstream = marker["upstream"]
    elif state.cli_upstream:
        upstream = list(state.cli_upstream)
    else:

        def upstream() -> Any:
            # Resolved only when a run records, so a replay never starts a conftest upstream.
            return request.getfixturevalue("agui_upstream")

    from agui_replay.errors import InvalidArgumentError

    try:
        session = CassetteSession(
            agui_cassette_path,
            mode=mode,
            upstream=upstream,
            secrets=[*agui_secrets, *marker.get("secrets", ())],
            record_command=_record_command(item),
            name=item.nodeid,
            normalize=normalize,
            match=marker.get("match", "order"),
            freeze_time=marker.get("freeze_time", True),
            hosts=[*state.provider_hosts, *_hosts(marker.get("hosts", ()))],
            intercept=bool(marker.get("intercept", True)),
            normalizers=[*agui_normalizers, *rules],
            deterministic_ids=bool(deterministic),
            record_errors=bool(marker.get("record_errors", False)),
            id_generators=generators,
            refresh=state.refresh,
            ignore_hosts=[
                *request.config.getini("agui_ignore_hosts"),
                *_host_list(marker.get("ignore_hosts", ())),
            ],
            drop_hosts=[
                *request.config.getini("agui_drop_hosts"),
                *_host_list(marker.get("drop_hosts", ())),
            ],
            match_on=_match_on(marker, list(request.config.getini("agui_match_on"))),
            faults=_faults(item, marker),
            match_ignore=[
                *request.config.getini("agui_match_ignore"),
                *_text_list(marker.get("match_ignore", ())),
            ],
            keep_pending=True,
            renew_recorded_at=renew,
        )
    except InvalidArgumentError as exc:  # a bad rule or id generator: this test fails alone
        raise pytest.fail.Exception(f"{item.nodeid}: {exc}", pytrace=False) from None
    # A replaying test is guarded from here to the end of this fixture's teardown: the fixtures
    # set up after this one (the agent's SDK client), the test, and their teardown. For as
    # long, the unset key variables hold placeholders (the SDKs demand a key; a replay sends
    # nothing with it).
    if not state.holds_server:
        from agui_replay.providers import SessionProvider

        SessionProvider.hold_server()
        state.holds_server = True
    session.before_record = _claimer(state, item, session.path)
    session.guard.share_tls = state.share_tls
    with (
        session.guard.guarding(session.replay_only),
        session.placeholders(),
        session.taping(),
    ):
        try:
            yield session
        finally:
            written = session.finish()
            key = _show_path(state, session.path)
            if written is not None and session.refresh:
                state.refreshed.add(key)
            elif written is not None:
                state.recorded.add(key)
            elif session.upstream_failures:
                state.failed.add(key)
            elif session.discarded:
                state.discarded.add(key)
            elif session.outcome == "replayed" and item.stash.get(_REPLAY_FAILED, False):
                state.mismatched.add(key)
            elif session.outcome == "replayed":
                state.replayed.add(key)
            if session.pending_path is not None:
                state.pending.add(_show_path(state, session.pending_path))
            days = _older(state, session.recorded_at) if session.outcome == "replayed" else None
            if days is not None:
                from agui_replay._age import describe_age

                state.stale.add(f"{key} ({describe_age(days)} old)")
            if session.faults and session.outcome == "replayed":
                state.faulted.add(item.nodeid)
            if session.ignored_matches:
                state.ignored.add(f"{item.nodeid} ({'; '.join(session.ignored_matches)})")
    unreported = session.guard.violations[item.stash.get(_REPORTED, 0) :]
    if unreported:  # blocked during teardown (and swallowed there)
        pytest.fail(f"NetworkBlockedError: {unreported[0]}", pytrace=False)


def _snapshot_fixtures_first(request: pytest.FixtureRequest, item: pytest.Item) -> None:
    """Under ``--agui-refresh``, set up the test's event snapshot fixtures before its cassette
    is opened: syrupy then knows the extension of the test's snapshot files even when the
    setup fails (no cassette), and keeps them (see ``_Hooks.pytest_runtest_logreport``)."""
    for name in ("agui_snapshot", "agui_folded_snapshot"):
        if name in getattr(item, "fixturenames", ()):
            request.getfixturevalue(name)


def _snapshot_rules(request: pytest.FixtureRequest, agui_normalizers: list[Any]) -> list[Any]:
    item = request.node
    assert isinstance(item, pytest.Item)
    _, rules = _normalize_setting(item, _marker_kwargs(item))
    return [*agui_normalizers, *rules]


def _test_session(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """The test's ``agui`` session when it uses one (looked up when a snapshot is taken), so
    a snapshot of ``agui.run``'s events shows the ids the cassette gives them."""
    item = request.node

    def session() -> Any:
        return getattr(item, "funcargs", {}).get("agui")

    return session


@pytest.fixture
def agui_snapshot(
    snapshot: Any, request: pytest.FixtureRequest, agui_normalizers: list[Any]
) -> Any:
    """syrupy's ``snapshot`` storing event streams one event per line (normalized, with the
    ``agui_normalizers`` fixture's rules and the marker's ``normalize=[...]``)."""
    from agui_replay.snapshot import use_agui_extension

    return use_agui_extension(
        snapshot, rules=_snapshot_rules(request, agui_normalizers), session=_test_session(request)
    )


@pytest.fixture
def agui_folded_snapshot(
    snapshot: Any, request: pytest.FixtureRequest, agui_normalizers: list[Any]
) -> Any:
    """Like ``agui_snapshot``, with each message's deltas folded into one event."""
    from agui_replay.snapshot import use_agui_extension

    return use_agui_extension(
        snapshot,
        fold=True,
        rules=_snapshot_rules(request, agui_normalizers),
        session=_test_session(request),
    )


def _host_list(value: Any) -> list[str]:
    # marker ignore_hosts= / drop_hosts=: a host string or a list of them
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _text_list(value: Any) -> list[str]:
    # marker match_ignore=: a string or a list of them
    return [value] if isinstance(value, str) else list(value)


def _faults(item: pytest.Item, marker: dict[str, Any]) -> list[Any]:
    # marker faults=: a fault of agui_replay.faults or a list of them
    value = marker.get("faults")
    if value is None:
        return []
    from agui_replay.faults import Fault

    given = [value] if isinstance(value, Fault) else value
    if isinstance(given, (str, bytes, Mapping)) or not hasattr(given, "__iter__"):
        given = [given]
    faults = list(given)
    for i, fault in enumerate(faults):
        if not isinstance(fault, Fault):
            pytest.fail(
                f"{item.nodeid}: @pytest.mark.{MARKER}(faults=[...]) item #{i} is "
                f"{type(fault).__name__} {fault!r}; build each fault with agui_replay.faults: "
                "faults.cut(after_chunks=N), faults.status(429), faults.delay(0.5), "
                "faults.malformed(after_chunks=N) or faults.timeout()",
                pytrace=False,
            )
    return faults


def _match_on(marker: dict[str, Any], ini: list[str]) -> list[Any]:
    # marker match_on=: a name, a callable or a list of them; it replaces ini agui_match_on
    value = marker.get("match_on")
    if value is None:
        return ini
    if isinstance(value, str) or callable(value):
        return [value]
    return list(value)


def _hosts(value: Any) -> list[str]:
    # marker hosts=: a host string, a list of them, or a mapping of provider name to host
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [f"{name}={host}" for name, host in value.items()]
    return [str(v) for v in value]


def remove_stale_temp_files(
    folder: Path, *, older_than: float = STALE_TEMP_SECONDS, now: float | None = None
) -> list[str]:
    """Delete, under ``folder``, the temporary files of cassette writes that a killed process
    left behind: only names of ``atomic_write_text``'s pattern (``.<name>.<pid>.<hex>.tmp``),
    regular files, last modified more than ``older_than`` seconds ago (a write in progress in
    another process is younger). Returns the paths removed."""
    removed: list[str] = []
    if not folder.is_dir():
        return removed
    limit = (time.time() if now is None else now) - older_than
    for base, _dirs, files in os.walk(folder):
        for name in files:
            if not _TEMP_FILE.match(name):
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


def _show_path(state: _State, path: Path) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to(state.rootdir).as_posix()
    except ValueError:
        return resolved.as_posix()


# --- assertion output -----------------------------------------------------------------------


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


# --- session hooks ------------------------------------------------------------------------------


class _Hooks:
    """The hooks that need the session state (registered per config in ``pytest_configure``)."""

    def __init__(self, state: _State, config: pytest.Config | None = None) -> None:
        self.state = state
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # A test that fails during a refresh gets nothing written (its cassette keeps the old
        # events), so its snapshot must stay too: with --snapshot-update syrupy would delete a
        # snapshot the failure kept the test from reaching as unused.
        if (
            self.state.refresh
            and report.failed
            and report.when in ("setup", "call")
            and "snapshot" in getattr(item, "fixturenames", ())
        ):
            self.state.kept_snapshots.add(item.nodeid)
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # After syrupy's own hook took the outcome: syrupy keeps the snapshots of a test it
        # counts as skipped (its outcome in pytest's report stays "failed").
        if report.nodeid in self.state.kept_snapshots and report.when in ("setup", "call"):
            _keep_snapshots(self.config, report.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        funcargs: dict[str, Any] = getattr(item, "funcargs", {})
        session = funcargs.get("agui")
        # No CassetteSession can exist before its module was imported (by our fixture).
        if "agui_replay.recording" not in sys.modules:
            return (yield)
        from agui_replay.recording import (
            CassetteSession,
            NetworkBlockedError,
            ReplayMismatchError,
            UpstreamError,
        )

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
            self._note_missing(item, exc)
            item.stash[_REPLAY_FAILED] = True
            # Our failures explain themselves; a traceback through the plugin would bury that.
            text = _marker_mode_note(item, f"{type(exc).__name__}: {exc}")
            raise pytest.fail.Exception(text, pytrace=False) from None
        except Exception:
            # The test caught agui.run's UpstreamError and failed on something else: the
            # upstream's failure is the cause, so it comes first.
            if session.upstream_failures and not session.record_errors:
                first = session.upstream_failures[0]
                raise pytest.fail.Exception(f"UpstreamError: {first}", pytrace=False) from None
            raise
        finally:
            item.stash[_REPORTED] = len(session.guard.violations)
            if not passed:
                # a refresh stores only what a passing test produced; a recording too, unless
                # record_on_failure says to keep it
                session.abandon(recording=not _record_on_failure(item))
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        # The guard is up from the agui fixture's setup on: a fixture set up after it that
        # dialed out and swallowed the refusal fails the setup.
        try:
            result = yield
        except CassetteError as exc:
            # A fixture built on `agui` (the agent's client reads agui.provider.base_url) met a
            # missing or broken cassette: the message says what to do, the plugin's frames not.
            self._mark_reported(item)
            self._note_missing(item, exc)
            text = _marker_mode_note(item, f"{type(exc).__name__}: {exc}")
            raise pytest.fail.Exception(text, pytrace=False) from None
        except BaseException:
            self._mark_reported(item)
            raise
        violations = self._violations(item)
        item.stash[_REPORTED] = len(violations)
        if violations:
            raise pytest.fail.Exception(
                f"NetworkBlockedError: {violations[0]}", pytrace=False
            ) from None
        return result

    def _note_missing(self, item: pytest.Item, exc: BaseException) -> None:
        from agui_replay.recording import MissingCassetteError

        path = getattr(exc, "path", None)
        if isinstance(exc, MissingCassetteError) and path and not Path(path).exists():
            self.state.missing.add(_show_path(self.state, Path(path)))

    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(
        self, collection_path: Path, config: pytest.Config
    ) -> Generator[None, bool | None, bool | None]:
        ignored = yield
        if ignored and not _is_norecurse(collection_path, config):
            self._uncollected(collection_path, config)
        return ignored

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # a module skipped at import (pytest.skip(allow_module_level=True)) or failing to import
        path = Path(str(report.fspath)) if report.fspath else None
        if report.outcome != "passed" and path is not None and path.suffix == ".py":
            self.state.uncollected.add("/".join(module_folder(path.resolve())))

    def _uncollected(self, path: Path, config: pytest.Config) -> None:
        if path.suffix == ".py":
            self.state.uncollected.add("/".join(module_folder(path.resolve())))
            return
        if not path.is_dir():
            return
        for base, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not _is_norecurse(Path(base, d), config)]
            for name in files:
                if name.endswith(".py"):
                    self.state.uncollected.add("/".join(module_folder(Path(base, name).resolve())))

    @staticmethod
    def _violations(item: pytest.Item) -> list[str]:
        session = getattr(item, "funcargs", {}).get("agui")
        guard = getattr(session, "guard", None)
        violations = getattr(guard, "violations", None)
        return list(violations) if isinstance(violations, list) else []

    def _mark_reported(self, item: pytest.Item) -> None:
        item.stash[_REPORTED] = len(self._violations(item))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        # Before -k / -m deselect anything: a deselected test still owns its cassette.
        state = self.state
        # A module picked by node id (file.py::test) was collected in part: its other tests
        # were never seen, so its folder cannot tell what is unused.
        partial = {Path(arg.split("::", 1)[0]).stem for arg in config.args if "::" in arg}
        for item in items:
            stem = Path(item.path).stem
            folder = "/".join(module_folder(Path(item.path)))
            if stem not in partial:
                state.stems.add(folder)
            if "agui" in getattr(item, "fixturenames", ()):
                try:
                    state.claimed.add(_show_path(state, _cassette_for(state, item)))
                except pytest.UsageError:
                    continue  # reported when the test runs
        source = config.args_source
        state.whole_suite = source in (
            pytest.Config.ArgsSource.INVOCATION_DIR,
            pytest.Config.ArgsSource.TESTPATHS,
        ) and not (config.getoption("lf", False) or config.getoption("stepwise", False))

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not hasattr(session.config, "workerinput"):  # under xdist, the controller does it
            self.state.stale_removed = remove_stale_temp_files(self.state.cassette_dir)
            from agui_replay.pytest_plugin._paths import remove_stale_claims

            remove_stale_claims(self.state.cassette_dir)  # before the xdist workers start

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.state.holds_server:
            from agui_replay.providers import SessionProvider

            self.state.holds_server = False
            SessionProvider.release_server()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        data = output.get(_WORKER_KEY)
        if isinstance(data, str):
            self.state.merge(json.loads(data))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:
            worker_output[_WORKER_KEY] = json.dumps(state.to_json())
            return
        from agui_replay.pytest_plugin._paths import remove_claims

        remove_claims(state.claims, state.cassette_dir)
        state.unused = self._unused()
        if state.prune:
            state.pruned, state.unused = self._prune(state.unused)
        if state.unused and state.fail_on_unused and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if state.stale and state.on_stale == "fail" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _unused(self) -> list[str]:
        state = self.state
        root = state.cassette_dir
        if not root.is_dir():
            return []
        from agui_replay.pytest_plugin._paths import folder_path

        folders = self._collected_folders()
        # the folders of the test modules on disk that pytest did not collect: their
        # cassettes are not known to be unused
        uncollected = {folder_path(root, f.split("/")) for f in state.uncollected}
        used = state.claimed | state.recorded | state.replayed | state.mismatched
        found: list[str] = []
        for path in sorted(root.rglob("*.json")):
            if path.name.startswith("."):
                continue
            shown = _show_path(state, path)
            folder = _show_path(state, path.parent)
            considered = folder in folders or (
                state.whole_suite and path.parent.resolve() not in uncollected
            )
            if considered and shown not in used:
                found.append(shown)
        return found

    def _collected_folders(self) -> set[str]:
        """The cassette folders (as shown) of the test modules collected in full."""
        from agui_replay.pytest_plugin._paths import folder_path

        state = self.state
        return {
            _show_path(state, folder_path(state.cassette_dir, f.split("/"))) for f in state.stems
        }

    def _prune(self, unused: list[str]) -> tuple[list[str], list[str]]:
        """Delete the unused cassettes in the folders of the modules collected in full; the
        others (a deleted module's, loose files) stay listed. Returns (deleted, left)."""
        import contextlib

        state = self.state
        folders = self._collected_folders()
        deleted: list[str] = []
        left: list[str] = []
        for shown in unused:
            path = Path(shown) if Path(shown).is_absolute() else state.rootdir / shown
            if _show_path(state, path.parent) not in folders:
                left.append(shown)
                continue
            try:
                path.unlink()
            except OSError:
                left.append(shown)
                continue
            deleted.append(shown)
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when nothing is left in it
        return deleted, left

    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        state = self.state
        if not (
            state.recorded
            or state.replayed
            or state.ignored
            or state.refreshed
            or state.failed
            or state.discarded
            or state.mismatched
            or state.unused
            or state.pruned
            or state.stale_removed
            or state.pending
            or state.stale
            or state.kept_snapshots
        ):
            return
        write = terminalreporter.write_line
        terminalreporter.section("agui-replay")
        for path in state.stale_removed:
            shown = _show_path(state, Path(path))
            write(f"  removed a stale temporary file of an interrupted write: {shown}")
        counts = (
            f"{len(state.recorded)} cassette(s) recorded, "
            + (f"{len(state.refreshed)} refreshed, " if state.refresh else "")
            + f"{len(state.replayed)} replayed, {len(state.unused)} unused"
            + (f", {len(state.pruned)} deleted" if state.pruned else "")
            + (f", {len(state.failed)} failed" if state.failed else "")
            + (f", {len(state.discarded)} not written" if state.discarded else "")
            + (f", {len(state.mismatched)} did not replay" if state.mismatched else "")
        )
        write(counts)
        if state.ignored:
            tests = "test" if len(state.ignored) == 1 else "tests"
            write(f"replayed with ignored fields: {len(state.ignored)} {tests} (match_ignore)")
        if state.faulted:
            tests = "test" if len(state.faulted) == 1 else "tests"
            write(f"replayed with faults: {len(state.faulted)} {tests}")
        for path in sorted(state.recorded):
            write(f"  recorded: {path}")
        for path in sorted(state.refreshed):
            write(f"  refreshed: {path} (events changed; interactions kept)")
        for path in sorted(state.failed):
            write(f"  failed:   {path} (the upstream failed; nothing written)", red=True)
        for path in sorted(state.mismatched):
            write(f"  did not replay: {path} (its test says why)", red=True)
        for path in sorted(state.discarded):
            write(
                f"  not written: {path} (its test failed; record_on_failure=True keeps it)",
                red=True,
            )
        verbose = config.get_verbosity() > 0
        if verbose:
            for path in sorted(state.replayed):
                write(f"  replayed: {path}")
            for test in sorted(state.ignored):
                write(f"  replayed with ignored fields: {test}")
            for test in sorted(state.faulted):
                write(f"  replayed with faults: {test}")
        if state.pending:
            write(f"pending changes: {len(state.pending)} (review with agui-replay review)")
            for path in sorted(state.pending):
                write(f"  pending:  {path}")
        if state.stale:
            limit = f"older than agui_max_age ({state.max_age} days)"
            write(f"stale cassettes: {len(state.stale)} {limit}", red=state.on_stale == "fail")
            for entry in sorted(state.stale):
                write(f"  stale:    {entry}")
            if state.on_stale == "fail":
                write("stale cassettes fail the session (agui_on_stale = fail)", red=True)
            elif state.on_stale == "record":
                write("set the provider's key variable to re-record them (agui_on_stale = record)")
            else:
                write("re-record them with --agui-record (against the real provider)")
        if state.kept_snapshots and getattr(config.option, "update_snapshots", False):
            write(_kept_snapshots_line(config, sorted(state.kept_snapshots)))
        for path in state.pruned:
            write(f"  deleted:  {path} (unused; --agui-prune-unused)")
        for path in state.unused:
            write(f"  unused:   {path}")
        for line in _rename_hints(state):
            write(line)
        if state.unused:
            if state.fail_on_unused:
                write("unused cassettes fail the session (--agui-fail-on-unused)", red=True)
            elif state.prune:
                write(
                    "the unused cassettes left are not in a collected module's folder (a deleted "
                    "module's?): delete them by hand"
                )
            else:
                write(
                    "delete unused cassettes with --agui-prune-unused, or fail on them with "
                    "--agui-fail-on-unused"
                )


def _syrupy_session(config: pytest.Config | None) -> Any:
    """syrupy's session object when syrupy is loaded and can be told an item's outcome."""
    syrupy = getattr(config, "_syrupy", None)
    return syrupy if callable(getattr(syrupy, "ran_item", None)) else None


def _keep_snapshots(config: pytest.Config | None, nodeid: str) -> None:
    """Tell syrupy that the test ``nodeid`` is to be counted as skipped: the snapshots of a
    skipped test are never unused, so ``--snapshot-update`` does not delete them."""
    syrupy = _syrupy_session(config)
    if syrupy is not None:
        syrupy.ran_item(nodeid, "skipped")


def _kept_snapshots_line(config: pytest.Config, tests: list[str]) -> str:
    names = ", ".join(tests)
    if _syrupy_session(config) is None:  # a syrupy without SnapshotSession.ran_item
        return (
            f"snapshots NOT kept: {names} failed during --agui-refresh, which wrote nothing "
            "for them, but this syrupy cannot be told to keep their snapshots: restore any "
            "that --snapshot-update deleted (git checkout), or upgrade syrupy"
        )
    return (
        f"snapshots kept: {names} (failed during --agui-refresh, which wrote nothing for "
        f"{'it' if len(tests) == 1 else 'them'}: --snapshot-update would have deleted "
        f"{'its' if len(tests) == 1 else 'their'} snapshots as unused)"
    )


def _is_norecurse(path: Path, config: pytest.Config) -> bool:
    """Whether pytest skips ``path`` by ini ``norecursedirs`` (a virtualenv, ``build``...) rather
    than by an explicit ignore: such folders hold no tests whose cassettes matter."""
    import fnmatch

    if path.name.startswith(".") or (path / "pyvenv.cfg").exists():
        return True
    patterns = config.getini("norecursedirs")
    return any(fnmatch.fnmatch(path.name, str(p)) for p in patterns)


def _rename_hints(state: _State) -> list[str]:
    """For each cassette folder with a missing cassette and an unused one: a renamed test?"""
    import shlex

    lines: list[str] = []
    for folder in sorted({str(Path(m).parent) for m in state.missing}):
        missing = sorted(m for m in state.missing if str(Path(m).parent) == folder)
        unused = sorted(u for u in state.unused if str(Path(u).parent) == folder)
        if not unused:
            continue
        if len(missing) == 1 and len(unused) == 1:
            lines.append(
                f"did you rename a test? {missing[0]} is missing and {unused[0]} unused; to keep "
                f"the recording: git mv {shlex.quote(unused[0])} {shlex.quote(missing[0])}"
            )
        else:
            lines.append(
                f"did you rename a test? {folder}/ has {len(missing)} missing and {len(unused)} "
                "unused cassette(s): `git mv` each unused one to its test's new name"
            )
    return lines
