"""The typed state of one run and the five methods that reach it.

The same five methods sit on the run context and on every open handle: a tool call does its work
(and publishes the state it changed) between its arguments and its result, because ``STATE_*``
events are unordered on the wire. Which event a publish becomes is decided by
:class:`agui_replay.state.StateManager` (first publish of a run: snapshot; nothing changed:
nothing; otherwise a delta only when the patch is strictly smaller than the state).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from agui_replay.server._sink import EventSink
from agui_replay.state import StateManager, decode_state, encode_state

__all__ = ["RunState", "StateAccess"]

S = TypeVar("S")


class RunState(Generic[S]):
    """The agent's typed state plus what was last published of it."""

    __slots__ = ("manager", "state_type", "value")

    def __init__(self, value: S, state_type: Any) -> None:
        self.value = value
        self.state_type = state_type
        # The baseline starts empty on every run: the first publish is always a snapshot.
        self.manager = StateManager()

    def publish(self, sink: EventSink) -> None:
        sink.token.raise_if_cancelled()
        self._publish_json(sink, encode_state(self.value))

    def replace(self, sink: EventSink, value: S) -> None:
        sink.token.raise_if_cancelled()
        wire = encode_state(value)
        # Decoding a private copy keeps the typed view from sharing lists or dicts with the
        # caller's value (or with the published baseline), and checks that the value fits.
        decoded: S = decode_state(copy.deepcopy(wire), self.state_type)
        self.value = decoded
        self._publish_json(sink, wire)

    def _publish_json(self, sink: EventSink, wire: Any) -> None:
        event = self.manager.publish(wire).to_event()
        if event is None:
            return
        try:
            sink.emit(event)
        except BaseException:
            # The client never got it, so a delta against this baseline would not apply.
            self.manager.reset()
            raise


class StateAccess(Generic[S]):
    """``state()``, ``state_mut()``, ``publish_state()``, ``update_state()``, ``set_state()``."""

    __slots__ = ()

    def _state_parts(self) -> tuple[RunState[S], EventSink]:
        raise NotImplementedError

    def state(self) -> S:
        """The typed state (the live object: change it through :meth:`state_mut`)."""
        return self._state_parts()[0].value

    def state_mut(self) -> S:
        """The typed state, to change in place. Emits nothing until :meth:`publish_state`."""
        return self._state_parts()[0].value

    def publish_state(self) -> None:
        """Publish what :meth:`state_mut` left behind; emits nothing when nothing changed."""
        run_state, sink = self._state_parts()
        run_state.publish(sink)

    def update_state(self, update: Callable[[S], S | None]) -> None:
        """Change the state and publish it in one call.

        ``update`` mutates the state in place and returns ``None``, or returns the new state
        (for immutable states: ``ctx.update_state(lambda n: n + 1)``).
        """
        run_state, sink = self._state_parts()
        replaced = update(run_state.value)
        if replaced is not None:
            run_state.value = replaced
        run_state.publish(sink)

    def set_state(self, value: S) -> None:
        """Replace the whole state and publish it."""
        run_state, sink = self._state_parts()
        run_state.replace(sink, value)
