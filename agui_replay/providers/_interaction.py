"""Recorded provider traffic: one request and its response, chunk by chunk.

These are plain data (no I/O); a cassette stores them through :meth:`Interaction.to_dict`.

>>> i = Interaction(
...     RecordedRequest("POST", "/v1/chat/completions", {}, {"model": "m"}),
...     RecordedResponse(200, {}, [Chunk(0.01, "data: [DONE]\\n\\n")]),
... )
>>> Interaction.from_dict(i.to_dict()) == i
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agui_replay.errors import ProviderError

__all__ = ["Chunk", "Interaction", "RecordedRequest", "RecordedResponse", "parse_body"]


def parse_body(data: bytes | str) -> Any:
    """The body as parsed JSON when it is JSON, else as text (``None`` when empty)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Chunk:
    """One network read of a streamed response: ``offset`` seconds after the request started."""

    offset: float
    data: str

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "data": self.data}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        return cls(float(_req(d, "offset", "chunk")), str(_req(d, "data", "chunk")))


@dataclass
class RecordedRequest:
    """A request as sent upstream, with secrets already scrubbed."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RecordedRequest:
        return cls(
            str(_req(d, "method", "request")),
            str(_req(d, "path", "request")),
            dict(d.get("headers") or {}),
            d.get("body"),
        )


@dataclass
class RecordedResponse:
    """A response: streamed ones keep ``chunks``; others keep ``body`` (JSON or text)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    body: Any = None

    @property
    def streamed(self) -> bool:
        return bool(self.chunks) or "event-stream" in self.headers.get("content-type", "")

    @property
    def text(self) -> str:
        """The whole body as text."""
        if self.chunks:
            return "".join(c.data for c in self.chunks)
        if self.body is None:
            return ""
        if isinstance(self.body, str):
            return self.body
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status, "headers": dict(self.headers)}
        if self.chunks or self.body is None:
            d["chunks"] = [c.to_dict() for c in self.chunks]
        if self.body is not None:
            d["body"] = self.body
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RecordedResponse:
        status = _req(d, "status", "response")
        chunks = d.get("chunks") or []
        if not isinstance(chunks, list):
            raise ProviderError(f"response.chunks must be a list, got {type(chunks).__name__}")
        return cls(
            _status(status),
            dict(d.get("headers") or {}),
            _chunks(chunks),
            d.get("body"),
        )


def _chunks(items: list[Any]) -> list[Chunk]:
    # A replayed cassette has a chunk per network read (often a thousand): take the common,
    # well-formed case without the per-field checks of Chunk.from_dict (same result).
    out: list[Chunk] = []
    append = out.append
    for i, c in enumerate(items):
        if c.__class__ is dict:
            offset, data = c.get("offset"), c.get("data")
            if data.__class__ is str and (offset.__class__ is float or offset.__class__ is int):
                append(Chunk(float(offset), data))
                continue
        try:
            append(Chunk.from_dict(c))
        except (ProviderError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"response.chunks[{i}]: {exc}; a chunk is "
                '{"offset": seconds since the request, "data": "text of one network read"}'
            ) from None
    return out


@dataclass
class Interaction:
    """One recorded request/response exchange with a model provider.

    ``provider`` names the provider it went to (``"openai"``, ``"anthropic"``, ``"gemini"``,
    ``"default"`` for ``agui.provider.base_url``...); ``None`` in recordings that predate
    several providers per run (cassette format 1), which any provider may replay.
    """

    request: RecordedRequest
    response: RecordedResponse
    provider: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.provider is not None:
            d["provider"] = self.provider
        d["request"] = self.request.to_dict()
        d["response"] = self.response.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Interaction:
        provider = d.get("provider") if isinstance(d, dict) else None
        if provider is not None and not isinstance(provider, str):
            raise ProviderError(
                f"interaction.provider must be a provider name (a string), got {provider!r}"
            )
        return cls(
            RecordedRequest.from_dict(_req(d, "request", "interaction")),
            RecordedResponse.from_dict(_req(d, "response", "interaction")),
            provider,
        )


def _req(d: Any, key: str, what: str) -> Any:
    if not isinstance(d, dict):
        raise ProviderError(f"{what} must be a JSON object, got {type(d).__name__}")
    if key not in d:
        raise ProviderError(f"{what} has no {key!r} field (keys: {', '.join(sorted(d))})")
    return d[key]


def _status(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ProviderError(
            f"response.status must be an HTTP status code such as 200, got {value!r}"
        ) from None
