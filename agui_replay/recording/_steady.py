"""Byte-stable re-records: what a cassette session stores is the same when nothing changed.

Two sources of noise are removed. Volatile response headers (the ``date``, request ids,
processing times, rate-limit counters, cookies) are not stored. The timing of a re-recorded
response whose chunks are the same as before keeps the offsets recorded then, and a cassette
whose content is the same as the file's keeps the file's ``recorded_at`` and
``library_version``: such a file is not written at all, so it stays byte-identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agui_replay.cassette import Cassette, dumps_cassette, load_cassette
from agui_replay.errors import CassetteError

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


def _chunk_data(interaction: Any) -> list[Any] | None:
    response = interaction.get("response") if isinstance(interaction, Mapping) else None
    chunks = response.get("chunks") if isinstance(response, Mapping) else None
    if not isinstance(chunks, list) or not chunks:
        return None
    if not all(isinstance(c, Mapping) for c in chunks):
        return None
    return [c.get("data") for c in chunks]


def _keep_offsets(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` with ``old``'s chunk offsets when both responses streamed the same chunks."""
    data = _chunk_data(new)
    if data is None or data != _chunk_data(old):
        return dict(new)
    old_chunks = old["response"]["chunks"]
    chunks = [
        {**chunk, "offset": before.get("offset", chunk.get("offset"))}
        for chunk, before in zip(new["response"]["chunks"], old_chunks, strict=True)
    ]
    return {**new, "response": {**new["response"], "chunks": chunks}}


def steady_cassette(
    new: Cassette, path: Path, *, secrets: Iterable[str], keep_date: bool = True
) -> Cassette | None:
    """``new`` as it should be written over the cassette at ``path``, or ``None`` when the file
    already holds exactly that (leave it untouched).

    Chunk offsets of a response equal to the one at the same place in the file are kept; when
    everything else is equal, so are the file's ``recorded_at`` and ``library_version``. A
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
            _keep_offsets(i, old_run.interactions[n]) if n < len(old_run.interactions) else i
            for n, i in enumerate(run.interactions)
        ]
    fresh = (new.recorded_at, new.library_version)
    if not keep_date:
        return new
    new.recorded_at, new.library_version = old.recorded_at, old.library_version
    secrets = list(secrets)
    if dumps_cassette(new, secrets=secrets) == before_text:
        return None
    new.recorded_at, new.library_version = fresh
    return new
