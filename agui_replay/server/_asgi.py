"""Serve an agent over HTTP: POST a ``RunAgentInput``, read ``text/event-stream``.

>>> from agui_replay.server import agui_app
>>> def greeter(ctx):
...     ctx.say("hello")
>>> app = agui_app(greeter)   # a Starlette app; serve it with uvicorn

Refusals happen before the stream starts and answer with a JSON body ``{"code", "message"}``:
405 for a method other than POST, 406 when ``Accept`` rules out ``text/event-stream``, 415 for a
body that is not JSON, 413 over ``max_body_bytes``, 408 when the body takes longer than
``body_timeout_seconds`` to arrive, 400 for a body that is not a valid ``RunAgentInput`` (of any
shape: not JSON, nested deeper than ``max_depth``, NaN, a lone surrogate, wrong types). Once the
stream is open the status is 200 whatever happens: a failed run ends with ``RUN_ERROR`` inside
it. A client that disconnects, while it sends the body or during the stream, cancels the run;
that is normal and logs nothing. Sync agents run on the endpoint's own worker threads, at most
``sync_concurrency`` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import re
import threading
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from typing import Any

import anyio
from ag_ui.core import BaseEvent, RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agui_replay._compat import describe_validation_error, input_model
from agui_replay.errors import AguiReplayError, InvalidArgumentError
from agui_replay.server._cancel import CancellationToken
from agui_replay.server._driver import _entry_point, _is_async, run_agent
from agui_replay.sse import encode_sse

__all__ = [
    "DEFAULT_BODY_TIMEOUT_SECONDS",
    "DEFAULT_KEEPALIVE_SECONDS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_SYNC_CONCURRENCY",
    "AguiEndpoint",
    "agui_app",
]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_KEEPALIVE_SECONDS = 15.0
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
"""How long the whole request body may take to arrive (a slow client is refused with 408)."""
DEFAULT_MAX_DEPTH = 256
"""How deep the body's JSON may nest (the state inside it: 128 deep, the state manager's limit)."""
DEFAULT_SYNC_CONCURRENCY = 64
"""How many runs of a sync agent one endpoint runs at once (each holds a worker thread)."""
_MAX_MESSAGE = 2000
# An escaped surrogate in the body: only then is a lone one (which cannot be UTF-8) possible.
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
KEEPALIVE_COMMENT = b": keep-alive\n\n"
SSE_MEDIA_TYPE = "text/event-stream"

_STREAM_HEADERS = [
    (b"content-type", SSE_MEDIA_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    # nginx buffers proxied responses unless told not to; inert everywhere else.
    (b"x-accel-buffering", b"no"),
    (b"vary", b"accept"),
]
# Media ranges that admit the stream, by specificity: the most specific match decides.
_SSE_RANGES = {SSE_MEDIA_TYPE: 2, "text/*": 1, "*/*": 0}


def _refuse(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    # The answer depends on Accept (406 included), so shared caches must key on it.
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "\u2026"
    return JSONResponse(
        {"code": code, "message": message},
        status_code=status,
        headers={"vary": "accept", **headers},
    )


def accepts_event_stream(accept: str | None) -> bool:
    """Whether an ``Accept`` header admits ``text/event-stream`` (missing or empty: yes).

    The most specific matching range decides, so ``text/event-stream;q=0, */*`` refuses.
    """
    if accept is None or not accept.strip():
        return True
    best: tuple[int, float] | None = None
    for item in accept.split(","):
        media, *params = (piece.strip() for piece in item.split(";"))
        specificity = _SSE_RANGES.get(media.lower())
        if specificity is None:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if best is None or specificity > best[0]:
            best = (specificity, quality)
        elif specificity == best[0]:
            best = (specificity, max(quality, best[1]))
    return best is not None and best[1] > 0


def is_json_content_type(value: str) -> bool:
    """``application/json``, ``text/json`` or any ``+json`` type, parameters ignored."""
    essence = value.split(";", 1)[0].strip().lower()
    return essence in ("application/json", "text/json") or essence.endswith("+json")


class _EventStream(Response):
    """Streams a run as SSE and trips the run's token when the client goes away.

    While the agent is silent for ``keepalive`` seconds, an SSE comment goes out so proxies
    and load balancers do not drop the idle connection; AG-UI clients ignore comments.
    """

    def __init__(
        self,
        events: AsyncGenerator[BaseEvent, None],
        token: CancellationToken,
        keepalive: float | None = None,
    ) -> None:
        self._events = events
        self._token = token
        self._keepalive = keepalive
        self.status_code = 200
        self.background = None
        self.raw_headers = list(_STREAM_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The keep-alive task and the event loop below share `send`: one write at a time,
        # and nothing after the final (empty) body.
        lock = anyio.Lock()
        last_write = anyio.current_time()
        ended = False

        async def write(body: bytes, more_body: bool = True) -> None:
            nonlocal last_write, ended
            async with lock:
                if ended:
                    return
                await send({"type": "http.response.body", "body": body, "more_body": more_body})
                last_write = anyio.current_time()
                ended = not more_body

        async with anyio.create_task_group() as group:

            async def watch_disconnect() -> None:
                # The body is already read, so the next message is the disconnect: trip the
                # token at once rather than at the next failed write, which a silent agent
                # might not make for a long time.
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        self._token.cancel()
                        group.cancel_scope.cancel()
                        return

            async def keep_alive(interval: float) -> None:
                try:
                    while not ended:
                        await anyio.sleep(max(0.0, last_write + interval - anyio.current_time()))
                        if anyio.current_time() - last_write >= interval:
                            await write(KEEPALIVE_COMMENT)
                except OSError:
                    self._token.cancel()
                    group.cancel_scope.cancel()

            group.start_soon(watch_disconnect)
            try:
                await send(
                    {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                )
                last_write = anyio.current_time()
                if self._keepalive is not None:
                    group.start_soon(keep_alive, self._keepalive)
                async with aclosing(self._events) as events:
                    async for event in events:
                        await write(encode_sse(event))
                await write(b"", more_body=False)
            except OSError:
                self._token.cancel()  # the server reports a write to a closed connection
            finally:
                group.cancel_scope.cancel()


def _positive(name: str, value: Any, *, allow_none: bool, integer: bool = False) -> None:
    if value is None and allow_none:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        what = "a positive integer" if integer else "a positive number of seconds"
        raise InvalidArgumentError(
            f"{name} must be {what}{' or None (off)' if allow_none else ''}, got {value!r}"
        )


def _not_a_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (NaN and Infinity are not numbers in JSON)")


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests more than ``limit`` containers deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


class _PooledAgent:
    """A sync agent run on an endpoint's own worker threads (at most ``max_workers`` at once).

    The driver sees an async agent; every other attribute (``state_type``, ``predict_state``,
    ...) is the wrapped agent's. A run waiting for a thread, whose client goes away, never
    starts; a running one holds its thread until the agent returns (it should check
    ``ctx.cancelled``), so the limit is the number of threads really busy.
    """

    def __init__(self, agent: Any, fn: Callable[[Any], Any], pool: ThreadPoolExecutor) -> None:
        self._agent = agent
        self._fn = fn
        self._pool = pool

    async def run(self, ctx: Any) -> Any:
        call = functools.partial(contextvars.copy_context().run, self._fn, ctx)
        result = await asyncio.get_running_loop().run_in_executor(self._pool, call)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_agent", "_fn", "_pool"):
            raise AttributeError(name)  # not forwarded (and no recursion before __init__)
        return getattr(self._agent, name)


class AguiEndpoint:
    """The ASGI app behind :func:`agui_app`; mount it anywhere (any method reaches it)."""

    def __init__(
        self,
        agent: Any,
        *,
        state_type: Any = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        keepalive_seconds: float | None = DEFAULT_KEEPALIVE_SECONDS,
        body_timeout_seconds: float | None = DEFAULT_BODY_TIMEOUT_SECONDS,
        max_depth: int = DEFAULT_MAX_DEPTH,
        sync_concurrency: int = DEFAULT_SYNC_CONCURRENCY,
    ) -> None:
        _positive("keepalive_seconds", keepalive_seconds, allow_none=True)
        _positive("body_timeout_seconds", body_timeout_seconds, allow_none=True)
        _positive("max_depth", max_depth, allow_none=False, integer=True)
        _positive("sync_concurrency", sync_concurrency, allow_none=False, integer=True)
        self.agent = agent
        self.state_type = state_type
        self.max_body_bytes = max_body_bytes
        self.keepalive_seconds = keepalive_seconds
        self.body_timeout_seconds = body_timeout_seconds
        self.max_depth = max_depth
        self.sync_concurrency = sync_concurrency
        self._runner: Any = None
        self._runner_lock = threading.Lock()

    def _agent_to_run(self) -> Any:
        """The agent, or (a sync one) the same agent on this endpoint's worker threads."""
        with self._runner_lock:
            if self._runner is None:
                try:
                    fn = _entry_point(self.agent)
                except AguiReplayError:
                    return self.agent  # the driver says what is wrong with it, in the stream
                if _is_async(fn):
                    self._runner = self.agent
                else:
                    pool = ThreadPoolExecutor(
                        max_workers=self.sync_concurrency, thread_name_prefix="agui-sync-agent"
                    )
                    self._runner = _PooledAgent(self.agent, fn, pool)
            return self._runner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            response = await self.respond(request)
        except ClientDisconnect:
            return  # the client left while sending the body: nobody to answer, nothing to log
        await response(scope, receive, send)

    async def respond(self, request: Request) -> Response:
        if request.method != "POST":
            return _refuse(
                405,
                "METHOD_NOT_ALLOWED",
                f"{request.method} is not allowed; POST a RunAgentInput JSON body",
                allow="POST",
            )
        accept = request.headers.get("accept")
        if not accepts_event_stream(accept):
            return _refuse(
                406,
                "NOT_ACCEPTABLE",
                f"cannot produce any media type this request accepts ({accept!r}); "
                f"this endpoint emits: {SSE_MEDIA_TYPE}",
            )
        content_type = request.headers.get("content-type")
        if content_type is not None and not is_json_content_type(content_type):
            return _refuse(
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                f"expected a JSON request body, got Content-Type {content_type!r}",
            )
        timeout = self.body_timeout_seconds
        try:
            with anyio.fail_after(timeout) if timeout is not None else contextlib.nullcontext():
                body = await self._read_body(request)
        except TimeoutError:
            return _refuse(
                408,
                "REQUEST_TIMEOUT",
                f"the request body did not arrive within {timeout:g} seconds "
                "(body_timeout_seconds); send it at once",
                connection="close",
            )
        if body is None:
            return _refuse(
                413,
                "INVALID_BODY",
                f"the request body exceeds the limit of {self.max_body_bytes} bytes",
            )
        parsed = self._parse(body, self.max_depth)
        if isinstance(parsed, Response):
            return parsed
        token = CancellationToken()
        events = run_agent(
            self._agent_to_run(), parsed, state_type=self.state_type, cancellation=token
        )
        return _EventStream(events, token, self.keepalive_seconds)

    async def _read_body(self, request: Request) -> bytes | None:
        declared = request.headers.get("content-length")
        if (
            declared is not None
            and declared.strip().isdigit()
            and int(declared) > self.max_body_bytes
        ):
            return None
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    @staticmethod
    def _parse(body: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> RunAgentInput | Response:
        def invalid(message: str) -> Response:
            return _refuse(400, "INVALID_INPUT", message)

        if not body.strip():
            return invalid("the request body is empty; expected an AG-UI RunAgentInput object")
        try:
            data = json.loads(body, parse_constant=_not_a_constant)
        except RecursionError:
            return invalid(f"the request body nests deeper than {max_depth} (max_depth)")
        except (ValueError, UnicodeDecodeError) as error:
            return invalid(f"the request body is not JSON: {error}")
        if not isinstance(data, dict):
            return invalid(f"a RunAgentInput is a JSON object, got {type(data).__name__}")
        if body.count(b"[") + body.count(b"{") > max_depth and _deeper_than(data, max_depth):
            return invalid(f"the request body nests deeper than {max_depth} (max_depth)")
        if _ESCAPED_SURROGATE.search(body):
            try:
                json.dumps(data, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                return invalid(
                    "the request body holds a lone UTF-16 surrogate (\\ud800-\\udfff not "
                    "part of a pair), which no UTF-8 text can; send valid Unicode"
                )
        try:
            return input_model(data)
        except ValidationError as error:
            return invalid(
                "the request body is not a valid AG-UI RunAgentInput: "
                + describe_validation_error(error)
            )
        except (ValueError, TypeError, RecursionError) as error:
            return invalid(f"the request body is not a valid AG-UI RunAgentInput: {error}")


def agui_app(
    agent: Any,
    *,
    state_type: Any = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    path: str = "/",
    keepalive_seconds: float | None = DEFAULT_KEEPALIVE_SECONDS,
    body_timeout_seconds: float | None = DEFAULT_BODY_TIMEOUT_SECONDS,
    max_depth: int = DEFAULT_MAX_DEPTH,
    sync_concurrency: int = DEFAULT_SYNC_CONCURRENCY,
) -> Starlette:
    """A Starlette app serving ``agent`` at ``path`` (POST RunAgentInput -> SSE).

    While the agent is silent (a long tool call), a ``: keep-alive`` SSE comment goes out every
    ``keepalive_seconds`` so proxies keep the connection; ``None`` turns it off. The body must
    arrive within ``body_timeout_seconds`` (else 408; ``None``: no limit) and nest at most
    ``max_depth`` deep (else 400). A sync agent runs on the endpoint's own worker threads, at
    most ``sync_concurrency`` runs at once; more wait for a thread.
    """
    endpoint = AguiEndpoint(
        agent,
        state_type=state_type,
        max_body_bytes=max_body_bytes,
        keepalive_seconds=keepalive_seconds,
        body_timeout_seconds=body_timeout_seconds,
        max_depth=max_depth,
        sync_concurrency=sync_concurrency,
    )
    return Starlette(routes=[Route(path, endpoint=endpoint)])
