"""The plugin's command-line options and ini keys, and what a pytest session reads from them
once (:class:`SessionOptions`): the cassette folder, the command line's record mode and
upstream, the ini lists every test adds its marker's to, the stale-cassette policy.

Registering the options runs at every pytest start, so it imports no engine: the record modes
``--agui-record-mode`` accepts are read from :class:`agui_replay.recording.RecordMode` only when
argparse looks at them (``--help``, or a value given).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import pytest

if TYPE_CHECKING:
    from agui_replay.recording import RecordMode

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
"""The default of ini ``agui_upstream``: the recording session's own default upstream (which
``agui_replay.recording`` does not export; ``tests/package`` keeps the two equal)."""

_INI_MODE = "none"
"""The default of ini ``agui_record_mode`` (read without loading the engine)."""


class _DropHosts(Sequence[str]):
    """The default of ini ``agui_drop_hosts``: ``agui_replay.providers.DEFAULT_DROP_HOSTS``,
    read when the session's options are (the facade imports nothing heavy for it)."""

    @staticmethod
    def _hosts() -> tuple[str, ...]:
        from agui_replay.providers import DEFAULT_DROP_HOSTS

        return DEFAULT_DROP_HOSTS

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._hosts()[index]

    def __len__(self) -> int:
        return len(self._hosts())


class _RecordModes(Sequence[str]):
    """The values of ``RecordMode``, read from the engine when argparse first looks at them."""

    @staticmethod
    def _names() -> tuple[str, ...]:
        from agui_replay.recording import RecordMode

        return tuple(mode.value for mode in RecordMode)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--agui-record", {
        "action": "store_true", "default": False,
        "help": "record the cassettes of the selected tests again against the real provider "
        "(record mode 'rewrite')",
    }),
    ("--agui-refresh", {
        "action": "store_true", "default": False,
        "help": "re-derive the stored AG-UI events of the selected tests' cassettes from their "
        "recorded provider interactions, offline (interactions unchanged; a test whose "
        "provider requests changed fails and asks for --agui-record)",
    }),
    ("--agui-record-mode", {
        "choices": _RecordModes(), "default": None,
        "help": "none: replay only (default); once: record missing cassettes; rewrite: record "
        "everything used; new: keep recorded runs, record runs beyond them",
    }),
    ("--agui-cassette-dir", {
        "default": None, "metavar": "DIR",
        "help": "folder of the cassettes (default: ini agui_cassette_dir, 'cassettes' at the "
        "rootdir); relative to the current directory",
    }),
    ("--agui-upstream", {
        "action": "append", "default": [], "metavar": "URL",
        "help": "base URL of the real provider to record from; NAME=URL sets provider NAME's "
        "(openai, anthropic, gemini, azure, or a name of agui_provider_hosts); repeatable; "
        f"a bare URL serves every provider without its own (default: ini agui_upstream, "
        f"{DEFAULT_UPSTREAM}, and each intercepted provider's real host)",
    }),
    ("--agui-secret-env", {
        "action": "append", "default": [], "metavar": "NAME",
        "help": "scrub the value of environment variable NAME from cassettes (repeatable; "
        "common provider key variables are always scrubbed)",
    }),
    ("--agui-fail-on-unused", {
        "action": "store_true", "default": None,
        "help": "fail the session when a cassette is unused: recorded for a test that no "
        "collected test owns (the ones the summary lists)",
    }),
    ("--agui-prune-unused", {
        "action": "store_true", "default": False,
        "help": "delete the unused cassettes the summary lists (and the folders left empty), "
        "and list what was deleted",
    }),
)  # fmt: skip

_INI: tuple[tuple[str, str, Literal["string", "linelist", "bool"], Any], ...] = (
    ("agui_cassette_dir", "agui-replay cassette folder, relative to the rootdir", "string", None),
    ("agui_record_mode", "agui-replay default record mode (none, once, rewrite, new)",
     "string", _INI_MODE),
    ("agui_upstream", "agui-replay: base URL of the real provider to record from", "string",
     DEFAULT_UPSTREAM),
    ("agui_provider_hosts", "agui-replay: more provider hosts routed to the recorder during "
     "runs, one per line (HOST, HOST:PORT, *.DOMAIN, or NAME=HOST)", "linelist", []),
    ("agui_secret_env", "agui-replay: environment variables whose values are scrubbed from "
     "cassettes", "linelist", []),
    ("agui_deterministic_ids", "agui-replay: make uuid.uuid1/uuid4/uuid7 (and known framework "
     "helpers) deterministic during each run", "bool", True),
    ("agui_id_generators", "agui-replay: more id generators made deterministic during runs, "
     "one package.module.function per line", "linelist", []),
    ("agui_fail_on_unused", "agui-replay: fail the session when a cassette is used by no test",
     "bool", False),
    ("agui_record_on_failure", "agui-replay: write the recording of a test that failed "
     "(default: a failing test's recording is not written)", "bool", False),
    ("agui_share_tls", "agui-replay: replays share an SSL context", "bool", True),
    ("agui_max_age", "agui-replay: a replayed cassette recorded longer ago than this is stale "
     "(90d, 12w, 6m; empty: never)", "string", ""),
    ("agui_on_stale", "agui-replay: what a stale cassette does: warn (listed), fail (the "
     "session fails), record (re-recorded when a provider key is set, else warned)", "string",
     "warn"),
    ("agui_ignore_hosts", "agui-replay: hosts whose requests are neither recorded nor replayed "
     "(a local service the tests start), one HOST, HOST:PORT or *.DOMAIN per line", "linelist",
     []),
    ("agui_drop_hosts", "agui-replay: hosts answered with an empty 204, never sent nor "
     "recorded (telemetry); replaces the built-in list", "linelist", _DropHosts()),
    ("agui_match_on", "agui-replay: what a replayed HTTP request to a non-provider host is "
     "compared on besides method and URL (body, headers), one per line", "linelist", []),
    ("agui_match_ignore", "agui-replay: JSON-pointer globs (/messages/0/content, "
     "/tools/*/description) left out of the provider request bodies a replay compares, one "
     "per line", "linelist", []),
)  # fmt: skip


def register(parser: pytest.Parser) -> None:
    """Add the options (in one ``--help`` group) and the ini keys."""
    group = parser.getgroup("agui-replay", "agui-replay: record and replay AG-UI agents")
    for flag, attrs in _FLAGS:
        group.addoption(flag, **attrs)
    for name, text, kind, default in _INI:
        if default is None:
            parser.addini(name, text, kind)
        else:
            parser.addini(name, text, kind, default=default)


@dataclass(frozen=True)
class SessionOptions:
    """What one pytest session reads from its command line and ini file, once."""

    cassette_dir: Path
    rootdir: Path
    cli_mode: RecordMode | None
    """The command line's record mode (``None``: not given)."""
    cli_upstream: tuple[str, ...]
    secret_env: tuple[str, ...]
    provider_hosts: tuple[str, ...]
    fail_on_unused: bool
    share_tls: bool
    refresh: bool
    prune: bool
    max_age: int | None
    """Ini ``agui_max_age`` in days (``None``: cassettes never go stale)."""
    on_stale: str
    run_id: str
    """This session's id in the claim files (under xdist, the run's id shared by the workers)."""
    deterministic_ids: bool
    id_generators: tuple[str, ...]
    record_on_failure: bool
    ignore_hosts: tuple[str, ...]
    drop_hosts: tuple[str, ...]
    match_on: tuple[str, ...]
    match_ignore: tuple[str, ...]

    @classmethod
    def read(cls, config: pytest.Config) -> SessionOptions:
        """Read and check the options; a bad value raises ``pytest.UsageError``."""
        ini = config.getini
        cli_mode = _cli_mode(config)
        ini_mode = str(ini("agui_record_mode"))
        if ini_mode != _INI_MODE:  # the engine says what is wrong with it
            _parse_mode(ini_mode, "ini agui_record_mode")
        fail = config.getoption("agui_fail_on_unused")
        workerinput = getattr(config, "workerinput", None)
        run_id = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None
        return cls(
            cassette_dir=_cassette_dir(config).resolve(),
            rootdir=config.rootpath,
            cli_mode=cli_mode,
            cli_upstream=tuple(config.getoption("agui_upstream") or ()),
            secret_env=(*ini("agui_secret_env"), *config.getoption("agui_secret_env")),
            provider_hosts=tuple(ini("agui_provider_hosts")),
            fail_on_unused=bool(ini("agui_fail_on_unused")) if fail is None else fail,
            share_tls=bool(ini("agui_share_tls")),
            refresh=bool(config.getoption("agui_refresh")),
            prune=bool(config.getoption("agui_prune_unused")),
            max_age=_max_age(config),
            on_stale=_on_stale(config),
            run_id=str(run_id or uuid.uuid4().hex),
            deterministic_ids=bool(ini("agui_deterministic_ids")),
            id_generators=tuple(ini("agui_id_generators")),
            record_on_failure=bool(ini("agui_record_on_failure")),
            ignore_hosts=tuple(ini("agui_ignore_hosts")),
            drop_hosts=tuple(ini("agui_drop_hosts")),
            match_on=tuple(ini("agui_match_on")),
            match_ignore=tuple(ini("agui_match_ignore")),
        )

    def too_old(self, recorded_at: str | None) -> int | None:
        """The age in days of a cassette recorded at ``recorded_at`` when it is older than
        ``agui_max_age`` (``None``: not stale, or no age known)."""
        from agui_replay._age import age_days

        days = age_days(recorded_at)
        if self.max_age is None or days is None or days <= self.max_age:
            return None
        return days

    def shown(self, path: Path) -> str:
        """``path`` as the summary and the messages show it: relative to the rootdir."""
        resolved = path.resolve()
        try:
            return resolved.relative_to(self.rootdir).as_posix()
        except ValueError:
            return resolved.as_posix()


def _cassette_dir(config: pytest.Config) -> Path:
    option_dir = config.getoption("agui_cassette_dir")
    if option_dir:
        return Path(config.invocation_params.dir, option_dir)
    ini_dir = config.getini("agui_cassette_dir") or "cassettes"
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return Path(base, str(ini_dir))


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


def _parse_mode(value: str, source: str) -> RecordMode:
    from agui_replay.errors import RecordModeError
    from agui_replay.recording import RecordMode

    try:
        return RecordMode.parse(value, source=source)
    except RecordModeError as exc:
        raise pytest.UsageError(str(exc)) from None


def _max_age(config: pytest.Config) -> int | None:
    from agui_replay._age import AGE_FORMS, parse_max_age

    raw = str(config.getini("agui_max_age") or "").strip()
    days = parse_max_age(raw) if raw else None
    if raw and days is None:
        raise pytest.UsageError(f"ini agui_max_age = {raw!r} is not an age: use {AGE_FORMS}")
    return days


def _on_stale(config: pytest.Config) -> str:
    on_stale = str(config.getini("agui_on_stale") or "warn").strip()
    if on_stale not in ("warn", "fail", "record"):
        raise pytest.UsageError(
            f"ini agui_on_stale = {on_stale!r} is not one of warn, fail, record"
        )
    return on_stale
