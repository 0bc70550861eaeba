"""Serve an agent over HTTP: POST a ``RunAgentInput``, read ``text/event-stream``.

>>> from agui_replay.server import agui_app
>>> def greeter(ctx):
...     ctx.say("hello")
>>> app = agui_app(greeter)   # a Starlette app; serve it with uvicorn

Refusals happen before the stream starts and answer with a JSON body ``{"code", "message"}``:
405 for a method other than POST, 406 when ``Accept`` rules out ``text/event-stream``, 415 for a
body that is not JSON, 413 over ``max_body_bytes``, 400 for a body that is not a valid
``RunAgentInput``. Once the stream is open the status is 200 whatever happens: a failed run ends
with ``RUN_ERROR`` inside it. A client that disconnects cancels the run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
from ag_ui.core import BaseEvent, RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._compat import input_model
from ..errors import InvalidArgumentError
from ..sse import encode_sse
from .cancel import CancellationToken
from .context import describe_validation_error
from .driver import run_agent

__all__ = ["DEFAULT_KEEPALIVE_SECONDS", "DEFAULT_MAX_BODY_BYTES", "AguiEndpoint", "agui_app"]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_KEEPALIVE_SECONDS = 15.0
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


class AguiEndpoint:
    """The ASGI app behind :func:`agui_app`; mount it anywhere (any method reaches it)."""

    def __init__(
        self,
        agent: Any,
        *,
        state_type: Any = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        keepalive_seconds: float | None = DEFAULT_KEEPALIVE_SECONDS,
    ) -> None:
        if keepalive_seconds is not None and not keepalive_seconds > 0:
            raise InvalidArgumentError(
                f"keepalive_seconds must be a positive number of seconds or None (off), "
                f"got {keepalive_seconds!r}"
            )
        self.agent = agent
        self.state_type = state_type
        self.max_body_bytes = max_body_bytes
        self.keepalive_seconds = keepalive_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.respond(request)
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
        body = await self._read_body(request)
        if body is None:
            return _refuse(
                413,
                "INVALID_BODY",
                f"the request body exceeds the limit of {self.max_body_bytes} bytes",
            )
        parsed = self._parse(body)
        if isinstance(parsed, Response):
            return parsed
        token = CancellationToken()
        events = run_agent(self.agent, parsed, state_type=self.state_type, cancellation=token)
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
    def _parse(body: bytes) -> RunAgentInput | Response:
        if not body.strip():
            return _refuse(
                400,
                "INVALID_INPUT",
                "the request body is empty; expected an AG-UI RunAgentInput object",
            )
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            return _refuse(400, "INVALID_INPUT", f"the request body is not JSON: {error}")
        if not isinstance(data, dict):
            return _refuse(
                400,
                "INVALID_INPUT",
                f"a RunAgentInput is a JSON object, got {type(data).__name__}",
            )
        try:
            return input_model(data)
        except ValidationError as error:
            return _refuse(
                400,
                "INVALID_INPUT",
                "the request body is not a valid AG-UI RunAgentInput: "
                + describe_validation_error(error),
            )


def agui_app(
    agent: Any,
    *,
    state_type: Any = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    path: str = "/",
    keepalive_seconds: float | None = DEFAULT_KEEPALIVE_SECONDS,
) -> Starlette:
    """A Starlette app serving ``agent`` at ``path`` (POST RunAgentInput -> SSE).

    While the agent is silent (a long tool call), a ``: keep-alive`` SSE comment goes out every
    ``keepalive_seconds`` so proxies keep the connection; ``None`` turns it off.
    """
    endpoint = AguiEndpoint(
        agent,
        state_type=state_type,
        max_body_bytes=max_body_bytes,
        keepalive_seconds=keepalive_seconds,
    )
    return Starlette(routes=[Route(path, endpoint=endpoint)])
