"""Record real provider traffic chunk by chunk, scrubbed of secrets before it is stored.

Two forms: a transport wrapper (``httpx2`` / ``httpx``, sync and async) and a loopback proxy::

    recorder = Recorder("https://api.openai.com/v1", secrets=[my_key])
    with recorder.serve() as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key=my_key)
        ...
    fake = recorder.to_fake()          # replays the same chunks, offline

The recorder asks the upstream for ``accept-encoding: identity`` so each stored chunk is the text
that crossed the network. A chunk that ends inside a multi-byte UTF-8 character keeps the partial
bytes for the next chunk (the stored text is always valid). A body whose content type is not
text (AWS's ``application/vnd.amazon.eventstream``) is kept as bytes, one chunk per read, and
scrubbed message by message (:meth:`agui_replay.scrub.Scrubber.binary_stream`).

The headers of an AWS SigV4 signature are handled like secrets: ``Authorization`` and
``X-Amz-Security-Token`` are scrubbed (and their values looked for everywhere else), while
``X-Amz-Date``, ``X-Amz-Content-SHA256``, ``amz-sdk-invocation-id`` and ``amz-sdk-request``,
which change with every request, are not stored at all.
"""

from __future__ import annotations

import codecs
import functools
import threading
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import parse_qsl, quote, urlsplit

import orjson

from agui_replay._secrets import SIGNING_HEADERS, header_value_secrets
from agui_replay.errors import ProviderError
from agui_replay.providers._formats._wire import error_plan
from agui_replay.providers._interaction import (
    Chunk,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    is_text_content_type,
    parse_body,
)
from agui_replay.providers._plan import PASSTHROUGH, Plan, StreamCut, url_target
from agui_replay.providers._transport._loopback import LoopbackServer
from agui_replay.scrub import Scrubber as _Scrub

if TYPE_CHECKING:
    import httpx
    import httpx2

    from agui_replay.providers._fake import FakeProvider, MatchMode

__all__ = [
    "DEFAULT_SCRUB_HEADERS",
    "HOP",
    "SCRUBBED",
    "UNSTORED",
    "Capture",
    "ProxyApp",
    "Recorder",
    "Scrubber",
    "in_flight_order",
]

SCRUBBED = "<scrubbed>"
DEFAULT_SCRUB_HEADERS: tuple[str, ...] = (
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-amz-security-token",
)
# query parameters that carry an API key
_QUERY_KEYS = {"key", "api_key", "api-key"}
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "upgrade"}
"""Headers that describe one connection, not the exchange: never forwarded nor stored."""
UNSTORED = HOP | SIGNING_HEADERS
"""Request headers never stored: :data:`HOP`, and those of one signed attempt (SigV4)."""


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


class Scrubber:
    """Replaces secret values (configured, or seen in auth headers) wherever they appear.

    >>> s = Scrubber(secrets=["sk-1"])
    >>> s.headers({"Authorization": "Bearer sk-2", "x-other": "sk-1 and sk-2"})
    {'authorization': '<scrubbed>', 'x-other': '<scrubbed> and <scrubbed>'}
    """

    def __init__(
        self,
        *,
        secrets: Iterable[str] = (),
        scrub_headers: Iterable[str] = DEFAULT_SCRUB_HEADERS,
        marker: str = SCRUBBED,
    ) -> None:
        self.marker = marker
        self.header_names = {h.lower() for h in scrub_headers}
        self._secrets: set[str] = {s for s in secrets if s}
        self._lock = threading.Lock()

    def learn(self, headers: Mapping[str, str]) -> None:
        """Remember the values of secret headers so they are also scrubbed from bodies."""
        with self._lock:
            for k, v in headers.items():
                if k.lower() in self.header_names and v:
                    # A value too short to be a key (a test's ``api_key="x"``) would rewrite
                    # every occurrence of its letters: the header itself is still scrubbed.
                    self._secrets.update(header_value_secrets(k, v))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret known so far: the configured ones and those learned from requests."""
        with self._lock:
            return tuple(sorted(self._secrets))

    def learn_query(self, target: str) -> None:
        """Remember the API key a request sends in its query string (``?key=...``, as Google
        clients may), so it is scrubbed from the stored path and everywhere else."""
        _, _, query = target.partition("?")
        if not query:
            return
        with self._lock:
            for name, value in parse_qsl(query, keep_blank_values=False):
                if name.lower() in _QUERY_KEYS and value:
                    self._secrets.add(value)
                    self._secrets.add(quote(value, safe=""))

    def text(self, value: str) -> str:
        # longest first so "Bearer sk-1" is replaced whole, not around "sk-1"
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, self.marker)
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            # keys are names chosen by the API, never secrets: rewriting them corrupts JSON
            return {k: self.value(v) for k, v in value.items()}
        return value

    def stream(self, pieces: list[str]) -> list[str]:
        """Scrub the pieces of one stream as one text, so that a secret split between two
        network reads is still found, and the text streamed in its SSE frames (a secret the
        model echoed across frames); the pieces keep their count (chunk boundaries survive)."""
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        if not secrets:
            return pieces
        return self._scrub(secrets).stream(pieces)

    def binary_stream(self, pieces: list[bytes]) -> list[bytes]:
        """:meth:`stream` for the reads of a binary body (an AWS event stream): each message's
        JSON payload is scrubbed and the message re-encoded (new CRCs) when it changed."""
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        if not secrets:
            return pieces
        return self._scrub(secrets).binary_stream(pieces)

    def _scrub(self, secrets: list[str]) -> _Scrub:
        # Only these literal secrets: the key-shaped patterns are the cassette writer's job.
        return _Scrub(secrets=tuple(secrets), patterns=(), replacement=self.marker)

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        self.learn(headers)
        out = {}
        for k, v in headers.items():
            key = k.lower()
            out[key] = self.marker if key in self.header_names else self.text(v)
        return out


def in_flight_order(
    spans: Sequence[tuple[int, int] | None], key: Callable[[int], Any]
) -> list[int]:
    """The places of recorded exchanges as a cassette stores them. ``spans[n]`` is when
    exchange n was sent and when its response ended, on one clock (``None``: an exchange never
    moved, such as a long-lived stream); exchanges keep the order they were sent in, but a run
    of them whose spans overlap (in flight at the same time) is sorted by ``key``."""
    order: list[int] = []
    group: list[int] = []
    reach = 0
    for n, span in enumerate(spans):
        if span is not None and group and span[0] < reach:
            group.append(n)
            reach = max(reach, span[1])
            continue
        order += sorted(group, key=key)
        if span is None:
            order.append(n)
            group, reach = [], 0
        else:
            group, reach = [n], span[1]
    return order + sorted(group, key=key)


class Capture:
    """A response being recorded, read by read: each read becomes a chunk with its offset
    (text decoded and scrubbed as it arrives, the whole stream scrubbed again at its end, so a
    secret split between reads is found too). The recorder's and the tape's.

    ``whole_body``: a response that is not an event stream is stored as its parsed body
    instead of its chunks (a provider's); ``scrub_binary``: a binary body's messages are
    scrubbed at the end (an AWS event stream's); ``on_chunk`` is called before each chunk is
    added (the tape counts the requests sent by then).
    """

    def __init__(
        self,
        scrubber: Scrubber,
        response: RecordedResponse,
        *,
        whole_body: bool = False,
        scrub_binary: bool = True,
        on_chunk: Callable[[], None] | None = None,
    ) -> None:
        self.scrubber = scrubber
        self.stored = response
        self.started = time.monotonic()
        self.interaction: Interaction | None = None
        self.binary = False
        self._whole_body, self._scrub_binary = whole_body, scrub_binary
        self.on_chunk = on_chunk
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._raw: list[bytes] = []
        self._lock = threading.Lock()
        self._finished = False

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        self.stored.status = status
        self.stored.headers = {
            k: v for k, v in self.scrubber.headers(headers).items() if k not in HOP
        }
        self.binary = not is_text_content_type(self.stored.headers.get("content-type"))

    def _add(self, data: str | bytes) -> None:
        if self.on_chunk is not None:
            self.on_chunk()
        self.stored.chunks.append(Chunk(round(time.monotonic() - self.started, 6), data))

    def chunk(self, data: bytes) -> None:
        if self._whole_body:
            self._raw.append(data)
        if self.binary:
            if data:
                self._add(bytes(data))
            return
        text = self._decoder.decode(data)
        if text:
            self._add(self.scrubber.text(text))

    def relay(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Pass a response body through, recording each read; the capture ends with it."""
        try:
            for data in chunks:
                self.chunk(data)
                yield data
        finally:
            self.finish()

    async def arelay(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        try:
            async for data in chunks:
                self.chunk(data)
                yield data
        finally:
            self.finish()

    def finish(self) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
        resp = self.stored
        if self.binary:
            if self._scrub_binary:
                # bytes and read boundaries kept; secrets scrubbed inside each message
                pieces = self.scrubber.binary_stream([c.raw for c in resp.chunks])
                for chunk, raw in zip(resp.chunks, pieces, strict=True):
                    chunk.data = raw
            return
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._add(tail)
        # Each read was scrubbed on arrival; a secret cut in two by a read boundary is only
        # visible in the whole stream.
        texts = [c.data for c in resp.chunks if isinstance(c.data, str)]
        for chunk, data in zip(resp.chunks, self.scrubber.stream(texts), strict=True):
            chunk.data = data
        if self._whole_body and "event-stream" not in resp.headers.get("content-type", ""):
            # not streamed: keep the body, parsed when JSON
            resp.body = self.scrubber.value(parse_body(b"".join(self._raw)))
            resp.chunks = []


class Recorder:
    """Records requests to ``upstream`` and each response chunk with its time offset.

    ``upstream`` is a base URL (``"https://api.openai.com/v1"``) or anything with a
    ``base_url`` (a running fake's server); only the proxy form (:meth:`serve`) needs it.
    """

    def __init__(
        self,
        upstream: str | _HasBaseUrl | None = None,
        *,
        secrets: Iterable[str] = (),
        scrub_headers: Iterable[str] = DEFAULT_SCRUB_HEADERS,
        marker: str = SCRUBBED,
    ) -> None:
        if upstream is not None and not isinstance(upstream, str):
            upstream = upstream.base_url
        self.upstream: str | None = upstream
        self.scrubber = Scrubber(secrets=secrets, scrub_headers=scrub_headers, marker=marker)
        self.interactions: list[Interaction] = []
        self.failures: list[tuple[Interaction, str]] = []
        """Each interaction the upstream failed (a transport error, a 5xx or a 429), with
        what happened: the URL and the exception or status."""
        self._lock = threading.Lock()
        self._servers: list[LoopbackServer] = []
        self._apps: list[ProxyApp] = []
        self._clock = 0
        """Counts the requests sent and the response chunks read, in the order they were."""
        self._spans: dict[int, list[int]] = {}
        """Per interaction (by ``id``): the clock when it was sent and when its last chunk
        so far arrived (``0``: none yet)."""

    # --- capture --------------------------------------------------------------------------------

    def _begin(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        provider: str | None = None,
    ) -> Capture:
        scrub = self.scrubber
        req_headers = {k: v for k, v in scrub.headers(headers).items() if k not in UNSTORED}
        scrub.learn_query(path)
        request = RecordedRequest(
            method, scrub.text(path), req_headers, scrub.value(parse_body(body))
        )
        interaction = Interaction(request, RecordedResponse(0), provider)
        capture = Capture(self.scrubber, interaction.response, whole_body=True)
        capture.interaction = interaction
        with self._lock:
            self.interactions.append(interaction)
            self._clock += 1
            span = self._spans[id(interaction)] = [self._clock, 0]
        capture.on_chunk = functools.partial(self._read, span)
        return capture

    def _read(self, span: list[int]) -> None:
        """Note on the clock that a chunk of the response ``span`` times has arrived."""
        with self._lock:
            self._clock += 1
            span[1] = self._clock

    def stored_since(self, start: int) -> list[Interaction]:
        """The interactions from ``start`` as a cassette stores them: in the order they were
        sent, but those in flight at the same time (a chunk of one arrived after another was
        sent) sorted by request, then response, whichever thread or task sent first."""
        with self._lock:
            recorded = self.interactions[start:]
            spans = [self._spans.get(id(i), [0, 0]) for i in recorded]

        def content(n: int) -> tuple[bytes, str]:
            request = orjson.dumps(recorded[n].request.to_dict(), option=orjson.OPT_SORT_KEYS)
            response = recorded[n].response
            said = [c.data for c in response.chunks]
            return request, repr((response.status, response.body, said))

        order = in_flight_order([(a, b) if b else None for a, b in spans], content)
        return [recorded[n] for n in order]

    def to_fake(
        self, *, realtime: bool = False, match: MatchMode = "unordered", **options: Any
    ) -> FakeProvider:
        """A FakeProvider replaying what was recorded so far."""
        from agui_replay.providers._fake import FakeProvider

        return FakeProvider.from_interactions(
            list(self.interactions), realtime=realtime, match=match, **options
        )

    # --- transport wrappers ----------------------------------------------------------------------

    def transport(self, inner: httpx2.BaseTransport | None = None) -> httpx2.BaseTransport:
        """Wrap an ``httpx2`` transport (default ``httpx2.HTTPTransport()``)."""
        import httpx2

        return cast(
            "httpx2.BaseTransport", _wrap_sync(httpx2, self, inner or httpx2.HTTPTransport())
        )

    def async_transport(
        self, inner: httpx2.AsyncBaseTransport | None = None
    ) -> httpx2.AsyncBaseTransport:
        """Wrap an async ``httpx2`` transport (default ``httpx2.AsyncHTTPTransport()``)."""
        import httpx2

        wrapped = _wrap_async(httpx2, self, inner or httpx2.AsyncHTTPTransport())
        return cast("httpx2.AsyncBaseTransport", wrapped)

    def httpx_transport(self, inner: httpx.BaseTransport | None = None) -> httpx.BaseTransport:
        """Wrap an ``httpx`` transport (default ``httpx.HTTPTransport()``)."""
        import httpx

        return cast("httpx.BaseTransport", _wrap_sync(httpx, self, inner or httpx.HTTPTransport()))

    def httpx_async_transport(
        self, inner: httpx.AsyncBaseTransport | None = None
    ) -> httpx.AsyncBaseTransport:
        """Wrap an async ``httpx`` transport (default ``httpx.AsyncHTTPTransport()``)."""
        import httpx

        wrapped = _wrap_async(httpx, self, inner or httpx.AsyncHTTPTransport())
        return cast("httpx.AsyncBaseTransport", wrapped)

    # --- proxy -----------------------------------------------------------------------------------

    def app(
        self,
        upstream: str | _HasBaseUrl | None = None,
        *,
        provider: str | None = None,
        client_base_path: str | None = None,
    ) -> ProxyApp:
        """The recording proxy as a provider app, to serve your own way.

        ``upstream`` (default: the recorder's) is where it forwards; ``provider`` tags every
        interaction it records (one recorder can record several providers, in the order the
        agent called them); ``client_base_path`` is the path prefix of the URLs the client
        sends (``/v1`` for an OpenAI SDK talking to ``api.openai.com``), replaced by the
        upstream's own path when they differ (default: the client already uses the
        upstream's path).

        It forwards each request to ``upstream`` and records the exchange, as :meth:`serve`
        does, but starts no server: put it behind a
        :class:`~agui_replay.providers.LoopbackServer`, an in-process transport
        (``Httpx2Transport(app)``) or a router of yours that picks an app per request.
        :meth:`ProxyApp.close` (or :meth:`close`) closes its connections to the upstream.

        >>> recorder = Recorder("https://api.openai.com/v1")
        >>> app = recorder.app()
        >>> app.origin
        'https://api.openai.com'
        >>> recorder.close()
        """
        if upstream is not None and not isinstance(upstream, str):
            upstream = upstream.base_url
        target = upstream or self.upstream
        if target is None:
            raise ProviderError("Recorder.app() needs an upstream base URL: Recorder(upstream)")
        parts = urlsplit(target)
        rebase = None
        if client_base_path is not None:
            rebase = (client_base_path.rstrip("/"), parts.path.rstrip("/"))
        app = ProxyApp(self, f"{parts.scheme}://{parts.netloc}", provider=provider, rebase=rebase)
        with self._lock:
            self._apps.append(app)
        return app

    def serve(self) -> LoopbackServer:
        """A loopback proxy to ``upstream``; its ``base_url`` mirrors the upstream's path."""
        if self.upstream is None:
            raise ProviderError("Recorder.serve() needs an upstream base URL: Recorder(upstream)")
        app = self.app()
        server = LoopbackServer(
            app, base_path=urlsplit(self.upstream).path or "", on_close=app.close
        )
        self._servers.append(server)
        return server

    def close(self) -> None:
        """Stop the servers of :meth:`serve` and close every :meth:`app`."""
        for s in self._servers:
            s.close()
        self._servers.clear()
        with self._lock:
            apps, self._apps = self._apps, []
        for app in apps:
            app.close()


class ProxyApp:
    """A provider app (see :data:`~agui_replay.providers.App`) that forwards each request to
    ``origin`` (scheme and host of the upstream) and records it in ``recorder``, streaming the
    response back chunk by chunk. Made by :meth:`Recorder.app`."""

    def __init__(
        self,
        recorder: Recorder,
        origin: str,
        *,
        provider: str | None = None,
        rebase: tuple[str, str] | None = None,
    ) -> None:
        import httpx2

        self.recorder = recorder
        self.origin = origin
        self.provider = provider
        self.rebase = rebase
        self.client = httpx2.Client(timeout=httpx2.Timeout(600.0, connect=10.0))

    def upstream_path(self, path: str) -> str:
        """Where ``path`` (as the client sent it) goes on the upstream."""
        if self.rebase is None:
            return path
        client, upstream = self.rebase
        if client == upstream:
            return path
        if not client and upstream and (path == upstream or path.startswith(upstream + "/")):
            return path  # a client of an unknown base path that already uses the upstream's
        if client and (path == client or path.startswith((client + "/", client + "?"))):
            path = path[len(client) :]
        return upstream + path

    def close(self) -> None:
        """Close the connections to the upstream (idempotent)."""
        self.client.close()

    def _failed(self, capture: Capture, what: str) -> None:
        with self.recorder._lock:
            assert capture.interaction is not None
            self.recorder.failures.append((capture.interaction, what))

    def __call__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        import httpx2

        capture = self.recorder._begin(method, path, headers, body, self.provider)
        fwd = {k: v for k, v in headers.items() if k.lower() not in HOP}
        fwd["accept-encoding"] = "identity"
        request = self.client.build_request(
            method,
            self.origin + self.upstream_path(path),
            headers=fwd,
            content=body,
            extensions={PASSTHROUGH: True},
        )
        try:
            response = self.client.send(request, stream=True)
        except (httpx2.HTTPError, OSError) as exc:  # OSError: a refusal the pool let through
            capture.response(502, {"content-type": "application/json"})
            capture.finish()
            self._failed(capture, f"{method} {request.url}: {type(exc).__name__}: {exc}")
            return error_plan(None, 502, f"agui_replay recorder: upstream failed: {exc}")
        capture.response(response.status_code, dict(response.headers.items()))
        if response.status_code >= 500 or response.status_code == 429:
            self._failed(capture, f"{method} {request.url} answered {response.status_code}")
        out_headers = [
            (k, v)
            for k, v in response.headers.items()
            if k.lower() not in HOP and k.lower() != "content-encoding"
        ]

        def body_writes() -> Iterator[tuple[float, bytes]]:
            try:
                for data in response.iter_raw():
                    capture.chunk(data)
                    yield 0.0, data
            except httpx2.HTTPError:
                raise StreamCut from None
            finally:
                capture.finish()
                response.close()

        content_type = response.headers.get("content-type", "")
        streaming = "event-stream" in content_type or not is_text_content_type(content_type)
        return Plan(response.status_code, out_headers, body_writes(), streaming=streaming)


# --- transport wrappers -----------------------------------------------------------------------
# httpx and httpx2 share their transport API but not their types (a response must carry the
# library's own ByteStream subclass, a wrapper must subclass its BaseTransport), so the wrappers
# take the library module as an argument; the recording itself is _open and Capture.relay.


def _open(recorder: Recorder, request: httpx.Request | httpx2.Request, body: bytes) -> Capture:
    capture = recorder._begin(
        request.method, url_target(request.url), dict(request.headers.items()), body
    )
    request.headers["accept-encoding"] = "identity"
    return capture


def _wrap_sync(lib: Any, recorder: Recorder, inner: Any) -> Any:
    """A sync transport of ``lib`` (the ``httpx`` or ``httpx2`` module: their transport and
    stream APIs are the same) that records through ``recorder`` what ``inner`` sends back."""

    class _Stream(lib.SyncByteStream):  # type: ignore[misc]  # lib is a module passed in
        def __init__(self, inner_stream: Any, capture: Capture) -> None:
            self._inner = inner_stream
            self._capture = capture

        def __iter__(self) -> Iterator[bytes]:
            return self._capture.relay(self._inner)

        def close(self) -> None:
            self._inner.close()

    class _Transport(lib.BaseTransport):  # type: ignore[misc]
        def handle_request(self, request: Any) -> Any:
            capture = _open(recorder, request, request.read())
            response = inner.handle_request(request)
            capture.response(response.status_code, dict(response.headers.items()))
            return _relayed(lib, request, response, _Stream(response.stream, capture))

        def close(self) -> None:
            inner.close()

    return _Transport()


def _wrap_async(lib: Any, recorder: Recorder, inner: Any) -> Any:
    """The async form of :func:`_wrap_sync`."""

    class _Stream(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner_stream: Any, capture: Capture) -> None:
            self._inner = inner_stream
            self._capture = capture

        def __aiter__(self) -> AsyncIterator[bytes]:
            return self._capture.arelay(self._inner)

        async def aclose(self) -> None:
            await self._inner.aclose()

    class _Transport(lib.AsyncBaseTransport):  # type: ignore[misc]
        async def handle_async_request(self, request: Any) -> Any:
            capture = _open(recorder, request, await request.aread())
            response = await inner.handle_async_request(request)
            capture.response(response.status_code, dict(response.headers.items()))
            return _relayed(lib, request, response, _Stream(response.stream, capture))

        async def aclose(self) -> None:
            await inner.aclose()

    return _Transport()


def _relayed(lib: Any, request: Any, response: Any, stream: Any) -> Any:
    """``response`` as the agent's client gets it, its body read through the recording stream."""
    return lib.Response(
        response.status_code,
        headers=response.headers,
        stream=stream,
        request=request,
        extensions=response.extensions,
    )
