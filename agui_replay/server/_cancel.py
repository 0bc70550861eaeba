"""Cooperative cancellation: a flag the transport trips and the agent can check or await.

The HTTP endpoint trips the token when the client disconnects. An agent notices in three ways:
``ctx.cancelled`` turns true, ``await ctx.until_cancelled(...)`` gives up, and the next event it
tries to emit raises :class:`RunCancelled` — so even an agent that never checks unwinds at its
next ``delta()``. The run then ends with ``RUN_ERROR`` code ``CANCELLED``.

>>> token = CancellationToken()
>>> token.cancelled
False
>>> token.cancel()
>>> token.cancelled
True
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["CancellationToken", "RunCancelled"]


class RunCancelled(BaseException):
    """The run was cancelled (client disconnect, or someone called ``token.cancel()``).

    A ``BaseException``, like ``asyncio.CancelledError``: an agent's ``except Exception:`` does
    not catch it, so a cancelled run always unwinds; the run driver catches it and ends the run
    with ``RUN_ERROR`` code ``CANCELLED``. Not an error, so not public: agent code that must clean
    up uses ``try`` / ``finally``.
    """

    code = "CANCELLED"

    def __init__(self, message: str = "the run was cancelled") -> None:
        super().__init__(message)


class CancellationToken:
    """A thread-safe, one-way cancellation flag.

    Safe to trip from any thread or event loop; awaiting :meth:`wait` works on any loop.
    """

    __slots__ = ("_flag", "_lock", "_waiters")

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._flag.is_set()

    def cancel(self) -> None:
        """Trip the token. Idempotent."""
        with self._lock:
            if self._flag.is_set():
                return
            self._flag.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            # The waiter may sit on another loop (the agent's worker thread runs none, but a test
            # may await from its own loop); wake it on that loop.
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`RunCancelled` once the token is tripped."""
        if self._flag.is_set():
            raise RunCancelled()

    async def wait(self) -> None:
        """Return once the token is tripped."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._flag.is_set():
                return
            entry = (loop, future)
            self._waiters.append(entry)
        try:
            await future
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def wait_blocking(self, timeout: float | None = None) -> bool:
        """Block the calling thread until the token is tripped; ``False`` on timeout."""
        return self._flag.wait(timeout)

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.cancelled})"


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
