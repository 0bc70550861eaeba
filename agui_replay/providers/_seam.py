"""The provider seam: ``agui.provider``, one model provider per session, recording or replaying.

The recording session (``agui_replay.recording.CassetteSession``) owns one
:class:`SessionProvider` and reaches everything HTTP through it: the loopback server and the
in-process transports, the routing of the SDKs' requests during a run, the upstreams and the
host table, and the tape of the test's other requests (:meth:`SessionProvider.taping`). It
reads the session through the small :class:`_Session` protocol, so this module does not import
``agui_replay.recording``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

from agui_replay.providers._plan import Request
from agui_replay.scrub import scrub

if TYPE_CHECKING:
    import httpx
    import httpx2

    from agui_replay.providers._fake import FakeProvider
    from agui_replay.providers._plan import Plan
    from agui_replay.providers._recorder import ProxyApp, Recorder
    from agui_replay.providers._transport._loopback import LoopbackServer
    from agui_replay.providers._transport._routing import HostTable
    from agui_replay.providers._transport._tape import HttpTape

__all__ = ["SessionProvider"]


class _Session(Protocol):
    """What :class:`SessionProvider` reads from its recording session."""

    @property
    def secrets(self) -> list[str]: ...

    @property
    def base_path(self) -> str: ...

    def start(self) -> None: ...

    def upstream_url(self) -> str: ...

    def bare_upstream(self) -> str | None: ...


class SessionProvider:
    """``agui.provider``: one model provider for the whole session, recording or replaying.

    Point the agent's SDK at :attr:`base_url` (OpenAI clients) or :attr:`anthropic_base_url`,
    or plug one of the in-process transports in. Behind it, each run of the session is served
    by a fresh :class:`~agui_replay.providers.FakeProvider` built from that run's recorded
    interactions (replay), or forwarded to the upstream by a
    :class:`~agui_replay.providers.Recorder` (record).

    The loopback server is the process's (see :class:`_SharedLoopback`): every session of the
    process gets the same port, and the server hands each request to the session in a run at
    that moment, so a client that kept the address of an earlier session (cached at module
    level, built in another test) reaches the current one. It starts on first use and stops
    when no session uses it and nothing holds it (the pytest plugin holds it for the whole
    pytest session: :meth:`hold_server`).
    """

    def __init__(
        self, session: _Session, *, upstream: Any = None, hosts: Iterable[str] = ()
    ) -> None:
        self._session = session
        self._upstream = upstream
        self._hosts = list(hosts)
        self._host_table: HostTable | None = None
        self._server: LoopbackServer | None = None
        self._lock = threading.Lock()
        self.fake: FakeProvider | None = None
        """The fake serving the current (or last) replayed run."""
        self.recorder: Recorder | None = None
        """The recorder of this session's recorded runs (created when the first one starts)."""
        self._proxies: dict[str, ProxyApp] = {}
        self._env_before: dict[str, str] = {}
        self._mode: Literal["idle", "replay", "record"] = "idle"

    # --- what the agent uses ------------------------------------------------------------------

    def _ensure_server(self) -> LoopbackServer:
        with self._lock:
            if self._server is None:
                self._session.start()
                self._server = _SHARED.server(self)
            return self._server

    @staticmethod
    def hold_server() -> None:
        """Keep the process's loopback server (and its port) alive between sessions, until
        :meth:`release_server`: the pytest plugin holds it from the first test that uses
        ``agui`` to the end of the pytest session, so clients outlive tests."""
        _SHARED.hold()

    @staticmethod
    def release_server() -> None:
        """Undo one :meth:`hold_server`; the server stops once no session uses it."""
        _SHARED.release()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` plus the provider's base path (``/v1`` for OpenAI)."""
        return self._ensure_server().url + self._session.base_path

    @property
    def anthropic_base_url(self) -> str:
        """The bare origin, for ``anthropic.Anthropic(base_url=...)``."""
        return self._ensure_server().anthropic_base_url

    @property
    def gemini_base_url(self) -> str:
        """The bare origin, for ``google.genai.Client(http_options={"base_url": ...})``."""
        return self._ensure_server().gemini_base_url

    @property
    def url(self) -> str:
        """The loopback origin, ``http://127.0.0.1:PORT``."""
        return self._ensure_server().url

    def route_url(self, provider: str) -> str:
        """The loopback base URL of ``provider``'s route (``.../_agui/openai/v1``): what
        ``OPENAI_BASE_URL`` and friends are set to during a run; requests there are
        recorded and replayed as that provider's."""
        from agui_replay.providers._transport._routing import ENV_VARS, ROUTE_PREFIX

        path = ENV_VARS[provider][1] if provider in ENV_VARS else ""
        return f"{self.url}{ROUTE_PREFIX}{provider}{path}"

    @contextlib.contextmanager
    def routing(self) -> Iterator[None]:
        """For the span of a run: requests of every ``httpx2`` / ``httpx`` client to a known
        provider host (or to this loopback server) are answered in process by this provider,
        and the providers' base-URL variables point at the loopback routes."""
        from agui_replay.providers._transport._routing import (
            Router,
            intercepting,
            provider_environment,
        )

        server = self._ensure_server()
        router = Router(self.host_table, self.answer, self.aanswer, own=(server.host, server.port))
        with intercepting(router), provider_environment(server.url) as before:
            self._env_before = before
            yield

    def upstreams(self) -> dict[str, str]:
        """Provider name -> upstream base URL, as configured (``default``: a bare URL); an
        ``upstream`` factory is called the first time, once a run records."""
        from agui_replay.providers._transport._routing import upstream_map

        upstream = self._upstream
        if (
            callable(upstream)
            and not isinstance(upstream, str)
            and not hasattr(upstream, "base_url")
        ):
            upstream = upstream()  # a factory, called only now that a run records
            self._upstream = upstream
        return upstream_map(upstream)

    @property
    def host_table(self) -> HostTable:
        """The provider hosts routed during runs: the known ones and the session's ``hosts``."""
        if self._host_table is None:
            from agui_replay.providers._transport._routing import HostTable

            self._host_table = HostTable(self._hosts)
        return self._host_table

    @contextlib.contextmanager
    def taping(
        self,
        mode: Literal["record", "replay"],
        *,
        ignore: Iterable[str] = (),
        drop: Iterable[str] | None = None,
        match_on: Iterable[Any] = (),
        where: str = "",
        loader: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        faults: Iterable[Any] = (),
    ) -> Iterator[HttpTape]:
        """For the block: requests to hosts other than the model providers are recorded with
        their response chunks (``mode="record"``), or replayed from ``loader()`` with nothing
        sent; ``drop`` hosts get an empty 204 (``None``: the known telemetry hosts). Yields the
        tape (its ``exchanges``, ``errors``...)."""
        from agui_replay.providers._transport._routing import intercepting
        from agui_replay.providers._transport._tape import DEFAULT_DROP_HOSTS, HttpTape, TapeRouter

        tape = HttpTape(
            mode,
            secrets=self._session.secrets,
            ignore=ignore,
            drop=DEFAULT_DROP_HOSTS if drop is None else drop,
            match_on=match_on,
            where=where,
            loader=loader,
            providers=self.host_table,
            faults=faults,
        )
        try:
            with intercepting(TapeRouter(tape)):
                yield tape
        finally:
            tape.close()

    def transport(self) -> httpx2.BaseTransport:
        """An in-process ``httpx2`` transport: ``httpx2.Client(transport=...)``."""
        from agui_replay.providers._transport._httpx import Httpx2Transport

        self._session.start()
        return Httpx2Transport(self.handle)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """An in-process async ``httpx2`` transport."""
        from agui_replay.providers._transport._httpx import Httpx2AsyncTransport

        self._session.start()
        return Httpx2AsyncTransport(self.ahandle)

    def httpx_transport(self) -> httpx.BaseTransport:
        """An in-process ``httpx`` transport."""
        from agui_replay.providers._transport._httpx import HttpxTransport

        self._session.start()
        return HttpxTransport(self.handle)

    def httpx_async_transport(self) -> httpx.AsyncBaseTransport:
        """An in-process async ``httpx`` transport."""
        from agui_replay.providers._transport._httpx import HttpxAsyncTransport

        self._session.start()
        return HttpxAsyncTransport(self.ahandle)

    @property
    def mode(self) -> Literal["idle", "replay", "record"]:
        """What the provider does right now: between runs it is ``"idle"``."""
        return self._mode

    # --- serving ------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
        origin: str | None = None,
    ) -> Plan:
        """:meth:`answer` for a request given in parts."""
        return self.answer(Request(method, path, headers, body, origin, provider))

    async def ahandle(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
        origin: str | None = None,
    ) -> Plan:
        """:meth:`aanswer` for a request given in parts."""
        return await self.aanswer(Request(method, path, headers, body, origin, provider))

    def answer(self, request: Request) -> Plan:
        """Answer one request: the current run's fake (replay) or the recording proxy.

        ``request.provider`` is the provider the request went to (the routing names it; a
        request to the loopback server is the ``default`` provider's, or NAME's on
        ``/_agui/NAME/...``); ``request.origin`` the scheme and host it was sent to."""
        method, headers, body = request.method, request.headers, request.body
        provider, path, origin = _route(request.provider, request.target, request.origin)
        if self._mode == "replay" and self.fake is not None:
            body = self._scrubbed(headers, body)
            return self.fake.handle(method, path, headers, body, provider=provider)
        if self._mode == "record" and self.recorder is not None:
            return self._proxy_for(provider, origin)(method, path, headers, body)
        return self._outside_run(method, path)

    async def aanswer(self, request: Request) -> Plan:
        """:meth:`answer` for an async client."""
        method, headers, body = request.method, request.headers, request.body
        provider, path, origin = _route(request.provider, request.target, request.origin)
        if self._mode == "replay" and self.fake is not None:
            body = self._scrubbed(headers, body)
            return await self.fake.ahandle(method, path, headers, body, provider=provider)
        if self._mode == "record" and self.recorder is not None:
            proxy = self._proxy_for(provider, origin)
            plan = await asyncio.to_thread(proxy, method, path, headers, body)
            # the upstream's body is read in a worker thread, chunk by chunk: a slow stream
            # never blocks the agent's event loop while it records
            plan.abody = _off_loop(iter(plan.body))
            return plan
        return self._outside_run(method, path)

    def _proxy_for(self, provider: str, origin: str | None) -> ProxyApp:
        """The recording proxy of ``provider``: to its upstream (``--agui-upstream NAME=URL``),
        else to the bare upstream's host, else to where the client sent it (the real host)."""
        from agui_replay.providers._transport._routing import (
            BASE_PATHS,
            DEFAULT_PROVIDER,
            ENV_VARS,
            REAL_ORIGINS,
        )

        with self._lock:
            assert self.recorder is not None
            upstreams = self.upstreams()
            client_path = BASE_PATHS.get(provider, "")
            target: str | None
            if provider == DEFAULT_PROVIDER:
                target = None  # the recorder's own upstream; the client uses its path
            elif provider in upstreams:
                target = upstreams[provider]
            elif (bare := self._session.bare_upstream()) is not None:
                parts = urlsplit(bare)  # its host, with the path the client uses
                target = f"{parts.scheme}://{parts.netloc}{client_path}"
            elif (var := ENV_VARS.get(provider, ("", ""))[0]) in self._env_before:
                target = self._env_before[var]  # what the user's environment pointed at
            else:
                real = REAL_ORIGINS.get(provider)
                if origin is None or (real is not None and _is_loopback(origin)):
                    origin = real  # an environment route: the provider's own host
                target = f"{origin or ''}{client_path}"
            key = f"{provider} {target}"
            proxy = self._proxies.get(key)
            if proxy is None:
                if target is None:
                    proxy = self.recorder.app(provider=provider)
                else:
                    proxy = self.recorder.app(
                        target, provider=provider, client_base_path=client_path
                    )
                self._proxies[key] = proxy
            return proxy

    def _scrubbed(self, headers: Mapping[str, str], body: bytes) -> bytes:
        """The request body as the recording stored it: secrets (and auth tokens) scrubbed.

        The recorded request is compared with this one, so a secret the agent sends in a body
        (a key, a configured password) must not make the replay differ from its recording.
        """
        if not body:
            return body
        from agui_replay.providers._interaction import parse_body

        parsed = parse_body(body)
        scrubbed = scrub({"headers": dict(headers), "body": parsed}, secrets=self._session.secrets)
        if scrubbed["body"] == parsed:
            return body
        if isinstance(parsed, str):
            return str(scrubbed["body"]).encode("utf-8")
        return json.dumps(scrubbed["body"], ensure_ascii=False).encode("utf-8")

    def _outside_run(self, method: str, path: str) -> Plan:
        return _unanswered(
            f"{method} {path} arrived outside agui.run(); the session's provider only serves "
            "requests made while a run is in progress",
            path,
        )

    def _replay(
        self,
        interactions: Sequence[Mapping[str, Any]],
        match: Any,
        ignore: Sequence[str] = (),
        *,
        faults: Sequence[Any] = (),
        first_request: int = 0,
    ) -> FakeProvider:
        from agui_replay.providers._fake import FakeProvider

        self.fake = FakeProvider.from_interactions(
            interactions,
            match=match,
            match_ignore=ignore,
            faults=faults,
            first_request=first_request,
        )
        _SHARED.attach(self)  # requests to the process's loopback port come here now
        self._mode = "replay"
        return self.fake

    def _record(self) -> int:
        """Start forwarding to the upstream; returns the index of the run's first interaction."""
        if self.recorder is None:
            from agui_replay.providers._recorder import Recorder

            self.recorder = Recorder(self._session.upstream_url(), secrets=self._session.secrets)
        _SHARED.attach(self)
        self._mode = "record"
        return len(self.recorder.interactions)

    def _recorded_since(self, start: int) -> list[dict[str, Any]]:
        assert self.recorder is not None
        return [i.to_dict() for i in self.recorder.stored_since(start)]

    def _idle(self) -> None:
        self._mode = "idle"

    def close(self) -> None:
        self._mode = "idle"
        self._server = None
        _SHARED.detach(self)
        if self.recorder is not None:
            self.recorder.close()
        self._proxies.clear()


class _SharedLoopback:
    """The loopback server of this process, shared by its sessions.

    One port for the life of the process (of each xdist worker), or at least of the pytest
    session: ``OPENAI_BASE_URL`` and ``agui.provider.base_url`` read the same in every test, so
    a client built in one test (or cached on first use inside an agent) keeps working in the
    next. Each request goes to the attached session that is in a run (the latest attached, if
    several are), else to the latest attached one, which answers that no run is in progress;
    with no session attached it is answered with an error saying no test's session is open.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None
        self._holds = 0
        self._attached: list[weakref.ref[SessionProvider]] = []

    def server(self, provider: SessionProvider) -> LoopbackServer:
        """The running server (started now if need be), with ``provider`` attached."""
        self.attach(provider)
        with self._lock:
            if self._server is None:
                from agui_replay.providers._transport._loopback import LoopbackServer

                self._server = LoopbackServer(self.handle, base_path="")
            return self._server

    def attach(self, provider: SessionProvider) -> None:
        with self._lock:
            self._attached = [r for r in self._attached if r() not in (None, provider)]
            self._attached.append(weakref.ref(provider))

    def detach(self, provider: SessionProvider) -> None:
        with self._lock:
            self._attached = [r for r in self._attached if r() not in (None, provider)]
            self._stop_if_unused()

    def hold(self) -> None:
        with self._lock:
            self._holds += 1

    def release(self) -> None:
        with self._lock:
            self._holds = max(0, self._holds - 1)
            self._stop_if_unused()

    def _stop_if_unused(self) -> None:
        # caller holds _lock
        if self._holds or self._server is None or any(r() is not None for r in self._attached):
            return
        server, self._server = self._server, None
        server.close()

    def current(self) -> SessionProvider | None:
        with self._lock:
            attached = [p for p in (r() for r in self._attached) if p is not None]
        running = [p for p in attached if p.mode != "idle"]
        if running:
            return running[-1]
        return attached[-1] if attached else None

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        provider = self.current()
        if provider is not None:
            return provider.handle(method, path, headers, body)
        _, path, _ = _route(None, path, None)
        return _unanswered(
            f"{method} {path} arrived while no test's agui session is open; the loopback "
            "server answers only requests made during agui.run()",
            path,
        )


def _unanswered(why: str, path: str) -> Plan:
    """An error in the shape of the API ``path`` names, which the SDK does not retry."""
    from agui_replay.providers._formats import error_plan
    from agui_replay.providers._script import detect_api

    return error_plan(
        detect_api(path),
        500,
        f"agui_replay: {why}",
        error_type="agui_replay_error",
        headers=[("x-should-retry", "false")],
    )


_SHARED = _SharedLoopback()


async def _off_loop(items: Iterator[tuple[float, bytes]]) -> AsyncIterator[tuple[float, bytes]]:
    while True:
        item = await asyncio.to_thread(next, items, _DONE)
        if item is _DONE:
            return
        yield item


_DONE: Any = object()


def _route(provider: str | None, path: str, origin: str | None) -> tuple[str, str, str | None]:
    """The provider, its path and the origin of a request; a request that came to the loopback
    server names the provider in its path (``/_agui/NAME/...``)."""
    from agui_replay.providers._transport._routing import DEFAULT_PROVIDER, split_route

    if provider is not None:
        return provider, path, origin
    named, rest = split_route(path)
    if named is None:
        return DEFAULT_PROVIDER, path, origin
    return named, rest, origin


def _is_loopback(origin: str) -> bool:
    host = urlsplit(origin).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")
