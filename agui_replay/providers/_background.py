"""Background traffic: the framework telemetry a tape drops, and how a request is told apart
from the test's own (its causal chain) when it is not.

The pytest plugin reads :data:`DEFAULT_DROP_HOSTS` through the ``agui_replay.providers``
facade, as the default of its ``agui_drop_hosts`` ini option.

A :class:`Chain` is opened by a tape for as long as it records or replays. A request belongs
to the chain when it is sent from the context that opened it (the test's thread, its asyncio
tasks, executors that copy the context) or from a thread started from there while the chain
was open (``thread_starts=True``: the chain's mark is handed to the threads it starts, and on
from them). Anything else is background work: a timer or exporter thread that a framework
started at import, in another test, or from another background thread.
"""

from __future__ import annotations

import contextvars
import fnmatch
import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_DROP_HOSTS",
    "Chain",
    "DropRules",
    "drop_entry",
    "looks_like_telemetry",
    "note_large",
]

DEFAULT_DROP_HOSTS: tuple[str, ...] = (
    "telemetry.crewai.com",  # CrewAI's anonymous telemetry (OpenTelemetry traces, :4319)
    "api.agno.com",  # Agno's telemetry (agno.api), older releases
    "os-api.agno.com",  # Agno's telemetry, current releases (AgnoAPISettings.api_url)
    "us.i.posthog.com",  # PostHog ingestion (product analytics of Chroma, mem0, ...)
    "eu.i.posthog.com",
    "app.posthog.com",  # PostHog's former ingestion host, still the default of older clients
    "api.smith.langchain.com",  # LangSmith tracing (LANGSMITH_TRACING=true)
    "eu.api.smith.langchain.com",
    "pypi.org/pypi/*/json",  # version checks (CrewAI's, and any package's "a newer release")
    # litellm's model cost map, fetched at import and refreshed on a timer
    "raw.githubusercontent.com/BerriAI/litellm/*/model_prices_and_context_window.json",
)
"""The hosts (``HOST``, ``HOST:PORT``, ``*.DOMAIN``) and URLs (``HOST/PATH``, ``*`` in the path
matching any characters) a tape answers at once with an empty ``204``, never sent nor stored:
framework telemetry, version checks and price-map refreshes, which a timer or a cache file
decides to send, so that no replay depends on them. The pytest plugin's ini
``agui_drop_hosts`` replaces the list; ``@pytest.mark.agui(drop_hosts=[...])`` adds to it."""

_TELEMETRY_PATHS = (
    "/v1/traces",
    "/v1/metrics",
    "/v1/logs",
    "/capture*",
    "/batch*",
    "/i/v0/e*",
    "/decide*",
    "/pypi/*/json",
    "*/model_prices_and_context_window.json",
)
"""URL paths of telemetry exports (OpenTelemetry's OTLP, PostHog's), version checks and price
maps: a request that misses with one of these is told which ``drop_hosts`` entry drops it."""


class DropRules:
    """The drop list: host patterns, and ``HOST/PATH`` entries that drop only matching URLs."""

    def __init__(self, entries: Iterable[str], table: Callable[[Iterable[str]], Any]) -> None:
        hosts: list[str] = []
        self._paths: list[tuple[Any, str]] = []
        for entry in entries:
            entry = entry.strip()
            if "://" in entry:
                entry = entry.split("://", 1)[1]
            host, slash, path = entry.partition("/")
            if not slash:
                hosts.append(entry)
            elif host:
                self._paths.append((table([host]), "/" + path))
        self._hosts = table(hosts)

    def drops(self, url: str) -> bool:
        """Whether a request to ``url`` is answered locally."""
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            return False
        if host is None:
            return False
        if self._hosts.provider_for(host, port) is not None:
            return True
        return any(
            table.provider_for(host, port) is not None and fnmatch.fnmatchcase(parts.path, path)
            for table, path in self._paths
        )


def looks_like_telemetry(url: str) -> bool:
    """Whether ``url``'s path is one telemetry, version checks and price maps use."""
    path = urlsplit(url).path
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in _TELEMETRY_PATHS)


def drop_entry(url: str) -> str:
    """The ``drop_hosts`` entry that drops requests to ``url``'s host (and port, when it is not
    the scheme's)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
        return f"{host}:{parts.port}"
    return host


LARGE = 256 * 1024
"""Bytes over which a recorded exchange is worth a warning (a price map, a package index's
JSON): it bloats the cassette, and is most often background work to drop."""

_log = logging.getLogger("agui_replay.tape")


def note_large(
    exchanges: list[dict[str, Any]], where: str, noted: list[str]
) -> list[dict[str, Any]]:
    """``exchanges``, each one over :data:`LARGE` logged as a warning (once) and noted in
    ``noted`` as ``HOST (N KB)``."""
    for exchange in exchanges:
        size = len(json.dumps(exchange, default=str))
        url = str(exchange["request"].get("url", ""))
        note = f"{urlsplit(url).netloc} ({size // 1024} KB)"
        if size > LARGE and note not in noted:
            noted.append(note)
            _log.warning(
                "%s: the recorded exchange %s %s is %d KB, which the cassette stores; if the "
                "test does not need it, drop_hosts=[%r] answers it locally instead",
                where,
                exchange["request"].get("method"),
                url,
                size // 1024,
                drop_entry(url),
            )
    return exchanges


_MARK: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("agui_chain", default=())
"""The chains (their ids) the current context belongs to."""

_handing_on: list[int] = []
"""The open chains whose mark threads inherit; ``Thread.start`` is patched while any is."""
_lock = threading.Lock()
_original_start: Callable[[threading.Thread], None] | None = None
_marks = itertools.count(1)


class Chain:
    """A tape's causal chain, open from :meth:`open` to :meth:`close` (same context)."""

    def __init__(self, *, thread_starts: bool) -> None:
        self.thread_starts = thread_starts
        self.mark = next(_marks)
        self.is_open = False

    def open(self) -> None:
        if self.is_open:
            return
        self.is_open = True
        _MARK.set((*_MARK.get(), self.mark))
        if self.thread_starts:
            _hand_on(self.mark)

    def close(self) -> None:
        """Take the chain's mark out of the current context (chains may close in any order:
        a session tape's window around a test's teardown)."""
        if not self.is_open:
            return
        self.is_open = False
        if self.thread_starts:
            _stop_handing_on(self.mark)
        _MARK.set(tuple(m for m in _MARK.get() if m != self.mark))

    def background(self) -> bool:
        """Whether the current request is not part of this chain."""
        return self.mark not in _MARK.get()


def _hand_on(mark: int) -> None:
    global _original_start
    with _lock:
        _handing_on.append(mark)
        if _original_start is None:
            current = threading.Thread.start
            # ours already (a chain closed while another patch sat on top of ours): keep it
            _original_start = _unpatched_start if current is _start else current
            threading.Thread.start = _start  # type: ignore[method-assign, assignment]


def _stop_handing_on(mark: int) -> None:
    global _original_start
    with _lock:
        if mark in _handing_on:
            _handing_on.remove(mark)
        if not _handing_on and _original_start is not None:
            if threading.Thread.start is _start:  # not replaced since: ours to undo
                threading.Thread.start = _original_start  # type: ignore[method-assign, assignment]
            _original_start = None


def _start(thread: threading.Thread) -> None:
    """``Thread.start`` while a chain hands its mark on: the new thread runs with the marks of
    the starting context's chains that do (only that context variable, not the others).

    Another library may patch ``Thread.start`` over ours and call ours from its own; should
    the chain of starts lead back here for the same thread, the start it re-enters with is
    the one this module found at import, so a start never recurses."""
    if getattr(_inside, "starting", False):
        _unpatched_start(thread)
        return
    marks = tuple(m for m in _MARK.get() if m in _handing_on)
    if marks:
        run = thread.run

        def marked_run() -> None:
            _MARK.set(marks)
            run()

        thread.run = marked_run  # type: ignore[method-assign]
    _inside.starting = True
    try:
        (_original_start or _unpatched_start)(thread)
    finally:
        _inside.starting = False


_inside = threading.local()
_unpatched_start = threading.Thread.start
