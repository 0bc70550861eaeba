"""How requests reach a provider app: in process, over loopback, or intercepted.

* ``_loopback``: :class:`LoopbackServer`, a real HTTP server on 127.0.0.1 in front of an app;
* ``_httpx``, ``_aiohttp``, ``_urllib3`` and ``_urllib`` (``http.client``): in-process
  transports that hand a request to an app and stream its planned chunks back with no socket;
* ``_tape``: :class:`HttpTape`, the test's requests to other hosts (a tool's API), recorded
  and replayed chunk by chunk through a :class:`TapeRouter`;
* ``_routing``: for the span of a run, the patched transports of the HTTP libraries send every
  request for a known provider host (or the session's loopback server) to a :class:`Router`.

Private to ``agui_replay.providers``: the session seam (``_session``), the fake and the recorder
use the names below; users reach the loopback server through ``agui_replay.providers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agui_replay._lazy import lazy_names

if TYPE_CHECKING:
    from agui_replay.providers._transport._httpx import (
        Httpx2AsyncTransport,
        Httpx2Transport,
        HttpxAsyncTransport,
        HttpxTransport,
    )
    from agui_replay.providers._transport._loopback import App, AsyncApp, LoopbackServer
    from agui_replay.providers._transport._routing import (
        BASE_PATHS,
        DEFAULT_PROVIDER,
        ENV_VARS,
        KNOWN_HOSTS,
        ORIGIN_HEADER,
        REAL_ORIGINS,
        ROUTE_PREFIX,
        HostTable,
        Router,
        intercepting,
        provider_environment,
        split_route,
        upstream_map,
    )
    from agui_replay.providers._transport._tape import DEFAULT_DROP_HOSTS, HttpTape, TapeRouter

_ROUTING = "agui_replay.providers._transport._routing"
_HOMES = {
    **dict.fromkeys(
        ("Httpx2AsyncTransport", "Httpx2Transport", "HttpxAsyncTransport", "HttpxTransport"),
        "agui_replay.providers._transport._httpx",
    ),
    **dict.fromkeys(
        ("App", "AsyncApp", "LoopbackServer"), "agui_replay.providers._transport._loopback"
    ),
    **dict.fromkeys(
        ("DEFAULT_DROP_HOSTS", "HttpTape", "TapeRouter"), "agui_replay.providers._transport._tape"
    ),
    **dict.fromkeys(
        (
            "BASE_PATHS",
            "DEFAULT_PROVIDER",
            "ENV_VARS",
            "KNOWN_HOSTS",
            "ORIGIN_HEADER",
            "REAL_ORIGINS",
            "ROUTE_PREFIX",
            "HostTable",
            "Router",
            "intercepting",
            "provider_environment",
            "split_route",
            "upstream_map",
        ),
        _ROUTING,
    ),
}
__all__ = [
    "BASE_PATHS",
    "DEFAULT_DROP_HOSTS",
    "DEFAULT_PROVIDER",
    "ENV_VARS",
    "KNOWN_HOSTS",
    "ORIGIN_HEADER",
    "REAL_ORIGINS",
    "ROUTE_PREFIX",
    "App",
    "AsyncApp",
    "HostTable",
    "HttpTape",
    "Httpx2AsyncTransport",
    "Httpx2Transport",
    "HttpxAsyncTransport",
    "HttpxTransport",
    "LoopbackServer",
    "Router",
    "TapeRouter",
    "intercepting",
    "provider_environment",
    "split_route",
    "upstream_map",
]

__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
