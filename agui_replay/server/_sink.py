"""The write end of a run's event stream: verify, then queue.

Emitting is synchronous into an unbounded queue. Nothing awaits on the way in, so a handle's
``__exit__`` can emit its terminator, and after agent code returns everything it emitted is
already queued (a unit test just calls :meth:`EventReceiver.drain`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from ag_ui.core import BaseEvent

from agui_replay.events import EventLike, event_type, parse_event
from agui_replay.server._cancel import CancellationToken
from agui_replay.verify import Verifier

__all__ = ["EventReceiver", "EventSink"]

_TERMINAL = frozenset({"RUN_FINISHED", "RUN_ERROR"})


class EventSink:
    """Verifier in front of a queue. Not public: reach it through a context or a handle."""

    def __init__(
        self,
        *,
        verifier: Verifier,
        token: CancellationToken,
        on_push: Callable[[], None] | None = None,
    ) -> None:
        self._verifier = verifier
        self._queue: deque[BaseEvent] = deque()
        # The verifier is not thread-safe; a sync agent emits from a worker thread while the
        # driver may close its blocks from the loop thread after a disconnect.
        self._lock = threading.Lock()
        self.token = token
        self.on_push = on_push
        self.terminated = False

    def emit(self, event: EventLike) -> BaseEvent:
        """Verify and queue one event; refused once the run is cancelled.

        Failing every emit after cancellation is what makes cancellation work without the
        agent's cooperation: its next ``delta()`` raises and the run unwinds.
        """
        self.token.raise_if_cancelled()
        return self.emit_closing(event)

    def emit_closing(self, event: EventLike) -> BaseEvent:
        """Verify and queue one event even after cancellation.

        For terminators (``*_END``, ``STEP_FINISHED``) and the run's terminal event: a cancelled
        run still gets a balanced stream.
        """
        model = parse_event(event)
        with self._lock:
            # Raises ProtocolViolation and leaves the verifier as it was: nothing is queued.
            self._verifier.feed(model)
            if event_type(model) in _TERMINAL:
                self.terminated = True
            self._queue.append(model)
        if self.on_push is not None:
            self.on_push()
        return model

    def drain(self) -> list[BaseEvent]:
        """Take every event queued so far, oldest first."""
        taken: list[BaseEvent] = []
        queue = self._queue
        while queue:
            taken.append(queue.popleft())
        return taken

    def __len__(self) -> int:
        return len(self._queue)


class EventReceiver:
    """The read end of a run's events, as handed out by :meth:`RunContext.new`.

    >>> from agui_replay.server import RunContext, run_input
    >>> ctx, events = RunContext.new(run_input("t", "r"))
    >>> _ = ctx.say("hello")
    >>> [e.type.value for e in events.drain()]
    ['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']
    """

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink

    def drain(self) -> list[BaseEvent]:
        """Every event emitted since the last drain, without waiting."""
        return self._sink.drain()

    def __len__(self) -> int:
        return len(self._sink)
