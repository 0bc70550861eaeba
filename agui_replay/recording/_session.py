"""``CassetteSession``: the runs of one cassette file, each recorded or replayed and compared."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

import orjson

from agui_replay._hints import UNNAMED_RECORD_COMMAND
from agui_replay._jsondiff import json_diff
from agui_replay._normalizing import Rule, as_rules
from agui_replay._secrets import MIN_SECRET_LENGTH
from agui_replay._text import clip
from agui_replay.assertions import explain_stream_diff
from agui_replay.cassette import (
    Cassette,
    CassetteRun,
    dumps_cassette,
    load_cassette,
    save_cassette,
)
from agui_replay.errors import AguiReplayError, CassetteError
from agui_replay.events import WireEvent
from agui_replay.normalize import Normalizer
from agui_replay.providers import SessionProvider
from agui_replay.recording._clock import frozen_clock
from agui_replay.recording._guard import NetworkGuard
from agui_replay.recording._ids import DeterministicIds
from agui_replay.recording._modes import (
    DEFAULT_FROZEN_TIME,
    DEFAULT_UPSTREAM,
    MissingCassetteError,
    NetworkBlockedError,
    RecordMode,
    ReplayMismatchError,
    TargetError,
    UpstreamError,
    placeholder_env,
)
from agui_replay.recording._refresh import (
    pending_path,
    refresh_refused,
    refreshed_cassette,
    same_but_names,
    write_pending,
)
from agui_replay.recording._steady import steady_cassette, without_volatile
from agui_replay.recording._targets import (
    TargetKind,
    _AppLoop,
    _asgi_events,
    _Lifespan,
    arun_target,
    run_target,
    target_kind,
)
from agui_replay.scrub import scrub

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

    from agui_replay.providers import FakeProvider

__all__ = ["CassetteSession", "RunRecord"]

_log = logging.getLogger("agui_replay.session")


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


Upstream: TypeAlias = (
    "str | _HasBaseUrl | Mapping[str, str | _HasBaseUrl] | Callable[[], Any] | list[str]"
)


@dataclass
class RunRecord:
    """One run of a session, as it happened."""

    index: int
    action: Literal["recorded", "replayed"]
    input: dict[str, Any]
    events: list[WireEvent]
    """The events as the agent produced them now (raw ids and timestamps)."""
    normalized: list[WireEvent]
    """The events after normalization and scrubbing (what the cassette stores / compares)."""
    interactions: list[dict[str, Any]] = field(default_factory=list)
    """The run's provider interactions: the ones recorded, or, on replay, the recorded ones it
    was served from (a copy), so a test reads the same in both modes."""
    normalized_input: dict[str, Any] | None = None
    """The input after normalization and scrubbing (what the cassette stores / compares)."""


@dataclass
class _Pending:
    index: int
    replay: bool
    input: RunAgentInput
    wire_input: dict[str, Any]
    recorded: CassetteRun | None = None
    first_interaction: int = 0
    violations_before: int = 0
    tape_errors_before: int = 0
    normalized_input: dict[str, Any] | None = None
    live_before: Normalizer | None = None  # the live normalizer before this run's input


def _canonical(value: Any) -> bytes:
    # Sorted keys, and 1 / 1.0 / true kept apart, as JSON sees them.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _wire_input(run_input: RunAgentInput) -> dict[str, Any]:
    dumped: dict[str, Any] = run_input.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


class CassetteSession:
    """The runs of one cassette file, recorded or replayed (the pytest ``agui`` fixture).

    ``path`` is the cassette file; ``mode`` a :class:`RecordMode` (or its name); ``upstream``
    the real provider to record from (a base URL, an object with ``base_url``, or a callable
    returning one, called only when a run is recorded; or several: a mapping of provider name
    to either, or ``NAME=URL`` strings; a bare URL is the ``default`` provider's); ``hosts``
    more provider hosts to route during runs (``NAME=HOST``, ``HOST[:PORT]``, ``*.DOMAIN``)
    besides the known ones; ``intercept=False`` turns the zero-config routing off (only
    ``agui.provider`` then reaches the recorder); ``secrets`` the values to scrub besides
    auth headers and key-shaped strings; ``record_command`` the command a failure message tells
    the user to run to record (default: ``pytest --agui-record``); ``freeze_time`` the instant
    the wall clock shows during each run (``False``: the real clock); ``record_errors=True``
    stores a recorded run whose upstream failed (unreachable, 4xx, 5xx), which otherwise
    raises :class:`UpstreamError` and leaves the cassette as it was. ``refresh=True`` replays
    every run offline and, where the agent's inputs and provider requests still equal the
    recorded ones, stores its new events in place of the old (see :mod:`.refresh`): the
    interactions stay byte-identical; a differing request fails the run and writes nothing.
    ``match_ignore`` lists JSON-pointer globs (``/messages/0/content``, ``/tools/*/description``)
    left out of the provider request bodies when a replay compares them with the recorded ones;
    the requests that needed it are in :attr:`ignored_matches`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: RecordMode | str = RecordMode.NONE,
        upstream: Upstream | None = None,
        secrets: Iterable[str] = (),
        record_command: str | None = None,
        name: str | None = None,
        normalize: bool = True,
        match: Literal["order", "unordered", "none"] = "order",
        state_type: Any = None,
        freeze_time: str | bool = DEFAULT_FROZEN_TIME,
        hosts: Iterable[str] = (),
        intercept: bool = True,
        normalizers: Iterable[Rule] = (),
        deterministic_ids: bool = True,
        id_generators: Iterable[str] = (),
        record_errors: bool = False,
        refresh: bool = False,
        ignore_hosts: Iterable[str] = (),
        drop_hosts: Iterable[str] | None = None,
        match_on: Iterable[Any] = (),
        match_ignore: Iterable[str] = (),
        faults: Iterable[Any] = (),
        keep_pending: bool = False,
        renew_recorded_at: bool = False,
    ) -> None:
        self.path = Path(path)
        self.ignore_hosts = list(ignore_hosts)
        """Hosts whose requests :meth:`taping` leaves alone (a local service the test runs)."""
        self.drop_hosts = drop_hosts
        """Hosts :meth:`taping` answers with an empty 204 (``None``: known telemetry hosts)."""
        self.match_on = list(match_on)
        """What a replayed HTTP request is compared on besides its method and URL."""
        self.match_ignore = [match_ignore] if isinstance(match_ignore, str) else list(match_ignore)
        """JSON-pointer globs left out of the provider request bodies a replay compares."""
        if self.match_ignore:
            from agui_replay.providers import FakeProvider

            FakeProvider(match_ignore=self.match_ignore)  # a bad glob fails here, not mid-run
        self.faults = list(faults)
        """Faults (:mod:`agui_replay.faults`) applied to the replayed responses (those with
        ``host=`` to the test's other recorded requests, through :meth:`taping`): the session
        then only replays, never writes the cassette, and leaves the events to the test (they
        are not compared with the recorded ones)."""
        self.fired_faults: list[Any] = []
        """The faults that changed a response so far."""
        self.ignored_matches: list[str] = []
        """The provider requests of this session's replays that matched only with fields
        left out (``match_ignore``): ``"run #0 request #1: /messages/0/content"``."""
        self.tape: Any = None
        """The tape of :meth:`taping`: the test's other requests, recorded or replayed."""
        self.refresh = refresh
        """Re-derive the stored events from the recorded interactions (offline); the mode is
        then ``none``."""
        self.refreshed: list[int] = []
        """The runs whose events a refresh changed (written at :meth:`finish`)."""
        self.keep_pending = keep_pending
        """Keep a replay's changed events beside the cassette (``NAME.json.pending``, for
        ``agui-replay review``) when every provider request matched: see :attr:`pending_path`."""
        self.pending_path: Path | None = None
        """The pending change :meth:`finish` wrote (``None``: none)."""
        self._events_changed = False
        self.renew_recorded_at = renew_recorded_at
        """A re-record writes today's ``recorded_at`` even when nothing else changed (a stale
        cassette re-recorded); otherwise an unchanged re-record keeps the file as it was."""
        self._refresh_refused = False
        self._renamed_inputs: set[int] = set()  # runs whose input a refresh stores renamed
        self._discard = False
        self.discarded = False
        """A recording :meth:`abandon` kept from being written (its test failed)."""
        self.record_errors = record_errors
        """Record a run whose upstream failed (unreachable, 4xx, 5xx) on purpose; by default
        such a run raises :class:`UpstreamError` and nothing is written."""
        self.upstream_failures: list[str] = []
        """What failed upstream in this session's recorded runs (nothing written if any)."""
        self.normalizers: tuple[Rule, ...] = as_rules(normalizers, source="normalizers")
        """User normalizers applied after the built-in ones (see :mod:`agui_replay.normalize`)."""
        self.ids: DeterministicIds | None = (
            DeterministicIds(self._id_seed(name), id_generators) if deterministic_ids else None
        )
        """The id generators made deterministic during each run (``None``: left alone)."""
        # One normalizer for the runs as they happen now, one for the runs as recorded: each
        # sees its side's inputs and events in order, so ids carried from run to run keep
        # one name across the cassette on both sides.
        self._live_ids = Normalizer(rules=self.normalizers)
        self._recorded_ids = Normalizer(rules=self.normalizers)
        self.hosts = list(hosts)
        self.intercept = intercept
        self.freeze_time = freeze_time
        self.mode = RecordMode.NONE if refresh else RecordMode.parse(mode)
        if self.faults:  # a faulted replay never records nor refreshes
            self.mode, self.refresh = RecordMode.NONE, False
        self.secrets: list[str] = _usable_secrets(secrets)
        self.record_command = record_command or "pytest --agui-record"
        self.name = name
        self.normalize = normalize
        self.match = match
        self.state_type = state_type
        self.runs: list[RunRecord] = []
        """Every run of this session so far, in order."""
        self.provider = SessionProvider(self, upstream=upstream, hosts=self.hosts)
        self.guard = NetworkGuard(f"replaying {self.path}")
        self.guard.hint = f"to re-record, run `{self.record_command}`"
        self._started = False
        self._existed = False
        self._recorded_runs: list[CassetteRun] = []
        self._cassette: Cassette | None = None
        self._finished = False
        self._lock = threading.Lock()
        self._lifespans: dict[int, _Lifespan] = {}
        self._app_loop: _AppLoop | None = None
        self.before_record: Callable[[], None] | None = None
        """Called before each run that records (the pytest plugin claims the cassette file
        there, so that two tests never write one); an exception it raises ends the run."""

    def __repr__(self) -> str:
        return f"<CassetteSession {self.path} mode={self.mode.value}>"

    def _id_seed(self, name: str | None) -> str:
        # The same on every machine and in every clone: the test's name, or the cassette's
        # folder and file name; never the absolute path.
        return name or f"{self.path.parent.name}/{self.path.name}"

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def replay_only(self) -> bool:
        """Whether no run of this session can record (so the network guard may stay up)."""
        if self.mode is RecordMode.NONE:  # a refresh too
            return True
        if self.mode is RecordMode.ONCE:
            return self.path.exists()
        return False

    def start(self) -> None:
        """Read the cassette (once). Done lazily by the first run or provider use."""
        __tracebackhide__ = True  # the error is the test's: show its line
        with self._lock:
            if self._started:
                return
            self._existed = self.path.exists()
            if self.mode is not RecordMode.REWRITE and self._existed:
                try:
                    self._cassette = load_cassette(self.path, validate="shape")
                except CassetteError as exc:
                    # The file's own hint says `pytest --agui-record` (every test): name this one.
                    raise CassetteError(
                        str(exc)
                        .replace(UNNAMED_RECORD_COMMAND, f"`{self.record_command}`")
                        .replace("`pytest --agui-record`", f"`{self.record_command}`")
                    ) from None
                self._recorded_runs = list(self._cassette.runs)
            elif self.faults:
                raise MissingCassetteError(
                    "no cassette for this test: a test with faults= replays a recorded "
                    "cassette and never records one. Record the conversation with a test "
                    "without faults, and point this one at its cassette with "
                    "`@pytest.mark.agui(cassette=...)`.",
                    path=str(self.path),
                )
            elif self.refresh:
                raise MissingCassetteError(
                    "no cassette for this test: a refresh re-derives the events of a recorded "
                    f"cassette from its provider interactions. Record it first with "
                    f"`{self.record_command}`.",
                    path=str(self.path),
                )
            elif self.mode is RecordMode.NONE:
                raise MissingCassetteError(
                    f"no cassette for this test, and record mode 'none' only replays. Record it "
                    f"with `{self.record_command}` (against the real provider; keep its API key "
                    "in the environment, it is scrubbed from the file).",
                    path=str(self.path),
                )
            self._started = True

    @property
    def recorded_runs(self) -> list[CassetteRun]:
        """The runs the cassette held when the session started (empty under ``rewrite``)."""
        self.start()
        return list(self._recorded_runs)

    @property
    def base_path(self) -> str:
        """The URL path of the provider's base URL (``/v1`` for OpenAI)."""
        meta = self._cassette.meta if self._cassette is not None else {}
        provider = meta.get("provider") if isinstance(meta, dict) else None
        if isinstance(provider, dict) and isinstance(provider.get("base_path"), str):
            return str(provider["base_path"])
        if not self._replays(0):
            return urlsplit(self.upstream_url()).path.rstrip("/")
        return "/v1"

    def upstream_url(self) -> str:
        """The ``default`` provider's upstream base URL (resolving a callable ``upstream`` the
        first time)."""
        return self.upstreams().get("default", DEFAULT_UPSTREAM)

    def upstreams(self) -> dict[str, str]:
        """Provider name -> upstream base URL, as configured (``default``: a bare URL)."""
        return self.provider.upstreams()

    def bare_upstream(self) -> str | None:
        """The bare upstream URL when one was configured (not the built-in default): the
        upstream of every provider that has none of its own."""
        url = self.upstreams().get("default")
        return None if url is None or url.rstrip("/") == DEFAULT_UPSTREAM else url

    def _routing(self) -> contextlib.AbstractContextManager[Any]:
        if not self.intercept:
            return contextlib.nullcontext()
        return self.provider.routing()

    @contextlib.contextmanager
    def taping(self) -> Iterator[Any]:
        """For the block (the pytest ``agui`` fixture's whole span): the test's requests to
        hosts other than the model providers are recorded into the cassette (``http``) with
        their response chunks, or replayed from it with nothing sent (see
        :meth:`SessionProvider.taping <agui_replay.providers.SessionProvider.taping>`). Off with
        ``intercept=False``."""
        if not self.intercept:
            yield None
            return
        replaying = self.replay_only
        with self.provider.taping(
            "replay" if replaying else "record",
            ignore=self.ignore_hosts,
            drop=self.drop_hosts,
            match_on=self.match_on,
            where=str(self.path),
            loader=self._recorded_http if replaying else None,
            faults=[f for f in self.faults if f.host is not None],
        ) as tape:
            self.tape = tape
            yield tape

    def _recorded_http(self) -> list[dict[str, Any]]:
        self.start()
        return list(self._cassette.http) if self._cassette is not None else []

    def _http_to_store(self) -> list[dict[str, Any]]:
        tape = self.tape
        if tape is not None and tape.mode == "record":
            return without_volatile(tape.exchanges)
        return list(self._cassette.http) if self._cassette is not None else []

    def _replays(self, index: int) -> bool:
        if self.mode is RecordMode.NONE:
            return True
        if self.mode is RecordMode.ONCE:
            return self._existed
        if self.mode is RecordMode.REWRITE:
            return False
        return index < len(self._recorded_runs)

    @property
    def outcome(self) -> Literal["recorded", "replayed"] | None:
        """``"recorded"`` if any run was recorded, ``"replayed"`` if runs only replayed."""
        if any(r.action == "recorded" for r in self.runs):
            return "recorded"
        return "replayed" if self.runs else None

    def placeholders(self) -> contextlib.AbstractContextManager[Any]:
        """While this session only replays, the unset key variables of
        :data:`~agui_replay.recording._modes.PLACEHOLDER_ENV` hold placeholders for the block
        (the pytest plugin: from the ``agui`` fixture's setup to its teardown), so an SDK
        client built with no key works; nothing changes otherwise."""
        return placeholder_env() if self.replay_only else contextlib.nullcontext()

    def __enter__(self) -> CassetteSession:
        if self.replay_only:
            self.guard.install()
            self.guard.active = True
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.finish()
        finally:
            self.guard.uninstall()

    def finish(self) -> Path | None:
        """Write the cassette if a run was recorded, shut the ASGI apps down (their lifespan),
        stop the provider; returns the path written."""
        if self._finished:
            return None
        self._finished = True
        try:
            return self._save()
        finally:
            try:
                self._stop_apps()
            finally:
                self.provider.close()

    def abandon(self, *, recording: bool = False) -> None:
        """Make a refresh write nothing at :meth:`finish`, and with ``recording=True`` a
        recording too (:attr:`discarded` then says so when a run was recorded). The pytest
        plugin calls it when a test fails: a refresh stores only what a passing test produced,
        and a recording too unless ``record_on_failure=True``."""
        self._refresh_refused = True
        if recording:
            self._discard = True

    def _save_refreshed(self) -> Path | None:
        if not self.refreshed or self._refresh_refused or self.guard.violations:
            return None
        assert self._cassette is not None
        if len(self.runs) != len(self._recorded_runs):
            return None  # check_complete says why
        inputs = [
            run.input
            if self._cassette.version >= 2 and n not in self._renamed_inputs
            else (r.normalized_input or r.input)
            for n, (run, r) in enumerate(zip(self._recorded_runs, self.runs, strict=True))
        ]
        cassette = refreshed_cassette(self._cassette, [r.normalized for r in self.runs], inputs)
        cassette.http = self._cassette.http
        return save_cassette(cassette, self.path, secrets=self.secrets)

    @property
    def recorded_at(self) -> str | None:
        """The ``recorded_at`` of the cassette the session read (``None``: none, or empty)."""
        return (self._cassette.recorded_at or None) if self._cassette is not None else None

    def _save(self) -> Path | None:
        if self.faults:  # a faulted replay never writes
            return None
        written = self._save_cassette()
        pending = pending_path(self.path)
        if self._events_changed and self.keep_pending and written is None:
            self.pending_path = self._save_pending()
        elif written is not None or (
            self.outcome == "replayed" and len(self.runs) == len(self._recorded_runs)
        ):
            # the cassette changed, or every run replayed as recorded: a change kept before is
            # out of date
            with contextlib.suppress(OSError):
                pending.unlink()
        return written

    def _save_pending(self) -> Path | None:
        """What a refresh would write, kept beside the cassette for ``agui-replay review``: the
        runs replayed so far with their new events, the runs not reached as recorded."""
        cassette = self._cassette
        if cassette is None or self.guard.violations or not self.path.exists():
            return None
        reached = len(self.runs)
        if cassette.version < 2 and reached < len(self._recorded_runs):
            return None  # format 1 stores raw inputs: only a whole session normalizes them
        events = [r.normalized for r in self.runs]
        events += [run.events for run in self._recorded_runs[reached:]]
        inputs = [
            run.input
            if n >= reached or (cassette.version >= 2 and n not in self._renamed_inputs)
            else self._stored_input(n)
            for n, run in enumerate(self._recorded_runs)
        ]
        refreshed = refreshed_cassette(cassette, events, inputs)
        refreshed.http = cassette.http
        text = dumps_cassette(refreshed, secrets=self.secrets)
        changed = [
            n
            for n, r in enumerate(self.runs)
            if n < len(self._recorded_runs)
            and _canonical(r.normalized) != _canonical(self._recorded_runs[n].events)
        ]
        written = write_pending(self.path, text, changed)
        _log.debug("%s: the changed events are kept in %s", self.path, written)
        return written

    def _stored_input(self, n: int) -> dict[str, Any]:
        run = self.runs[n]
        return run.normalized_input or run.input

    def _save_cassette(self) -> Path | None:
        if self.refresh:
            written = self._save_refreshed()
            _log.debug(
                "%s: refresh %s", self.path, f"wrote {written}" if written else "wrote nothing"
            )
            return written
        if self._discard and self.outcome == "recorded" and not self.upstream_failures:
            self.discarded = True
            _log.debug("%s: the test failed, its recording is not written", self.path)
            return None
        if self.outcome != "recorded" or self.upstream_failures:
            _log.debug(
                "%s: nothing to write (%s)",
                self.path,
                "an upstream failed" if self.upstream_failures else f"runs {self.outcome}",
            )
            return None
        runs = [self._run_to_store(r) for r in self.runs]
        if self.mode is RecordMode.NEW:
            recorded_new = runs[len(self._recorded_runs) :]
            runs = self._recorded_runs + recorded_new
        self._learn_recorded_secrets()
        meta: dict[str, Any] = {"provider": {"base_path": self.base_path}}
        cassette = Cassette(runs=runs, name=self.name, meta=meta, http=self._http_to_store())
        if self.path.exists():
            # An unchanged re-record leaves the file byte-identical (see recording.steady).
            steady = steady_cassette(
                cassette, self.path, secrets=self.secrets, keep_date=not self.renew_recorded_at
            )
            if steady is None:
                _log.debug("%s: re-recorded unchanged, the file is left as it was", self.path)
                return self.path
            cassette = steady
        _log.debug("%s: writing %d run(s)", self.path, len(runs))
        return save_cassette(cassette, self.path, secrets=self.secrets)

    def _learn_recorded_secrets(self) -> None:
        """The keys the recorder saw in the requests' auth headers and query strings (a key
        passed in code, not through a variable) are scrubbed from the events too (those long
        enough to be a key, as :func:`~agui_replay.scrub.scrub` does with header values)."""
        recorder = self.provider.recorder
        if recorder is None:
            return
        known = set(self.secrets)
        for secret in recorder.scrubber.secrets:
            if len(secret) >= MIN_SECRET_LENGTH and secret not in known:
                self.secrets.append(secret)

    # --- ASGI apps and their lifespan -----------------------------------------------------------

    async def _app_started(self, app: Any) -> _Lifespan:
        # Runs on the app loop only, so two runs never start the same app twice.
        lifespan = self._lifespans.get(id(app))
        if lifespan is None:
            lifespan = self._lifespans[id(app)] = _Lifespan(app)  # keeps `app` (and its id)
        await lifespan.startup()
        return lifespan

    def _apps(self) -> _AppLoop:
        with self._lock:
            if self._app_loop is None:
                self._app_loop = _AppLoop()
            return self._app_loop

    def _run_asgi(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        apps = self._apps()
        lifespan: _Lifespan = apps.call(self._app_started(app))
        if not lifespan.supported:
            return run_target(app, run_input, kind="asgi", path=path)
        events: list[WireEvent] = apps.call(_asgi_events(app, run_input, path, lifespan.state))
        return events

    async def _arun_asgi(self, app: Any, run_input: RunAgentInput, path: str) -> list[WireEvent]:
        apps = self._apps()
        lifespan: _Lifespan = await asyncio.wrap_future(apps.submit(self._app_started(app)))
        if not lifespan.supported:
            return await _asgi_events(app, run_input, path)
        events: list[WireEvent] = await asyncio.wrap_future(
            apps.submit(_asgi_events(app, run_input, path, lifespan.state))
        )
        return events

    def _stop_apps(self) -> None:
        """Send ``lifespan.shutdown`` to every started app; the first failure is raised."""
        __tracebackhide__ = True  # the error is the test's: show its line
        apps, self._app_loop = self._app_loop, None
        if apps is None:
            return
        failures: list[TargetError] = []
        try:
            for lifespan in self._lifespans.values():
                try:
                    apps.call(lifespan.shutdown())
                except TargetError as error:
                    failures.append(error)
        finally:
            self._lifespans.clear()
            apps.close()
        if failures:
            raise failures[0]

    def _run_to_store(self, run: RunRecord) -> CassetteRun:
        if run.action == "replayed":
            return self._recorded_runs[run.index]
        stored = run.normalized_input if run.normalized_input is not None else run.input
        interactions = without_volatile(run.interactions)  # no date, request ids, counters
        return CassetteRun(input=stored, events=run.normalized, interactions=interactions)

    def check_complete(self) -> None:
        """After a passing test: every recorded run was replayed, and nothing was blocked."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if self.guard.violations:
            raise NetworkBlockedError(self.guard.violations[0])
        if self.tape is not None and self.tape.errors:
            raise ReplayMismatchError(self.tape.errors[0])
        if self.upstream_failures and not self.record_errors:
            raise UpstreamError(self.upstream_failures[0])
        if self.faults:  # a faulted test may stop early: only its faults must have fired
            self._check_fired()
            return
        if not self._started or not self.replay_only:
            return
        used, held = len(self.runs), len(self._recorded_runs)
        if 0 < used < held:
            raise ReplayMismatchError(
                f"{self.path}: the test made {used} run(s) but the cassette holds {held}; "
                f"the test changed since it was recorded. Re-record with `{self.record_command}`."
            )

    # --- runs -----------------------------------------------------------------------------------

    def _coerce_input(self, value: Any, index: int) -> RunAgentInput:
        from agui_replay._runinput import coerce_input
        from agui_replay.server import run_input

        run_id = f"run-{index + 1}"
        if value is None:
            return run_input("thread", run_id)
        if isinstance(value, str):
            return run_input("thread", run_id, messages=[value])
        if isinstance(value, Mapping):
            # A test writes the fields it cares about; the rest of RunAgentInput is empty.
            defaults: dict[str, Any] = {"messages": [], "tools": [], "context": [], "state": None}
            value = {**defaults, "forwardedProps": None, **value}
        return coerce_input(value)

    def _begin(self, value: Any) -> _Pending:
        __tracebackhide__ = True  # the error is the test's: show its line
        self.start()
        if self._finished:
            raise AguiReplayError(f"{self!r} is finished; start a new session to run again")
        index = len(self.runs)
        run_input = self._coerce_input(value, index)
        pending = _Pending(index, self._replays(index), run_input, _wire_input(run_input))
        _log.debug(
            "%s: run #%d %s (record mode %s)",
            self.path,
            index,
            "refreshes" if self.refresh else "replays" if pending.replay else "records",
            self.mode.value,
        )
        pending.violations_before = len(self.guard.violations)
        pending.tape_errors_before = len(self.tape.errors) if self.tape is not None else 0
        scrubbed = scrub(pending.wire_input, secrets=self.secrets)
        if self.normalize and pending.replay and self._raw_inputs:
            pending.live_before = copy.deepcopy(self._live_ids)
        pending.normalized_input = self._live_ids.input(scrubbed) if self.normalize else scrubbed
        if pending.replay:
            pending.recorded = self._recorded_run(index)
            self._check_input(pending)
            self._check_fault_targets()
            self.provider._replay(
                pending.recorded.interactions,
                self.match,
                self.match_ignore,
                faults=[f for f in self.faults if f.host is None],
                first_request=sum(len(r.interactions) for r in self._recorded_runs[:index]),
            )
        else:
            if self.before_record is not None:
                self.before_record()
            pending.first_interaction = self.provider._record()
        return pending

    def _clock(self) -> contextlib.AbstractContextManager[Any]:
        """The wall clock frozen at :attr:`freeze_time` for a run (see ``recording._clock``)."""
        if self.freeze_time is False:
            return contextlib.nullcontext()
        return frozen_clock(DEFAULT_FROZEN_TIME if self.freeze_time is True else self.freeze_time)

    @contextlib.contextmanager
    def _running(self, pending: _Pending) -> Iterator[None]:
        """The span of one run: the guard (replay), the frozen clock, the provider routing and
        the deterministic ids; a run that fails because its upstream did says that first."""
        __tracebackhide__ = True  # the error is the test's: show its line
        try:
            with (
                self.guard.guarding(pending.replay),
                placeholder_env() if pending.replay else contextlib.nullcontext(),
                self._clock(),
                self._routing(),
                self._ids(pending.index),
            ):
                yield
        except BaseException as exc:
            self.provider._idle()
            failed = self._upstream_failed(pending)
            if failed is not None:
                raise failed from exc
            raise

    @property
    def _raw_inputs(self) -> bool:
        """The cassette stores its inputs raw (format 1): they are read with the names the
        replayed runs give their ids (a copy of the live normalizer per run, for these only)."""
        return self._cassette is not None and self._cassette.version < 2

    def _ids(self, index: int) -> contextlib.AbstractContextManager[Any]:
        """The standard id generators made deterministic for run ``index`` (see ``ids``)."""
        return self.ids.run(index) if self.ids is not None else contextlib.nullcontext()

    def _recorded_run(self, index: int) -> CassetteRun:
        __tracebackhide__ = True  # the error is the test's: show its line
        if index < len(self._recorded_runs):
            return self._recorded_runs[index]
        held = len(self._recorded_runs)
        if self.mode is RecordMode.ONCE:
            how = (
                "record mode 'once' never changes an existing cassette: append the new run "
                f"with `{self.record_command.replace('--agui-record', '--agui-record-mode=new')}`"
                f" or re-record it all with `{self.record_command}`"
            )
        else:
            how = f"re-record it with `{self.record_command}`"
        raise MissingCassetteError(
            f"run #{index} (agui.run call {index + 1}) is not in the cassette, which holds "
            f"{held} run(s); {how}.",
            path=str(self.path),
        )

    def _check_input(self, pending: _Pending) -> None:
        __tracebackhide__ = True  # the error is the test's: show its line
        assert pending.recorded is not None
        recorded = pending.recorded.input
        if self.normalize:
            # Both sides normalized: an input built from the raw events of the run before (with
            # the ids minted then) and one built from the normalized events both match.
            recorded = self._recorded_ids.input(recorded)
        now = pending.normalized_input
        if _canonical(now) == _canonical(recorded):
            return
        if pending.live_before is not None:
            # A format-1 cassette holds the raw ids of the recorded run: read them with the
            # names the replayed run gave them.
            raw_read = pending.live_before.input(pending.recorded.input)
            if _canonical(now) == _canonical(raw_read):
                return
        renamed = same_but_names(recorded, now)
        if renamed and self.refresh:
            # only the names normalization gives ids moved (a new naming rule): the same
            # question, stored with the new names
            self._renamed_inputs.add(pending.index)
            _log.debug("%s: run #%d input read with new id names", self.path, pending.index)
            return
        diffs = json_diff(recorded, now)
        shown = "\n".join(
            f"  {p or '/'}: recorded {_short(a)} != now {_short(b)}" for p, a, b in diffs
        )
        if renamed:
            refresh = self.record_command.replace("--agui-record", "--agui-refresh")
            raise ReplayMismatchError(
                f"{self.path}: run #{pending.index} starts from the recorded input with its ids "
                f"named otherwise (the cassette was normalized under an older naming rule):\n"
                f"{shown}\nStore the new names offline with `{refresh}` (no API key, no "
                "network; the recorded interactions are kept)."
            )
        if self.refresh:
            self._refresh_refused = True
            first = (diffs[0][0] if diffs else "") or "/"
            raise ReplayMismatchError(
                refresh_refused(
                    self.path,
                    pending.index,
                    f"it starts from another input than the recorded one (first differing "
                    f"field: {first})",
                    shown,
                    self.record_command,
                )
            )
        raise ReplayMismatchError(
            f"{self.path}: run #{pending.index} starts from another input than the recorded "
            f"one:\n{shown}\nRe-record with `{self.record_command}` if the change is intended."
        )

    def _end(self, pending: _Pending, events: list[WireEvent]) -> list[WireEvent]:
        __tracebackhide__ = True  # the error is the test's: show its line
        provider = self.provider
        interactions: list[dict[str, Any]] = []
        fake = provider.fake if pending.replay else None
        if fake is not None:
            self.ignored_matches += [f"run #{pending.index} {what}" for what in fake.ignored]
        if not pending.replay:
            interactions = provider._recorded_since(pending.first_interaction)
        elif pending.recorded is not None:
            # what the replay served (each request was matched against these): a copy, so a
            # test reads the same on replay as when it recorded, and cannot change the cassette
            interactions = orjson.loads(orjson.dumps(pending.recorded.interactions))
        provider._idle()
        # The recording is stored normalized, so only the new stream needs normalizing, and
        # the comparison is of canonical bytes (a readable diff is built only on a mismatch).
        expected = b""
        same = False
        normalized = self._normalize(events, pending.wire_input)
        if pending.replay and pending.recorded is not None:
            recorded_events = pending.recorded.events
            if self.normalize:
                # Normalizing is idempotent: a recording stored normalized comes out as it was,
                # one stored by an older version gets today's rules, like the new stream.
                recorded_events = self._recorded_ids.events(recorded_events)
            pending.recorded.events = recorded_events
            expected = _canonical(recorded_events)
            same = _canonical(normalized) == expected
        record = RunRecord(
            pending.index,
            "replayed" if pending.replay else "recorded",
            pending.wire_input,
            events,
            normalized,
            interactions,
            pending.normalized_input,
        )
        self.runs.append(record)
        failed = self._upstream_failed(pending)
        if failed is not None:
            raise failed
        missed = self.tape.errors[pending.tape_errors_before :] if self.tape is not None else []
        if missed:
            raise ReplayMismatchError(missed[0])
        blocked = self.guard.violations[pending.violations_before :]
        if blocked:
            raise NetworkBlockedError(
                blocked[0] + (f" ({len(blocked) - 1} more)" if len(blocked) > 1 else "")
            )
        if pending.replay and self.faults:
            assert fake is not None
            self._check_faulted(pending, fake)
        elif pending.replay:
            assert pending.recorded is not None
            assert fake is not None
            self._compare(pending, record, fake, expected, same)
        return events

    def _check_fault_targets(self) -> None:
        """Each fault names a request the cassette recorded: a provider request (``request=``
        counted over its runs) or, with ``host=``, one of its ``http`` list (the tape's
        check); else :class:`ReplayMismatchError`, naming what the cassette holds."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if not self.faults:
            return
        if self.tape is not None:
            self.tape.check_faults()
        held = [
            (n, interaction)
            for n, run in enumerate(self._recorded_runs)
            for interaction in run.interactions
        ]
        for fault in self.faults:
            if fault.host is not None or fault.request < len(held):
                continue
            shown = []
            for i, (n, interaction) in enumerate(held[:10]):
                request = interaction.get("request") or {}
                who = f" ({interaction['provider']})" if interaction.get("provider") else ""
                shown.append(
                    f"request={i}: run #{n} {request.get('method')} {request.get('path')}{who}"
                )
            listing = "; ".join(shown) + ("; ..." if len(held) > 10 else "")
            holds = f"{len(held)} provider request(s), counted from 0 over its runs"
            raise ReplayMismatchError(
                f"{self.path}: {fault.describe()}: the cassette holds "
                + (f"{holds} ({listing})" if held else "no provider request")
                + ". Point request= at one of them, or name the host of a tool's recorded "
                "request with host=."
            )

    def _check_faulted(self, pending: _Pending, fake: FakeProvider) -> None:
        """A faulted run: its events are the test's to check, not compared with the recording;
        a provider request that differs from the recorded ones still fails the run."""
        for fault in fake.fired:
            if not any(fault is seen for seen in self.fired_faults):
                self.fired_faults.append(fault)
        if fake.errors:
            shown = "\n".join(f"  {line}" for e in fake.errors for line in str(e).splitlines())
            raise ReplayMismatchError(
                f"{self.path}: run #{pending.index} (replayed with faults) made a provider "
                f"request the recording does not have:\n{shown}\nA faulted replay serves only "
                "the recorded requests: after the fault, the agent must send what it sent when "
                "it was recorded, or stop (make the fault hit a later request, or record the "
                "conversation the agent has after the fault)."
            )

    def _check_fired(self) -> None:
        """Every fault changed a response: one that names a request the test never made
        says so."""
        tape = self.tape
        for fault in tape.fired if tape is not None else ():
            if not any(fault is seen for seen in self.fired_faults):
                self.fired_faults.append(fault)
        unfired = [f for f in self.faults if not any(f is seen for seen in self.fired_faults)]
        if not unfired:
            return
        listing = ", ".join(f.describe() for f in unfired)
        why = []
        if any(f.host is None for f in unfired):
            made = sum(len(r.interactions) for r in self.runs)
            held = sum(len(r.interactions) for r in self._recorded_runs)
            why.append(
                f"The test's {len(self.runs)} run(s) replay {made} recorded provider "
                f"request(s) (the cassette holds {held}, counted from 0 over its runs); point "
                "request= at one the test makes."
            )
        if any(f.host is not None for f in unfired):
            replayed = len(tape.recorded) - len(tape.unused) if tape is not None else 0
            why.append(
                f"A fault with host= hits the recorded request it names when the test makes "
                f"it (the test replayed {replayed} of the cassette's recorded requests besides "
                "the model providers'); point host= and request= at one the test makes."
            )
        raise ReplayMismatchError(
            f"{self.path}: {len(unfired)} fault(s) never hit a response: {listing}. "
            + " ".join(why)
        )

    def _upstream_failed(self, pending: _Pending) -> UpstreamError | None:
        """The error of a recorded run whose upstream failed (``None``: it did not, or the
        session records errors on purpose); the session then writes nothing."""
        recorder = self.provider.recorder
        if pending.replay or self.record_errors or recorder is None:
            return None
        own = list(recorder.interactions[pending.first_interaction :])
        mine = {id(i) for i in own}
        found = [(i, what) for i, what in list(recorder.failures) if id(i) in mine]
        # A 4xx (a wrong or missing key, an unknown model, a wrong base path) is a failure too:
        # the SDK raises on it, and a cassette of it would replay the error as the agent's run.
        counted = {id(i) for i, _ in found}
        found += [
            (i, f"{i.request.method} {self._upstream_of(i)} answered {i.response.status}")
            for i in own
            if i.response.status >= 400 and id(i) not in counted
        ]
        if not found:
            return None
        shown = []
        checks: list[str] = []
        for interaction, what in found:
            body = " ".join(interaction.response.text.split())
            shown.append(f"  {what}" + (f": {body[:300]}" if body else ""))
            for check in _upstream_checks(interaction):
                if check not in checks:
                    checks.append(check)
        message = (
            f"{self.path}: run #{pending.index} was not recorded, the upstream failed:\n"
            + "\n".join(shown)
            + "\nNothing was written (an existing cassette stays as it was). Check "
            + "; ".join(checks)
            + "; to record this failure on purpose (a test of error handling), use "
            "`@pytest.mark.agui(record_errors=True)`."
        )
        self.upstream_failures.append(message)
        return UpstreamError(message)

    def _upstream_of(self, interaction: Any) -> str:
        """The URL a recorded provider request went to (its upstream's origin and path)."""
        upstreams = self.upstreams()
        base = upstreams.get(interaction.provider or "default") or upstreams.get("default")
        path = interaction.request.path
        if base is None:
            return f"{interaction.provider} {path}"
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}{path}"

    def _normalize(self, events: list[WireEvent], wire_input: Mapping[str, Any]) -> list[WireEvent]:
        if not self.normalize:
            return [dict(e) for e in events]
        # The run's input went through the same normalizer first: the ids of messages the test
        # wrote are kept there, and the ids an earlier run named keep those names.
        return self._live_ids.events(events)

    def _compare(
        self,
        pending: _Pending,
        record: RunRecord,
        fake: FakeProvider,
        expected_bytes: bytes,
        same: bool,
    ) -> None:
        """``same`` says the raw stream already equals the recording (canonical bytes)."""
        __tracebackhide__ = True  # the error is the test's: show its line
        assert pending.recorded is not None
        expected = pending.recorded.events
        actual = record.normalized
        same = same or _canonical(actual) == expected_bytes
        if not same:
            # The recording is scrubbed; a key-shaped string the agent emits is too.
            actual = scrub(actual, secrets=self.secrets)
            record.normalized = actual
            same = _canonical(actual) == expected_bytes
        if self.refresh:  # a difference of the stream is what a refresh stores
            self._refreshed_run(pending, fake, same)
            return
        problems: list[str] = []
        if fake.errors:
            problems.append(
                "the agent's provider requests differ from the recorded ones:\n"
                + "\n".join(f"  {line}" for e in fake.errors for line in str(e).splitlines())
            )
        if not same:
            lines = explain_stream_diff(
                expected, actual, left_name="recorded", right_name="replayed"
            )
            problems.append("the agent's stream differs from the recording: " + "\n".join(lines))
        if fake.unserved and not fake.errors:
            problems.append(
                f"the agent made {len(fake.requests)} provider request(s); the recording has "
                f"{len(fake.turns)}: never requested: " + "; ".join(fake.unserved)
            )
        # the recording reached the provider, this replay never did: the agent failed first
        never_reached = bool(fake.turns) and not fake.requests
        failed_early = _early_run_error(record.events) if never_reached else None
        if problems and failed_early is not None:
            raise ReplayMismatchError(
                f"{self.path}: run #{pending.index}: the agent failed before reaching its "
                f"provider: it made no provider request (the recording has {len(fake.turns)}) "
                f"and ended in RUN_ERROR: {failed_early}\nThis is not a change of the "
                "recording: look at what the agent does before its first model call (a variable "
                "or file it reads, a client it builds, a tool it calls)."
            )
        if problems:
            header = f"{self.path}: run #{pending.index} does not replay as recorded"
            footer = f"If the change is intended, re-record with `{self.record_command}`."
            if not fake.errors and not fake.unserved:
                # every provider request matched: only the agent's own events changed, which a
                # refresh stores offline (no key, no network, no cost)
                refresh = self.record_command.replace("--agui-record", "--agui-refresh")
                self._events_changed = True
                footer = (
                    "Every provider request matched the recording: only the agent's events "
                    "changed. If the change is intended, store the new events offline with "
                    f"`{refresh}` (no API key, no network; the recorded interactions are kept)."
                )
                if self.keep_pending:
                    footer += (
                        f"\nThe new events are kept in {pending_path(self.path)}: review and "
                        "accept them with `agui-replay review`."
                    )
            raise ReplayMismatchError("\n".join([header, *problems, footer]))

    def _refreshed_run(self, pending: _Pending, fake: FakeProvider, same: bool) -> None:
        """A refreshed run: its provider traffic must be the recorded one; new events are
        kept for :meth:`finish`."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if fake.errors or fake.unserved:
            self._refresh_refused = True
            if fake.errors:
                text = str(fake.errors[0])
                field = getattr(fake.errors[0], "field", None)
                what = "its provider requests differ from the recorded ones" + (
                    f" (first differing field: {field})" if field else ""
                )
            else:
                text = "never requested: " + "; ".join(fake.unserved)
                what = (
                    f"it made {len(fake.requests)} provider request(s) where the recording has "
                    f"{len(fake.turns)}"
                )
            detail = "\n".join(f"  {line}" for line in text.splitlines())
            raise ReplayMismatchError(
                refresh_refused(self.path, pending.index, what, detail, self.record_command)
            )
        if not same:
            self.refreshed.append(pending.index)

    def run(
        self,
        target: Any,
        input: RunAgentInput | Mapping[str, Any] | str | None = None,
        *,
        kind: TargetKind | None = None,
        state_type: Any = None,
        path: str = "/",
        headers: Mapping[str, str] | None = None,
    ) -> list[WireEvent]:
        """Run ``target`` once, recording or replaying, and return its events (wire dicts).

        ``target`` is an agent function (run by :func:`agui_replay.server.run_agent_sync`), an
        ASGI app speaking AG-UI (called in process, POST at ``path``) or the URL of an AG-UI
        endpoint. ``input`` is a ``RunAgentInput`` (model or camelCase dict), a user message
        text, or ``None`` (thread ``"thread"``, run ``"run-<n>"``). In replay the new stream
        is compared with the recording and a difference raises :class:`ReplayMismatchError`.
        """
        __tracebackhide__ = True  # the error is the test's: show its line
        pending = self._begin(input)
        if isinstance(target, str) and self.tape is not None:
            self.tape.skip(target)  # the agent under test is not the test's other traffic
        with self._running(pending):
            if (kind or target_kind(target)) == "asgi":
                events = self._run_asgi(target, pending.input, path)
            else:
                events = run_target(
                    target,
                    pending.input,
                    kind=kind,
                    state_type=state_type if state_type is not None else self.state_type,
                    path=path,
                    headers=headers,
                )
        return self._end(pending, events)

    async def arun(
        self,
        target: Any,
        input: RunAgentInput | Mapping[str, Any] | str | None = None,
        *,
        kind: TargetKind | None = None,
        state_type: Any = None,
        path: str = "/",
        headers: Mapping[str, str] | None = None,
    ) -> list[WireEvent]:
        """:meth:`run` for async tests: an async agent or ASGI app runs on the current loop."""
        __tracebackhide__ = True  # the error is the test's: show its line
        pending = self._begin(input)
        if isinstance(target, str) and self.tape is not None:
            self.tape.skip(target)  # the agent under test is not the test's other traffic
        with self._running(pending):
            if (kind or target_kind(target)) == "asgi":
                events = await self._arun_asgi(target, pending.input, path)
            else:
                events = await arun_target(
                    target,
                    pending.input,
                    kind=kind,
                    state_type=state_type if state_type is not None else self.state_type,
                    path=path,
                    headers=headers,
                )
        return self._end(pending, events)

    @property
    def events(self) -> list[WireEvent]:
        """The events of every run so far, as produced (raw)."""
        return [e for r in self.runs for e in r.events]


def _usable_secrets(secrets: Iterable[str]) -> list[str]:
    """The configured secrets long enough to scrub: replacing a one-letter "secret" everywhere
    would corrupt the cassette (its JSON keys are kept, but every value would change)."""
    usable = []
    for secret in secrets:
        if not secret:
            continue
        if len(secret) < MIN_SECRET_LENGTH:
            import warnings

            warnings.warn(
                f"agui_replay: a configured secret (secrets=, the marker's secrets or the "
                f"agui_secrets fixture) is shorter than {MIN_SECRET_LENGTH} characters and is "
                "not scrubbed: every occurrence of so short a string would be replaced",
                UserWarning,
                stacklevel=3,
            )
            continue
        usable.append(secret)
    return usable


_KEY_VARIABLES = {
    "default": "OPENAI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY or GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)",
}
_UPSTREAM_SETTINGS = "`--agui-upstream`, the `agui_upstream` fixture or ini"


def _upstream_checks(interaction: Any) -> list[str]:
    """What to check for a failed provider request, most likely first (by its status)."""
    status = interaction.response.status
    variable = _KEY_VARIABLES.get(interaction.provider or "default")
    key = f"the API key in ${variable}" if variable else "the API key in the environment"
    body = interaction.request.body
    model = body.get("model") if isinstance(body, Mapping) else None
    model_name = f"the model name ({model!r})" if isinstance(model, str) else "the model name"
    base = f"the base URL ({_UPSTREAM_SETTINGS})"
    if status in (401, 403):
        return [f"{key} (missing, wrong or without access)", model_name, base]
    if status == 404:
        return [model_name, base, key]
    if 400 <= status < 500 and status != 429:
        return [model_name, "the request the agent builds", key]
    return [key, "the network", base]


def _early_run_error(events: list[WireEvent]) -> str | None:
    """The message of the RUN_ERROR the stream ended in (``None``: it did not)."""
    if not events or events[-1].get("type") != "RUN_ERROR":
        return None
    last = events[-1]
    message = str(last.get("message") or "(no message)")
    code = last.get("code")
    return f"{message} (code {code})" if code else message


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # json_diff's <missing> marker (a field only one side has)
        text = repr(value)
    return clip(text, 80)
