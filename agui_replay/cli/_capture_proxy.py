"""``agui-replay capture``: the proxy, an ASGI app in front of one AG-UI agent.

Each POSTed ``RunAgentInput`` goes to the agent; its answer comes back to the caller as it
arrives, one HTTP chunk per network read, while the SSE frames are decoded on the side. A
completed run (the agent's event stream ended normally, every frame an AG-UI event) is recorded
before the caller sees its end, so once a response has ended its run is on disk. Anything else
is passed on and not recorded, with one line in the log saying why: an answer other than a
``200`` event stream, a stream that broke off (the caller's connection is broken off the same
way), a caller that left mid-run. An agent that cannot be reached gets the caller a ``502``
whose JSON body is a ``RUN_ERROR`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from agui_replay.cli._capture_file import _CaptureFile
from agui_replay.cli._posted import Refusal, read_run_input
from agui_replay.errors import EventDecodeError
from agui_replay.events import parse_event
from agui_replay.sse import SSEDecoder

__all__: list[str] = []

_log = logging.getLogger("agui_replay.capture")


# Hop-by-hop headers (RFC 9110 section 7.6.1) and what the proxy sets itself: never forwarded.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)
# The agent's own server stamps these; the proxy's server stamps its own.
_SERVER_STAMPED = frozenset({"date", "server"})


def _cors(preflight: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    """CORS headers: any origin may call the proxy, with any headers (``Authorization`` too,
    which the ``*`` wildcard does not cover: a preflight gets the headers it asked for)."""
    asked = (preflight or {}).get("access-control-request-headers", "")
    headers = [
        (b"access-control-allow-origin", b"*"),
        (b"access-control-allow-methods", b"POST, OPTIONS"),
        (b"access-control-allow-headers", asked.encode("latin-1") if asked else b"*"),
    ]
    if preflight is not None:
        headers.append((b"access-control-max-age", b"600"))
        # Chrome's Private Network Access: a public page calling a loopback server asks first.
        if preflight.get("access-control-request-private-network", "").lower() == "true":
            headers.append((b"access-control-allow-private-network", b"true"))
    return headers


def _scope_headers(scope: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1").lower(), value.decode("latin-1"))
        for name, value in scope.get("headers", [])
    ]


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


class _CaptureProxy:
    """Forwards each POSTed run to ``target`` and records the completed ones into ``store``."""

    def __init__(
        self,
        target: str,
        store: _CaptureFile,
        *,
        shown: str,
        client: Any,
        say: Callable[[str], None],
    ) -> None:
        self.target = target
        self.shown = shown  # the target without user, password and query, for the log
        self.store = store
        self.client = client  # an httpx.AsyncClient
        self.say = say
        self.in_flight = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        method = scope.get("method", "GET")
        path = scope.get("path", "/")
        headers = _scope_headers(scope)
        if method == "OPTIONS":
            await send(
                {"type": "http.response.start", "status": 204, "headers": _cors(dict(headers))}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if method != "POST":
            await self._answer(
                send, 405, "POST a RunAgentInput JSON body to run the agent", f"{method} {path}"
            )
            return
        read = await read_run_input(receive)
        if read is None:  # the client went away
            return
        if isinstance(read, Refusal):
            await self._answer(send, read.status, read.message, f"POST {path}")
            return
        body, posted = read
        self.in_flight += 1
        try:
            await self._forward(f"POST {path}", body, posted, headers, receive, send)
        finally:
            self.in_flight -= 1

    async def _answer(
        self, send: Any, status: int, message: str, request: str, code: str | None = None
    ) -> None:
        """An error of the proxy's own, as JSON shaped like a ``RUN_ERROR`` event."""
        self.say(f"{request} → {status}: {message}")
        codes = {400: "INVALID_INPUT", 502: "AGENT_UNREACHABLE"}
        code = code or codes.get(status, str(status))
        body = json.dumps({"type": "RUN_ERROR", "code": code, "message": message})
        headers = [(b"content-type", b"application/json"), *_cors()]
        if status == 405:
            headers.append((b"allow", b"POST, OPTIONS"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})

    async def _forward(
        self,
        request: str,
        body: bytes,
        posted: dict[str, Any],
        headers: list[tuple[str, str]],
        receive: Any,
        send: Any,
    ) -> None:
        import httpx

        forwarded = [(k, v) for k, v in headers if k not in _HOP_BY_HOP]
        # No compression: a compressing agent may hold events back until a block fills.
        forwarded.append(("accept-encoding", "identity"))
        self.store.note_headers(forwarded)
        try:
            upstream = await self.client.send(
                self.client.build_request("POST", self.target, content=body, headers=forwarded),
                stream=True,
            )
        except httpx.HTTPError as exc:
            _log.debug("cannot reach %s", self.shown, exc_info=True)
            why = f"{exc or 'no detail'} ({type(exc).__name__})"
            if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
                said = f"cannot reach the agent at {self.shown}: {why}"
            else:
                said = f"no answer from the agent at {self.shown}: {why}"
            await self._answer(
                send, 502, f"{said}; is it running, and is --target its AG-UI endpoint?", request
            )
            return
        try:
            await self._relay(request, posted, upstream, receive, send)
        finally:
            await upstream.aclose()

    async def _relay(
        self, request: str, posted: dict[str, Any], upstream: Any, receive: Any, send: Any
    ) -> None:
        import httpx

        status: int = upstream.status_code
        content_type = upstream.headers.get("content-type", "")
        streamed = status == 200 and _media_type(content_type) == "text/event-stream"
        headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in upstream.headers.multi_items()
            if k.lower() not in _HOP_BY_HOP | _SERVER_STAMPED
            and not k.lower().startswith("access-control-")
        ]
        decoder = SSEDecoder()
        events: list[dict[str, Any]] = []
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async def pump() -> None:
            async for chunk in upstream.aiter_bytes():
                if streamed:
                    events.extend(decoder.feed(chunk))
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

        await send(
            {"type": "http.response.start", "status": status, "headers": [*headers, *_cors()]}
        )
        watcher = asyncio.ensure_future(watch())
        pumping = asyncio.ensure_future(pump())
        broken: BaseException | None = None
        try:
            await asyncio.wait({watcher, pumping}, return_when=asyncio.FIRST_COMPLETED)
            if not pumping.done():  # the caller left first
                pumping.cancel()
                with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError, OSError):
                    await pumping
                self.say(
                    f"{request} → {status}: the caller disconnected after {len(events)} event(s); "
                    "the run is not recorded"
                )
                return
            broken = pumping.exception()
        finally:
            watcher.cancel()
            if not pumping.done():
                pumping.cancel()
        if broken is not None:
            if not isinstance(broken, (httpx.HTTPError, OSError)):
                raise broken
            _log.debug("the stream of %s broke", self.shown, exc_info=broken)
            # The caller's response is broken off the same way: returning without its end makes
            # the server close the connection mid-body, as the agent's did.
            self.say(
                f"{request} → {status}: the agent's stream broke off after {len(events)} "
                f"event(s) ({type(broken).__name__}: {broken or 'connection lost'}); passed on "
                "as it came, the run is not recorded"
            )
            return
        what = f"{status} {_media_type(content_type) or 'without a content type'}"
        if not streamed:
            self.say(
                f"{request} → {what} from the agent (not a 200 event stream): passed on, "
                "not recorded"
            )
        else:
            events.extend(decoder.close())
            self.say(f"{request} → {what}, {await self._record(posted, events, decoder)}")
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _record(
        self, posted: dict[str, Any], events: list[dict[str, Any]], decoder: SSEDecoder
    ) -> str:
        """Record a completed run; what the log says about it."""
        count = f"{len(events)} event(s)"
        if decoder.errors:
            return f"{count}, not recorded: {decoder.errors[0]}"
        if not events:
            return "not recorded: the stream held no event"
        for index, event in enumerate(events):
            try:
                parse_event(event, index=index)
            except EventDecodeError as exc:
                return f"{count}, not recorded: {exc}"
        number = await self.store.record(posted, events)
        if isinstance(number, str):
            return f"{count}, not recorded: {number}"
        ids = f"thread {events[0].get('threadId', '?')}, run {events[0].get('runId', '?')}"
        note = ""
        if events[-1].get("type") not in ("RUN_FINISHED", "RUN_ERROR"):
            note = (
                f"; its last event is {events[-1].get('type')}, not RUN_FINISHED or RUN_ERROR: "
                "`agui-replay verify --mode strict` will say so"
            )
        return f"recorded as run {number} ({count}, {ids}){note}"
