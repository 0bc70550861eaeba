"""FakeProvider: a scripted model provider speaking OpenAI, Anthropic, Gemini and AWS Bedrock
(Converse) HTTP; :meth:`FakeProvider.from_interactions` one whose requests a replay of recorded
interactions answers (:class:`~agui_replay.providers._replaying.ProviderReplay`)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from agui_replay.errors import ProviderError, ScriptExhaustedError
from agui_replay.providers._formats import encode_turn, error_plan, stream_encoder
from agui_replay.providers._formats._wire import StreamEncoder, TurnContext
from agui_replay.providers._interaction import Interaction, parse_body
from agui_replay.providers._matchers import match_ignore_globs
from agui_replay.providers._plan import Plan, StreamCut, json_plan
from agui_replay.providers._replaying import MatchMode, ProviderReplay
from agui_replay.providers._script import (
    Delta,
    FunctionTurn,
    ProviderRequest,
    Reasoning,
    ScriptTurn,
    Text,
    ToolCall,
    Usage,
    coerce_yielded,
    detect_api,
    parts_to_deltas,
)
from agui_replay.providers._transport._loopback import LoopbackServer

if TYPE_CHECKING:
    import httpx
    import httpx2

__all__ = ["FakeProvider", "MatchMode", "detect_api"]

_NO_RETRY = ("x-should-retry", "false")


class FakeProvider:
    """A fake OpenAI / Anthropic / Gemini / Bedrock provider that streams scripted turns chunk
    by chunk.

    >>> fake = FakeProvider()
    >>> _ = fake.reply("Hel", "lo")
    >>> _ = fake.tool_call("get_weather", '{"ci', 'ty": "Paris"}')
    >>> len(fake.unserved)
    2

    Plug it in with ``fake.serve()`` (a loopback HTTP server), ``fake.transport()`` /
    ``fake.async_transport()`` (httpx2) or ``fake.httpx_transport()`` /
    ``fake.httpx_async_transport()`` (httpx). Failures inside the fake (a request beyond the
    script, a replay mismatch) answer HTTP 500 with a JSON explanation *and* are kept in
    ``fake.errors``; :meth:`check` (run by the ``fake_provider`` fixture) raises them.
    """

    __test__ = False

    def __init__(
        self,
        *,
        seed: int | str = 0,
        created: int = 1_700_000_000,
        chunk_delay: float = 0.0,
        function: FunctionTurn | None = None,
        allow_unused_turns: bool = False,
        match: MatchMode = "unordered",
        ignore_fields: Iterable[str] = (),
        match_ignore: Iterable[str] = (),
        ids: Literal["stable", "random"] = "stable",
    ) -> None:
        if match not in ("order", "unordered", "none"):
            raise ProviderError(f"match must be 'order', 'unordered' or 'none', got {match!r}")
        if ids not in ("stable", "random"):
            raise ProviderError(f"ids must be 'stable' or 'random', got {ids!r}")
        self.ids = ids
        """``"stable"``: ids and ``created`` follow ``seed``; ``"random"``: drawn anew for
        every response (``chatcmpl-``, ``call_``, ``toolu_``, ``msg_``...), like a real provider."""
        self.seed = seed
        self.created = created
        self.chunk_delay = chunk_delay
        self.function = function
        self.allow_unused_turns = allow_unused_turns
        self.match: MatchMode = match
        self.ignore_fields = frozenset(ignore_fields)
        self.match_ignore, _ = match_ignore_globs(match_ignore)
        """JSON-pointer globs (``/messages/0/content``, ``/tools/*/description``) left out of
        the request bodies when a request is compared with a recorded one."""
        self.turns: list[Any] = []
        """The scripted turns (a replaying fake: its recorded interactions)."""
        self.served: list[bool] = []
        self.requests: list[ProviderRequest] = []
        self.errors: list[ProviderError] = []
        self._replay: ProviderReplay | None = None
        self._lock = threading.Lock()
        self._servers: list[LoopbackServer] = []

    def _turn_context(self, position: int, request: ProviderRequest) -> TurnContext:
        if self.ids == "random":
            # os.urandom, not uuid: the uuid generators are deterministic during a run.
            salt = os.urandom(12).hex()
            stamp = self.created + int.from_bytes(os.urandom(3), "big")
            return TurnContext(f"{self.seed}:{salt}", position, stamp, request)
        return TurnContext(self.seed, position, self.created + position, request)

    # --- scripting ----------------------------------------------------------------------------

    def turn(
        self,
        *parts: Text | Reasoning | ToolCall,
        finish_reason: str | None = None,
        usage: Usage | None = None,
        cut_after: int | None = None,
        malformed_after: int | None = None,
        malformed_data: str = '{"truncated": ',
        delay: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ScriptTurn:
        """Add a turn made of parts, e.g. ``fake.turn(Reasoning("hm"), Text("Hi"))``.

        ``cut_after=n`` drops the connection after n scripted deltas; ``malformed_after=n``
        sends a frame whose data is ``malformed_data`` (not JSON) after n deltas; ``delay``
        waits before each chunk (default: the fake's ``chunk_delay``).
        """
        t = ScriptTurn(
            deltas=parts_to_deltas(parts),
            finish_reason=finish_reason,
            usage=usage,
            cut_after=cut_after,
            malformed_after=malformed_after,
            malformed_data=malformed_data,
            delay=delay,
            headers=dict(headers or {}),
        )
        return self._add(t)

    def reply(self, *chunks: str, **options: Any) -> ScriptTurn:
        """Add a text turn streamed in exactly these chunks: ``fake.reply("Hel", "lo")``."""
        return self.turn(Text(*chunks), **options)

    def tool_call(
        self,
        name: str,
        *fragments: str,
        id: str | None = None,
        **options: Any,
    ) -> ScriptTurn:
        """Add a turn with one tool call whose arguments stream in exactly these fragments."""
        return self.turn(ToolCall(name, *fragments, id=id), **options)

    def tool_calls(self, *calls: ToolCall, **options: Any) -> ScriptTurn:
        """Add a turn with several tool calls: ``fake.tool_calls(ToolCall("a", "{}"), ...)``."""
        return self.turn(*calls, **options)

    def error(
        self,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ScriptTurn:
        """Add a turn answered with an HTTP error (429, 500...) in the provider's error shape."""
        if status < 400:
            raise ProviderError(f"error() needs an HTTP error status (>= 400), got {status}")
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs["retry-after"] = f"{retry_after:g}"
        t = ScriptTurn(
            status=status,
            error_message=message or f"scripted error {status}",
            error_type=error_type,
            headers=hdrs,
        )
        return self._add(t)

    def generate(self, function: FunctionTurn, **options: Any) -> ScriptTurn:
        """Add a turn whose deltas come from ``function(request)``, a (async) generator.

        It yields ``str`` (text), ``TextDelta``, ``ReasoningDelta``, ``ToolCallDelta`` or a
        ``Usage``.
        """
        t = ScriptTurn(function=function, **options)
        return self._add(t)

    def _add(self, turn: ScriptTurn) -> ScriptTurn:
        with self._lock:
            self.turns.append(turn)
            self.served.append(False)
        return turn

    @classmethod
    def from_interactions(
        cls,
        interactions: Iterable[Interaction | Mapping[str, Any]],
        *,
        realtime: bool = False,
        match: MatchMode = "unordered",
        faults: Iterable[Any] = (),
        first_request: int = 0,
        **options: Any,
    ) -> FakeProvider:
        """A fake that replays recorded interactions (same chunk bytes and boundaries).

        ``realtime=True`` waits the recorded time between chunks; ``match`` is
        ``"unordered"`` (the default: the first unserved recorded request that is equal, so
        requests in flight at once are matched by content), ``"order"`` (request n must equal
        recorded request n) or ``"none"`` (serve in order, never compare). ``faults`` (built by
        :mod:`agui_replay.faults`) change the responses of the interactions they name: a
        fault's ``request`` counts from ``first_request`` (the interactions of a test's
        earlier runs); the faults that fired are in :attr:`fired`.
        """
        fake = cls(match=match, **options)
        fake._replay = ProviderReplay(
            interactions,
            realtime=realtime,
            match=match,
            match_ignore=fake.match_ignore,
            ignore_fields=fake.ignore_fields,
            faults=faults,
            first_request=first_request,
        )
        fake.turns = fake._replay.reel.entries
        return fake

    # --- state --------------------------------------------------------------------------------

    @property
    def last_request(self) -> ProviderRequest:
        if not self.requests:
            raise ProviderError("the fake provider has not received any request yet")
        return self.requests[-1]

    @property
    def ignored(self) -> list[str]:
        """The requests of a replay that matched only once ``match_ignore`` left fields out,
        each with the first such field: ``"request #0: /messages/0/content"``."""
        return self._replay.ignored if self._replay is not None else []

    @property
    def fired(self) -> list[Any]:
        """The faults of a replay (:mod:`agui_replay.faults`) that changed a response."""
        return self._replay.fired if self._replay is not None else []

    @property
    def unserved(self) -> list[str]:
        """Descriptions of the turns no request consumed, with their script positions."""
        if self._replay is not None:
            return self._replay.unserved
        return [
            f"turn #{i}: {t.describe()}"
            for i, (t, done) in enumerate(zip(self.turns, self.served, strict=False))
            if not done
        ]

    def check(self, *, allow_unused: bool | None = None) -> None:
        """Raise the first failure seen while serving, then complain about unserved turns."""
        if self.errors:
            first = self.errors[0]
            if len(self.errors) == 1:
                raise first
            more = "\n".join(f"  - {e}" for e in self.errors[1:])
            raise type(first)(
                f"{first}\n{len(self.errors) - 1} more provider error(s):\n{more}"
            ) from first
        allow = self.allow_unused_turns if allow_unused is None else allow_unused
        if not allow and self.unserved:
            listing = "\n".join("  " + u for u in self.unserved)
            raise ProviderError(
                f"{len(self.unserved)} scripted turn(s) were never requested:\n{listing}\n"
                "(remove them, or allow this with @pytest.mark.agui_allow_unused_turns or "
                "FakeProvider(allow_unused_turns=True))"
            )

    # --- plug-in forms ------------------------------------------------------------------------

    def serve(self) -> LoopbackServer:
        """Start a loopback server on 127.0.0.1 (free port); use as a context manager.

        ``server.base_url`` (ends in ``/v1``) is for ``openai.OpenAI(base_url=...)``;
        ``server.anthropic_base_url`` (no ``/v1``) for ``anthropic.Anthropic(base_url=...)``;
        ``server.url`` (the bare origin) for
        ``boto3.client("bedrock-runtime", endpoint_url=...)``.
        """
        server = LoopbackServer(self.handle)
        self._servers.append(server)
        return server

    def transport(self) -> httpx2.BaseTransport:
        """An in-process ``httpx2`` transport: ``httpx2.Client(transport=fake.transport())``."""
        from agui_replay.providers._transport._httpx import Httpx2Transport

        return Httpx2Transport(self.handle)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """An in-process async ``httpx2`` transport."""
        from agui_replay.providers._transport._httpx import Httpx2AsyncTransport

        return Httpx2AsyncTransport(self.ahandle)

    def httpx_transport(self) -> httpx.BaseTransport:
        """An in-process ``httpx`` transport."""
        from agui_replay.providers._transport._httpx import HttpxTransport

        return HttpxTransport(self.handle)

    def httpx_async_transport(self) -> httpx.AsyncBaseTransport:
        """An in-process async ``httpx`` transport."""
        from agui_replay.providers._transport._httpx import HttpxAsyncTransport

        return HttpxAsyncTransport(self.ahandle)

    def close(self) -> None:
        """Stop every loopback server this fake started."""
        for s in self._servers:
            s.close()
        self._servers.clear()

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- serving ------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
    ) -> Plan:
        """Answer one HTTP request (what the server and the sync transports call).

        ``provider`` names the provider the request went to (the plugin's routing passes it):
        a fake replaying several providers' interactions then serves the request only from the
        interactions recorded for that provider.
        """
        selected = self._select(method, path, headers, body, provider)
        if isinstance(selected, Plan):
            return selected
        request, turn, position = selected
        if _streams_lazily(turn, request):
            return self._lazy_sync(request, turn, position)
        try:
            deltas, turn = _resolve_sync(turn, request)
        except Exception as exc:
            return self._fail(request, _wrap(exc, request, position), 500)
        return self._encode(request, turn, deltas, position)

    async def ahandle(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        *,
        provider: str | None = None,
    ) -> Plan:
        """The async form of :meth:`handle` (async generators run on the caller's loop)."""
        selected = self._select(method, path, headers, body, provider)
        if isinstance(selected, Plan):
            return selected
        request, turn, position = selected
        if _streams_lazily(turn, request):
            return await self._lazy_async(request, turn, position)
        try:
            deltas, turn = await _resolve_async(turn, request)
        except Exception as exc:
            return self._fail(request, _wrap(exc, request, position), 500)
        return self._encode(request, turn, deltas, position)

    # A streamed function-driven turn is encoded while its generator runs: the generator is
    # advanced to its first delta before the response starts (so an early failure is still an
    # HTTP 500), then each later delta is written as soon as it is yielded. A failure after
    # that is recorded and the stream is cut, as a dying upstream would cut it.

    def _lazy_sync(self, request: ProviderRequest, turn: ScriptTurn, position: int) -> Plan:
        assert turn.function is not None
        close: Callable[[], None] = _nothing
        try:
            produced: Any = turn.function(request)
            if hasattr(produced, "__aiter__"):
                stepper = _AsyncStepper(produced)
                source: Iterator[object] = stepper
                close = stepper.close
            else:
                source = iter(produced)
                close = getattr(source, "close", _nothing)
            lazy = _Lazy(turn.usage)
            for item in source:
                if lazy.prime(item):
                    break
            enc = self._lazy_encoder(request, turn, position, lazy)
        except Exception as exc:
            close()
            return self._fail(request, _wrap(exc, request, position), 500)
        if isinstance(enc, Plan):
            close()
            return enc
        return enc.lazy_plan(body=self._lazy_writes(request, position, enc, lazy, source, close))

    async def _lazy_async(self, request: ProviderRequest, turn: ScriptTurn, position: int) -> Plan:
        assert turn.function is not None
        source: _AsyncSource | None = None
        try:
            source = _AsyncSource(turn.function(request))
            lazy = _Lazy(turn.usage)
            while True:
                more, item = await source.next()
                if not more or lazy.prime(item):
                    break
            enc = self._lazy_encoder(request, turn, position, lazy)
        except Exception as exc:
            if source is not None:
                await source.close()
            return self._fail(request, _wrap(exc, request, position), 500)
        if isinstance(enc, Plan):
            await source.close()
            return enc
        return enc.lazy_plan(abody=self._lazy_awrites(request, position, enc, lazy, source))

    def _lazy_encoder(
        self, request: ProviderRequest, turn: ScriptTurn, position: int, lazy: _Lazy
    ) -> StreamEncoder | Plan:
        assert request.api is not None
        done = _with(turn, lazy.usage)
        if lazy.first is None:
            # the generator ended before any delta: nothing left to stream lazily
            return self._encode(request, done, [], position)
        ctx = self._turn_context(position, request)
        delay = turn.delay if turn.delay is not None else self.chunk_delay
        enc = stream_encoder(
            request.api, ctx, done, delay, first=lazy.first, start_usage=lazy.usage
        )
        enc.start()
        enc.feed(lazy.first)
        return enc

    def _lazy_writes(
        self,
        request: ProviderRequest,
        position: int,
        enc: StreamEncoder,
        lazy: _Lazy,
        source: Iterator[object],
        close: Callable[[], None],
    ) -> Iterator[tuple[float, bytes]]:
        try:
            for frame in enc.take():
                yield enc.delay, frame
            while not enc.cut:
                try:
                    item = next(source)
                except StopIteration:
                    break
                lazy.feed(enc, item)
                for frame in enc.take():
                    yield enc.delay, frame
            enc.end(lazy.usage)
            for frame in enc.take():
                yield enc.delay, frame
        except Exception as exc:
            self._record(_wrap(exc, request, position))
            raise StreamCut from None
        finally:
            close()
        if enc.cut:
            raise StreamCut

    async def _lazy_awrites(
        self,
        request: ProviderRequest,
        position: int,
        enc: StreamEncoder,
        lazy: _Lazy,
        source: _AsyncSource,
    ) -> AsyncIterator[tuple[float, bytes]]:
        try:
            for frame in enc.take():
                yield enc.delay, frame
            while not enc.cut:
                more, item = await source.next()
                if not more:
                    break
                lazy.feed(enc, item)
                for frame in enc.take():
                    yield enc.delay, frame
            enc.end(lazy.usage)
            for frame in enc.take():
                yield enc.delay, frame
        except Exception as exc:
            self._record(_wrap(exc, request, position))
            raise StreamCut from None
        finally:
            await source.close()
        if enc.cut:
            raise StreamCut

    def _record(self, err: ProviderError) -> None:
        with self._lock:
            self.errors.append(err)

    def _fail(self, request: ProviderRequest | None, err: ProviderError, status: int) -> Plan:
        self._record(err)
        return self._answer_error(request, err, status)

    @staticmethod
    def _answer_error(request: ProviderRequest | None, err: ProviderError, status: int) -> Plan:
        api = request.api if request is not None else None
        return error_plan(
            api, status, f"agui_replay: {err}", error_type="agui_replay_error", headers=[_NO_RETRY]
        )

    def _select(
        self, method: str, path: str, headers: dict[str, str], body: bytes, provider: str | None
    ) -> tuple[ProviderRequest, ScriptTurn, int] | Plan:
        # A Plan when the answer is known here (models list, error, replayed recording); else
        # the scripted turn whose content handle / ahandle resolve, each in its own mode.
        api = detect_api(path)
        if method == "GET" and path.split("?", 1)[0].rstrip("/").endswith("/models"):
            return json_plan(200, {"object": "list", "data": []})
        with self._lock:
            request = ProviderRequest(
                len(self.requests), method, path, dict(headers), parse_body(body), api, provider
            )
            self.requests.append(request)
            if self._replay is not None:
                answer = self._replay.answer(request)
                if isinstance(answer, Plan):
                    return answer
                if not isinstance(answer, ScriptExhaustedError) or self.function is None:
                    self.errors.append(answer)
                    return self._answer_error(request, answer, 500)
                return request, ScriptTurn(function=self.function), len(self.turns)
            if api is None:
                err = ProviderError(
                    f"request #{request.index} {method} {path}: not an endpoint this fake serves "
                    "(POST .../chat/completions, .../responses, .../messages, "
                    ".../models/MODEL:generateContent or Bedrock's /model/MODEL/converse)"
                )
                self.errors.append(err)
                return error_plan(None, 404, f"agui_replay: {err}", headers=[_NO_RETRY])
            pick = self._pick(request)
        if isinstance(pick, ProviderError):
            return self._fail(request, pick, 500)
        position, turn = pick
        return request, turn, position

    def _pick(self, request: ProviderRequest) -> tuple[int, ScriptTurn] | ProviderError:
        # caller holds the lock
        pending = [i for i, done in enumerate(self.served) if not done]
        if not pending:
            if self.function is not None:
                return len(self.turns), ScriptTurn(function=self.function)
            return ScriptExhaustedError(
                f"request #{request.index} arrived but the script has {len(self.turns)} turn(s) "
                f"and all were served (script position {len(self.turns)}):\n  {request.summary()}"
            )
        self.served[pending[0]] = True
        return pending[0], self.turns[pending[0]]

    def _encode(
        self, request: ProviderRequest, turn: ScriptTurn, deltas: list[Delta], position: int
    ) -> Plan:
        if request.api is None:
            return self._fail(request, ProviderError(f"unknown endpoint {request.path}"), 404)
        ctx = self._turn_context(position, request)
        delay = turn.delay if turn.delay is not None else self.chunk_delay
        try:
            return encode_turn(request.api, ctx, turn, deltas, delay)
        except ProviderError as exc:
            return self._fail(request, _wrap(exc, request, position), 500)


def _wrap(exc: Exception, request: ProviderRequest, position: int) -> ProviderError:
    where = f"while serving request #{request.index} with script turn #{position}"
    if isinstance(exc, ProviderError):
        err = type(exc)(f"{exc} ({where})")
    else:
        err = ProviderError(f"{where}: {type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


def _collect(items: Iterable[object], turn: ScriptTurn) -> tuple[list[Delta], ScriptTurn]:
    deltas: list[Delta] = []
    usage = turn.usage
    for i, item in enumerate(items):
        got = coerce_yielded(item, i)
        if isinstance(got, Usage):
            usage = got
        else:
            deltas.append(got)
    return deltas, _with(turn, usage)


def _with(turn: ScriptTurn, usage: Usage | None) -> ScriptTurn:
    from dataclasses import replace

    return replace(turn, usage=usage, function=None)


def _streams_lazily(turn: ScriptTurn, request: ProviderRequest) -> bool:
    return (
        turn.function is not None
        and turn.status < 400
        and request.stream
        and request.api is not None
    )


def _nothing() -> None:
    return None


class _Lazy:
    """Where a lazily streamed function turn stands: its usage and how many items it yielded."""

    def __init__(self, usage: Usage | None) -> None:
        self.usage = usage
        self.count = 0
        self.first: Delta | None = None

    def _coerce(self, item: object) -> Delta | None:
        got = coerce_yielded(item, self.count)
        self.count += 1
        if isinstance(got, Usage):
            self.usage = got
            return None
        return got

    def prime(self, item: object) -> bool:
        """Take an item yielded before the response starts; True once it is the first delta."""
        self.first = self._coerce(item)
        return self.first is not None

    def feed(self, enc: StreamEncoder, item: object) -> None:
        got = self._coerce(item)
        if got is not None:
            enc.feed(got)


def _resolve_sync(turn: ScriptTurn, request: ProviderRequest) -> tuple[list[Delta], ScriptTurn]:
    if turn.function is None:
        return turn.deltas, turn
    produced: Any = turn.function(request)
    if hasattr(produced, "__aiter__"):
        stepper = _AsyncStepper(produced)
        try:
            return _collect(stepper, turn)
        finally:
            stepper.close()
    return _collect(produced, turn)


async def _resolve_async(
    turn: ScriptTurn, request: ProviderRequest
) -> tuple[list[Delta], ScriptTurn]:
    if turn.function is None:
        return turn.deltas, turn
    produced: Any = turn.function(request)
    if hasattr(produced, "__aiter__"):
        return _collect([item async for item in produced], turn)
    return _collect(produced, turn)


class _AsyncSource:
    """One interface over what a function turn returned, sync or async, for async callers."""

    def __init__(self, produced: Any) -> None:
        if hasattr(produced, "__aiter__"):
            self._aiter: Any = produced.__aiter__()
            self._iter: Iterator[object] | None = None
        else:
            self._aiter = None
            self._iter = iter(produced)

    async def next(self) -> tuple[bool, object]:
        if self._iter is not None:
            try:
                return True, next(self._iter)
            except StopIteration:
                return False, None
        try:
            return True, await self._aiter.__anext__()
        except StopAsyncIteration:
            return False, None

    async def close(self) -> None:
        if self._iter is not None:
            close = getattr(self._iter, "close", None)
            if close is not None:
                close()
            return
        aclose = getattr(self._aiter, "aclose", None)
        if aclose is not None:
            await aclose()


class _AsyncStepper:
    """Steps an async generator from sync code, one item per ``next``, on a private loop.

    The loop runs in its own thread so this works even when the calling thread already runs an
    event loop (a sync client used inside an async test).
    """

    def __init__(self, agen: Any) -> None:
        self._agen = agen.__aiter__()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agui-replay-function-turn", daemon=True
        )
        self._thread.start()
        self._closed = False

    def __iter__(self) -> _AsyncStepper:
        return self

    def __next__(self) -> object:
        async def step() -> object:
            return await self._agen.__anext__()

        try:
            return asyncio.run_coroutine_threadsafe(step(), self._loop).result()
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def finish() -> None:
            aclose = getattr(self._agen, "aclose", None)
            if aclose is not None:
                await aclose()
            await self._loop.shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(finish(), self._loop).result(timeout=5)
        except Exception:  # the generator's own failure was already reported
            pass
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
