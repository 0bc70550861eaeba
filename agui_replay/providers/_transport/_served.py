"""Replaying a stored response in the order it arrived in while recording: each chunk once its
host's requests it arrived after were sent, its last chunk once the responses that ended
before it were served (a tool's racing requests end as they did), its end after the requests
it outlived."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Protocol

import orjson

from agui_replay.errors import CassetteError
from agui_replay.providers._plan import TimedOut, Unreachable
from agui_replay.providers._recorder import in_flight_order
from agui_replay.providers._replaying import Stored

__all__ = ["Served", "after_responses", "in_canonical_order", "raise_failure"]

_log = logging.getLogger("agui_replay.tape")


class Tape(Protocol):
    """What a served response waits on (:class:`~._tape.HttpTape`)."""

    def wait_for_request(self, host: str, count: int) -> None: ...
    async def await_request(self, host: str, count: int) -> None: ...
    def wait_for_responses(self, positions: Sequence[int]) -> None: ...
    async def await_responses(self, positions: Sequence[int]) -> None: ...
    def finish(self, position: int) -> None: ...


class Served:
    """A stored response whose chunks each wait for the request they arrived after (and whose
    end waits too); iterated by a sync client, or through :meth:`areplay` by an async one,
    which also holds a stream the client closed while recording open until it closes it."""

    def __init__(
        self, tape: Tape, host: str, stored: Stored, position: int, before: list[int]
    ) -> None:
        self.tape, self.host, self.chunks = tape, host, stored.chunks
        self.end_after, self.held = stored.end_after, stored.held
        self.position, self.before = position, before
        """Its place in the http list, and the places of the responses served before its
        last chunk (its ``after_responses``)."""

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        try:
            last = len(self.chunks) - 1
            for n, (after, wait, data) in enumerate(self.chunks):
                self.tape.wait_for_request(self.host, after)
                if n == last:
                    self.tape.wait_for_responses(self.before)
                yield wait, data
            if last < 0:
                self.tape.wait_for_responses(self.before)
            self.tape.wait_for_request(self.host, self.end_after)
        finally:
            self.tape.finish(self.position)

    async def areplay(self) -> AsyncIterator[tuple[float, bytes]]:
        try:
            last = len(self.chunks) - 1
            for n, (after, wait, data) in enumerate(self.chunks):
                await self.tape.await_request(self.host, after)
                if n == last:
                    await self.tape.await_responses(self.before)
                yield wait, data
            if last < 0:
                await self.tape.await_responses(self.before)
            await self.tape.await_request(self.host, self.end_after)
        finally:
            self.tape.finish(self.position)
        if self.held:  # the client closed it while recording: it will again
            await asyncio.get_running_loop().create_future()


def after_responses(
    response: Mapping[str, Any], position: int, count: int, where: str
) -> list[int]:
    """The stored exchanges whose responses ended before this one's while it was in
    flight (its last chunk's ``after_responses``): its end is served after theirs."""
    chunks = response.get("chunks") if isinstance(response, Mapping) else None
    last = chunks[-1] if isinstance(chunks, list) and chunks else None
    value = last.get("after_responses") if isinstance(last, Mapping) else None
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n < count for n in value
    ):
        at = f"http[{position}].response.chunks[{len(chunks or []) - 1}].after_responses"
        raise CassetteError(
            f"{where}: {at} is {value!r}: it lists the places in the http list of "
            "the exchanges whose responses ended before this one's; re-record the test, or "
            "remove the field to replay without waiting"
        )
    return [n for n in value if n != position]


def raise_failure(response: Mapping[str, Any], shown: str) -> None:
    """Raise the failure a stored exchange recorded (a refused connection, a timeout)."""
    kind = response.get("failure")
    if kind is None:
        return
    message = f"{shown}: {response.get('message', kind)} (as recorded)"
    _log.debug("replaying %s: a recorded failure", shown)
    raise TimedOut(message) if kind == "timeout" else Unreachable(message)


def in_canonical_order(recordings: Sequence[Any]) -> list[dict[str, Any]]:
    """The recorded exchanges as a cassette stores them: in the order they were sent, but
    those in flight at the same time (complete responses of known length whose spans
    overlap) sorted by request, then response, whichever thread or task sent first; each of
    those whose response ended after others had ended while it was in flight names their
    places in the list on its last chunk (``after_responses``), so a replay ends them in that
    order."""
    stored = [r.to_dict() for r in recordings]

    def content(n: int) -> bytes:
        response = stored[n]["response"]
        said = [response.get("status"), [c.get("data") for c in response.get("chunks") or []]]
        return orjson.dumps([stored[n]["request"], said], option=orjson.OPT_SORT_KEYS)

    spans = [(r.began, r.ended) if r.settled else None for r in recordings]
    order = in_flight_order(spans, content)
    place = {n: at for at, n in enumerate(order)}
    for n, recording in enumerate(recordings):
        if not recording.settled:
            continue
        first = sorted(
            place[m]
            for m, other in enumerate(recordings)
            if other.settled and recording.began < other.ended < recording.ended
        )
        chunks = stored[n]["response"].get("chunks")
        if first and chunks:
            chunks[-1]["after_responses"] = first
    return [stored[n] for n in order]
