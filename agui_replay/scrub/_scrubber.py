"""Scrubbing: keep API keys and other secrets out of everything that is stored.

:func:`scrub` returns a deep copy of a JSON-like document (a cassette dict, an interaction, a
list of events...) in which

* the values of secret-bearing headers (``Authorization``, ``Proxy-Authorization``,
  ``x-api-key``, ``api-key``, ``Cookie``, ``Set-Cookie``, AWS's ``X-Amz-Security-Token``; names
  compared case-insensitively) become ``"<scrubbed>"``, in any ``"headers"`` object
  (``{name: value}`` or ``[[name, value], ...]``), and so do those of the other headers of an
  AWS SigV4 signature (``X-Amz-Date``, ``X-Amz-Content-SHA256``, ``amz-sdk-invocation-id``,
  ``amz-sdk-request``: they change with every request);
* every occurrence of a configured secret, and of the tokens found in those headers
  (``Bearer sk-...`` gives ``sk-...``; a SigV4 ``Authorization`` gives its access key id and
  signature), is replaced inside *any* string, anywhere;
* strings that look like provider keys (``sk-...``, ``sk-ant-...``, ``AIza...``, ``gsk_...``,
  ``hf_...``, GitHub and AWS access keys) are replaced too.

A secret split across two stored strings is still found where the strings are pieces of one
stream, and the replacement is put in the piece where the match starts (the rest of the match
is removed from the pieces it runs into; the pieces keep their count, so chunk boundaries and
offsets survive):

* a ``"chunks"`` list (provider response chunks) is scrubbed as one text, and so is the text
  the model streamed in its SSE frames, rebuilt per logical stream from the JSON of the
  ``data:`` lines (a frame may be split across chunks, a chunk may hold several frames):
  OpenAI Chat Completions ``choices[i].delta`` ``content`` / ``refusal`` /
  ``reasoning_content`` / ``reasoning`` and ``tool_calls[j].function.arguments``; every
  ``response.*.delta`` of the OpenAI Responses API (output text, function call arguments,
  reasoning summaries...); Anthropic ``content_block_delta`` ``text`` / ``partial_json`` /
  ``thinking``; Gemini ``candidates[i].content.parts[j].text``. Each other string of a frame
  is scrubbed on its own (also when JSON-escaped); a changed string is re-encoded in place,
  so every frame stays valid JSON (see :mod:`agui_replay.scrub._streamed_text`);
* the ``delta`` of the AG-UI content events of one message or tool call;
* a ``"chunks"`` list whose chunks are binary (``"encoding": "base64"``, an AWS event stream):
  each message's JSON payload is scrubbed, the text streamed over several messages as one
  text, and a changed message gets new CRCs (see :mod:`agui_replay._eventstream`).

Strings that are not pieces of one stream are scrubbed one by one. The keys of objects are
never rewritten (only values are data). The pytest plugin and the recording session leave out
configured secrets shorter than 8 characters, with a warning: replacing every
``x`` would corrupt a cassette.

>>> key = "sk-test-0123456789abcdef"
>>> scrub({"headers": {"Authorization": f"Bearer {key}"}, "body": f"key={key}"})
{'headers': {'Authorization': '<scrubbed>'}, 'body': 'key=<scrubbed>'}

Seam for the recorder and the plugin: scrub what you store with the same ``secrets`` you use
to compare, i.e. compare ``scrub(new_events)`` with the recorded (already scrubbed) events, so a
string that merely looks like a key does not make replay differ from the recording.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agui_replay._secrets import SIGNING_HEADERS, header_value_secrets
from agui_replay.scrub._frames import scrub_eventstream
from agui_replay.scrub._streamed_text import scrub_chunks, split_scrub

__all__ = [
    "DEFAULT_SECRET_HEADERS",
    "DEFAULT_SECRET_PATTERNS",
    "SCRUBBED",
    "Scrubber",
    "scrub",
    "scrub_sequence",
]

SCRUBBED = "<scrubbed>"
"""What a secret is replaced with."""

DEFAULT_SECRET_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
    }
)
"""Header names (lower case) whose values are never stored, and are secrets wherever else they
appear."""

DEFAULT_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    # OpenAI (sk-, sk-proj-, sk-svcacct-...) and Anthropic (sk-ant-...) keys.
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}"),
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"),  # Google
    re.compile(r"(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{20,}"),  # Groq
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    re.compile(r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub
    re.compile(r"(?<![A-Z0-9])AKIA[0-9A-Z]{16}(?![A-Z0-9])"),  # AWS access key id
)
"""Patterns of strings that look like provider keys; scrubbed wherever they appear."""

# Content events whose deltas are pieces of one text, keyed by the field naming that text.
_DELTA_STREAMS: dict[str, str] = {
    "TEXT_MESSAGE_CONTENT": "messageId",
    "TEXT_MESSAGE_CHUNK": "messageId",
    "TOOL_CALL_ARGS": "toolCallId",
    "TOOL_CALL_CHUNK": "toolCallId",
    "REASONING_MESSAGE_CONTENT": "messageId",
    "REASONING_MESSAGE_CHUNK": "messageId",
}


@dataclass(frozen=True)
class Scrubber:
    """A configured scrubber; ``Scrubber(secrets=["hunter2"])(doc)`` is ``scrub(doc, ...)``."""

    secrets: tuple[str, ...] = ()
    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    patterns: tuple[re.Pattern[str], ...] = DEFAULT_SECRET_PATTERNS
    replacement: str = SCRUBBED
    signing_headers: frozenset[str] = SIGNING_HEADERS

    def __call__(self, obj: Any) -> Any:
        found = set(_header_secrets(obj, self.headers))
        hidden = self.headers | self.signing_headers
        return _Walk(self._regexes(found), hidden, self.replacement).value(obj)

    def stream(self, pieces: Sequence[str]) -> list[str]:
        """The pieces of one text stream (the reads of a response body), scrubbed as one text
        and as the text streamed in their SSE frames, as a ``"chunks"`` list is; the pieces
        keep their count."""
        return scrub_chunks(pieces, self._regexes(), self.replacement)

    def binary_stream(self, pieces: Sequence[bytes]) -> list[bytes]:
        """The reads of an AWS event stream, scrubbed as base64 ``"chunks"`` are: a changed
        message is re-encoded with new CRCs; the pieces keep their count."""
        return scrub_eventstream(pieces, self._regexes(), self.replacement)

    def _regexes(self, found: Iterable[str] = ()) -> list[re.Pattern[str]]:
        # longest first, so a secret that contains another is replaced whole
        literals = sorted({s for s in self.secrets if s} | set(found), key=len, reverse=True)
        # One alternation, literals first: a single pass per string instead of one per pattern.
        alternatives = [re.escape(s) for s in literals] + [p.pattern for p in self.patterns]
        if not alternatives:
            return []
        return [re.compile("|".join(f"(?:{a})" for a in alternatives))]


def scrub(
    obj: Any,
    *,
    secrets: Iterable[str] = (),
    headers: Collection[str] = DEFAULT_SECRET_HEADERS,
    patterns: Sequence[re.Pattern[str]] = DEFAULT_SECRET_PATTERNS,
    replacement: str = SCRUBBED,
    signing_headers: Collection[str] = SIGNING_HEADERS,
) -> Any:
    """A deep copy of ``obj`` with secrets replaced (see the module docstring).

    ``headers`` and ``signing_headers`` are matched case-insensitively; pass ``patterns=()`` to
    turn the key-shaped pattern defaults off.
    """
    return Scrubber(
        secrets=tuple(secrets),
        headers=frozenset(h.lower() for h in headers),
        patterns=tuple(patterns),
        replacement=replacement,
        signing_headers=frozenset(h.lower() for h in signing_headers),
    )(obj)


def scrub_sequence(
    pieces: Sequence[str],
    regexes: Sequence[re.Pattern[str]],
    replacement: str = SCRUBBED,
) -> list[str]:
    """Scrub pieces of one text as a whole; the result has as many pieces as the input.

    A match that spans pieces is replaced in the piece where it starts and removed from the
    pieces it runs into.

    >>> scrub_sequence(["key sk-ant-abc", "defghijklmnopq end"], DEFAULT_SECRET_PATTERNS)
    ['key <scrubbed>', ' end']
    """
    return split_scrub(pieces, regexes, replacement)


def _header_items(headers: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(headers, Mapping):
        yield from headers.items()
    elif isinstance(headers, list):
        for pair in headers:
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                yield pair[0], pair[1]


def _header_secrets(obj: Any, names: frozenset[str]) -> Iterable[str]:
    """Secret values of secret headers anywhere in ``obj`` (and the token after a scheme)."""
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if isinstance(key, str) and key.lower() == "headers":
                    for name, hv in _header_items(value):
                        if not (isinstance(name, str) and name.lower() in names):
                            continue
                        for item in hv if isinstance(hv, list) else [hv]:
                            if isinstance(item, str) and item:
                                yield from header_value_secrets(name, item)
                stack.append(value)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


class _Walk:
    def __init__(
        self, regexes: Sequence[re.Pattern[str]], headers: frozenset[str], replacement: str
    ) -> None:
        self.regexes = regexes
        self.headers = headers
        self.replacement = replacement

    def text(self, value: str) -> str:
        for regex in self.regexes:
            value = regex.sub(self.replacement, value)
        return value

    def value(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            return self.mapping(obj)
        if isinstance(obj, (list, tuple)):
            return self.array(obj)
        return obj

    def mapping(self, obj: Mapping[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        # Keys are never rewritten: they are names (fields, header names), not data, and a
        # changed key would change what the document means.
        for key, value in obj.items():
            if isinstance(key, str) and key.lower() == "headers":
                out[key] = self.header_block(value)
            elif isinstance(key, str) and key == "chunks" and _is_chunk_list(value):
                out[key] = self.chunks(value)
            else:
                out[key] = self.value(value)
        return out

    def array(self, obj: Sequence[Any]) -> list[Any]:
        if _looks_like_events(obj):
            return self.events(obj)
        return [self.value(v) for v in obj]

    def header_block(self, headers: Any) -> Any:
        if isinstance(headers, Mapping):
            return {
                k: (self._hidden(v) if self._secret_name(k) else self.value(v))
                for k, v in headers.items()
            }
        if isinstance(headers, list):
            out: list[Any] = []
            for pair in headers:
                if (
                    isinstance(pair, (list, tuple))
                    and len(pair) == 2
                    and self._secret_name(pair[0])
                ):
                    out.append([pair[0], self.replacement])
                else:
                    out.append(self.value(pair))
            return out
        return self.value(headers)

    def _hidden(self, value: Any) -> Any:
        # A multi-valued header keeps its shape so the recorded request still reads the same.
        if isinstance(value, list):
            return [self.replacement for _ in value]
        return self.replacement

    def _secret_name(self, name: Any) -> bool:
        return isinstance(name, str) and name.lower() in self.headers

    def chunks(self, chunks: Sequence[Mapping[str, Any]]) -> list[Any]:
        if any(c.get("encoding") == "base64" for c in chunks):
            binary = self.binary_chunks(chunks)
            if binary is not None:
                return binary
        scrubbed = scrub_chunks([c["data"] for c in chunks], self.regexes, self.replacement)
        out = []
        for chunk, data in zip(chunks, scrubbed, strict=True):
            copy = self.mapping({k: v for k, v in chunk.items() if k != "data"})
            copy["data"] = data
            out.append({k: copy[k] for k in chunk})  # keep the chunk's own key order
        return out

    def binary_chunks(self, chunks: Sequence[Mapping[str, Any]]) -> list[Any] | None:
        """Chunks of a binary stream (base64 ``data``), scrubbed as an AWS event stream; None
        when a chunk's data is not base64 (then they are scrubbed as text)."""
        raw: list[bytes] = []
        for c in chunks:
            if c.get("encoding") != "base64":
                raw.append(c["data"].encode("utf-8"))
                continue
            try:
                raw.append(base64.b64decode(c["data"].encode("ascii"), validate=True))
            except (binascii.Error, UnicodeEncodeError):
                return None
        scrubbed = scrub_eventstream(raw, self.regexes, self.replacement)
        out = []
        for chunk, before, after in zip(chunks, raw, scrubbed, strict=True):
            copy = self.mapping({k: v for k, v in chunk.items() if k != "data"})
            if after == before:
                copy["data"] = chunk["data"]
            elif chunk.get("encoding") == "base64":
                copy["data"] = base64.b64encode(after).decode("ascii")
            else:
                copy["data"] = after.decode("utf-8", "replace")
            out.append({k: copy[k] for k in chunk})
        return out

    def events(self, events: Sequence[Any]) -> list[Any]:
        out = [self.value(e) for e in events]
        # A secret can also be split across the deltas of one message; scrub those joined.
        streams: dict[tuple[str, str], list[int]] = {}
        last_id: dict[str, str] = {}
        for i, event in enumerate(events):
            kind = event.get("type")
            field = _DELTA_STREAMS.get(kind) if isinstance(kind, str) else None
            if field is None or not isinstance(event.get("delta"), str):
                continue
            ident = event.get(field)
            if not isinstance(ident, str):
                ident = last_id.get(field, "")  # an id-less chunk continues the last one
            last_id[field] = ident
            streams.setdefault((field, ident), []).append(i)
        for indices in streams.values():
            if len(indices) < 2:
                continue
            raw = [events[i]["delta"] for i in indices]
            joined = scrub_sequence(raw, self.regexes, self.replacement)
            for i, delta in zip(indices, joined, strict=True):
                out[i]["delta"] = delta
        return out


def _is_chunk_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(c, Mapping) and isinstance(c.get("data"), str) for c in value
    )


def _looks_like_events(value: Sequence[Any]) -> bool:
    return bool(value) and all(
        isinstance(e, Mapping) and isinstance(e.get("type"), str) for e in value
    )
