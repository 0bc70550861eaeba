"""Whether a request is a recorded one: the named matchers every replay compares with.

A replayed request is compared with a recorded one part by part, each part a named matcher:

* ``method``; ``origin`` (scheme and host); ``path`` (the URL's path, the query left out);
* ``query``: the query string as parameters, in any order;
* ``body``: the JSON body, ``1`` equal to ``1.0`` (never to ``true``), less what the
  ``match_ignore`` globs name (``/messages/0/content``, ``/tools/*/description``);
* ``headers``: the request headers, but ``mcp-session-id`` (the server chose it);
* a callable ``matcher(recorded_request, request) -> bool`` (each a dict: method, url,
  headers, body), which may also raise ``AssertionError`` saying why.

A model provider's requests are compared on :data:`PROVIDER` (method, path, body); other
hosts' on :data:`HOST` (method, origin, path, query) and what ``match_on`` adds (``"url"``
names origin, path and query). Where they differ is a JSON pointer into the request
(``/body/messages/0/content``, ``/query/city/0``), found by :mod:`agui_replay._jsondiff`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from agui_replay._jsondiff import describe, escape, first_difference
from agui_replay.errors import InvalidArgumentError

__all__ = ["HOST", "PROVIDER", "Matchers", "Mismatch", "match_ignore_globs", "match_rules"]

Matcher = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
"""``matcher(recorded_request, request) -> bool``; each a dict: method, url, headers, body."""

PROVIDER = ("method", "path", "body")
HOST = ("method", "origin", "path", "query")
_NAMES = ("method", "url", "origin", "path", "query", "body", "headers")

_UNMATCHED_HEADERS = frozenset({"mcp-session-id"})
"""Request headers never compared: the server chose their values (the recorded ones are served
back to the client, which sends them again)."""

_PRIORITY = (
    "model",
    "system",
    "instructions",
    "messages",
    "input",
    "tools",
    "tool_choice",
    "stream",
)
"""Body fields a reader cares about first when two requests differ (the rest sorted)."""


def _reading_order(keys: Iterable[str]) -> list[str]:
    present = set(keys)
    first = [k for k in _PRIORITY if k in present]
    return first + sorted(present - set(first))


def match_rules(value: Iterable[Any]) -> list[str | Matcher]:
    """The ``match_on`` entries, checked: names of request parts or callables."""
    out: list[str | Matcher] = []
    for entry in value:
        if callable(entry):
            out.append(entry)
        elif isinstance(entry, str) and entry.strip() in _NAMES:
            out.append(entry.strip())
        elif isinstance(entry, str) and not entry.strip():
            continue
        else:
            raise InvalidArgumentError(
                f"match_on: {entry!r} is not one of {', '.join(_NAMES)} or a callable "
                "(recorded_request, request) -> bool"
            )
    return out


def match_ignore_globs(globs: Iterable[str]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """``match_ignore`` checked: the globs, and the normalize rules that drop what they name."""
    from agui_replay.normalize import ignore

    if isinstance(globs, str):
        globs = [globs]
    kept: list[str] = []
    rules: list[Any] = []
    for glob in globs:
        try:
            rules.append(ignore(glob))
        except InvalidArgumentError:
            raise InvalidArgumentError(
                f"match_ignore: {glob!r} is not a JSON-pointer glob into the request body; "
                'write it as a JSON pointer starting with "/", with * for any one key or index '
                'and ** for any depth, e.g. "/messages/0/content", "/temperature" or '
                '"/tools/*/description"'
            ) from None
        kept.append(glob)
    return tuple(kept), tuple(rules)


@dataclass(frozen=True)
class Mismatch:
    """Where a request first differs from a recorded one: a JSON pointer into the request
    (empty for a callable's verdict) and readable lines saying how."""

    pointer: str
    text: str
    missing: str = ""
    """``"left"`` / ``"right"`` when only the recorded / the new request has the place."""


def _part(name: str, request: Mapping[str, Any]) -> Any:
    """One named part of a request given as a dict (``url``, or a provider's ``path``)."""
    if name == "method":
        return str(request.get("method", "")).upper()
    if name == "body":
        return request.get("body")
    if name == "headers":
        headers = request.get("headers") or {}
        return {k.lower(): v for k, v in headers.items() if k.lower() not in _UNMATCHED_HEADERS}
    url = str(request.get("url") or request.get("path") or "")
    parts = urlsplit(url)
    if name == "origin":
        return f"{parts.scheme}://{parts.netloc.lower()}" if parts.netloc else ""
    if name == "path":
        return parts.path
    query: dict[str, list[str]] = {}
    for key, value in sorted(parse_qsl(parts.query, keep_blank_values=True)):
        query.setdefault(key, []).append(value)
    return query


class Matchers:
    """The matchers one replay compares with: ``names`` (see the module), ``ignore`` the
    ``match_ignore`` globs into the body, ``fields`` top-level body fields never compared."""

    def __init__(
        self,
        names: Iterable[str | Matcher],
        *,
        ignore: Iterable[str] = (),
        fields: Iterable[str] = (),
    ) -> None:
        self.names: list[str | Matcher] = []
        for name in names:
            expanded = ("origin", "path", "query") if name == "url" else (name,)
            self.names += [n for n in expanded if n not in self.names]
        self.globs, self._rules = match_ignore_globs(ignore)
        self._fields = frozenset(f"/body/{escape(f)}" for f in fields)

    def _skip(self, pointer: str) -> bool:
        return pointer in self._fields

    def _compare(
        self,
        recorded: Mapping[str, Any],
        request: Mapping[str, Any],
        loose: bool,
        names: Iterable[str | Matcher],
    ) -> Mismatch | None:
        for name in names:
            if callable(name):
                verdict = _called(name, recorded, request)
                if verdict is not None:
                    return verdict
                continue
            old, new = _part(name, recorded), _part(name, request)
            if name == "body" and loose:
                old, new = self._left_out(old), self._left_out(new)
            body = name == "body"
            diff = first_difference(
                old,
                new,
                pointer=f"/{name}",
                numbers="value" if body else "strict",
                keys=_reading_order if body else None,
                ignore=self._skip if body and self._fields else None,
            )
            if diff is not None:
                return Mismatch(diff.pointer, describe(diff), diff.missing)
        return None

    def compare(
        self, recorded: Mapping[str, Any], request: Mapping[str, Any], *, only: str | None = None
    ) -> tuple[Mismatch | None, str | None]:
        """What first differs (``None``: they match), and when they match only once the
        ``match_ignore`` globs leave fields out, the first such field (a pointer into the
        body); ``only``: the one named part compared."""
        names = self.names if only is None else [only]
        strict = self._compare(recorded, request, False, names)
        if strict is None or not self._rules:
            return strict, None
        loose = self._compare(recorded, request, True, names)
        if loose is None:
            return None, strict.pointer.removeprefix("/body")
        return loose, None

    def _left_out(self, body: Any) -> Any:
        """The body without what the ``match_ignore`` globs name (JSON bodies only)."""
        if not isinstance(body, (dict, list)):
            return body
        for rule in self._rules:
            body = rule(body)
        return body


def _called(
    matcher: Matcher, recorded: Mapping[str, Any], request: Mapping[str, Any]
) -> Mismatch | None:
    name = getattr(matcher, "__name__", "matcher")
    try:
        ok = matcher(recorded, request)
    except AssertionError as exc:
        return Mismatch("", f"  {name}: {exc}")
    return None if ok else Mismatch("", f"  {name} said they differ")
