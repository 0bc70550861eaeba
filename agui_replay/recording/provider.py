"""The provider seam: ``agui.provider``, one model provider per session, recording or replaying."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..scrub import scrub

if TYPE_CHECKING:
    import httpx
    import httpx2

    from ..providers import FakeProvider, LoopbackServer, Plan, Recorder
    from .session import CassetteSession

__all__ = ["SessionProvider"]


class SessionProvider:
    """``agui.provider``: one model provider for the whole session, recording or replaying.

    Point the agent's SDK at :attr:`base_url` (OpenAI clients) or :attr:`anthropic_base_url`,
    or plug one of the in-process transports in. Behind it, each run of the session is served
    by a fresh :class:`~agui_replay.providers.FakeProvider` built from that run's recorded
    interactions (replay), or forwarded to the upstream by a
    :class:`~agui_replay.providers.Recorder` (record). The loopback server starts on first use
    and stops with the session.
    """

    def __init__(self, session: CassetteSession) -> None:
        self._session = session
        self._server: LoopbackServer | None = None
        self._lock = threading.Lock()
        self.fake: FakeProvider | None = None
        """The fake serving the current (or last) replayed run."""
        self.recorder: Recorder | None = None
        """The recorder of this session's recorded runs (created when the first one starts)."""
        self._proxy: Callable[[str, str, dict[str, str], bytes], Plan] | None = None
        self._mode: Literal["idle", "replay", "record"] = "idle"

    # --- what the agent uses ------------------------------------------------------------------

    def _ensure_server(self) -> LoopbackServer:
        with self._lock:
            if self._server is None:
                from ..providers import LoopbackServer

                self._session.start()
                self._server = LoopbackServer(self.handle, base_path=self._session.base_path)
            return self._server

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` plus the provider's base path (``/v1`` for OpenAI)."""
        return self._ensure_server().base_url

    @property
    def anthropic_base_url(self) -> str:
        """The bare origin, for ``anthropic.Anthropic(base_url=...)``."""
        return self._ensure_server().anthropic_base_url

    @property
    def url(self) -> str:
        """The loopback origin, ``http://127.0.0.1:PORT``."""
        return self._ensure_server().url

    # Four near-copies: each returns its own library's transport type (httpx and httpx2 types
    # do not mix), so a shared helper would only trade them for casts.
    def transport(self) -> httpx2.BaseTransport:
        """An in-process ``httpx2`` transport: ``httpx2.Client(transport=...)``."""
        from ..providers import Httpx2Transport

        self._session.start()
        return Httpx2Transport(self.handle)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """An in-process async ``httpx2`` transport."""
        from ..providers import Httpx2AsyncTransport

        self._session.start()
        return Httpx2AsyncTransport(self.ahandle)

    def httpx_transport(self) -> httpx.BaseTransport:
        """An in-process ``httpx`` transport."""
        from ..providers import HttpxTransport

        self._session.start()
        return HttpxTransport(self.handle)

    def httpx_async_transport(self) -> httpx.AsyncBaseTransport:
        """An in-process async ``httpx`` transport."""
        from ..providers import HttpxAsyncTransport

        self._session.start()
        return HttpxAsyncTransport(self.ahandle)

    @property
    def mode(self) -> Literal["idle", "replay", "record"]:
        """What the provider does right now: between runs it is ``"idle"``."""
        return self._mode

    # --- serving ------------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        """Answer one request: the current run's fake (replay) or the recording proxy."""
        if self._mode == "replay" and self.fake is not None:
            return self.fake.handle(method, path, headers, self._scrubbed(headers, body))
        if self._mode == "record" and self._proxy is not None:
            return self._proxy(method, path, headers, body)
        return self._outside_run(method, path)

    async def ahandle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Plan:
        if self._mode == "replay" and self.fake is not None:
            body = self._scrubbed(headers, body)
            return await self.fake.ahandle(method, path, headers, body)
        if self._mode == "record" and self._proxy is not None:
            return await asyncio.to_thread(self._proxy, method, path, headers, body)
        return self._outside_run(method, path)

    def _scrubbed(self, headers: Mapping[str, str], body: bytes) -> bytes:
        """The request body as the recording stored it: secrets (and auth tokens) scrubbed.

        The recorded request is compared with this one, so a secret the agent sends in a body
        (a key, a configured password) must not make the replay differ from its recording.
        """
        if not body:
            return body
        from ..providers.interaction import parse_body

        parsed = parse_body(body)
        scrubbed = scrub({"headers": dict(headers), "body": parsed}, secrets=self._session.secrets)
        if scrubbed["body"] == parsed:
            return body
        if isinstance(parsed, str):
            return str(scrubbed["body"]).encode("utf-8")
        return json.dumps(scrubbed["body"], ensure_ascii=False).encode("utf-8")

    def _outside_run(self, method: str, path: str) -> Plan:
        from ..providers import detect_api, error_plan

        return error_plan(
            detect_api(path),
            500,
            f"agui_replay: {method} {path} arrived outside agui.run(); the session's provider "
            "only serves requests made while a run is in progress",
            error_type="agui_replay_error",
            headers=[("x-should-retry", "false")],
        )

    def _replay(self, interactions: Sequence[Mapping[str, Any]], match: Any) -> FakeProvider:
        from ..providers import FakeProvider

        self.fake = FakeProvider.from_interactions(interactions, match=match)
        self._mode = "replay"
        return self.fake

    def _record(self) -> int:
        """Start forwarding to the upstream; returns the index of the run's first interaction."""
        if self.recorder is None:
            from ..providers import Recorder

            self.recorder = Recorder(self._session.upstream_url(), secrets=self._session.secrets)
            proxy = self.recorder.app()
            self._proxy = proxy
            self._proxy_close: Callable[[], None] | None = proxy.close
        self._mode = "record"
        return len(self.recorder.interactions)

    def _recorded_since(self, start: int) -> list[dict[str, Any]]:
        assert self.recorder is not None
        return [i.to_dict() for i in self.recorder.interactions[start:]]

    def _idle(self) -> None:
        self._mode = "idle"

    def close(self) -> None:
        self._mode = "idle"
        if self._server is not None:
            self._server.close()
            self._server = None
        close = getattr(self, "_proxy_close", None)
        if close is not None:
            close()
            self._proxy_close = None
