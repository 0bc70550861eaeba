"""What :meth:`StateManager.publish` decides: :class:`Snapshot`, :class:`Delta` or
:class:`Unchanged` (re-exported by :mod:`agui_replay.state`)."""

from __future__ import annotations

import json
from typing import Any, TypeAlias, cast

import orjson
from ag_ui.core import StateDeltaEvent, StateSnapshotEvent

from .._limits import JSONValue, Operation
from ..errors import PatchError
from ..patch import json_equal

__all__ = ["Delta", "Snapshot", "StatePublish", "Unchanged"]


def _json_eq_or_false(a: Any, b: Any) -> bool:
    try:
        return json_equal(a, b)
    except PatchError:
        return False


_MISSING: Any = object()


class Snapshot:
    """Send the whole state: a ``STATE_SNAPSHOT`` carrying :attr:`value`."""

    __slots__ = ("_json", "_value")
    __match_args__ = ("value",)

    def __init__(self, value: JSONValue) -> None:
        self._value = value
        self._json: bytes | None = None

    @classmethod
    def _encoded(cls, encoded: bytes, *, loadable: bool) -> Snapshot:
        """A snapshot of the JSON ``encoded``: its value is decoded when first read (publish
        has the bytes already; decoding them is the costly half of a snapshot)."""
        if not loadable:  # integers beyond 64 bits: orjson would read them as floats
            return cls(json.loads(encoded))
        snapshot = cls(_MISSING)
        snapshot._json = encoded
        return snapshot

    @property
    def value(self) -> JSONValue:
        """The whole state, an independent copy (changing it changes nothing else)."""
        if self._value is _MISSING:
            self._value = orjson.loads(cast(bytes, self._json))
            self._json = None
        return self._value

    @value.setter
    def value(self, value: JSONValue) -> None:
        self._value, self._json = value, None

    def to_event(self) -> StateSnapshotEvent:
        """The ``STATE_SNAPSHOT`` event (an ``ag_ui.core`` model)."""
        return StateSnapshotEvent(snapshot=self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        return _json_eq_or_false(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]  # holds a mutable JSON value

    def __repr__(self) -> str:
        return f"Snapshot({self.value!r})"


class Delta:
    """Send a patch: a ``STATE_DELTA`` carrying :attr:`ops`, a list of RFC 6902 operations."""

    __slots__ = ("ops",)
    __match_args__ = ("ops",)

    def __init__(self, ops: list[Operation]) -> None:
        self.ops = ops

    def to_event(self) -> StateDeltaEvent:
        """The ``STATE_DELTA`` event (an ``ag_ui.core`` model)."""
        return StateDeltaEvent(delta=cast(Any, self.ops))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Delta):
            return NotImplemented
        return _json_eq_or_false(self.ops, other.ops)

    __hash__ = None  # type: ignore[assignment]  # holds mutable operations

    def __repr__(self) -> str:
        return f"Delta({self.ops!r})"


class Unchanged:
    """Nothing moved since the last publish: send nothing."""

    __slots__ = ()

    def to_event(self) -> None:
        """Always ``None``: there is no event to send."""
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Unchanged):
            return NotImplemented
        return True

    def __hash__(self) -> int:
        return hash(Unchanged)

    def __repr__(self) -> str:
        return "Unchanged()"


StatePublish: TypeAlias = Snapshot | Delta | Unchanged
"""What :meth:`StateManager.publish` decided: one of the three variants."""
