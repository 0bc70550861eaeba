"""Recorded provider traffic: one request and its response, chunk by chunk.

These are plain data (no I/O); a cassette stores them through :meth:`Interaction.to_dict`.

>>> i = Interaction(
...     RecordedRequest("POST", "/v1/chat/completions", {}, {"model": "m"}),
...     RecordedResponse(200, {}, [Chunk(0.01, "data: [DONE]\\n\\n")]),
... )
>>> Interaction.from_dict(i.to_dict()) == i
True

A chunk of a binary stream (AWS's ``application/vnd.amazon.eventstream``) holds ``bytes`` and is
stored in base64, so its bytes and its boundaries survive:

>>> Chunk(0.5, bytes([0, 1])).to_dict()
{'offset': 0.5, 'data': 'AAE=', 'encoding': 'base64'}
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from agui_replay.errors import ProviderError

__all__ = [
    "BASE64",
    "Chunk",
    "Interaction",
    "RecordedRequest",
    "RecordedResponse",
    "is_text_content_type",
    "parse_body",
]

BASE64 = "base64"
"""The ``encoding`` of a stored chunk whose ``data`` is the base64 of its bytes."""

_TEXT_TYPES = ("json", "event-stream", "xml", "javascript", "x-www-form-urlencoded", "ndjson")


def is_text_content_type(content_type: str | None) -> bool:
    """Whether a body of this content type is text (stored as text) rather than bytes.

    No content type counts as text (what older recordings assumed).

    >>> is_text_content_type("text/event-stream; charset=utf-8")
    True
    >>> is_text_content_type("application/vnd.amazon.eventstream")
    False
    """
    if not content_type:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind.startswith("text/") or any(t in kind for t in _TEXT_TYPES)


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
    """One network read of a streamed response: ``offset`` seconds after the request started.

    ``data`` is ``str`` for a text stream (SSE) and ``bytes`` for a binary one; :attr:`raw` is
    the bytes either way.
    """

    offset: float
    data: str | bytes

    @property
    def raw(self) -> bytes:
        """The bytes of this read."""
        data = self.data
        return data if isinstance(data, bytes) else data.encode("utf-8")

    @property
    def binary(self) -> bool:
        return isinstance(self.data, bytes)

    def to_dict(self) -> dict[str, Any]:
        if isinstance(self.data, bytes):
            text = base64.b64encode(self.data).decode("ascii")
            return {"offset": self.offset, "data": text, "encoding": BASE64}
        return {"offset": self.offset, "data": self.data}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        offset = float(_req(d, "offset", "chunk"))
        data = _req(d, "data", "chunk")
        encoding = d.get("encoding")
        if encoding is None:
            return cls(offset, str(data))
        if encoding != BASE64:
            raise ProviderError(
                f"chunk encoding {encoding!r} is unknown; a binary chunk has "
                f'"encoding": "{BASE64}", a text chunk no encoding'
            )
        return cls(offset, decode_base64(data))


def decode_base64(data: Any) -> bytes:
    """The bytes of a base64 chunk's ``data``; :class:`ProviderError` when it is not base64."""
    if not isinstance(data, str):
        raise ProviderError(f"a base64 chunk's data is a string, got {type(data).__name__}")
    try:
        return base64.b64decode(data.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ProviderError(f"a base64 chunk's data is not base64: {data[:40]!r}") from None


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
    def content(self) -> bytes:
        """The whole body as bytes."""
        if self.chunks:
            return b"".join(c.raw for c in self.chunks)
        return self.text.encode("utf-8")

    @property
    def text(self) -> str:
        """The whole body as text (a binary body decoded as UTF-8, with replacements)."""
        if self.chunks:
            if any(c.binary for c in self.chunks):
                return self.content.decode("utf-8", "replace")
            return "".join(c.data for c in self.chunks)  # type: ignore[misc]
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


def chunk_bytes(items: list[Any]) -> list[bytes]:
    """The bytes of each stored chunk (``[c.raw for c in _chunks(items)]``, checked alike),
    without a :class:`Chunk` for each of the common text chunks."""
    out: list[bytes] = []
    append = out.append
    for i, c in enumerate(items):
        if c.__class__ is dict and "encoding" not in c:
            offset, data = c.get("offset"), c.get("data")
            if data.__class__ is str and (offset.__class__ is float or offset.__class__ is int):
                append(data.encode("utf-8"))
                continue
        append(_chunks([c], first=i)[0].raw)
    return out


def _chunks(items: list[Any], first: int = 0) -> list[Chunk]:
    # A replayed cassette has a chunk per network read (often a thousand): take the common,
    # well-formed case without the per-field checks of Chunk.from_dict (same result).
    out: list[Chunk] = []
    append = out.append
    for i, c in enumerate(items):
        if c.__class__ is dict and "encoding" not in c:
            offset, data = c.get("offset"), c.get("data")
            if data.__class__ is str and (offset.__class__ is float or offset.__class__ is int):
                append(Chunk(float(offset), data))
                continue
        try:
            append(Chunk.from_dict(c))
        except (ProviderError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"response.chunks[{first + i}]: {exc}; a chunk is "
                '{"offset": seconds since the request, "data": "text of one network read"} '
                '(with "encoding": "base64" when data is the base64 of bytes)'
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
