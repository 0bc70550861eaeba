"""The StateManager: what to send for each published state (the rule is in
:mod:`agui_replay.state`, which re-exports it)."""

from __future__ import annotations

import gc
from typing import Any

import orjson

from .._limits import (
    MAX_DEPTH,
    Invalid,
    JSONValue,
    Operation,
    dumps_known,
    encode,
    plain_copy,
    value_error,
)
from ..patch import diff_in_place
from ._baseline import LazyBaseline
from ._codec import encode_state
from ._plain import is_plain
from ._variants import Delta, Snapshot, StatePublish, Unchanged

__all__ = ["StateManager"]

_WHAT = "the published state"


class StateManager:
    """Chooses snapshot or delta for each published state, against the last one sent.

    Decision per :meth:`publish` (the rule of :mod:`agui_replay.state`): no baseline ->
    :class:`Snapshot`; JSON-equal to the baseline -> :class:`Unchanged`; otherwise an RFC 6902
    diff, sent as :class:`Delta` when the compact JSON of the patch is strictly shorter (in
    bytes) than the compact JSON of the new state, else :class:`Snapshot`. The baseline is a
    private copy, so changing your object after publishing cannot change it; :meth:`reset`
    forgets it (after a hand-made snapshot, or a reconnect).

    >>> small = StateManager()
    >>> small.publish({"a": 1})
    Snapshot({'a': 1})
    >>> small.publish({"b": 2})  # the patch would be longer than the state itself
    Snapshot({'b': 2})
    """

    # ``_baseline``: ``None`` before the first publish; after a snapshot of plain JSON, a
    # LazyBaseline (its bytes, see _lazy); else the decoded private copy, patched in place.
    __slots__ = ("_baseline",)

    def __init__(self) -> None:
        self._baseline: Any = None

    @property
    def published(self) -> JSONValue | None:
        """An independent copy of the last published state (``None`` before the first)."""
        baseline = self._baseline
        if baseline is None:
            return None
        if isinstance(baseline, LazyBaseline):
            return baseline.decoded()
        try:
            return orjson.loads(orjson.dumps(baseline))
        except TypeError:  # integers beyond 64 bits: orjson would read them as floats
            return plain_copy(baseline, MAX_DEPTH)

    def reset(self) -> None:
        """Forget the last publish: the next :meth:`publish` is a :class:`Snapshot` again."""
        self._baseline = None

    def publish(self, value: Any) -> StatePublish:
        """Record ``value`` as the client's new state and say what to send for it.

        ``value`` is a JSON value, a pydantic model or a dataclass (see :func:`encode_state`).
        Raises :class:`PatchError` for NaN/infinity, non-string keys, objects that are not JSON
        or nesting deeper than ``MAX_DEPTH``; the baseline is then left as it was.

        The cyclic garbage collector is paused during the call: a publish allocates many
        short-lived containers (and the first delta after a snapshot a whole new baseline), and
        collections triggered by them would scan the whole heap, growing faster than the state
        does.
        """
        state = encode_state(value)
        collecting = gc.isenabled()
        if collecting:
            gc.disable()
        try:
            return self._publish(state)
        except Invalid as exc:
            raise value_error(exc, _WHAT) from None
        finally:
            if collecting:
                gc.enable()

    def _publish(self, state: Any) -> StatePublish:
        encoded, loadable = encode(state)
        baseline = self._baseline
        if baseline is None:
            return self._snapshot(state, encoded, loadable)
        if isinstance(baseline, LazyBaseline):
            if baseline.unchanged(state, encoded):
                return Unchanged()
            if baseline.snapshot_due(state, encoded):
                return self._snapshot(state, encoded, loadable)
            baseline = self._baseline = baseline.decoded()
        # The walk stops as soon as the patch cannot be shorter than the new state.
        found = diff_in_place(baseline, state, limit=len(encoded), new_json=encoded, what=_WHAT)
        if found is None:
            return self._snapshot(state, encoded, loadable)
        ops, self._baseline = found
        if not ops:  # the same JSON, keys in another order
            return Unchanged()
        ops_bytes = dumps_known(ops)
        if len(ops_bytes) < len(encoded) and not (
            b"proto" in ops_bytes and _refused_by_js_clients(ops)
        ):
            return Delta(ops)
        # The baseline is the new state now, in its own key order: the snapshot shows that one.
        return Snapshot._encoded(dumps_known(self._baseline), loadable=loadable)

    def _snapshot(self, state: Any, encoded: bytes, loadable: bool) -> Snapshot:
        """A snapshot of ``state``, whose compact JSON is ``encoded``, and the baseline after it:
        those bytes when the state is plain JSON, else a decoded plain copy (tuples, subclasses
        of the JSON types; anything else raises, naming its place)."""
        if is_plain(state, encoded):
            self._baseline = LazyBaseline(encoded, loadable, state)
        else:
            # Python == catches what orjson wrote but is not JSON (NaN as null, UUIDs, enums);
            # the walker then names the place, or makes the plain copy (subclasses, tuples).
            copied = orjson.loads(encoded) if loadable else None
            if copied is None or copied != state:
                copied = plain_copy(state, MAX_DEPTH)  # the same JSON as ``encoded``
            self._baseline = copied
        return Snapshot._encoded(encoded, loadable=loadable)


def _refused_by_js_clients(ops: list[Operation]) -> bool:
    """A patch the TypeScript client's fast-json-patch refuses to apply: a path through
    ``__proto__`` (or ``constructor/prototype``). The client would keep its old state, so such
    a change travels as a snapshot."""
    for op in ops:
        for key in ("path", "from"):
            pointer = op.get(key)
            if not isinstance(pointer, str) or "proto" not in pointer:
                continue
            ended = pointer + "/"  # every segment of "/a/b/" sits between two slashes
            if "/__proto__/" in ended or "/constructor/prototype/" in ended:
                return True
    return False
