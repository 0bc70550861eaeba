"""Shared state: the snapshot-or-delta decision, and typed input-state decoding.

:class:`StateManager` decides, for each value you publish, what the client needs: the whole
state (:class:`Snapshot`), an RFC 6902 patch (:class:`Delta`) or nothing (:class:`Unchanged`).

>>> states = StateManager()
>>> notes = "the document the user is editing, at some length"
>>> states.publish({"step": 1, "notes": notes})
Snapshot({'step': 1, 'notes': 'the document the user is editing, at some length'})
>>> states.publish({"step": 2, "notes": notes})
Delta([{'op': 'replace', 'path': '/step', 'value': 2}])
>>> states.publish({"step": 2, "notes": notes})
Unchanged()

:func:`decode_state` turns ``RunAgentInput.state`` into your state type, and
:func:`encode_state` turns a typed state back into JSON.
"""

from __future__ import annotations

import gc
import json
from typing import Any, TypeAlias, TypeVar, cast

import orjson
from ag_ui.core import StateDeltaEvent, StateSnapshotEvent
from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from .errors import PatchError, StateDecodeError
from .patch._diff import _overflows, _plain_json, _publish_diff
from .patch._json import (
    MAX_DEPTH,
    JSONValue,
    Operation,
    _clone,
    _copy,
    _dumps_known,
    _encode,
    _Invalid,
    _value_error,
    json_equal,
)
from .patch._sketch import Plan, Sketch
from .patch._sketch import hashed as _sketch_hashed
from .patch._sketch import looks_new as _sketch_looks_new
from .patch._sketch import overflows as _sketch_overflows
from .patch._sketch import plan as _sketch_plan
from .patch._sketch import renewed as _sketch_renewed
from .patch._sketch import sketch as _sketch_of
from .patch._sketch import updated as _sketch_updated
from .patch._spread import changed as _spread_changed
from .patch._spread import fits as _spread_fits
from .patch._window import locate as _locate

__all__ = [
    "Delta",
    "Snapshot",
    "StateEncodeError",
    "StateManager",
    "StatePublish",
    "Unchanged",
    "decode_state",
    "encode_state",
]

S = TypeVar("S")


class StateEncodeError(StateDecodeError):
    """A state object that pydantic cannot turn into JSON (AG-UI code SERIALIZATION)."""


def _json_eq_or_false(a: Any, b: Any) -> bool:
    try:
        return json_equal(a, b)
    except PatchError:
        return False


_MISSING: Any = object()
_LAZY: Any = object()  # StateManager: the baseline is only its bytes


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


class StateManager:
    """Chooses snapshot or delta for each published state, against the last one sent.

    Decision per :meth:`publish` (the seeds' algorithm): no baseline -> :class:`Snapshot`;
    JSON-equal to the baseline -> :class:`Unchanged`; otherwise an RFC 6902 diff, sent as
    :class:`Delta` when the compact JSON of the patch is strictly shorter (in bytes) than the
    compact JSON of the new state, else :class:`Snapshot`. The baseline is a private copy, so
    changing your object after publishing cannot change it; :meth:`reset` forgets it (after a
    hand-made snapshot, or a reconnect).

    >>> small = StateManager()
    >>> small.publish({"a": 1})
    Snapshot({'a': 1})
    >>> small.publish({"b": 2})  # the patch would be longer than the state itself
    Snapshot({'b': 2})
    """

    # After a snapshot the baseline is only its compact JSON (``_baseline`` is _LAZY): decoding
    # it costs several times the encoding, and the next publish may not need it (another
    # snapshot, or the same state again). Only a delta needs the baseline decoded. (A state
    # under _LOCAL bytes is the exception where the compiled helper is built: its snapshot
    # keeps a copy that shares the state's immutable leaves, cheaper than a later decoding.)
    # ``_sketch`` (patch._sketch) holds some of the lazy baseline's string values (or their
    # hashes, from the first publish of the same object on, see _unshare; or from the
    # snapshot on, when ``_mutated`` says the object before came back), from which the next
    # snapshot can be shown due without that object (and without re-encoding it); it follows
    # the deltas since, small ones even once the baseline is decoded.
    # ``_hint`` is the object that was published, while the baseline is bytes and no sketch
    # could prove a new document a snapshot on its own: while its JSON is still those bytes,
    # the next diff can be walked against it (read only) to find out early that a snapshot is
    # due. Otherwise it is not kept: holding the caller's previous state kept it alive, and
    # the next publish paid for freeing it (about a dumps at 1 MB, when the caller had let go).
    # ``_where``: the id of the decoded baseline and where a sketch of it would look
    # (patch._sketch.plan), found once for all the deltas patched into that object.
    __slots__ = (
        "_baseline",
        "_bytes",
        "_hint",
        "_loadable",
        "_mutated",
        "_sketch",
        "_spread",
        "_where",
    )

    def __init__(self) -> None:
        self._baseline: Any = _MISSING
        self._bytes = b""  # compact JSON of the baseline, in its own key order
        self._hint: Any = _MISSING
        self._mutated = False  # the same object was published again since the last snapshot
        self._spread = False  # a spread change was diffed from the bytes since the snapshot
        self._loadable = True  # orjson reads _bytes back (no integers beyond 64 bits)
        self._sketch: Sketch | None = None
        self._where: tuple[int, Plan | None] | None = None

    @property
    def published(self) -> JSONValue | None:
        """An independent copy of the last published state (``None`` before the first)."""
        if self._baseline is _MISSING:
            return None
        if self._baseline is _LAZY:
            return _decode(self._bytes, self._loadable)
        return _clone(self._baseline)

    def reset(self) -> None:
        """Forget the last publish: the next :meth:`publish` is a :class:`Snapshot` again."""
        self._baseline = self._hint = _MISSING
        self._bytes = b""
        self._sketch, self._mutated, self._spread = None, False, False

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
        finally:
            if collecting:
                gc.enable()

    def _publish(self, state: Any) -> StatePublish:
        try:
            encoded, loadable = _encode(state)
            baseline = self._baseline
            if baseline is _MISSING:
                return self._snapshot(state, encoded, loadable)
            decoded = baseline is not _LAZY
            if not decoded:
                if encoded == self._bytes:
                    self._unshare()
                    if _plain_json(state, encoded):
                        self._remember(state)
                        return Unchanged()
                else:
                    due, sketch, plain = self._snapshot_due(state, encoded)
                    if due:
                        return self._snapshot(state, encoded, loadable, sketch, plain)
                    if len(encoded) >= _LOCAL:
                        local = self._diff_locally(state, encoded, loadable, plain)
                        if local is not None:
                            return local
                baseline = self._decoded()
            # Equal bytes mean equal JSON unless NaN hides behind a null; the baseline never
            # holds NaN, so Python == (which is False for NaN) settles it.
            if encoded == self._bytes and state == baseline:
                return Unchanged()
            if decoded:
                # Another document? Then a sketch of the baseline (kept through the deltas
                # since the snapshot, or made from the decoded baseline) may prove the
                # snapshot due at a fraction of the diff's cost, and it leaves a sketch for
                # the next one.
                renewed = self._renewed(baseline, state, encoded, loadable)
                if renewed is not None:
                    return self._snapshot(state, encoded, loadable, *renewed)
            # The baseline is private, so the patch is applied to it in place; the walk stops
            # as soon as the patch cannot be shorter than the new state.
            known = self._bytes if loadable and self._loadable else None
            result = _publish_diff(baseline, state, encoded, a_bytes=known)
            if result is None:
                return self._snapshot(state, encoded, loadable)
        except _Invalid as exc:
            raise _value_error(exc, "the published state") from None
        ops, patched, patched_bytes = result
        self._baseline, self._bytes = patched, patched_bytes
        if self._sketch is not None:
            # A few operations are followed; many would cost more than the sketch saves.
            fits = len(ops) <= _SKETCH_FOLLOWS
            self._sketch = _sketch_updated(self._sketch, ops) if fits else None
        return _outcome(ops, len(encoded), patched_bytes, loadable)

    def _snapshot_due(self, state: Any, encoded: bytes) -> tuple[bool, Sketch | None, bool]:
        """Whether the diff from the lazy baseline to ``state`` is sure to end in a snapshot,
        found without decoding the baseline; when it is, a sketch of ``state`` for the next
        time; and whether ``state`` is known to hold only exact JSON types. First from
        the baseline's sketch; else by walking from the object published last (kept only
        where the sketch cannot prove it alone), when it is another object than ``state`` and
        its JSON has not changed since."""
        hint, kept = self._hint, self._sketch
        if hint is state:
            return False, None, False
        plain = False
        # Without the object, a guess on a few values tells another document from the same
        # object changed in place, which the sketch's bound would only cost.
        new = kept is not None and _sketch_looks_new(kept, state)
        if kept is not None and (new or hint is not _MISSING):
            # Its bound holds for values of the exact JSON types (the snapshot checks them
            # anyway, and then keeps the answer). For what looks like another document, which
            # will need the check either way, it comes first: the sketch of ``state`` that the
            # bound leaves refers to its strings, which would slow the check.
            if new:
                if not _plain_json(state, encoded):
                    return False, None, False
                plain = True
            room = len(encoded) - 1
            due, sketch = _sketch_overflows(kept, state, room, self._mutated)
            if due and (plain or _plain_json(state, encoded)):
                return True, sketch, True
        if hint is _MISSING:
            return False, None, plain
        try:
            if not _overflows(hint, state, encoded):
                return False, None, plain
        except Exception:  # the caller may have put anything in it since
            return False, None, plain
        # Only now (a delta needs the decoded baseline anyway): is the hint still the baseline?
        try:
            if _dumps_known(hint) != self._bytes:
                return False, None, plain
        except _Invalid:  # the caller put something in it since that is not JSON
            return False, None, plain
        # The type check before the sketch (see above).
        if not (plain or _plain_json(state, encoded)):
            return True, None, False
        return True, _sketch_of(state), True

    def _renewed(
        self, baseline: Any, state: Any, encoded: bytes, loadable: bool
    ) -> tuple[Sketch, bool, Any] | None:
        """When ``state`` is shown, from a sketch of the decoded ``baseline``, to need a
        snapshot, and holds only exact JSON types: the sketch of ``state``, ``True`` (it is
        plain) and, where :meth:`_snapshot` keeps one, the compiled copy of ``state`` that
        made the type check; else ``None``.

        The sketch the baseline had as bytes, kept up to date through the deltas since
        (values or hashes, one column read of ``state`` each), is used when there is one;
        else one is made from the decoded baseline's values.

        Every delta of a decoded baseline asks, so where to look is found once per baseline
        object (a stale answer only loosens the bound: the columns are read afresh)."""
        kept = self._sketch
        try:
            if kept is not None:  # its verdict stands: the values would say the same
                if not _sketch_looks_new(kept, state):
                    return None
                previous = kept
            else:
                where = self._where
                if where is None or where[0] != id(baseline):
                    where = self._where = (id(baseline), _sketch_plan(baseline))
                if where[1] is None:
                    return None
                found = _sketch_renewed(baseline, state, where[1])
                if found is None:
                    return None
                previous = found
            # The exact JSON types first (see _snapshot_due). A small state's snapshot keeps
            # a copy, whose walk checks them too: made now, it is the check.
            copied = _copy_for_snapshot(state, encoded, loadable)
            if copied is None and not _plain_json(state, encoded):
                return None
            room = len(encoded) - 1
            due, sketch = _sketch_overflows(previous, state, room, self._mutated)
        except Exception:  # values hash and compare as their types like; the diff decides
            return None
        return (sketch, True, copied) if due and sketch is not None else None

    def _diff_locally(
        self, state: Any, encoded: bytes, loadable: bool, plain: bool
    ) -> StatePublish | None:
        """The publish from a lazy baseline, diffed from the part of it that changed
        (patch._window), which alone is decoded; the baseline stays lazy. When that part is
        over half of the document (decoding it all costs no more), only a long list's changed
        objects are, the first time (:meth:`_diff_spread`). ``None`` when neither can be done
        or the state must take the slow path (not plain JSON, integers beyond 64 bits)."""
        old_bytes = self._bytes
        if not (loadable and self._loadable):
            return None
        found = _locate(old_bytes, encoded, state)
        if found is None:
            return None
        pointer, value, start, stop = found
        end = stop + len(old_bytes) - len(encoded)
        spread = 2 * (end - start) > len(old_bytes)
        if spread and (self._spread or not _spread_fits(value)):
            # The second spread change decodes the baseline once for all the deltas after it
            # (a decoded delta costs less than one on the bytes, see _diff_spread).
            return None
        if not plain:
            self._unshare()
            if not _plain_json(state, encoded):
                return None
        if spread:
            return self._diff_spread(state, encoded, pointer, value, (start, stop, end))
        old_part, part = old_bytes[start:end], encoded[start:stop]
        try:
            old = orjson.loads(old_part)
        except orjson.JSONDecodeError:
            return None
        # A small part is checked by encoding it again: cheaper than splicing its old bytes
        # (at an object of 133 bytes 3.5 us against 5.4 us; about even from 4 KB).
        known = old_part if len(old_part) >= _SPLICE_PART else None
        result = _publish_diff(old, value, part, room=len(encoded) - 1, a_bytes=known)
        if result is None:
            return self._snapshot_found(state, encoded)
        ops, _, patched = result
        for op in ops:
            op["path"] = pointer + op["path"]
        baseline = encoded
        if patched != part:  # the same JSON, the baseline's keys in its order
            baseline = old_bytes[:start] + patched + old_bytes[end:]
        return self._diffed_lazily(state, encoded, ops, baseline)

    def _diff_spread(
        self,
        state: Any,
        encoded: bytes,
        pointer: str,
        items: list[Any],
        place: tuple[int, int, int],
    ) -> StatePublish | None:
        """:meth:`_diff_locally` for a change spread over the list ``items`` (at ``pointer``;
        ``place`` is ``(start, stop, end)``: encoded at ``encoded[start:stop]``, in the
        baseline at ``[start:end]``): only its objects whose bytes changed are decoded and
        diffed (patch._spread); the baseline stays lazy. ``state`` is plain JSON. ``None``
        when the bytes cannot tell, or the changed objects' keys come in another order than
        the baseline's (then the caller decodes the whole baseline).

        The sub-lists' walk counts paths shorter than the real ones (indexes among the changed
        objects, no pointer), so its budget can only stop it later than the whole walk would:
        a snapshot it finds is due."""
        found = _spread_changed(self._bytes, encoded, items, *place)
        if found is None:
            return None
        indexes, olds, old_part, new_part = found
        news = list(map(items.__getitem__, indexes))
        result = _publish_diff(olds, news, new_part, room=len(encoded) - 1, a_bytes=old_part)
        if result is None:
            return self._snapshot_found(state, encoded)
        ops, _, patched = result
        if patched != new_part:  # the same JSON, keys in another order: the baseline's bytes
            return None  # are neither, and the whole diff finds them
        for op in ops:  # each path starts at an item of the two short lists
            path = op["path"]
            slash = path.find("/", 1)
            if slash < 0:
                slash = len(path)
            op["path"] = f"{pointer}/{indexes[int(path[1:slash])]}{path[slash:]}"
        self._spread = True
        return self._diffed_lazily(state, encoded, ops, encoded)

    def _snapshot_found(self, state: Any, encoded: bytes) -> Snapshot:
        """The snapshot a walk on part of the lazy baseline found due (its budget spent):
        ``encoded`` (plain JSON) is the new lazy baseline, with no sketch, and ``state``
        the hint."""
        self._bytes, self._hint, self._sketch = encoded, state, None
        return Snapshot._encoded(encoded, loadable=True)

    def _diffed_lazily(
        self, state: Any, encoded: bytes, ops: list[Operation], baseline: bytes
    ) -> StatePublish:
        """The outcome of ``ops``, diffed from part of the lazy baseline, whose bytes with
        them applied are ``baseline``: it stays lazy, its sketch follows them."""
        self._bytes = baseline
        self._sketch = _sketch_updated(self._sketch, ops)
        self._remember(state)
        return _outcome(ops, len(encoded), baseline, True)

    def _remember(self, state: Any) -> None:
        """Keep ``state``, the object just published onto a lazy baseline, as the hint, unless
        the sketch could prove the next document a snapshot without it (its reach covers the
        baseline's length)."""
        kept = self._sketch
        strong = kept is not None and kept.reach >= len(self._bytes)
        self._hint = _MISSING if strong else state

    def _unshare(self) -> None:
        """Before the type check of a state that may be the object last sketched (changed in
        place): the sketch's values become hashes, which ``marshal`` does not see (see
        patch._sketch.Sketch); and the next snapshot's sketch will be hashed at once. The
        compiled check does not look at reference counts: with it, the values stay."""
        self._mutated = True
        kept = self._sketch
        if kept is not None and kept.values:
            _sketch_hashed(kept)

    def _decoded(self) -> Any:
        """The lazy baseline, decoded: a private copy from here on."""
        baseline = _decode(self._bytes, self._loadable)
        self._baseline, self._hint = baseline, _MISSING  # the sketch, if any, still holds
        return baseline

    def _snapshot(
        self,
        state: Any,
        encoded: bytes,
        loadable: bool,
        sketch: Sketch | None = None,
        plain: bool = False,
        copied: Any = None,
    ) -> Snapshot:
        """A snapshot of ``state``; ``encoded`` becomes the (lazy) baseline, and ``sketch``
        (of ``state``) its sketch. ``plain``: :func:`_plain_json` is known to hold.
        ``copied``: the compiled copy of ``state``, when it was made already."""
        self._sketch = None
        if copied is None:
            # Where a small state's copy is kept, its walk is the type check too.
            copied = _copy_for_snapshot(state, encoded, loadable)
        if copied is not None or plain or _plain_json(state, encoded):
            if sketch is None and len(encoded) >= _LOCAL:
                # The first snapshot, or one the diff found: a sketch now spares the next
                # document the walk from this one (and the encoding that must precede it).
                # Smaller states keep a copy (below), or decode the baseline at their first
                # delta where the compiled helper is not built.
                sketch = _sketch_of(state)
            if sketch is not None and self._mutated:
                # The object published before this one was published again, changed: this one
                # may be too, and then its strings would be hashed anyway, colder.
                _sketch_hashed(sketch)
            if copied is not None:
                self._baseline, self._sketch, self._hint = copied, sketch, _MISSING
            else:
                self._baseline, self._sketch = _LAZY, sketch
                self._bytes = encoded
                self._remember(state)
        else:
            # Python == catches what orjson wrote but is not JSON (NaN as null, UUIDs, enums);
            # the walker then names the place, or makes the plain copy (subclasses).
            baseline = orjson.loads(encoded) if loadable else _MISSING
            if baseline is _MISSING or baseline != state:
                baseline = _copy(state, MAX_DEPTH)  # the same JSON as ``encoded``
            self._baseline, self._hint = baseline, _MISSING
        self._bytes, self._loadable = encoded, loadable
        self._mutated = self._spread = False
        return Snapshot._encoded(encoded, loadable=loadable)


_SKETCH_FOLLOWS = 32
"""A decoded baseline's sketch follows a delta of at most this many operations (each a path
to read); a larger one drops it, and the next new document is sketched from the values."""

_SPLICE_PART = 1 << 12
"""Below this many bytes, the changed part of a delta on bytes is checked by encoding it."""

_LOCAL = 1 << 15
"""From ``_LOCAL`` bytes of state on, a delta after a snapshot is diffed from the changed part
alone (patch._window), and the baseline stays bytes until a change too spread out for that
decodes it; below, the snapshot keeps the compiled helper's copy of the state (about one
``dumps`` at 10 KB), or, without the helper, the first delta decodes the bytes. The figures
that follow are those of the pure-Python path: each delta on bytes pays the ``marshal`` type
check and the search for the part, which at 10 KB come to more than decoding once for all the
deltas that follow (4.9x a ``dumps`` a delta, against 3.8x once decoded); from 32 KB on they
cost a little more at most (4.2x against 3.4x), and no delta on one object pays for decoding
the whole baseline (``orjson.loads`` alone is 3.5x to 6x a ``dumps``)."""


def _copy_for_snapshot(state: Any, encoded: bytes, loadable: bool) -> Any:
    """The baseline a snapshot of ``state`` keeps instead of its bytes, or ``None`` (keep the
    bytes): under ``_LOCAL`` bytes, where the compiled helper is built, a copy of its
    containers sharing its leaves; ``None`` too when ``state`` is not plain JSON.

    A small state's first delta would decode the bytes (3.5x a dumps at 10 KB, the dearest
    step of that publish); the copy costs about 1x, and its leaves, the state's own strings,
    make the next diff's ``==`` cheaper still."""
    return None


def _decode(encoded: bytes, loadable: bool) -> Any:
    return orjson.loads(encoded) if loadable else json.loads(encoded)


def _outcome(ops: list[Operation], size: int, baseline: bytes, loadable: bool) -> StatePublish:
    """The seeds' rule for a diffed publish: no operations -> :class:`Unchanged` (the same
    JSON, keys in another order); a patch strictly shorter than ``size``, the new state's
    compact JSON, -> :class:`Delta`; else a :class:`Snapshot` of ``baseline``, the new
    baseline's bytes."""
    if not ops:
        return Unchanged()
    ops_bytes = _dumps_known(ops)
    if len(ops_bytes) < size and not (b"proto" in ops_bytes and _refused_by_js_clients(ops)):
        return Delta(ops)
    return Snapshot._encoded(baseline, loadable=loadable)


def _refused_by_js_clients(ops: list[dict[str, Any]]) -> bool:
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


# --- input and output state -----------------------------------------------------------------

_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    try:
        return _ADAPTERS[kind]
    except KeyError:
        adapter: TypeAdapter[Any] = TypeAdapter(kind)
        _ADAPTERS[kind] = adapter
        return adapter
    except TypeError:  # an unhashable type form: build it each time
        return TypeAdapter(kind)


def _type_label(state_type: Any) -> str:
    return getattr(state_type, "__qualname__", None) or repr(state_type)


def decode_state(raw: Any, state_type: type[S]) -> S:
    """``RunAgentInput.state`` as a ``state_type`` (pydantic model, dataclass, TypedDict, dict).

    ``None`` or ``{}`` mean "no state yet" and give ``state_type()``; anything else is validated
    with pydantic, and a value that does not fit raises :class:`StateDecodeError`
    (``code == "SERIALIZATION"``).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Counter:
    ...     clicks: int = 0
    >>> decode_state(None, Counter), decode_state({"clicks": 3}, Counter)
    (Counter(clicks=0), Counter(clicks=3))
    """
    label = _type_label(state_type)
    if raw is None or (isinstance(raw, dict) and not raw):
        try:
            return state_type()
        except (TypeError, ValidationError) as exc:
            raise StateDecodeError(
                f"the client sent no state (null or {{}}), and {label}() cannot be built "
                f"without arguments ({_first_line(exc)}); give every field of {label} a default"
            ) from None
    try:
        adapter = _adapter(state_type)
    except PydanticUserError as exc:  # includes "unable to generate a schema"
        raise StateDecodeError(
            f"{label} cannot be used as a state type: {_first_line(exc)}; use a pydantic model, "
            "a dataclass, a TypedDict (typing_extensions before Python 3.12) or dict"
        ) from None
    try:
        return cast(S, adapter.validate_python(raw))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "(the whole state)"
        got = repr(error.get("input"))
        if len(got) > 60:
            got = got[:57] + "..."
        raise StateDecodeError(
            f"RunAgentInput.state does not fit {label}: field {field}: {error['msg']} "
            f"(got {got}); send a state shaped like {label}, or null / {{}} for its defaults"
        ) from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def encode_state(value: Any) -> JSONValue:
    """A state as JSON: pydantic models and dataclasses are dumped (``mode="json"``, by alias, so
    that :func:`decode_state` reads back what was published); plain JSON values pass through.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Board:
    ...     tasks: list[str]
    >>> encode_state(Board(tasks=["ship it"]))
    {'tasks': ['ship it']}
    """
    if value is None or isinstance(value, (dict, list, tuple, str, int, float)):
        return value
    try:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True)
        # Dataclasses, TypedDict-shaped objects, and whatever else pydantic knows how to dump.
        return _adapter(type(value)).dump_python(value, mode="json", by_alias=True)
    except (PydanticSerializationError, PydanticUserError, ValueError, TypeError) as exc:
        raise StateEncodeError(
            f"cannot encode a {type(value).__name__} as JSON state: {_first_line(exc)}; "
            "publish a pydantic model, a dataclass, or plain dicts/lists"
        ) from None
