"""Zero-config provider routing: an agent's SDK clients reach the recorder / replayer unchanged.

For the span of a run, :func:`intercepting` patches the connection-level transports of
``httpx2`` and ``httpx`` (``HTTPTransport.handle_request`` and
``AsyncHTTPTransport.handle_async_request``) and aiohttp's connector
(``BaseConnector.connect``, which then hands out an in-memory connection: :mod:`._aiohttp`),
``urllib3``'s ``HTTPConnectionPool.urlopen`` (``requests``, ``botocore``: :mod:`._urllib3`) and
``http.client``'s connections (``urllib.request``: :mod:`._urllib`), so every client of those
libraries, however and whenever it was built (at import time, in an
app's lifespan, with or without ``base_url``), hands its requests to a :class:`Router` when
they go to a known provider host or to the session's loopback server. The router answers them
in process, with no socket. Requests to other hosts go out untouched (and a replaying
session's network guard refuses them). :func:`provider_environment` sets the providers'
base-URL variables (``OPENAI_BASE_URL``...) for clients that read them at construction; those
of other HTTP libraries (and other processes) reach the loopback server over a socket.

>>> hosts = HostTable(["llm=llm.internal:8443", "*.example.org"])
>>> hosts.provider_for("api.openai.com", None), hosts.provider_for("eu.openai.azure.com", None)
('openai', 'azure')
>>> hosts.provider_for("llm.internal", 8443), hosts.provider_for("a.example.org", None)
('llm', 'a.example.org')
>>> hosts.provider_for("example.com", None) is None
True
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from agui_replay.errors import ProviderError
from agui_replay.providers._plan import Plan, Request

__all__ = [
    "BASE_PATHS",
    "DEFAULT_PROVIDER",
    "ENV_VARS",
    "KNOWN_HOSTS",
    "REAL_ORIGINS",
    "ROUTE_PREFIX",
    "HostTable",
    "Router",
    "intercepting",
    "provider_environment",
    "split_route",
    "upstream_map",
]

_log = logging.getLogger("agui_replay.routing")

DEFAULT_PROVIDER = "default"
"""The provider behind ``agui.provider.base_url`` and a bare ``--agui-upstream URL``."""

KNOWN_HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gemini",
    "*.openai.azure.com": "azure",
    # AWS Bedrock's runtime (Converse, ConverseStream), in every region, FIPS endpoints too
    "bedrock-runtime.*.amazonaws.com": "bedrock",
    "bedrock-runtime-fips.*.amazonaws.com": "bedrock",
    "bedrock-runtime.*.amazonaws.com.cn": "bedrock",
    # Vertex AI: Gemini's generateContent under /v1/projects/..., global and regional hosts
    "aiplatform.googleapis.com": "vertex",
    "*-aiplatform.googleapis.com": "vertex",
    # OpenAI-compatible chat completions
    "api.mistral.ai": "mistral",
    "api.groq.com": "groq",
    "openrouter.ai": "openrouter",
    "api.deepseek.com": "deepseek",
    "api.together.xyz": "together",
    "api.x.ai": "xai",
    "localhost:11434": "ollama",
    "127.0.0.1:11434": "ollama",
}
"""Host -> provider name, intercepted with no configuration. ``*.`` at the start matches any
subdomain; a ``*`` elsewhere matches within one label (``bedrock-runtime.*.amazonaws.com``:
any region; ``*-aiplatform.googleapis.com``: any location)."""

REAL_ORIGINS: dict[str, str] = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
"""Where a provider reached through its environment route records from by default."""

BASE_PATHS: dict[str, str] = {
    "openai": "/v1",
    "anthropic": "",
    "gemini": "",
    "azure": "",
    "bedrock": "",
    "vertex": "",
    "mistral": "/v1",
    "groq": "/openai/v1",
    "openrouter": "/api/v1",
    "deepseek": "",
    "together": "/v1",
    "xai": "/v1",
    "ollama": "/v1",
}
"""The path of each known provider's SDK base URL on its real host (what a request path starts
with), so a request can be sent to an upstream whose base URL has another path."""

ENV_VARS: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", "/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", ""),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", ""),
}
"""Provider -> (the base-URL variable its SDK reads at construction, the path it expects)."""

ROUTE_PREFIX = "/_agui/"
"""Loopback paths ``/_agui/NAME/...`` are requests to provider NAME (the environment routes)."""


def split_route(path: str) -> tuple[str | None, str]:
    """``("openai", "/v1/x")`` for ``/_agui/openai/v1/x``; ``(None, path)`` for other paths."""
    if not path.startswith(ROUTE_PREFIX):
        return None, path
    name, sep, rest = path[len(ROUTE_PREFIX) :].partition("/")
    if not name:
        return None, path
    return name, "/" + rest if sep else "/"


class HostTable:
    """The hosts whose requests are routed, each with its provider name.

    ``extra`` entries are ``HOST``, ``HOST:PORT``, ``*.DOMAIN`` or ``NAME=HOST...``; a host
    without a name is its own provider name.
    """

    def __init__(self, extra: Iterable[str] = (), *, known: Mapping[str, str] = KNOWN_HOSTS):
        self._exact: dict[tuple[str, int | None], str] = {}
        self._suffixes: list[tuple[str, int | None, str | None]] = []
        self._globs: list[tuple[re.Pattern[str], int | None, str | None]] = []
        for pattern, name in known.items():
            self.add(pattern, name)
        for entry in extra:
            entry = entry.strip()
            if not entry or entry.startswith("#"):
                continue
            name, sep, pattern = entry.partition("=")
            if not sep:
                name, pattern = "", entry
            self.add(pattern.strip(), name.strip() or None)

    def add(self, pattern: str, name: str | None = None) -> None:
        """Route ``pattern`` (``host``, ``host:port``, ``*.domain``) as provider ``name``."""
        if "://" in pattern:
            pattern = urlsplit(pattern).netloc
        host, port = _host_port(pattern.lower())
        if not host or "/" in host:
            raise ProviderError(
                f"provider host {pattern!r}: give a host name, host:port or *.domain "
                "(optionally NAME=HOST)"
            )
        if host.startswith("*.") and "*" not in host[2:]:
            self._suffixes.append((host[1:], port, name))
        elif "*" in host:
            self._globs.append((_glob(host), port, name))
        else:
            self._exact[(host, port)] = name or host

    def provider_for(self, host: str, port: int | None) -> str | None:
        """The provider name of requests to ``host`` (``port`` None: the scheme's default)."""
        host = host.lower()
        name = self._exact.get((host, port)) or self._exact.get((host, None))
        if name is not None:
            return name
        for suffix, want_port, named in self._suffixes:
            if host.endswith(suffix) and want_port in (None, port):
                return named or host
        for pattern, want_port, named in self._globs:
            if want_port in (None, port) and pattern.fullmatch(host):
                return named or host
        return None


def _glob(host: str) -> re.Pattern[str]:
    """A host pattern as a regular expression: a leading ``*.`` is any subdomain (one label or
    more), any other ``*`` part of one label (never a dot)."""
    prefix = ""
    if host.startswith("*."):
        prefix, host = r"(?:[^.]+\.)+", host[2:]
    return re.compile(prefix + "[^.]+".join(re.escape(part) for part in host.split("*")))


def _host_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [::1]:8000
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host, int(port)
    return text, None


class _HasBaseUrl(Protocol):
    @property
    def base_url(self) -> str: ...


def _url_of(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    url = getattr(value, "base_url", None)
    if isinstance(url, str):
        return url
    raise ProviderError(f"{what}: expected a base URL or an object with base_url, got {value!r}")


def upstream_map(value: Any) -> dict[str, str]:
    """Provider name -> upstream base URL, from what a user configures.

    A base URL (or an object with ``base_url``) is the ``default`` provider's; a mapping names
    each provider; a list holds ``NAME=URL`` entries and at most one bare URL (as the
    repeatable ``--agui-upstream`` gives them).

    >>> upstream_map(["http://127.0.0.1:9/v1", "anthropic=http://127.0.0.1:8"])
    {'default': 'http://127.0.0.1:9/v1', 'anthropic': 'http://127.0.0.1:8'}
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out = {}
        for name, url in value.items():
            key = str(name) or DEFAULT_PROVIDER
            out[key] = _url_of(url, f"the upstream of provider {key!r}")
        return out
    if isinstance(value, (list, tuple)):
        out = {}
        for entry in value:
            if not isinstance(entry, str):
                out[DEFAULT_PROVIDER] = _url_of(entry, "upstream")
                continue
            name, sep, url = entry.partition("=")
            if sep and "://" not in name and name.strip():
                out[name.strip()] = url.strip()
            else:
                out[DEFAULT_PROVIDER] = entry.strip()
        return out
    return {DEFAULT_PROVIDER: _url_of(value, "upstream")}


SyncHandler = Callable[[Request], Plan]
"""``handler(request) -> Plan``: one handler for the requests of every HTTP library."""
AsyncHandler = Callable[[Request], Awaitable[Plan]]


class Router:
    """Decides which requests are routed, and answers them.

    ``hosts`` are the provider hosts; ``handle`` / ``ahandle`` answer a routed request, given
    as a :class:`~agui_replay.providers._plan.Request` (its ``provider`` the host's provider
    name); ``own`` is the ``(host, port)`` of the session's loopback server, whose requests
    are answered in process too (``provider=None``: the path says which provider).
    """

    def __init__(
        self,
        hosts: HostTable,
        handle: SyncHandler,
        ahandle: AsyncHandler,
        *,
        own: tuple[str, int] | None = None,
    ) -> None:
        self.hosts = hosts
        self.handle = handle
        self.ahandle = ahandle
        self.own = own

    def is_own(self, host: str | None, port: int | None) -> bool:
        """Whether ``host:port`` is the session's loopback server."""
        return self.own is not None and port == self.own[1] and host in ("127.0.0.1", "localhost")

    def route_to(
        self, host: str | None, port: int | None, origin: str
    ) -> tuple[str | None, str] | None:
        """``(provider or None, origin)`` when a request to ``host`` (``port``: ``None`` for
        the scheme's default) is routed: to a provider host, or to the loopback server."""
        if self.is_own(host, port):
            _log.debug("request to %s: the session's own server, answered in process", origin)
            return None, origin
        name = self.hosts.provider_for(host, port) if host else None
        if name is None:
            _log.debug("request to %s: not a provider host, left to the network", origin)
            return None
        _log.debug("request to %s: provider %r, answered in process", origin, name)
        return name, origin


# --- the transport patches --------------------------------------------------------------------

_lock = threading.Lock()
_routers: list[Router] = []
_saved: list[tuple[Any, str, Any]] = []


def _find(host: str | None, port: int | None, origin: str) -> tuple[Router, str | None, str] | None:
    """The router that takes a request to ``host:port`` (the innermost that routes it: the
    run's provider routing before a session-wide one), with its provider and origin."""
    for router in reversed(_routers):
        routed = router.route_to(host, port, origin)
        if routed is not None:
            return router, routed[0], routed[1]
    return None


def answer_for(host: str | None, port: int | None, origin: str, *, asynchronous: bool) -> Any:
    """The answer of a request to ``host:port`` (``port``: ``None`` for the scheme's default)
    when a router takes it: its router's handler (``ahandle`` for an async library), as
    ``answer(method, target, headers, body) -> Plan``, which hands the router's handler one
    :class:`~agui_replay.providers._plan.Request`; ``None`` when no router takes it."""
    found = _find(host, port, origin)
    if found is None:
        return None
    router, provider, origin = found
    handler = router.ahandle if asynchronous else router.handle

    def answer(method: str, target: str, headers: dict[str, str], body: bytes) -> Any:
        return handler(Request(method, target, headers, body, origin, provider))

    return answer


def _transports() -> tuple[Any, ...]:
    """The transport module of each HTTP library, in the order they are patched. Each has
    ``install(answer_for) -> [(owner, attribute, original)]`` and declares its library's
    exceptions as a :class:`~agui_replay.providers._plan.Library`; a new HTTP library is a new
    module in this package and its name here."""
    from agui_replay.providers._transport import _aiohttp, _httpx, _urllib, _urllib3

    return (_urllib3, _urllib, _aiohttp, _httpx)


def _install() -> None:
    # caller holds _lock
    for transport in _transports():
        _saved.extend(transport.install(answer_for))


def _uninstall() -> None:
    # caller holds _lock
    while _saved:
        cls, name, original = _saved.pop()
        setattr(cls, name, original)


@contextlib.contextmanager
def intercepting(router: Router) -> Iterator[Router]:
    """Route requests of every ``httpx2`` / ``httpx``, ``urllib3`` (when installed) and
    ``http.client`` client, and of ``aiohttp`` when it is imported, through ``router`` for the
    block.

    Nested blocks stack (the innermost router that routes a request answers it); the
    transports (and aiohttp's ``BaseConnector.connect``) are restored when the outermost block
    ends.
    """
    with _lock:
        if not _routers:
            _install()
        _routers.append(router)
    try:
        yield router
    finally:
        with _lock:
            _routers.remove(router)
            if not _routers:
                _uninstall()


@contextlib.contextmanager
def provider_environment(origin: str) -> Iterator[dict[str, str]]:
    """Set each provider's base-URL variable to its route on the loopback server at
    ``origin`` (``OPENAI_BASE_URL=http://127.0.0.1:PORT/_agui/openai/v1``...) for the block,
    then restore what was there. Yields the values the variables had before (set ones only).
    """
    before: dict[str, str | None] = {}
    for provider, (var, path) in ENV_VARS.items():
        before[var] = os.environ.get(var)
        os.environ[var] = f"{origin}{ROUTE_PREFIX}{provider}{path}"
    try:
        yield {k: v for k, v in before.items() if v is not None}
    finally:
        for var, value in before.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
