"""A test's other HTTP traffic (a tool's weather API), recorded and replayed chunk by chunk.

The model providers' requests are the recorder's and the fake's; every other request the test
makes from the ``agui`` fixture's setup to its teardown goes to an :class:`HttpTape`, through a
:class:`TapeRouter` under the provider routing (the same patched transports: ``httpx``,
``httpx2``, ``aiohttp``, ``urllib3``, ``http.client``):

* recording, it is sent to its real destination and stored: method, URL, request headers and
  body (secrets scrubbed), status, response headers and every response chunk with its offset;
* replaying, it is answered from the stored exchanges, chunk by chunk, and nothing is sent.
  A request is matched by method and URL (the query compared as parameters), the first unused
  stored one of its host in order, and by what ``match_on`` adds (``"body"``, ``"headers"``, or
  a callable); one that matches nothing fails the test, naming the closest stored request and
  the first difference.

Hosts that are not recorded: the model providers' (recorded by the run's provider routing,
and outside a run not at all), the process's own loopback servers (the session's, fakes,
recording proxies), the agent under test when it is a URL, and the ``ignore`` hosts (a local
service the test starts itself): they are reached as usual. The ``drop`` hosts (framework
telemetry, :data:`DEFAULT_DROP_HOSTS`) are answered at once with an empty ``204`` and never
sent or recorded.
"""

from __future__ import annotations

import asyncio
import codecs
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from agui_replay.errors import InvalidArgumentError, ReplayMismatchError
from agui_replay.providers._interaction import (
    Chunk,
    RecordedResponse,
    is_text_content_type,
    parse_body,
)
from agui_replay.providers._recorder import _HOP, _UNSTORED, PASSTHROUGH, Scrubber
from agui_replay.providers.formats._wire import Plan, StreamCut
from agui_replay.providers.transport._loopback import OPEN_PORTS
from agui_replay.providers.transport._routing import HostTable, Router

__all__ = ["DEFAULT_DROP_HOSTS", "HttpTape", "TapeRouter", "match_rules"]

DEFAULT_DROP_HOSTS: tuple[str, ...] = (
    "api.agno.com",  # Agno's telemetry (agno.api), older releases
    "os-api.agno.com",  # Agno's telemetry, current releases (AgnoAPISettings.api_url)
    "us.i.posthog.com",  # PostHog ingestion (CrewAI, Chroma, mem0... product analytics)
    "eu.i.posthog.com",
    "app.posthog.com",  # PostHog's former ingestion host, still the default of older clients
    "api.smith.langchain.com",  # LangSmith tracing (LANGSMITH_TRACING=true)
    "eu.api.smith.langchain.com",
)
"""Framework telemetry endpoints answered with an empty ``204`` (never sent, never stored)."""

Matcher = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
"""``matcher(recorded_request, request) -> bool``; each a dict: method, url, headers, body."""

_NAMED = ("method", "url", "body", "headers")


def match_rules(value: Iterable[Any]) -> list[str | Matcher]:
    """The ``match_on`` entries, checked: names of request parts or callables."""
    out: list[str | Matcher] = []
    for entry in value:
        if callable(entry):
            out.append(entry)
        elif isinstance(entry, str) and entry.strip() in _NAMED:
            out.append(entry.strip())
        elif isinstance(entry, str) and not entry.strip():
            continue
        else:
            raise InvalidArgumentError(
                f"match_on: {entry!r} is not one of {', '.join(_NAMED)} or a callable "
                "(recorded_request, request) -> bool"
            )
    return out


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _query(url: str) -> list[tuple[str, str]]:
    return sorted(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_difference(
    recorded: Mapping[str, Any], request: Mapping[str, Any], rules: Sequence[str | Matcher]
) -> str | None:
    """What first differs between a stored request and ``request`` (``None``: they match)."""
    if recorded.get("method") != request["method"]:
        return f"method {recorded.get('method')} != {request['method']}"
    old, new = urlsplit(str(recorded.get("url", ""))), urlsplit(request["url"])
    if (old.scheme, old.netloc.lower()) != (new.scheme, new.netloc.lower()):
        return f"origin {old.scheme}://{old.netloc} != {new.scheme}://{new.netloc}"
    if old.path != new.path:
        return f"path {old.path} != {new.path}"
    before, now = _query(str(recorded.get("url", ""))), _query(request["url"])
    if before != now:
        gone = [f"{k}={v}" for k, v in before if (k, v) not in now]
        added = [f"{k}={v}" for k, v in now if (k, v) not in before]
        return f"query: recorded {'&'.join(gone) or '-'} where now {'&'.join(added) or '-'}"
    for rule in rules:
        if rule == "body" and recorded.get("body") != request["body"]:
            return f"body {_short(recorded.get('body'))} != {_short(request['body'])}"
        if rule == "headers":
            old_h = {k: v for k, v in dict(recorded.get("headers") or {}).items()}
            for name in sorted(set(old_h) | set(request["headers"])):
                if old_h.get(name) != request["headers"].get(name):
                    shown = f"{_short(old_h.get(name))} != {_short(request['headers'].get(name))}"
                    return f"header {name}: {shown}"
        if callable(rule):
            try:
                ok = rule(recorded, request)
            except AssertionError as exc:
                return f"{getattr(rule, '__name__', 'matcher')}: {exc}"
            if not ok:
                return f"{getattr(rule, '__name__', 'matcher')} said they differ"
    return None


@dataclass
class _Recording:
    """One exchange being recorded: the request known, the response arriving."""

    request: dict[str, Any]
    started: float
    response: RecordedResponse = field(default_factory=lambda: RecordedResponse(0))
    binary: bool = False
    finished: bool = False
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def to_dict(self) -> dict[str, Any]:
        return {"request": dict(self.request), "response": self.response.to_dict()}


class HttpTape:
    """The other HTTP traffic of one test: recorded (``mode="record"``) or replayed.

    ``recorded`` are the stored exchanges to replay (dicts, as :attr:`exchanges` gives them);
    ``secrets`` values to scrub besides auth headers; ``ignore`` and ``drop`` host patterns
    (``HOST``, ``HOST:PORT``, ``*.DOMAIN``); ``match_on`` what a replayed request is compared
    on besides its method and URL; ``loader`` gives the stored exchanges the first time a
    request is replayed (the cassette is read then, not before); ``providers`` the model
    provider hosts, left to the provider routing.
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
    ) -> None:
        self.mode = mode
        self.where = where
        self.scrubber = Scrubber(secrets=secrets)
        self.ignore = HostTable(ignore, known={})
        self.drop = HostTable(drop, known={})
        self.rules = match_rules(match_on)
        self.recorded = [dict(e) for e in recorded]
        self.used = [False] * len(self.recorded)
        self._loader = loader
        self.providers = providers
        self.errors: list[str] = []
        """Every replayed request that matched nothing (the test fails with the first)."""
        self.failures: list[str] = []
        """Every recorded request whose destination could not be reached."""
        self.dropped: list[str] = []
        self.skipped_origins: set[str] = set()
        """Origins reached as usual (the agent under test when it is a URL)."""
        self._recordings: list[_Recording] = []
        self._lock = threading.Lock()
        self._client: Any = None

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
            self._finish(recording)
        return [r.to_dict() for r in recordings]

    @property
    def unused(self) -> list[str]:
        """The stored exchanges no request replayed, as ``METHOD URL``."""
        return [
            f"{e['request'].get('method')} {e['request'].get('url')}"
            for e, done in zip(self.recorded, self.used, strict=True)
            if not done
        ]

    # --- answering ------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
        origin: str | None = None,
    ) -> Plan:
        url = f"{origin or ''}{target}"
        parts = urlsplit(url)
        if parts.hostname and self.drop.provider_for(parts.hostname, parts.port) is not None:
            self.dropped.append(f"{method} {url}")
            return Plan(204, [], [], streaming=False)
        if self.mode == "replay":
            return self._replay(method, url, headers, body)
        return self._record(method, url, headers, body)

    async def ahandle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
        origin: str | None = None,
    ) -> Plan:
        if self.mode == "replay":
            return self.handle(method, target, headers, body, provider=provider, origin=origin)
        plan = await asyncio.to_thread(
            self.handle, method, target, headers, body, provider=provider, origin=origin
        )
        if not isinstance(plan.body, (list, tuple)):
            plan.abody = _off_loop(iter(plan.body))  # a slow stream never blocks the loop
        return plan

    def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> dict[str, Any]:
        scrub = self.scrubber
        stored = {k: v for k, v in scrub.headers(headers).items() if k not in _UNSTORED}
        scrub.learn_query(url)
        return {
            "method": method.upper(),
            "url": scrub.text(url),
            "headers": stored,
            "body": scrub.value(parse_body(body)),
        }

    # --- replaying ------------------------------------------------------------------------------

    def _replay(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Plan:
        request = self._request(method, url, headers, body)
        host = _host_key(request["url"])
        with self._lock:
            if self._loader is not None:
                loader, self._loader = self._loader, None
                self.recorded += [dict(e) for e in loader()]
                self.used += [False] * (len(self.recorded) - len(self.used))
            for i, exchange in enumerate(self.recorded):
                stored = exchange.get("request") or {}
                if self.used[i] or _host_key(str(stored.get("url", ""))) != host:
                    continue
                if _first_difference(stored, request, self.rules) is None:
                    self.used[i] = True
                    return _plan_of(exchange.get("response") or {}, method)
            message = self._miss(request)
            self.errors.append(message)
        raise ReplayMismatchError(message)

    def _miss(self, request: Mapping[str, Any]) -> str:
        shown = f"{request['method']} {request['url']}"
        head = f"agui-replay: the request {shown} matches no recorded HTTP exchange in {self.where}"
        closest = self._closest(request)
        if closest is None:
            return f"{head} (none was recorded). Re-record the test if the change is intended."
        i, difference = closest
        stored = self.recorded[i]["request"]
        state = " (already replayed)" if self.used[i] and difference is None else ""
        why = difference or "an earlier request of the test already replayed it"
        return (
            f"{head}; the closest recorded one is #{i} {stored.get('method')} "
            f"{stored.get('url')}{state}: {why}. Re-record the test if the change is intended."
        )

    def _closest(self, request: Mapping[str, Any]) -> tuple[int, str | None] | None:
        if not self.recorded:
            return None
        new = urlsplit(request["url"])

        def score(i: int) -> tuple[int, ...]:
            stored = self.recorded[i].get("request") or {}
            old = urlsplit(str(stored.get("url", "")))
            return (
                old.netloc.lower() == new.netloc.lower(),
                stored.get("method") == request["method"],
                old.path == new.path,
                _query(str(stored.get("url", ""))) == _query(request["url"]),
                not self.used[i],
            )

        best = max(range(len(self.recorded)), key=score)
        stored = self.recorded[best].get("request") or {}
        return best, _first_difference(stored, request, self.rules)

    # --- recording ------------------------------------------------------------------------------

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx2

                self._client = httpx2.Client(timeout=httpx2.Timeout(600.0, connect=10.0))
            return self._client

    def _record(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Plan:
        import httpx2

        recording = _Recording(self._request(method, url, headers, body), time.monotonic())
        with self._lock:
            self._recordings.append(recording)
        client = self._http()
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP}
        request = client.build_request(
            method, url, headers=sent, content=body, extensions={PASSTHROUGH: True}
        )
        try:
            response = client.send(request, stream=True)
        except (httpx2.HTTPError, OSError) as exc:
            with self._lock:
                self.failures.append(f"{method} {url}: {type(exc).__name__}: {exc}")
                self._recordings.remove(recording)
            # an OSError: each patched library turns it into its own connection error
            raise ConnectionError(f"{method} {url}: {exc}") from exc
        kept = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in _HOP and k.lower() != "content-encoding"
        ]
        recording.response.status = response.status_code
        stored_headers = self.scrubber.headers(dict(kept))
        recording.response.headers = stored_headers
        recording.binary = not is_text_content_type(stored_headers.get("content-type"))
        streaming = "content-length" not in response.headers

        def writes() -> Iterator[tuple[float, bytes]]:
            try:
                for data in response.iter_bytes():
                    self._chunk(recording, data)
                    yield 0.0, data
            except httpx2.HTTPError:
                raise StreamCut from None
            finally:
                self._finish(recording)
                response.close()

        return Plan(response.status_code, kept, writes(), streaming=streaming)

    def _chunk(self, recording: _Recording, data: bytes) -> None:
        if not data:
            return
        offset = round(time.monotonic() - recording.started, 6)
        if recording.binary:
            recording.response.chunks.append(Chunk(offset, bytes(data)))
            return
        text = recording.decoder.decode(data)
        if text:
            recording.response.chunks.append(Chunk(offset, self.scrubber.text(text)))

    def _finish(self, recording: _Recording) -> None:
        with self._lock:
            if recording.finished:
                return
            recording.finished = True
        chunks = recording.response.chunks
        if recording.binary:
            return
        tail = recording.decoder.decode(b"", final=True)
        if tail:
            chunks.append(Chunk(round(time.monotonic() - recording.started, 6), tail))
        texts = [c.data for c in chunks if isinstance(c.data, str)]
        for chunk, data in zip(chunks, self.scrubber.stream(texts), strict=True):
            chunk.data = data

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def _plan_of(response: Mapping[str, Any], method: str) -> Plan:
    """The stored response, chunk by chunk (no delays: a replay runs at full speed)."""
    stored = RecordedResponse.from_dict(dict(response))
    chunks = [(0.0, c.raw) for c in stored.chunks]
    if not chunks and stored.body is not None:
        chunks = [(0.0, stored.content)]
    headers = [(k, str(v)) for k, v in stored.headers.items()]
    return Plan(stored.status, headers, chunks, streaming=len(chunks) > 1)


async def _off_loop(items: Iterator[tuple[float, bytes]]) -> AsyncIterator[tuple[float, bytes]]:
    while True:
        item = await asyncio.to_thread(next, items, _DONE)
        if item is _DONE:
            return
        yield item


_DONE: Any = object()


class TapeRouter(Router):
    """Routes every request the provider routing left alone to an :class:`HttpTape`, but
    those to hosts it does not take (:meth:`HttpTape.takes`)."""

    def __init__(self, tape: HttpTape) -> None:
        super().__init__(HostTable(known={}), tape.handle, tape.ahandle)
        self.tape = tape

    def route_to(
        self, host: str | None, port: int | None, origin: str
    ) -> tuple[str | None, str] | None:
        if not host or not self.tape.takes(host, port, origin):
            return None
        return None, origin
