"""A test's other HTTP traffic (a tool's weather API), recorded and replayed chunk by chunk.

The model providers' requests are the recorder's and the fake's; every other request the test
makes from the ``agui`` fixture's setup to its teardown goes to an :class:`HttpTape`, through a
:class:`TapeRouter` under the provider routing (the same patched transports: ``httpx``,
``httpx2``, ``aiohttp``, ``urllib3``, ``http.client``):

* recording, it is sent to its real destination and stored: method, URL, request headers and
  body (secrets scrubbed), status, response headers and every response chunk with its offset;
* replaying, it is answered from the stored exchanges, chunk by chunk, and nothing is sent.
  The stored exchanges are entries of a :class:`~agui_replay.providers._replaying.Reel`, as a
  run's provider interactions are: a request is answered by the first unused stored exchange
  of its host that matches it on method, origin, path and query (compared as parameters) and
  on what ``match_on`` adds (``"body"``, ``"headers"``, or a callable:
  :mod:`~agui_replay.providers._matchers`); one that matches nothing fails the test, naming
  the closest stored request and the first difference.

Requests in flight at the same time (a tool's calls run in threads or gathered tasks) are
stored in one order whichever was sent first (sorted by request, then response), and each
response that ended after others had ended while it was in flight names them on its last chunk
(``"after_responses"``: their places in the list); a replay serves that chunk only once their
responses were served, so racing tools end in the order they ended while recording.

Streams that stay open while other requests go to the same host (an MCP server's GET stream,
over streamable HTTP or the legacy SSE transport, whose answers arrive to the ``POST`` s sent
meanwhile) replay in the order they were recorded in: a chunk that arrived after the host's
``N``-th request had been sent is stored with ``"after": N`` and replayed only once the replay
has sent that request too; a stream that ended after a later request (a ``DELETE`` ending the
session) is stored with ``"end_after": N``; one the client closed before it ended is stored
with ``"open": true`` and, replayed to an async client, stays open after its last chunk until
the client closes it. The ``mcp-session-id`` header is never compared (``match_on="headers"``
included): the recorded one is served back and the client sends it again.

A faulted replay (:mod:`agui_replay.faults` with ``host=``) changes the responses of the
stored exchanges its faults name: ``request=`` counts the stored exchanges to the fault's host
(any port when it names none) in the order they are stored. A ``status`` or ``timeout`` fault
answers an attempt instead of the exchange, which stays unused for the client's retry.

Hosts that are not recorded: the model providers' (recorded by the run's provider routing,
and outside a run not at all), the process's own loopback servers (the session's, fakes,
recording proxies), the agent under test when it is a URL, and the ``ignore`` hosts (a local
service the test starts itself): they are reached as usual. The ``drop`` hosts and URLs
(framework telemetry, :data:`DEFAULT_DROP_HOSTS`) are answered at once with an empty ``204``
and never sent or recorded.

Background work (:mod:`~agui_replay.providers._background`): an exchange sent from outside the
tape's causal chain is stored with ``"background": true``; a replayed request that matches
nothing is answered locally (an empty ``204``, counted in :attr:`HttpTape.background`) when
its host was reached only by background work while recording, or when it is background work
itself to a host never recorded. A request that failed while recording is stored as that
failure (``"response": {"failure": "unreachable" | "timeout", "message": ...}``) and raised
again when replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from agui_replay.errors import ReplayMismatchError
from agui_replay.providers._background import (
    DEFAULT_DROP_HOSTS,
    Chain,
    DropRules,
    drop_entry,
    looks_like_telemetry,
    note_large,
)
from agui_replay.providers._interaction import (
    RecordedResponse,
    parse_body,
)
from agui_replay.providers._matchers import HOST, Matchers, Mismatch, match_rules
from agui_replay.providers._plan import (
    PASSTHROUGH,
    Plan,
    Request,
    StreamCut,
    TimedOut,
    Unreachable,
)
from agui_replay.providers._recorder import HOP, UNSTORED, Capture, Scrubber
from agui_replay.providers._replaying import Entry, Reel, faulted, host_stored, place_host_fault
from agui_replay.providers._transport._loopback import OPEN_PORTS
from agui_replay.providers._transport._routing import HostTable, Router
from agui_replay.providers._transport._served import (
    Served,
    after_responses,
    in_canonical_order,
    raise_failure,
)

__all__ = ["DEFAULT_DROP_HOSTS", "HttpTape", "TapeRouter"]

_ORDER_WAIT = 30.0
"""Seconds a replayed chunk waits at most for the request it arrived after (see the module's
docstring); then it is served anyway, and the test fails on what differs instead of hanging."""

_RELEASE_WAIT = 5.0
"""Seconds a replayed response waits at most for the responses that ended before it while
recording (their last chunk's ``after_responses``); then it is served anyway."""

_log = logging.getLogger("agui_replay.tape")


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass
class _Recording:
    """One exchange being recorded: the request known, the response arriving."""

    request: dict[str, Any]
    capture: Capture
    host: str = ""
    index: int = 0
    """This request's number among its host's requests, from 1."""
    streaming: bool = False
    """The response came with no ``content-length`` (a stream, maybe long-lived)."""
    complete: bool = False
    """The response ended (``False``: the client closed it first, or it is still open)."""
    after: list[int] = field(default_factory=list)
    """For each chunk: how many of the host's requests had been sent when it arrived."""
    end_after: int = 0
    began: int = 0
    """The tape's clock when the request was sent (see :func:`~._served.in_canonical_order`)."""
    ended: int = 0
    """The tape's clock when the response ended (``0``: it has not, or never did)."""

    @property
    def settled(self) -> bool:
        """Whether it is an exchange that may run concurrently with others: a complete
        response of known length (long-lived streams keep their request order)."""
        return self.complete and not self.streaming

    background: bool = False
    """Sent from outside the tape's causal chain (see :mod:`~agui_replay.providers._background`)."""
    failure: tuple[str, str] | None = None
    """The request failed: ``("timeout" | "unreachable", what the HTTP library said)``."""

    def to_dict(self) -> dict[str, Any]:
        if self.failure is not None:
            kind, message = self.failure
            failure: dict[str, Any] = {"failure": kind, "message": message}
            failed = {"request": dict(self.request), "response": failure}
            return {**failed, "background": True} if self.background else failed
        response = self.capture.stored.to_dict()
        chunks = response.get("chunks") or []
        for chunk, after in zip(chunks, self.after, strict=False):
            if after > self.index:  # another request of the host went first: replayed after it
                chunk["after"] = after
        if self.streaming and not self.complete:
            response["open"] = True
        elif self.end_after > self.index:
            response["end_after"] = self.end_after
        exchange = {"request": dict(self.request), "response": response}
        return {**exchange, "background": True} if self.background else exchange


class HttpTape:
    """The other HTTP traffic of one test: recorded (``mode="record"``) or replayed.

    ``recorded`` are the stored exchanges to replay (dicts, as :attr:`exchanges` gives them);
    ``secrets`` values to scrub besides auth headers; ``ignore`` and ``drop`` host patterns
    (``HOST``, ``HOST:PORT``, ``*.DOMAIN``); ``match_on`` what a replayed request is compared
    on besides its method and URL; ``loader`` gives the stored exchanges the first time a
    request is replayed (the cassette is read then, not before); ``providers`` the model
    provider hosts, left to the provider routing; ``faults`` the faults (with ``host=``) of a
    faulted replay; ``threads`` whether threads started from the test belong to its causal
    chain (a session tape's do not: a timer an import started is background work); the chain
    opens with the tape (``chained=False``: in :meth:`installed` blocks only).
    """

    def __init__(
        self,
        mode: Literal["record", "replay"],
        *,
        recorded: Sequence[Mapping[str, Any]] = (),
        secrets: Iterable[str] = (),
        ignore: Iterable[str] = (),
        drop: Iterable[str] = DEFAULT_DROP_HOSTS,
        match_on: Iterable[Any] = (),
        where: str = "the cassette",
        loader: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        providers: HostTable | None = None,
        faults: Iterable[Any] = (),
        threads: bool = True,
        chained: bool = True,
    ) -> None:
        self.mode = mode
        self.where = where
        self.scrubber = Scrubber(secrets=secrets)
        self.ignore = HostTable(ignore, known={})
        self.drop = DropRules(drop, lambda entries: HostTable(entries, known={}))
        self.recorded = [dict(e) for e in recorded]
        self._loader = loader
        self.providers = providers
        self.errors: list[str] = []
        """Every replayed request that matched nothing (the test fails with the first)."""
        self.failures: list[str] = []
        """Every recorded request whose destination could not be reached."""
        self.dropped: list[str] = []
        self.background: list[str] = []
        """The replayed requests answered locally as background work (``METHOD URL``)."""
        self.large: list[str] = []
        """``HOST (N KB)`` of each recorded exchange over 256 KB."""
        self.chain = Chain(thread_starts=threads)
        if chained:
            self.chain.open()
        self.skipped_origins: set[str] = set()
        """Origins reached as usual (the agent under test when it is a URL)."""
        self._recordings: list[_Recording] = []
        self.reel = Reel(Matchers([*HOST, *match_rules(match_on)]), "unordered")
        """The stored exchanges being replayed, one entry per item of :attr:`recorded` (built
        when the first request is replayed), matched by content among their host's."""
        self._lock = self.reel.lock
        self._turn = threading.Condition(self._lock)
        """Notified whenever a request is replayed (a chunk waiting for it may go)."""
        self._sent: Counter[str] = Counter()
        """Per host (``scheme://host:port``): the requests recorded or replayed so far."""
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._client: Any = None
        self._ssl: ssl.SSLContext | None = None
        self.faults = list(faults)
        self._placed = False
        self._clock = 0
        """Recording: counts the requests sent and the responses ended, in the order they were."""
        self._awaited: set[int] = set()
        """Replaying: the stored exchanges another one's ``after_responses`` names."""
        self._finished: set[int] = set()
        """Replaying: the stored exchanges whose responses were served to their end."""

    # --- which requests are ours ----------------------------------------------------------------

    def takes(self, host: str, port: int | None, origin: str) -> bool:
        """Whether a request to ``host:port`` is recorded / replayed (or dropped) here."""
        loopback = host in ("127.0.0.1", "localhost", "::1")
        if loopback and port in OPEN_PORTS:
            return False
        if origin.lower() in self.skipped_origins:
            return False
        if self.providers is not None and self.providers.provider_for(host, port) is not None:
            return False  # a model provider's: the provider routing's, in a run only
        return self.ignore.provider_for(host, port) is None

    def skip(self, url: str) -> None:
        """Leave requests to ``url``'s origin alone (the agent under test)."""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc:
            self.skipped_origins.add(f"{parts.scheme}://{parts.netloc}".lower())

    @property
    def exchanges(self) -> list[dict[str, Any]]:
        """What was recorded so far, in request order (a response still being read is stored
        with what arrived)."""
        with self._lock:
            recordings = list(self._recordings)
        for recording in recordings:
            recording.capture.finish()
        return note_large(in_canonical_order(recordings), self.where, self.large)

    @property
    def unused(self) -> list[str]:
        """The stored exchanges no request replayed, as ``METHOD URL``."""
        entries = self.reel.entries
        return [
            self._shown(i)
            for i in range(len(self.recorded))
            if i >= len(entries) or not entries[i].used
        ]

    @property
    def fired(self) -> list[Any]:
        """The faults that changed a response so far."""
        return self.reel.fired

    # --- answering ------------------------------------------------------------------------------

    def answer(self, request: Request) -> Plan:
        """The answer to ``request``: replayed, recorded, or (a ``drop`` host) an empty 204."""
        url = request.url
        if self._drops(url):
            self.dropped.append(f"{request.method} {url}")
            return Plan(204, [], [], streaming=False)
        if self.mode == "replay":
            return self._replay(request.method, url, request.headers, request.body)
        return self._record(request.method, url, request.headers, request.body)

    async def aanswer(self, request: Request) -> Plan:
        """:meth:`answer` for an async client."""
        if self.mode == "record" and not self._drops(request.url):
            return await self._arecord(request.method, request.url, request.headers, request.body)
        plan = self.answer(request)
        if isinstance(plan.body, Served):
            plan.abody = plan.body.areplay()
        return plan

    def _drops(self, url: str) -> bool:
        """Whether ``url`` (its host, or the URL itself) is one to answer locally, never sent
        nor recorded."""
        return self.drop.drops(url)

    def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> dict[str, Any]:
        scrub = self.scrubber
        stored = {k: v for k, v in scrub.headers(headers).items() if k not in UNSTORED}
        scrub.learn_query(url)
        return {
            "method": method.upper(),
            "url": scrub.text(url),
            "headers": stored,
            "body": scrub.value(parse_body(body)),
        }

    # --- replaying ------------------------------------------------------------------------------

    def _load(self) -> None:
        # caller holds the lock: the stored exchanges read (once), and the faults placed
        if self._loader is not None:
            loader, self._loader = self._loader, None
            self.recorded += [dict(e) for e in loader()]
        entries = self.reel.entries
        for i in range(len(entries), len(self.recorded)):
            stored = self.recorded[i].get("request") or {}
            key = _host_key(str(stored.get("url", "")))
            response = self.recorded[i].get("response") or {}
            entries.append(Entry(i, stored, response, key))
            self._awaited.update(after_responses(response, i, len(self.recorded), self.where))
        if not self._placed and self.faults:
            self._placed = True
            problems = []
            for n, fault in enumerate(self.faults):
                at, problem = place_host_fault(fault, self.recorded, self.providers, self.where)
                if problem is not None:
                    problems.append(problem)
                elif at is not None:
                    entries[at].faults.append((n, fault))
            if problems:
                self.errors.append(problems[0])
                raise ReplayMismatchError(problems[0])

    def check_faults(self) -> None:
        """Read the stored exchanges and place the faults on them; a fault naming a host or a
        request that the cassette has not recorded raises :class:`ReplayMismatchError`,
        naming what it has."""
        if self.mode != "replay" or not self.faults:
            return
        with self._lock:
            self._load()

    def _shown(self, i: int) -> str:
        stored = self.recorded[i].get("request") or {}
        return f"{stored.get('method')} {stored.get('url')}"

    def _replay(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Plan:
        request = self._request(method, url, headers, body)
        host = _host_key(request["url"])
        with self._lock:
            self._load()
            pick = self.reel.pick(request, lambda entry: entry.key == host)
            entry = pick.entry
            if entry is None:
                local = self._background_miss(request)
                if local is not None:
                    return local
                message = self._miss(request)
                self.errors.append(message)
                raise ReplayMismatchError(message)
            if pick.gate is not None:  # the exchange stays unused, for the retry
                return self._gated(pick.gate, f"{method.upper()} {url}")
            self._sent[host] += 1
            self._wake()
            before = after_responses(entry.response, entry.position, len(self.recorded), self.where)
        raise_failure(entry.response, f"{method.upper()} {url}")
        stored = host_stored(entry.response, f"{self.where}: http[{entry.position}]")
        stored = faulted(stored, [f for _, f in entry.faults])
        waits = stored.held or stored.end_after or any(c[0] for c in stored.chunks)
        if not waits and not before and entry.position not in self._awaited:
            return stored.plan()
        served = Served(self, host, stored, entry.position, before)
        streaming = True if waits else stored.streaming
        return Plan(stored.status, stored.headers, served, streaming=streaming, cut=stored.cut)

    def _wake(self) -> None:
        """Wake every chunk waiting for a request or a response (caller holds the lock)."""
        self._turn.notify_all()
        waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_wake, future)

    def finish(self, position: int) -> None:
        """Note that the response of stored exchange ``position`` was served to its end."""
        with self._lock:
            if position not in self._finished:
                self._finished.add(position)
                self._wake()

    def wait_for_responses(self, positions: Sequence[int]) -> None:
        """Block until the responses of these stored exchanges were served (at most
        :data:`_RELEASE_WAIT` seconds)."""
        if not positions:
            return
        with self._turn:
            done = self._turn.wait_for(
                lambda: self._finished.issuperset(positions), timeout=_RELEASE_WAIT
            )
        if not done:
            self._unreleased(positions)

    async def await_responses(self, positions: Sequence[int]) -> None:
        """:meth:`wait_for_responses` without blocking the loop."""
        if positions and not await self._until(
            lambda: self._finished.issuperset(positions), _RELEASE_WAIT
        ):
            self._unreleased(positions)

    def _unreleased(self, positions: Sequence[int]) -> None:
        _log.warning(
            "%s: a replayed response waited %.0f s for the responses of http%s, which ended "
            "before it while recording and were not requested now; served anyway",
            self.where,
            _RELEASE_WAIT,
            sorted(set(positions) - self._finished),
        )

    def _gated(self, fault: Any, shown: str) -> Plan:
        """A ``status`` fault's error response, or a ``timeout`` fault's error raised as the
        client's HTTP library raises a read timeout."""
        what = f"{fault.describe()} on {shown}"
        if fault.kind == "timeout":
            _log.debug("%s: replaying %s: a read timeout", self.where, what)
            raise TimedOut(f"agui_replay fault: read timed out ({what})")
        _log.debug("%s: replaying %s: HTTP %s", self.where, what, fault.code)
        message = f"agui_replay fault: HTTP {fault.code} ({what})"
        data = json.dumps({"error": {"code": fault.code, "message": message}}).encode()
        headers = [("content-type", "application/json"), *fault.headers]
        return Plan(fault.code, headers, [(0.0, data)], streaming=False)

    def wait_for_request(self, host: str, count: int) -> None:
        """Block until ``count`` requests to ``host`` were replayed (at most :data:`_ORDER_WAIT`
        seconds)."""
        if count <= 0:
            return
        with self._turn:
            if self._turn.wait_for(lambda: self._sent[host] >= count, timeout=_ORDER_WAIT):
                return
        self._late(host, count)

    async def await_request(self, host: str, count: int) -> None:
        """:meth:`wait_for_request` without blocking the loop."""
        if count > 0 and not await self._until(lambda: self._sent[host] >= count, _ORDER_WAIT):
            self._late(host, count)

    async def _until(self, ready: Callable[[], bool], seconds: float) -> bool:
        """Wait without blocking the loop until ``ready()`` (``False``: ``seconds`` passed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while True:
            with self._lock:
                if ready():
                    return True
                future: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, future))
            try:
                await asyncio.wait_for(future, max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:  # not the builtin one before Python 3.11
                return False

    def _late(self, host: str, count: int) -> None:
        _log.warning(
            "%s: a replayed chunk from %s waited %.0f s for the host's request #%d, which the "
            "test has not sent (it did while recording); served anyway",
            self.where,
            host,
            _ORDER_WAIT,
            count,
        )

    def _background_miss(self, request: Mapping[str, Any]) -> Plan | None:
        """An empty ``204`` for a request the cassette lacks that is background work: to a
        host the recording saw only from background work, or sent from outside the test's
        causal chain to a host it did not see at all (caller holds the lock)."""
        host = _host_key(request["url"])
        seen = [e for e in self.recorded if _host_key(str(e["request"].get("url", ""))) == host]
        if seen and not all(e.get("background") for e in seen):
            return None
        if not seen and not self.chain.background():
            return None
        shown = f"{request['method']} {request['url']}"
        self.background.append(shown)
        _log.debug(
            "%s: %s is background work the recording has no answer for (%s): answered "
            "locally with an empty 204",
            self.where,
            shown,
            "its host was only reached from outside the test"
            if seen
            else "sent from a thread outside the test's causal chain",
        )
        return Plan(204, [], [], streaming=False)

    def _miss(self, request: Mapping[str, Any]) -> str:
        shown = f"{request['method']} {request['url']}"
        head = f"agui-replay: the request {shown} matches no recorded HTTP exchange in {self.where}"
        url = str(request["url"])
        if self.chain.background() or looks_like_telemetry(url):
            head += (
                f" (it looks like background work: telemetry, a version check; if the test "
                f"does not need its answer, drop_hosts=[{drop_entry(url)!r}] answers it "
                "locally)"
            )
        closest = self._closest(request)
        if closest is None:
            return f"{head} (none was recorded). Re-record the test if the change is intended."
        i, difference = closest
        state = " (already replayed)" if difference is None else ""
        why = (
            difference.text
            if difference
            else "  an earlier request of the test already replayed it"
        )
        return (
            f"{head}; the closest recorded one is #{i} {self._shown(i)}{state}:\n{why}\n"
            "Re-record the test if the change is intended."
        )

    def _closest(self, request: Mapping[str, Any]) -> tuple[int, Mismatch | None] | None:
        """The stored exchange most like ``request`` (its host, method, path and query
        first, an unused one before a used one), and how it differs."""
        entries = self.reel.entries
        if not entries:
            return None
        compare = self.reel.matchers.compare
        names = ("origin", "method", "path", "query")
        closeness = [
            (*(compare(e.request, request, only=name)[0] is None for name in names), not e.used)
            for e in entries
        ]
        best = max(range(len(entries)), key=closeness.__getitem__)
        return best, compare(entries[best].request, request)[0]

    # --- recording ------------------------------------------------------------------------------

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx2

                self._client = httpx2.Client(timeout=httpx2.Timeout(600.0, connect=10.0))
            return self._client

    def _begin(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> _Recording:
        stored = self._request(method, url, headers, body)
        capture = Capture(self.scrubber, RecordedResponse(0), scrub_binary=False)
        recording = _Recording(stored, capture, _host_key(stored["url"]))
        recording.background = self.chain.background()
        capture.on_chunk = functools.partial(self._count_chunk, recording)
        with self._lock:
            self._sent[recording.host] += 1
            recording.index = self._sent[recording.host]
            self._clock += 1
            recording.began = self._clock
            self._recordings.append(recording)
        return recording

    def _failed(
        self, recording: _Recording, method: str, url: str, exc: Exception
    ) -> Unreachable | TimedOut:
        """A request that could not be sent or answered is stored as that failure, which its
        replay raises again."""
        import httpx2

        kind = (
            "timeout"
            if isinstance(exc, (httpx2.TimeoutException, TimeoutError))
            else ("unreachable")
        )
        with self._lock:
            self.failures.append(f"{method} {url}: {type(exc).__name__}: {exc}")
            recording.failure = (kind, f"{type(exc).__name__}: {exc}")
        failure = TimedOut if kind == "timeout" else Unreachable
        return failure(f"{method} {url}: {exc}")

    def _responded(self, recording: _Recording, response: Any) -> list[tuple[str, str]]:
        """The response headers to give the client (and to store, scrubbed)."""
        kept = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in HOP and k.lower() != "content-encoding"
        ]
        recording.capture.response(response.status_code, dict(kept))
        recording.streaming = "content-length" not in response.headers
        return kept

    def _record(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Plan:
        import httpx2

        recording = self._begin(method, url, headers, body)
        client = self._http()
        sent = {k: v for k, v in headers.items() if k.lower() not in HOP}
        request = client.build_request(
            method, url, headers=sent, content=body, extensions={PASSTHROUGH: True}
        )
        try:
            response = client.send(request, stream=True)
        except (httpx2.HTTPError, OSError) as exc:
            # each transport turns it into its own library's connection error (or timeout)
            raise self._failed(recording, method, url, exc) from exc
        kept = self._responded(recording, response)

        def writes() -> Iterator[tuple[float, bytes]]:
            try:
                for data in response.iter_bytes():
                    recording.capture.chunk(data)
                    yield 0.0, data
                self._ended(recording)
            except httpx2.HTTPError:
                raise StreamCut from None
            finally:
                recording.capture.finish()
                response.close()

        return Plan(response.status_code, kept, writes(), streaming=recording.streaming)

    async def _arecord(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> Plan:
        """:meth:`_record` for an async client, on its own loop: a stream the client closes
        (an MCP session's GET stream) is closed upstream at once, not when the server next
        writes to it."""
        import anyio
        import httpx2

        recording = self._begin(method, url, headers, body)
        client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(600.0, connect=10.0), verify=self._ssl_context()
        )
        sent = {k: v for k, v in headers.items() if k.lower() not in HOP}
        request = client.build_request(
            method, url, headers=sent, content=body, extensions={PASSTHROUGH: True}
        )
        try:
            response = await client.send(request, stream=True)
        except (httpx2.HTTPError, OSError) as exc:
            failure = self._failed(recording, method, url, exc)
            with anyio.CancelScope(shield=True):
                await client.aclose()
            raise failure from exc
        kept = self._responded(recording, response)
        if not recording.streaming:  # read now: a client may close it unread (a 202)
            try:
                data = await response.aread()
            except httpx2.HTTPError:
                data, cut = b"", True
            else:
                cut = False
            finally:
                with anyio.CancelScope(shield=True):
                    await response.aclose()
                    await client.aclose()
            recording.capture.chunk(data)
            if not cut:
                self._ended(recording)
            recording.capture.finish()
            return Plan(response.status_code, kept, [(0.0, data)] if data else [], False, cut=cut)

        async def writes() -> AsyncIterator[tuple[float, bytes]]:
            try:
                async for data in response.aiter_bytes():
                    recording.capture.chunk(data)
                    yield 0.0, data
                self._ended(recording)
            except httpx2.HTTPError:
                raise StreamCut from None
            finally:
                recording.capture.finish()
                with anyio.CancelScope(shield=True):  # closed even as the client is cancelled
                    await response.aclose()
                    await client.aclose()

        plan = Plan(response.status_code, kept, [], streaming=recording.streaming)
        plan.abody = writes()
        return plan

    def _ssl_context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                import httpx2

                self._ssl = httpx2.create_ssl_context()
            return self._ssl

    def _ended(self, recording: _Recording) -> None:
        with self._lock:
            recording.complete = True
            recording.end_after = self._sent[recording.host]
            self._clock += 1
            recording.ended = self._clock

    def _count_chunk(self, recording: _Recording) -> None:
        """Note how many of its host's requests were sent when the next chunk arrived."""
        with self._lock:
            recording.after.append(self._sent[recording.host])

    @contextlib.contextmanager
    def installed(self) -> Iterator[HttpTape]:
        """For the block: every HTTP client's requests that the tape takes come to it (the
        innermost tape wins: a test's inside a session's), and its causal chain is open."""
        from agui_replay.providers._transport._routing import intercepting

        self.chain.open()
        try:
            with intercepting(TapeRouter(self)):
                yield self
        finally:
            self.chain.close()

    def close(self) -> None:
        self.chain.close()
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class TapeRouter(Router):
    """Routes every request the provider routing left alone to an :class:`HttpTape`, but
    those to hosts it does not take (:meth:`HttpTape.takes`)."""

    def __init__(self, tape: HttpTape) -> None:
        super().__init__(HostTable(known={}), tape.answer, tape.aanswer)
        self.tape = tape

    def route_to(
        self, host: str | None, port: int | None, origin: str
    ) -> tuple[str | None, str] | None:
        if not host or not self.tape.takes(host, port, origin):
            return None
        return None, origin
