"""Replaying a stored response in the order it arrived in while recording: each chunk once its
host's requests it arrived after were sent, its last chunk once the responses that ended
before it were served (a tool's racing requests end as they did), its end after the requests
it outlived."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Protocol

from agui_replay.providers._replaying import Stored

__all__ = ["Served"]


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
