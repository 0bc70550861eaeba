"""Replaying recorded exchanges: which one answers a request, and its response with faults.

One :class:`Reel` serves every host. Its entries are recorded exchanges: a run's model
provider interactions (the cassette's ``interactions``) or the test's exchanges with other
hosts (its ``http`` list). A request is answered by an unused entry of its own kind (its
provider, or its host) that the reel's :class:`~agui_replay.providers._matchers.Matchers`
find equal, chosen as ``order`` says:

* ``"unordered"`` (the default, for providers and other hosts alike): the first such entry
  that matches (requests in flight at once are matched by content among the unanswered
  entries, never by which arrived first);
* ``"order"``: only the first unused entry may answer (request n is recorded request n);
* ``"none"``: the first unused entry answers, never compared.

The faults of a faulted replay (:mod:`agui_replay.faults`) sit on the entries they name: a
``status`` or ``timeout`` fault answers an attempt instead of the entry, which stays unused for
the client's retry; ``cut``, ``malformed`` and ``delay`` change the entry's response
(:func:`faulted`). What the host's role changes (provider or other host) is only what is
compared (the matchers), how a recorded response is read (:func:`provider_stored`,
:func:`host_stored`) and how a fault's error looks; :class:`ProviderReplay` is the providers'
role, ``_transport._tape.HttpTape`` the other hosts'.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from agui_replay.errors import (
    CassetteError,
    ProviderError,
    RequestMismatchError,
    ScriptExhaustedError,
)
from agui_replay.providers._formats import error_plan
from agui_replay.providers._interaction import Interaction, RecordedResponse, chunk_bytes
from agui_replay.providers._matchers import PROVIDER, Matchers, Mismatch
from agui_replay.providers._plan import Plan, TimedOut
from agui_replay.providers._script import ProviderRequest, detect_api

__all__ = [
    "Entry",
    "MatchMode",
    "ProviderReplay",
    "Reel",
    "Stored",
    "faulted",
    "host_stored",
    "malformed_frame",
    "place_host_fault",
    "provider_stored",
]

MatchMode = Literal["order", "unordered", "none"]

_log = logging.getLogger("agui_replay.matching")


@dataclass
class Entry:
    """One recorded exchange a replay may answer a request with."""

    position: int
    """Its place in the recorded list (interaction #n, ``http[n]``)."""
    request: Mapping[str, Any]
    """The stored request: method, ``url`` (other hosts) or ``path`` (providers), headers, body."""
    response: Any
    """The stored response (an :class:`Interaction` for a provider's, else a dict)."""
    key: str | None
    """What requests it may answer: its provider's name, or its host (``scheme://host:port``)."""
    faults: list[tuple[int, Any]] = field(default_factory=list)
    """Its faults, each with its place in the replay's fault list."""
    used: bool = False


@dataclass
class Pick:
    """What :meth:`Reel.pick` chose: the entry (``None``: none may answer), the fault that
    answers this attempt instead, the first field ``match_ignore`` let through, or the
    mismatch with the entry that should have answered."""

    entry: Entry | None = None
    gate: Any = None
    ignored: str | None = None
    mismatch: tuple[Entry, Mismatch] | None = None


class Reel:
    """Recorded exchanges, each answering one request (see the module)."""

    def __init__(self, matchers: Matchers, order: MatchMode = "unordered") -> None:
        if order not in ("order", "unordered", "none"):
            raise ProviderError(f"match must be 'order', 'unordered' or 'none', got {order!r}")
        self.matchers = matchers
        self.order: MatchMode = order
        self.entries: list[Entry] = []
        self.fired: list[Any] = []
        """The faults that changed a response so far."""
        self._answered: Counter[int] = Counter()
        self.lock = threading.Lock()

    def pick(self, request: Mapping[str, Any], serves: Callable[[Entry], bool]) -> Pick:
        """The unused entry (``serves`` says which may) that answers ``request``, as
        :attr:`order` says; a gated entry stays unused. Caller holds :attr:`lock`."""
        pending = [e for e in self.entries if not e.used and serves(e)]
        if not pending:
            return Pick()
        chosen, ignored = pending[0], None
        if self.order != "none":
            first: tuple[Entry, Mismatch] | None = None
            for entry in pending if self.order == "unordered" else pending[:1]:
                mismatch, ignored = self.matchers.compare(entry.request, request)
                if mismatch is None:
                    chosen = entry
                    break
                first = first or (entry, mismatch)
            else:
                return Pick(mismatch=first)
        gate = self._gate(chosen)
        if gate is None:
            chosen.used = True
            self.fire(f for _, f in chosen.faults if f.kind not in ("status", "timeout"))
        return Pick(chosen, gate, ignored)

    def _gate(self, entry: Entry) -> Any | None:
        """The ``status`` or ``timeout`` fault that answers this attempt, counted."""
        for n, fault in entry.faults:
            if fault.kind in ("status", "timeout") and self._answered[n] < fault.times:
                self._answered[n] += 1
                self.fire([fault])
                return fault
        return None

    def fire(self, faults: Iterable[Any]) -> None:
        for fault in faults:
            if not any(f is fault for f in self.fired):
                self.fired.append(fault)


# --- stored responses, with their faults --------------------------------------------------------


@dataclass
class Stored:
    """A stored response as it is served: each chunk with the count of its host's requests it
    waits for, the seconds it waits, and its bytes."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[tuple[int, float, bytes]]
    streaming: bool
    end_after: int = 0
    held: bool = False
    """The client closed it while recording: an async client's replay stays open."""
    cut: bool = False

    def plan(self) -> Plan:
        writes = [(wait, data) for _, wait, data in self.chunks]
        return Plan(self.status, self.headers, writes, self.streaming, cut=self.cut)


_DROP_ON_REPLAY = {"content-length", "transfer-encoding", "content-encoding", "connection"}


def provider_stored(interaction: Interaction, realtime: bool) -> Stored:
    """A recorded provider response: its chunks (waiting the recorded time between them when
    ``realtime``), or its whole body."""
    resp = interaction.response
    headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in _DROP_ON_REPLAY]
    if not resp.chunks:
        return Stored(resp.status, headers, [(0, 0.0, resp.text.encode("utf-8"))], False)
    chunks, last = [], 0.0
    for c in resp.chunks:
        chunks.append((0, max(0.0, c.offset - last) if realtime else 0.0, c.raw))
        last = c.offset
    return Stored(resp.status, headers, chunks, True)


def host_stored(response: Mapping[str, Any], where: str) -> Stored:
    """A stored response of another host: its chunks with the requests they waited for
    (``after``), and its end (``end_after``, ``open``)."""
    items = response.get("chunks") or []
    # status, headers and body checked as any stored response's; the chunks' bytes directly
    first = items[:1] if isinstance(items, list) else items
    stored = RecordedResponse.from_dict({**response, "chunks": first})
    datas = chunk_bytes(items)
    if not datas and stored.body is not None:
        datas = [stored.content]
    afters = [0] * len(datas)
    for n, c in enumerate(items[: len(datas)]):
        after = c.get("after") if isinstance(c, Mapping) else None
        if after is not None:
            afters[n] = _count(after, f"{where}: response.chunks[{n}].after")
    return Stored(
        stored.status,
        [(k, str(v)) for k, v in stored.headers.items()],
        [(after, 0.0, data) for after, data in zip(afters, datas, strict=True)],
        len(datas) > 1,
        _count(response.get("end_after"), f"{where}: response.end_after"),
        bool(response.get("open")),
    )


def _count(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CassetteError(
            f"{where} is {value!r}: it counts the host's requests sent before, a whole number "
            "from 1; re-record the test, or remove the field to replay without waiting"
        )
    return value


def faulted(
    stored: Stored, faults: Iterable[Any], *, sse: bool = False, eventstream: bool = False
) -> Stored:
    """``stored`` changed by the ``cut``, ``malformed`` and ``delay`` faults among
    ``faults``; ``sse`` / ``eventstream``: a malformed frame is an SSE event / an AWS event
    stream message whatever the content type (a provider's, a Bedrock one's)."""
    for fault in faults:
        chunks = stored.chunks
        if fault.kind == "cut":  # the connection drops mid-body: unended
            stored.chunks, stored.cut = chunks[: fault.after_chunks], True
            stored.held, stored.end_after = False, 0
            stored.streaming = stored.streaming or not sse
        elif fault.kind == "malformed":
            n = min(fault.after_chunks, len(chunks))
            around = [data for _, _, data in chunks[max(0, n - 1) : n + 1]]
            frame = malformed_frame(stored.headers, around, sse=sse, eventstream=eventstream)
            chunks.insert(n, (chunks[n - 1][0] if n else 0, 0.0, frame))
        elif fault.kind == "delay":
            after, wait, data = chunks[0] if chunks else (0, 0.0, b"")
            chunks[:1] = [(after, wait + fault.seconds, data)]
    return stored


_MALFORMED = b'{"truncated": '
_EVENT_LINE = re.compile(rb"^event: ?(\S+)", re.MULTILINE)


def malformed_frame(
    headers: Sequence[tuple[str, str]],
    around: list[bytes],
    *,
    sse: bool = False,
    eventstream: bool = False,
) -> bytes:
    """A frame of the response's own framing whose JSON is cut short: an AWS event stream
    message, an SSE event named as the recorded events around it are (Anthropic's
    ``content_block_delta``...; OpenAI's have no name), or bare JSON."""
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "").lower()
    if eventstream or "eventstream" in content_type:
        from agui_replay._eventstream import encode_event

        return encode_event("contentBlockDelta", _MALFORMED)
    if not sse and "event-stream" not in content_type:
        return _MALFORMED
    names = [m.group(1) for raw in around for m in _EVENT_LINE.finditer(raw)]
    named = [n for n in names if n not in (b"ping", b"message_stop", b"error")]
    event = b"event: " + named[-1] + b"\n" if named else b""
    return event + b"data: " + _MALFORMED + b"\n\n"


# --- the model providers' role --------------------------------------------------------------------

_NO_RETRY = ("x-should-retry", "false")


class ProviderReplay:
    """A run's recorded provider interactions, answering the requests routed to them.

    Compared on method, path and body (:data:`~agui_replay.providers._matchers.PROVIDER`,
    less ``match_ignore``); a request that matches nothing is answered with an HTTP 500 in the
    provider's error shape and kept in :attr:`errors`. A fault's ``request`` counts from
    ``first_request`` (the interactions of a test's earlier runs).
    """

    def __init__(
        self,
        interactions: Iterable[Interaction | Mapping[str, Any]],
        *,
        realtime: bool = False,
        match: MatchMode = "unordered",
        match_ignore: Iterable[str] = (),
        ignore_fields: Iterable[str] = (),
        faults: Iterable[Any] = (),
        first_request: int = 0,
    ) -> None:
        self.reel = Reel(Matchers(PROVIDER, ignore=match_ignore, fields=ignore_fields), match)
        self.realtime = realtime
        self.ignored: list[str] = []
        """The requests that matched only once ``match_ignore`` left fields out, each with
        the first such field: ``"request #0: /messages/0/content"``."""
        for i, it in enumerate(interactions):
            try:
                inter = it if isinstance(it, Interaction) else Interaction.from_dict(dict(it))
            except (ProviderError, TypeError, ValueError) as exc:
                raise ProviderError(f"interaction #{i}: {exc}") from None
            request = inter.request.to_dict()
            self.reel.entries.append(Entry(i, request, inter, inter.provider))
        for n, fault in enumerate(faults):
            at = fault.request - first_request
            if 0 <= at < len(self.reel.entries):
                self.reel.entries[at].faults.append((n, fault))

    @property
    def fired(self) -> list[Any]:
        return self.reel.fired

    @property
    def unserved(self) -> list[str]:
        return [f"turn #{e.position}: {_described(e)}" for e in self.reel.entries if not e.used]

    def answer(self, request: ProviderRequest) -> Plan | ProviderError:
        """The recorded response to ``request``, a fault's, or the error to answer with."""
        provider = request.provider
        has_own = provider is not None and any(e.key == provider for e in self.reel.entries)

        def serves(entry: Entry) -> bool:
            # an untagged (format 1) or default interaction answers a provider with none
            # of its own
            if provider is None or entry.key == provider:
                return True
            return not has_own and entry.key in (None, "default")

        received = {"method": request.method, "path": request.path, "body": request.body}
        with self.reel.lock:
            pick = self.reel.pick(received, serves)
        if pick.mismatch is not None:
            return self._mismatch(request, *pick.mismatch)
        entry = pick.entry
        if entry is None:
            return self._exhausted(request)
        _log.debug(
            "request #%d (%s %s) matches recorded interaction #%d",
            request.index,
            request.method,
            request.path,
            entry.position,
        )
        if pick.ignored is not None:
            self.ignored.append(f"request #{request.index}: {pick.ignored}")
        if pick.gate is not None:
            return _gated(entry, pick.gate)
        stored = provider_stored(entry.response, self.realtime)
        faults = [f for _, f in entry.faults if f.kind not in ("status", "timeout")]
        bedrock = detect_api(str(entry.request["path"])) == "bedrock.converse"
        return faulted(stored, faults, sse=True, eventstream=bedrock).plan()

    def _mismatch(
        self, request: ProviderRequest, entry: Entry, mismatch: Mismatch
    ) -> RequestMismatchError:
        _log.debug(
            "request #%d (%s %s) does not match recorded interaction #%d: first difference at %s",
            request.index,
            request.method,
            request.path,
            entry.position,
            mismatch.pointer,
        )
        return RequestMismatchError(
            f"request #{request.index} ({request.method} {request.path}) does not match recorded "
            f"interaction #{entry.position} (match={self.reel.order!r}):\n{mismatch.text}"
            + _hint(mismatch),
            field=mismatch.pointer,
        )

    def _exhausted(self, request: ProviderRequest) -> ScriptExhaustedError:
        _log.debug("request #%d: no unserved turn is left for it", request.index)
        total = len(self.reel.entries)
        if request.provider is not None and any(not e.used for e in self.reel.entries):
            return ScriptExhaustedError(
                f"request #{request.index} to provider {request.provider!r} arrived but no "
                f"unserved turn of the script or recording is for that provider:\n  "
                f"{request.summary()}"
            )
        return ScriptExhaustedError(
            f"request #{request.index} arrived but the script has {total} turn(s) "
            f"and all were served (script position {total}):\n  {request.summary()}"
        )


def _described(entry: Entry) -> str:
    who = f" ({entry.key})" if entry.key else ""
    shown = f"{entry.request['method']} {entry.request['path']}"
    return f"recorded interaction #{entry.position}{who}: {shown}"


def _gated(entry: Entry, fault: Any) -> Plan:
    """A ``status`` fault's error response in the provider's shape, or a ``timeout`` fault's
    :class:`TimedOut`."""
    what = f"{fault.describe()} on {entry.request['method']} {entry.request['path']}"
    if fault.kind == "timeout":
        _log.debug("replaying %s: a read timeout", what)
        raise TimedOut(f"agui_replay fault: read timed out ({what})")
    _log.debug("replaying %s: HTTP %s", what, fault.code)
    return error_plan(
        detect_api(str(entry.request["path"])),
        fault.code,
        f"agui_replay fault: HTTP {fault.code} ({what})",
        headers=list(fault.headers),
    )


_LISTS = {"tools": "a tool", "messages": "a message", "functions": "a function"}
"""Lists of a request body whose items, gained or lost, change what the agent asks."""
_CHOICES = frozenset({"model", "tool_choice", "tools", "messages", "functions"})
"""Body fields whose value, changed as a whole, is the agent's change."""


def _hint(mismatch: Mismatch) -> str:
    """What to do about a body difference. A request that gained or lost a tool or a message,
    or that names another model, is the agent's change: re-record. A changed value elsewhere
    (a prompt's date, a description, a temperature) may vary without meaning: its pointer is
    offered to ``match_ignore``, beside re-recording."""
    import json

    if not mismatch.pointer.startswith("/body/"):
        return ""
    pointer = mismatch.pointer[len("/body") :]
    steps = pointer.split("/")[1:]
    field = steps[0]
    if field in _LISTS and mismatch.missing and len(steps) == 2:
        grew = "gained" if mismatch.missing == "left" else "lost"
        return (
            f"\n  the request {grew} {_LISTS[field]} ({pointer}): the agent changed; if that is "
            "intended, re-record the test"
        )
    renamed = field in ("tools", "functions") and steps[-1] == "name"
    if (field in _CHOICES and len(steps) == 1) or renamed:
        return (
            f"\n  the request's {pointer} changed: the agent changed; if that is intended, "
            "re-record the test"
        )
    shown = json.dumps(pointer, ensure_ascii=False)
    return (
        "\n  if this field does not matter to the test, re-record, or ignore it: "
        f"@pytest.mark.agui(match_ignore=[{shown}])"
    )


def place_host_fault(
    fault: Any, recorded: Sequence[Mapping[str, Any]], providers: Any, where: str
) -> tuple[int | None, str | None]:
    """The place in ``recorded`` (a test's http list) of the exchange a fault with ``host=``
    hits, or what is wrong with it (``providers``: the host table of the model providers)."""
    host = str(fault.host)
    spot = f"{where}: {fault.describe()}"
    parts = urlsplit(f"//{host}")
    provider = None
    if providers is not None and parts.hostname is not None:
        provider = providers.provider_for(parts.hostname, parts.port)
    if provider is not None:
        return None, (
            f"{spot} names {host}, a model provider's host ({provider}): its requests are "
            "the cassette's provider interactions, not its http list. Leave host= out: "
            "request= then counts the test's provider requests."
        )
    mine = [
        i
        for i, e in enumerate(recorded)
        if _on_host(str((e.get("request") or {}).get("url", "")), host)
    ]
    if 0 <= fault.request < len(mine):
        return mine[fault.request], None
    if mine:
        listed = "; ".join(
            f"request={n}: {_shown(recorded[i])}" for n, i in enumerate(mine[:10])
        ) + ("; ..." if len(mine) > 10 else "")
        return None, (
            f"{spot}: the cassette recorded {len(mine)} request(s) to {host}, counted from "
            f"0 in the order its http list holds them ({listed}). Point request= at one "
            "of them."
        )
    hosts = sorted(
        {urlsplit(str((e.get("request") or {}).get("url", ""))).netloc.lower() for e in recorded}
    )
    if hosts:
        has = (
            f"it recorded requests to {', '.join(hosts)}. Point host= at one of those "
            "(HOST, or HOST:PORT as the URL writes it)"
        )
    else:
        has = (
            "it recorded no request besides the model providers' (its http list is "
            "empty). Record the conversation again if it now makes that request"
        )
    return None, (
        f"{spot}: the cassette recorded no request to {host}; {has}, or leave host= out "
        "to hit a model provider's request."
    )


def _shown(exchange: Mapping[str, Any]) -> str:
    stored = exchange.get("request") or {}
    return f"{stored.get('method')} {stored.get('url')}"


def _on_host(url: str, host: str) -> bool:
    """Whether ``url`` is a request to ``host`` (a fault's ``HOST`` or ``HOST:PORT``: a host
    without a port matches every port, a port matches the URL's own or its scheme's)."""
    try:
        parts, wanted = urlsplit(url), urlsplit(f"//{host}")
        port, wanted_port = parts.port, wanted.port
    except ValueError:
        return False
    if parts.hostname is None or parts.hostname != wanted.hostname:
        return False
    if wanted_port is None:
        return True
    return wanted_port == (port or {"http": 80, "https": 443}.get(parts.scheme))
