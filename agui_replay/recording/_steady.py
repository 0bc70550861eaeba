"""Byte-stable re-records: what a cassette session stores is the same when nothing changed.

Three sources of noise are removed. Volatile response headers (the ``date``, request ids,
processing times, rate-limit counters, cookies) are not stored. A re-recorded response that
says what the file's response at its place said (a provider's, or, in ``http``, a tool's or
an MCP server's with the same request) keeps the chunks recorded then: their offsets, their
boundaries and their ``after``. The session ids an MCP server mints anew for each recording
are read as the file's. A cassette whose content is then the same as the file's keeps the
file's ``recorded_at`` and ``library_version``: such a file is not written at all, so it
stays byte-identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from agui_replay.cassette import Cassette, dumps_cassette, load_cassette
from agui_replay.errors import CassetteError
from agui_replay.recording._runs import canonical

__all__ = ["VOLATILE_HEADERS", "is_volatile_header", "steady_cassette", "without_volatile"]

VOLATILE_HEADERS = re.compile(
    r"\A(?:date|age|expires|set-cookie|cookie|via|alt-svc|report-to|nel|server-timing"
    r"|x-request-id|request-id|x-amzn-requestid|x-amz-cf-id|apim-request-id|x-ms-request-id"
    r"|cf-ray|cf-cache-status|openai-processing-ms|x-envoy-upstream-service-time"
    r"|x-cloud-trace-context|x-goog-request-id|anthropic-organization-id|openai-project"
    r"|(?:x-|anthropic-)?ratelimit-.*)\Z",
    re.IGNORECASE,
)
"""Response headers that differ on every call and mean nothing to a replay: not stored."""


def is_volatile_header(name: str) -> bool:
    """Whether response header ``name`` is left out of a recording (:data:`VOLATILE_HEADERS`)."""
    return VOLATILE_HEADERS.match(name) is not None


def without_volatile(interactions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of recorded interactions whose responses keep no volatile header."""
    out: list[dict[str, Any]] = []
    for interaction in interactions:
        copy = dict(interaction)
        response = interaction.get("response")
        if isinstance(response, Mapping) and isinstance(response.get("headers"), Mapping):
            headers = response["headers"]
            copy["response"] = {
                **response,
                "headers": {k: v for k, v in headers.items() if not is_volatile_header(k)},
            }
        out.append(copy)
    return out


_TIMING = ("chunks", "open", "end_after")
"""The parts of a recorded response that say when it arrived, not what it said: its chunks'
offsets, boundaries and ``after``, and when a long-lived stream ended (``end_after`` after
the last request, or ``open`` when the client closed it a moment before)."""


def _body_of(response: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What a response said, whatever its network reads: its fields besides its timing, and
    its chunks' data (joined when every chunk is text; else chunk by chunk)."""
    chunks = response.get("chunks")
    if not isinstance(chunks, list) or not all(isinstance(c, Mapping) for c in chunks):
        return None
    rest = canonical({k: v for k, v in response.items() if k not in _TIMING})
    if any(c.get("encoding") for c in chunks):
        return rest, [(c.get("data"), c.get("encoding")) for c in chunks]
    return rest, "".join(str(c.get("data", "")) for c in chunks)


def _keep_chunks(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` with ``old``'s response when both said the same, whatever their timing
    (:data:`_TIMING`): the recording made then is as true of today's answer."""
    response, before = new.get("response"), old.get("response")
    if not isinstance(response, Mapping) or not isinstance(before, Mapping):
        return dict(new)
    said = _body_of(response)
    if said is None or said != _body_of(before):
        return dict(new)
    return {**new, "response": before}


_MINTED_LENGTH = 16
"""The shortest session id read as the file's: a random one (MCP's are 32 hex digits)."""
_SESSION_QUERY = re.compile(r"[?&]session_id=([^&#\s\"]+)")


def _session_ids(exchanges: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ids the servers minted for their sessions (MCP's ``mcp-session-id`` header, the
    legacy SSE transport's ``session_id`` query), in the order they first appear."""
    found: list[str] = []
    for exchange in exchanges:
        request, response = exchange.get("request"), exchange.get("response")
        for part in (request, response):
            headers = part.get("headers") if isinstance(part, Mapping) else None
            if isinstance(headers, Mapping):
                found += [str(v) for k, v in headers.items() if k.lower() == "mcp-session-id"]
        if isinstance(request, Mapping):
            found += _SESSION_QUERY.findall(str(request.get("url", "")))
    return list(dict.fromkeys(found))


def _same_sessions(
    new: list[dict[str, Any]], old: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``new`` with the session ids its servers minted now replaced by those of ``old`` (one
    for one, in order of appearance): a server's new random id is no new answer, and a
    replay serves the recorded id back to the client anyway."""
    minted, kept = _session_ids(new), _session_ids(old)
    if not minted or len(minted) != len(kept) or minted == kept:
        return new
    if min(len(i) for i in (*minted, *kept)) < _MINTED_LENGTH:
        return new  # a short id could be any other value too: not replaced blindly
    text = orjson.dumps(new).decode()
    if any(k in text for k in kept if k not in minted):
        return new  # an old id already means something in the new recording: leave it
    for now, before in zip(minted, kept, strict=True):
        text = text.replace(now, before)
    steadied: list[dict[str, Any]] = orjson.loads(text)
    return steadied


def _steady_http(
    new: list[dict[str, Any]], old: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The test's other exchanges (``http``): each one whose request and answer are those of
    an exchange of ``old`` (the one at its place first, else the first unpaired one with its
    request) keeps that exchange's chunks."""
    new = _same_sessions(new, old)
    requests = [canonical(e.get("request")) for e in old]
    paired = [False] * len(old)
    out = []
    for n, exchange in enumerate(new):
        request = canonical(exchange.get("request"))
        places = [n] if n < len(old) and not paired[n] and requests[n] == request else []
        places += [m for m, r in enumerate(requests) if r == request and not paired[m]]
        for m in places:
            kept = _keep_chunks(exchange, old[m])
            if kept.get("response") is not exchange.get("response"):
                paired[m] = True
                exchange = kept
                break
        out.append(exchange)
    return out


def steady_cassette(
    new: Cassette, path: Path, *, secrets: Iterable[str], keep_date: bool = True
) -> Cassette | None:
    """``new`` as it should be written over the cassette at ``path``, or ``None`` when the file
    already holds exactly that (leave it untouched).

    A response that said what the file's response said keeps the file's (its timing: chunk
    offsets, boundaries, ``after``, how a stream ended): a provider's compared with the one at
    its place in its run, an ``http`` exchange with the file's exchange of the same request
    (MCP session ids read as the file's); when everything else is equal, so are the file's
    ``recorded_at`` and ``library_version``. A
    file that cannot be read is simply replaced. ``keep_date=False`` (a stale cassette
    re-recorded) writes ``new`` with its own ``recorded_at`` even then: the date is renewed.
    """
    try:
        before_text = path.read_text(encoding="utf-8")
        old = load_cassette(path, validate="shape")
    except (OSError, ValueError, CassetteError):  # no usable previous file: nothing to keep
        return new
    for run, old_run in zip(new.runs, old.runs, strict=False):
        run.interactions = [
            _keep_chunks(i, old_run.interactions[n]) if n < len(old_run.interactions) else i
            for n, i in enumerate(run.interactions)
        ]
    if new.http and old.http:
        new.http = _steady_http(list(new.http), old.http)
    fresh = (new.recorded_at, new.library_version)
    if not keep_date:
        return new
    new.recorded_at, new.library_version = old.recorded_at, old.library_version
    secrets = list(secrets)
    if dumps_cassette(new, secrets=secrets) == before_text:
        return None
    new.recorded_at, new.library_version = fresh
    return new
