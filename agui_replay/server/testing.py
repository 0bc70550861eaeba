"""Helpers for testing agents: serve an app on loopback, fold a stream into client state.

>>> from agui_replay.server import RunContext, run_input
>>> from agui_replay.server.testing import fold
>>> ctx, events = RunContext.new(run_input("t", "r"))
>>> _ = ctx.say("hi")
>>> fold(events.drain()).messages[0]["content"]
'hi'
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ag_ui.core import RunFinishedEvent, RunStartedEvent

from agui_replay.client import Session
from agui_replay.errors import AguiReplayError
from agui_replay.events import EventLike, event_type
from agui_replay.verify import Mode

__all__ = ["fold", "serve"]


def fold(
    events: Iterable[EventLike],
    *,
    state: Any = None,
    messages: Iterable[Any] | None = None,
    mode: Mode = "strict",
) -> Session:
    """Apply a stream to a fresh client :class:`~agui_replay.client.Session` and finish it.

    A harness stream (from ``RunContext.new``, so without ``RUN_STARTED``) is wrapped in a
    run first, so the same check covers harness and driver streams.
    """
    stream = list(events)
    if not stream or event_type(stream[0]) != "RUN_STARTED":
        stream = [
            RunStartedEvent(thread_id="harness", run_id="harness"),
            *stream,
            RunFinishedEvent(thread_id="harness", run_id="harness"),
        ]
    session = Session(state=state, messages=messages, mode=mode)
    return session.apply_all(stream).finish()


@contextmanager
def serve(app: Any, *, startup_timeout: float = 10.0) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 (a free port) in a thread; yields the base URL.

    The server is shut down when the block exits.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", loop="asyncio", http="h11", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise AguiReplayError(
                    f"the test server on 127.0.0.1:{port} did not start within "
                    f"{startup_timeout} s (startup_timeout); the app's startup may be failing"
                )
            time.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(startup_timeout)
        sock.close()
