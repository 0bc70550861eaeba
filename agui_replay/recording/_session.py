"""``CassetteSession``: one cassette file's runs; it reads the cassette, runs each target in
the span a run needs, and hands the run to its record or replay part, and the end of the
session to the parts that write (the recording, a refresh, a pending change)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias
from urllib.parse import urlsplit

from agui_replay._normalizing import Rule, as_rules
from agui_replay._secrets import MIN_SECRET_LENGTH
from agui_replay._text import UNNAMED_RECORD_COMMAND
from agui_replay.cassette import Cassette, CassetteRun, load_cassette
from agui_replay.errors import AguiReplayError, CassetteError
from agui_replay.events import WireEvent
from agui_replay.normalize import Normalizer
from agui_replay.providers import FakeProvider, SessionProvider
from agui_replay.recording._clock import frozen_clock
from agui_replay.recording._fault_checks import FaultChecks
from agui_replay.recording._guard import NetworkGuard
from agui_replay.recording._ids import DeterministicIds
from agui_replay.recording._modes import (
    DEFAULT_FROZEN_TIME,
    DEFAULT_UPSTREAM,
    MissingCassetteError,
    NetworkBlockedError,
    RecordMode,
    ReplayMismatchError,
    UpstreamError,
    placeholder_env,
    placeholder_variables,
)
from agui_replay.recording._pending_change import PendingChange
from agui_replay.recording._record import RunRecorder
from agui_replay.recording._refresh import Refresh
from agui_replay.recording._replay import Replayer
from agui_replay.recording._runs import PendingRun, RunRecord, run_input_of
from agui_replay.recording._steady import without_volatile
from agui_replay.recording._targets import AppHost, TargetKind, arun_target, run_target, target_kind
from agui_replay.scrub import scrub

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

__all__ = ["CassetteSession"]

_log = logging.getLogger("agui_replay.session")


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


Upstream: TypeAlias = (
    "str | _HasBaseUrl | Mapping[str, str | _HasBaseUrl] | Callable[[], Any] | list[str]"
)


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
    the requests that needed it are in :attr:`ignored_matches`. ``compare_raw=True`` compares
    the framework's own payloads too (a RAW event's ``event``, any event's ``rawEvent``),
    which a replay leaves out by default.
    """

    ignore_hosts: list[str]
    """Hosts whose requests :meth:`taping` leaves alone (a local service the test runs)."""
    drop_hosts: Iterable[str] | None
    """Hosts :meth:`taping` answers with an empty 204 (``None``: known telemetry hosts)."""
    match_on: list[Any]
    """What a replayed HTTP request is compared on besides its method and URL."""
    match_ignore: list[str]
    """JSON-pointer globs left out of the provider request bodies a replay compares."""
    compare_raw: bool
    """A replay compares RAW events' ``event`` and every ``rawEvent`` too (by default it
    leaves them out: they repeat the model's input and output in the framework's shape)."""
    faults: list[Any]
    """Faults (:mod:`agui_replay.faults`) applied to the replayed responses (those with
    ``host=`` to the test's other recorded requests, through :meth:`taping`): the session
    then only replays, never writes the cassette, and leaves the events to the test (they
    are not compared with the recorded ones)."""
    fired_faults: list[Any]
    """The faults that changed a response so far."""
    ignored_matches: list[str]
    """The provider requests of this session's replays that matched only with fields
    left out (``match_ignore``): ``"run #0 request #1: /messages/0/content"``."""
    tape: Any
    """The tape of :meth:`taping`: the test's other requests, recorded or replayed."""
    refresh: bool
    """Re-derive the stored events from the recorded interactions (offline); the mode is
    then ``none``."""
    refreshed: list[int]
    """The runs whose events a refresh changed (written at :meth:`finish`)."""
    keep_pending: bool
    """Keep a replay's changed events beside the cassette (``NAME.json.pending``, for
    ``agui-replay review``) when every provider request matched: see :attr:`pending_path`."""
    pending_path: Path | None
    """The pending change :meth:`finish` wrote (``None``: none)."""
    renew_recorded_at: bool
    """A re-record writes today's ``recorded_at`` even when nothing else changed (a stale
    cassette re-recorded); otherwise an unchanged re-record keeps the file as it was."""
    unchanged: bool
    """A re-record saw the requests and answers the cassette holds: the file was left as it
    was, byte for byte (:meth:`finish` still returns its path)."""
    discarded: bool
    """A recording :meth:`abandon` kept from being written (its test failed)."""
    record_errors: bool
    """Record a run whose upstream failed (unreachable, 4xx, 5xx) on purpose; by default
    such a run raises :class:`UpstreamError` and nothing is written."""
    upstream_failures: list[str]
    """What failed upstream in this session's recorded runs (nothing written if any)."""
    normalizers: tuple[Rule, ...]
    """User normalizers applied after the built-in ones (see :mod:`agui_replay.normalize`)."""
    ids: DeterministicIds | None
    """The id generators made deterministic during each run (``None``: left alone)."""
    runs: list[RunRecord]
    """Every run of this session so far, in order."""
    before_record: Callable[[], None] | None
    """Called before each run that records (the pytest plugin claims the cassette file
    there, so that two tests never write one); an exception it raises ends the run."""

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
        match: Literal["order", "unordered", "none"] = "unordered",
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
        compare_raw: bool = False,
    ) -> None:
        self.path = Path(path)
        self.ignore_hosts = list(ignore_hosts)
        self.drop_hosts = drop_hosts
        self.match_on = list(match_on)
        self.match_ignore = [match_ignore] if isinstance(match_ignore, str) else list(match_ignore)
        if self.match_ignore:
            FakeProvider(match_ignore=self.match_ignore)  # a bad glob fails here, not mid-run
        self.faults = list(faults)
        self.compare_raw = compare_raw
        self.ignored_matches, self.tape, self.discarded = [], None, False
        self.unchanged = False
        self.renew_recorded_at = renew_recorded_at
        self.record_errors, self.upstream_failures = record_errors, []
        self.normalizers = as_rules(normalizers, source="normalizers")
        self.ids = (
            DeterministicIds(self._id_seed(name), id_generators) if deterministic_ids else None
        )
        self.hosts = list(hosts)
        self.intercept = intercept
        self.freeze_time = freeze_time
        self.mode = RecordMode.NONE if refresh else RecordMode.parse(mode)
        self.refresh = refresh
        if self.faults:  # a faulted replay never records nor refreshes
            self.mode, self.refresh = RecordMode.NONE, False
        self.secrets: list[str] = _usable_secrets(secrets)
        self.record_command = record_command or "pytest --agui-record"
        self.name = name
        self.normalize = normalize
        self.match = match
        self.state_type = state_type
        self.runs = []
        self.provider = SessionProvider(self, upstream=upstream, hosts=self.hosts)
        self.guard = NetworkGuard(f"replaying {self.path}")
        self.guard.hint = f"to re-record, run `{self.record_command}`"
        self.before_record, self.pending_path = None, None
        self._started = self._existed = self._finished = False
        self._cassette: Cassette | None = None  # as read, once, by start
        self._mismatched_early = False  # a replayed run failed on a mismatch before its end
        self._lock = threading.Lock()
        self._live_ids = Normalizer(rules=self.normalizers)  # the runs now (see Replayer)
        self._faults = FaultChecks(self.faults, self.path)
        self.fired_faults = self._faults.fired
        self._refresh = Refresh(self.path, self.record_command)
        self.refreshed = self._refresh.refreshed
        self.keep_pending = keep_pending
        self._pending = PendingChange(self.path, keep=keep_pending)
        self._recorder = RunRecorder(self)
        self._replayer = Replayer(
            self, faults=self._faults, refresh=self._refresh, pending=self._pending
        )
        self._apps = AppHost()

    def __repr__(self) -> str:
        return f"<CassetteSession {self.path} mode={self.mode.value}>"

    def _id_seed(self, name: str | None) -> str:
        # The same on every machine and in every clone: the test's name, or the cassette's
        # folder and file name; never the absolute path.
        return name or f"{self.path.parent.name}/{self.path.name}"

    # --- the cassette ---------------------------------------------------------------------------

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
            else:
                self._refuse_missing()
            self._started = True

    def _refuse_missing(self) -> None:
        """No cassette to read: fine when the session records, else what to do about it."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if self.faults:
            why = (
                ": a test with faults= replays a recorded cassette and never records one. "
                "Record the conversation with a test without faults, and point this one at its "
                "cassette with `@pytest.mark.agui(cassette=...)`."
            )
        elif self.refresh:
            why = (
                ": a refresh re-derives the events of a recorded cassette from its provider "
                f"interactions. Record it first with `{self.record_command}`."
            )
        elif self.mode is RecordMode.NONE:
            why = (
                f", and record mode 'none' only replays. Record it with `{self.record_command}` "
                "(against the real provider; keep its API key in the environment, it is "
                "scrubbed from the file)."
            )
        else:
            return
        raise MissingCassetteError(f"no cassette for this test{why}", path=str(self.path))

    @property
    def recorded_runs(self) -> list[CassetteRun]:
        """The runs the cassette held when the session started (empty under ``rewrite``)."""
        self.start()
        return self._held()

    def _held(self) -> list[CassetteRun]:
        """The runs of the cassette read so far (none before :meth:`start`)."""
        return list(self._cassette.runs) if self._cassette is not None else []

    @property
    def recorded_at(self) -> str | None:
        """The ``recorded_at`` of the cassette the session read (``None``: none, or empty)."""
        return (self._cassette.recorded_at or None) if self._cassette is not None else None

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

    def _replays(self, index: int) -> bool:
        if self.mode is RecordMode.NONE:
            return True
        if self.mode is RecordMode.ONCE:
            return self._existed
        if self.mode is RecordMode.REWRITE:
            return False
        return self._cassette is not None and index < len(self._cassette.runs)

    # --- the providers and the test's other requests --------------------------------------------

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
            faults=self._faults.of_hosts,
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

    def placeholders(self) -> contextlib.AbstractContextManager[Any]:
        """While this session only replays, or records from loopback stand-ins only (a bare
        upstream, and every provider's own, on loopback), the unset key variables of
        :data:`~agui_replay.recording._modes.PLACEHOLDER_ENV` hold placeholders for the block
        (the pytest plugin: from the ``agui`` fixture's setup to its teardown), so an SDK client
        built with no key works: nothing real is reached with them. Nothing changes otherwise."""
        if self.replay_only:
            return placeholder_env()
        if self._records_from_stand_ins():
            return placeholder_variables()
        return contextlib.nullcontext()

    def _records_from_stand_ins(self) -> bool:
        if self.mode is RecordMode.NEW and self.path.exists():
            return False  # its first runs replay: their placeholders come with each run
        try:
            upstreams = self.upstreams()  # a factory (the agui_upstream fixture) is called now
        except Exception:  # the first recorded run says what is wrong with it
            return False
        return "default" in upstreams and all(map(_is_loopback, upstreams.values()))

    # --- the session's end ----------------------------------------------------------------------

    @property
    def outcome(self) -> Literal["recorded", "replayed"] | None:
        """``"recorded"`` if any run was recorded, ``"replayed"`` if runs only replayed (a run
        that failed on a replay mismatch before its end included)."""
        if any(r.action == "recorded" for r in self.runs):
            return "recorded"
        return "replayed" if self.runs or self._mismatched_early else None

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
                self._apps.stop()
            finally:
                self.provider.close()

    def abandon(self, *, recording: bool = False) -> None:
        """Make a refresh write nothing at :meth:`finish`, and with ``recording=True`` a
        recording too (:attr:`discarded` then says so when a run was recorded). The pytest
        plugin calls it when a test fails: a refresh stores only what a passing test produced,
        and a recording too unless ``record_on_failure=True``."""
        self._refresh.refused = True
        if recording:
            self._recorder.discard = True

    def _save(self) -> Path | None:
        if self.faults:  # a faulted replay never writes
            return None
        blocked = bool(self.guard.violations)
        if self.refresh:
            written = (
                self._refresh.save(self._cassette, self.runs, self.secrets, blocked=blocked)
                if self._cassette is not None
                else None
            )
            _log.debug(
                "%s: refresh %s", self.path, f"wrote {written}" if written else "wrote nothing"
            )
        else:
            written = self._recorder.save(self._http_to_store())
        self.pending_path = self._pending.settle(
            written,
            self._cassette,
            self.runs,
            renamed=self._refresh.renamed_inputs,
            secrets=self.secrets,
            blocked=blocked,
        )
        return written

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
            self._faults.check_fired(self.tape, self.runs, self._held())
            return
        if not self._started or not self.replay_only:
            return
        used, held = len(self.runs), len(self._held())
        if 0 < used < held:
            raise ReplayMismatchError(
                f"{self.path}: the test made {used} run(s) but the cassette holds {held}; "
                f"the test changed since it was recorded. Re-record with `{self.record_command}`."
            )

    # --- runs -----------------------------------------------------------------------------------

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
        pending = self._begin(target, input)
        with self._running(pending):
            if (kind or target_kind(target)) == "asgi":
                events = self._apps.run(target, pending.input, path)
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
        pending = self._begin(target, input)
        with self._running(pending):
            if (kind or target_kind(target)) == "asgi":
                events = await self._apps.arun(target, pending.input, path)
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

    def _begin(self, target: Any, value: Any) -> PendingRun:
        __tracebackhide__ = True  # the error is the test's: show its line
        self.start()
        if self._finished:
            raise AguiReplayError(f"{self!r} is finished; start a new session to run again")
        index = len(self.runs)
        run_input, wire = run_input_of(value, index)
        pending = PendingRun(index, self._replays(index), run_input, wire)
        _log.debug(
            "%s: run #%d %s (record mode %s)",
            self.path,
            index,
            "refreshes" if self.refresh else "replays" if pending.replay else "records",
            self.mode.value,
        )
        pending.violations_before = len(self.guard.violations)
        pending.tape_errors_before = len(self.tape.errors) if self.tape is not None else 0
        scrubbed = scrub(wire, secrets=self.secrets)
        pending.normalized_input = self._live_ids.input(scrubbed) if self.normalize else scrubbed
        if pending.replay:
            self._replayer.begin(pending)
        else:
            self._recorder.begin(pending)
        if isinstance(target, str) and self.tape is not None:
            self.tape.skip(target)  # the agent under test is not the test's other traffic
        return pending

    @contextlib.contextmanager
    def _running(self, pending: PendingRun) -> Iterator[None]:
        """The span of one run: the guard (replay), the frozen clock, the provider routing and
        the deterministic ids; a run that fails because its upstream did says that first."""
        __tracebackhide__ = True  # the error is the test's: show its line
        frozen = DEFAULT_FROZEN_TIME if self.freeze_time is True else self.freeze_time
        try:
            with (
                self.guard.guarding(pending.replay),
                placeholder_env() if pending.replay else contextlib.nullcontext(),
                frozen_clock(frozen) if frozen is not False else contextlib.nullcontext(),
                self.provider.routing() if self.intercept else contextlib.nullcontext(),
                self.ids.run(pending.index) if self.ids is not None else contextlib.nullcontext(),
            ):
                yield
        except Exception as exc:
            self.provider._idle()
            failed: AguiReplayError | None = self._recorder.upstream_failed(pending)
            if failed is None and not isinstance(exc, (ReplayMismatchError, NetworkBlockedError)):
                # the agent (or its framework) failed on a stand-in's mismatch answer
                failed = self._replayer.failed_on_mismatch(pending, exc)
                self._mismatched_early |= failed is not None
            if failed is not None:
                raise failed from exc
            raise
        except BaseException:
            self.provider._idle()
            raise

    def _end(self, pending: PendingRun, events: list[WireEvent]) -> list[WireEvent]:
        __tracebackhide__ = True  # the error is the test's: show its line
        if pending.replay:
            interactions = self._replayer.served(pending)
        else:
            interactions = self.provider._recorded_since(pending.first_interaction)
        self.provider._idle()
        normalized = self._live_ids.events(events) if self.normalize else [dict(e) for e in events]
        if pending.replay:
            self._replayer.expect(pending, normalized)
        action: Literal["recorded", "replayed"] = "replayed" if pending.replay else "recorded"
        record = RunRecord(
            pending.index,
            action,
            pending.wire_input,
            events,
            normalized,
            interactions,
            pending.normalized_input,
        )
        self.runs.append(record)
        failed = self._recorder.upstream_failed(pending)
        if failed is not None:
            raise failed
        missed = self.tape.errors[pending.tape_errors_before :] if self.tape is not None else []
        if missed:  # a tool's request matched nothing (the agent may have gone on without it)
            raise self._replayer.failed_on_mismatch(pending, None) or ReplayMismatchError(missed[0])
        blocked = self.guard.violations[pending.violations_before :]
        if blocked:
            raise NetworkBlockedError(
                blocked[0] + (f" ({len(blocked) - 1} more)" if len(blocked) > 1 else "")
            )
        if pending.replay:
            self._replayer.judge(pending, record)
        return events


def _usable_secrets(secrets: Iterable[str]) -> list[str]:
    """The configured secrets long enough to scrub: replacing a one-letter "secret" everywhere
    would corrupt the cassette (its JSON keys are kept, but every value would change)."""
    usable = []
    for secret in secrets:
        if not secret:
            continue
        if len(secret) < MIN_SECRET_LENGTH:
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


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
