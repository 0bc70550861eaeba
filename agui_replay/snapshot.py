"""Snapshot assertions on event streams, as a syrupy extension.

``assert events == snapshot(extension_class=AGUISnapshotExtension)`` stores the stream in
``__snapshots__/<test file>/<test name>.agui.jsonl``, one event per line (JSON Lines: line
``n + 1`` holds event ``#n``), so a changed event shows as a changed line in review. Before
it is stored the stream is normalized (:func:`agui_replay.normalize.normalize_events`: random
ids become run-id-derived ids, timestamps go), keys are sorted with ``type`` first, and
syrupy's ``exclude`` / ``include`` / ``matcher`` apply, with paths that start at the event
index (``path_type({"3.delta": (str,)})``). ``pytest --snapshot-update`` writes and prunes these
files like any syrupy snapshot.

A list of runs (``assert [first, second] == snapshot``) is stored in one file, each run opened by
a ``# run #N`` line and all of them normalized with one id map, as a cassette's runs are. Events
that the test's ``agui.run`` returned (the seam ``session=`` below) are stored as the session
normalized them, the ids the cassette stores.

A failing comparison starts with a line naming the first differing event and field, followed by
syrupy's usual line diff.

Variants (each a subclass; :func:`use_agui_extension` takes any combination of options):

* :class:`AGUISnapshotExtension` -- every event, normalized;
* :class:`AGUIFoldedSnapshotExtension` -- the deltas of one message / tool call / reasoning
  message are folded into their first content event (``TEXT_MESSAGE_CONTENT`` with the whole
  text), so the snapshot reads compactly and does not change when only the chunking does.

Seam for the pytest plugin: the ``agui_snapshot`` fixture is
``use_agui_extension(snapshot)`` (the plugin owns the fixture; this module never imports pytest
itself, but syrupy does, so keep it out of ``agui_replay/__init__``).

>>> ext = AGUIFoldedSnapshotExtension()
>>> print(ext.serialize([
...     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hel"},
...     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "lo"}]), end="")
{"type": "TEXT_MESSAGE_CONTENT", "delta": "Hello", "messageId": "run-msg-1"}
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from agui_replay._normalizing import Rule, TimestampMode, as_rules
from agui_replay.assertions import explain_stream_diff
from agui_replay.errors import InvalidArgumentError
from agui_replay.events import to_wire
from agui_replay.normalize import NormalizedStream, Normalizer

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion
    from syrupy.types import (
        PropertyFilter,
        PropertyMatcher,
        PropertyPath,
        SerializableData,
        SerializedData,
    )

__all__ = [
    "AGUIFoldedSnapshotExtension",
    "AGUISnapshotExtension",
    "use_agui_extension",
    "volatile",
]

VOLATILE = "<volatile>"

# content event type -> the field that names its message / call, and the event that closes it
_CONTENT: dict[str, tuple[str, str]] = {
    "TEXT_MESSAGE_CONTENT": ("messageId", "TEXT_MESSAGE_END"),
    "TOOL_CALL_ARGS": ("toolCallId", "TOOL_CALL_END"),
    "REASONING_MESSAGE_CONTENT": ("messageId", "REASONING_MESSAGE_END"),
}
_CHUNK_ID: dict[str, str] = {
    "TEXT_MESSAGE_CHUNK": "messageId",
    "TOOL_CALL_CHUNK": "toolCallId",
    "REASONING_MESSAGE_CHUNK": "messageId",
}
_CLOSERS: dict[str, str] = {closer: field for field, closer in _CONTENT.values()}


def _fold_deltas(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold each message's (tool call's, reasoning message's) deltas into its first content event.

    Content events of one id, up to that id's END, become one event at the position of the
    first, with the deltas joined (its other fields are the first event's). Consecutive
    ``*_CHUNK`` events that continue one stream fold the same way. Returns new dicts.
    """
    out: list[dict[str, Any]] = []
    open_content: dict[tuple[str, str], dict[str, Any]] = {}
    last_chunk: dict[str, Any] | None = None
    for event in events:
        kind = event.get("type")
        if kind in _CONTENT:
            key = (str(kind), str(event.get(_CONTENT[str(kind)][0])))
            folded = open_content.get(key)
            if folded is not None and isinstance(event.get("delta"), str):
                folded["delta"] = str(folded.get("delta", "")) + event["delta"]
                continue
            folded = dict(event)
            open_content[key] = folded
            out.append(folded)
            last_chunk = None
            continue
        if kind in _CHUNK_ID:
            field = _CHUNK_ID[str(kind)]
            ident = event.get(field)
            if (
                last_chunk is not None
                and last_chunk.get("type") == kind
                and (ident is None or ident == last_chunk.get(field))
                and isinstance(event.get("delta"), str)
            ):
                last_chunk["delta"] = str(last_chunk.get("delta") or "") + event["delta"]
                continue
            last_chunk = dict(event)
            out.append(last_chunk)
            continue
        last_chunk = None
        if kind in _CLOSERS:
            for content_kind, (field, closer) in _CONTENT.items():
                if closer == kind:
                    open_content.pop((content_kind, str(event.get(field))), None)
        out.append(dict(event))
    return out


def volatile(*fields: str, placeholder: str = VOLATILE) -> PropertyMatcher:
    """A syrupy matcher that replaces the values of ``fields`` (any depth) by a placeholder.

    ``assert events == agui_snapshot(matcher=volatile("threadId", "result"))``
    """
    names = frozenset(fields)

    def matcher(*, data: SerializableData, path: PropertyPath) -> SerializableData | None:
        if path and path[-1][0] in names:
            return placeholder
        return data

    return matcher


RUN_MARKER = "# run #{index}"
"""The line that opens each run's events in the snapshot of several runs."""

_RUN_LINE = re.compile(r"# run #(\d+)")


def _as_events(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, NormalizedStream):
        return list(data.events)
    events = getattr(data, "events", None)  # a Cassette, or anything holding a stream
    if events is not None and not isinstance(data, (list, tuple)):
        data = events
    if not isinstance(data, (list, tuple)):
        raise InvalidArgumentError(
            f"an AG-UI snapshot takes a list of events, got {type(data).__name__}; "
            "pass the events list (e.g. agui.run(...)) or use the default `snapshot` fixture"
        )
    return [to_wire(e) for e in data]


def _as_runs(data: Any) -> list[Any] | None:
    """The runs of ``[first, second]`` (each a list of events), or ``None``: one stream."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    if all(isinstance(run, (list, tuple, NormalizedStream)) for run in data):
        return list(data)
    return None


def _known_events(data: Any, runs: Iterable[Any]) -> list[dict[str, Any]] | None:
    """The normalized events the session stored for ``data``, when every event of ``data`` is
    one ``agui.run`` returned (the list itself, a slice, or several runs' events joined)."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    known: dict[int, dict[str, Any]] = {}
    for run in runs:
        raw, normalized = getattr(run, "events", None), getattr(run, "normalized", None)
        if isinstance(raw, list) and isinstance(normalized, list) and len(raw) == len(normalized):
            known.update(zip(map(id, raw), normalized, strict=True))
    if not known:
        return None
    found = [known.get(id(event)) for event in data]
    if any(event is None for event in found):
        return None
    return [copy.deepcopy(event) for event in found if event is not None]


def _walk(
    value: Any,
    path: PropertyPath,
    exclude: PropertyFilter | None,
    include: PropertyFilter | None,
    matcher: PropertyMatcher | None,
) -> Any:
    if matcher is not None:
        value = matcher(data=value, path=path)
    if isinstance(value, dict):
        keys = (["type"] if "type" in value else []) + sorted(k for k in value if k != "type")
        out: dict[str, Any] = {}
        for key in keys:
            if exclude is not None and exclude(prop=key, path=path):
                continue
            if include is not None and not include(prop=key, path=path):
                continue
            item = value[key]
            out[str(key)] = _walk(item, (*path, (key, type(item))), exclude, include, matcher)
        return out
    if isinstance(value, (list, tuple)):
        return [
            _walk(item, (*path, (i, type(item))), exclude, include, matcher)
            for i, item in enumerate(value)
        ]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)  # a matcher's placeholder object, say: shown, never crashes


def _serialize_events(
    events: Sequence[dict[str, Any]],
    *,
    exclude: PropertyFilter | None = None,
    include: PropertyFilter | None = None,
    matcher: PropertyMatcher | None = None,
) -> str:
    """JSON Lines: one event per line, keys sorted with ``type`` first."""
    lines = []
    for i, event in enumerate(events):
        shown = _walk(event, ((i, type(event)),), exclude, include, matcher)
        lines.append(json.dumps(shown, ensure_ascii=False, separators=(", ", ": "), default=repr))
    return "".join(line + "\n" for line in lines)


class AGUISnapshotExtension(SingleFileSnapshotExtension):
    """Event streams as ``.agui.jsonl`` snapshot files, one event per line."""

    file_extension = "agui.jsonl"
    _write_mode = WriteMode.TEXT

    normalize: ClassVar[bool] = True
    """Rename random ids and drop timestamps before storing (see :mod:`agui_replay.normalize`)."""
    fold: ClassVar[bool] = False
    """Fold deltas per message (see :func:`_fold_deltas`)."""
    run_id: ClassVar[str | None] = None
    timestamps: ClassVar[TimestampMode] = "remove"
    rules: ClassVar[tuple[Rule, ...]] = ()
    """User normalizers run after the built-in ones (see :mod:`agui_replay.normalize`)."""
    session_runs: ClassVar[Callable[[], Any] | None] = None
    """Returns the test's recording session (or ``None``): events its ``agui.run`` returned are
    stored with the ids the cassette gives them (``RunRecord.normalized``)."""

    _plain_diff: bool = False

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        runs = _as_runs(data)
        if runs is None:
            return _serialize_events(
                self._prepare(data, self._normalizer()),
                exclude=exclude,
                include=include,
                matcher=matcher,
            )
        # One normalizer for all the runs, as a cassette has: an id run 2 takes from run 1
        # keeps run 1's name.
        normalizer = self._normalizer()
        parts = []
        for index, run in enumerate(runs):
            events = self._prepare(run, normalizer)
            body = _serialize_events(events, exclude=exclude, include=include, matcher=matcher)
            parts.append(RUN_MARKER.format(index=index) + "\n" + body)
        return "".join(parts)

    def _normalizer(self) -> Normalizer | None:
        if not self.normalize:
            return None
        return Normalizer(timestamps=self.timestamps, rules=self.rules)

    def _prepare(self, data: Any, normalizer: Normalizer | None) -> list[dict[str, Any]]:
        """One stream's events as stored: normalized (as the session named them, for events
        ``agui.run`` returned), then folded if asked."""
        events: list[dict[str, Any]] | None = None
        source = type(self).session_runs
        if normalizer is not None and self.run_id is None and self.timestamps == "remove":
            session = source() if source is not None else None
            if session is not None and getattr(session, "normalize", False):
                events = _known_events(data, getattr(session, "runs", ()))
        if events is None:
            events = _as_events(data)
            if normalizer is not None:
                events = normalizer.events(events, run_id=self.run_id)
        if self.fold:
            events = _fold_deltas(events)
        return events

    def diff_snapshots(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> SerializedData:
        # snapshot(diff=...) stores this text: keep the event header out of it.
        self._plain_diff = True
        try:
            return super().diff_snapshots(serialized_data, snapshot_data)
        finally:
            self._plain_diff = False

    def diff_lines(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> Iterator[str]:
        if not self._plain_diff:
            yield from _event_header(str(snapshot_data), str(serialized_data))
        yield from super().diff_lines(serialized_data, snapshot_data)


class AGUIFoldedSnapshotExtension(AGUISnapshotExtension):
    """Like :class:`AGUISnapshotExtension`, with each message's deltas folded into one event."""

    fold = True


def _split_runs(text: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(label, events)`` per run of a snapshot text (one unlabelled run without markers)."""
    runs: list[tuple[str, list[dict[str, Any]]]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        marker = _RUN_LINE.fullmatch(line.strip())
        if marker is not None:
            runs.append((f"run #{marker.group(1)}: ", []))
            continue
        if not runs:
            runs.append(("", []))
        runs[-1][1].append(json.loads(line))
    return runs


def _event_header(snapshot_text: str, received_text: str) -> Iterator[str]:
    try:
        stored = _split_runs(snapshot_text)
        received = _split_runs(received_text)
    except ValueError:
        return  # a hand-edited or foreign file: the plain line diff still says it all
    if not stored:
        return
    if len(stored) != len(received):
        yield f"the snapshot holds {len(stored)} run(s), the received value {len(received)}"
        return
    for (label, old), (_, new) in zip(stored, received, strict=True):
        if old == new:
            continue
        explanation = explain_stream_diff(
            old, new, left_name="snapshot", right_name="received", context=0
        )
        # The summary and the changed fields; syrupy's own diff below shows the lines themselves.
        for at, line in enumerate(explanation):
            yield label + line if at == 0 else line
            if " event(s) differ; " in line:
                return
        return


_VARIANTS: dict[tuple[bool, bool, str | None, str], type[AGUISnapshotExtension]] = {}


def _agui_extension(
    *,
    fold: bool = False,
    normalize: bool = True,
    run_id: str | None = None,
    timestamps: TimestampMode = "remove",
    rules: Iterable[Rule] = (),
) -> type[AGUISnapshotExtension]:
    """The extension class for these options (one class per combination, reused).

    ``rules`` are user normalizers; a class with rules is made for the call, not reused.
    """
    checked = as_rules(rules, source="agui_snapshot rules")
    if checked:
        base = AGUIFoldedSnapshotExtension if fold else AGUISnapshotExtension
        return type(
            f"{base.__name__}WithRules",
            (base,),
            {"normalize": normalize, "run_id": run_id, "timestamps": timestamps, "rules": checked},
        )
    key = (fold, normalize, run_id, timestamps)
    if key not in _VARIANTS:
        base = AGUIFoldedSnapshotExtension if fold else AGUISnapshotExtension
        if (normalize, run_id, timestamps) == (True, None, "remove"):
            _VARIANTS[key] = base
        else:
            _VARIANTS[key] = type(
                f"{base.__name__}Custom",
                (base,),
                {"normalize": normalize, "run_id": run_id, "timestamps": timestamps},
            )
    return _VARIANTS[key]


def use_agui_extension(
    snapshot: SnapshotAssertion,
    *,
    fold: bool = False,
    normalize: bool = True,
    run_id: str | None = None,
    timestamps: TimestampMode = "remove",
    rules: Iterable[Rule] = (),
    session: Callable[[], Any] | None = None,
) -> SnapshotAssertion:
    """``snapshot`` (syrupy's fixture value) storing event streams; the ``agui_snapshot`` body.

    ``session`` returns the test's :class:`~agui_replay.recording.CassetteSession` (or
    ``None``): the events its ``agui.run`` returned are then stored with the ids the cassette
    gives them, instead of being numbered afresh.
    """
    extension = _agui_extension(
        fold=fold, normalize=normalize, run_id=run_id, timestamps=timestamps, rules=rules
    )
    if session is not None:
        extension = type(extension.__name__, (extension,), {"session_runs": staticmethod(session)})
    return snapshot.use_extension(extension)
