"""What a pytest session did to its cassettes, as counters that add up across pytest-xdist
workers: each worker sends its :class:`Ledger` to the controller as JSON, which merges them
into one, field by field, by one rule per field type (sets union, lists extend, counters add,
flags or). A new counter is one new field; nothing else lists the fields.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ledger:
    """The cassettes (as :meth:`SessionOptions.shown <._options.SessionOptions.shown>` shows
    them) and tests each outcome of the session counts."""

    recorded: set[str] = field(default_factory=set)
    unchanged: set[str] = field(default_factory=set)
    """Recorded cassettes whose re-record changed nothing: left untouched (in ``recorded``
    too)."""
    refreshed: set[str] = field(default_factory=set)
    """Cassettes whose events ``--agui-refresh`` changed."""
    replayed: set[str] = field(default_factory=set)
    faulted: set[str] = field(default_factory=set)
    """Tests that replayed with ``faults=`` (their events not compared with the recording)."""
    ignored: set[str] = field(default_factory=set)
    """Tests whose replays matched a provider request only with fields left out
    (``match_ignore``): ``"nodeid (run #0 request #0: /messages/0/content)"``."""
    failed: set[str] = field(default_factory=set)
    """Cassettes not written: their recorded runs' upstream failed."""
    discarded: set[str] = field(default_factory=set)
    """Cassettes not written: their test failed (``record_on_failure`` keeps them)."""
    mismatched: set[str] = field(default_factory=set)
    """Cassettes whose replay failed (a mismatch, a blocked connection): not ``replayed``."""
    claimed: set[str] = field(default_factory=set)
    """The cassettes of the collected tests that use ``agui`` (deselected ones too)."""
    stems: set[str] = field(default_factory=set)
    """Cassette folders (``a/b`` parts) of the test modules collected in full."""
    modules: set[str] = field(default_factory=set)
    """The test modules collected in full, as node ids name them (``tests/test_a.py``)."""
    whole_suite: bool = False
    """The session collected the whole suite (no paths, ``--lf`` or ``--sw`` narrowing it)."""
    uncollected: set[str] = field(default_factory=set)
    """Cassette folders (``a/b`` parts) of test modules on disk that were not collected
    (``--ignore``, ``collect_ignore``, skipped at import): their cassettes are never unused."""
    missing: set[str] = field(default_factory=set)
    """Cassettes a replaying test found missing (with an unused one beside it: a rename)."""
    pending: set[str] = field(default_factory=set)
    """Cassettes whose changed events wait beside them for ``agui-replay review``."""
    stale: set[str] = field(default_factory=set)
    """``"path (N days old)"`` of the replayed cassettes older than ``agui_max_age``."""
    stale_tests: set[str] = field(default_factory=set)
    """The tests of the ``stale`` cassettes, as the command line takes them."""
    renewed: set[str] = field(default_factory=set)
    """``"path (N days old)"`` of the stale cassettes re-recorded (``agui_on_stale = record``);
    each is ``recorded`` too."""
    kept_snapshots: set[str] = field(default_factory=set)
    """Tests that use syrupy's ``snapshot`` and failed while they recorded, replayed or
    refreshed their cassette: nothing was written for them, so syrupy is told to keep their
    snapshots."""
    kept_recording: set[str] = field(default_factory=set)
    """Those of ``kept_snapshots`` that failed while recording."""
    background: Counter[str] = field(default_factory=Counter)
    """Per host: the replayed requests answered locally as background work (telemetry a
    timer sent, which the cassette lacks)."""
    large: set[str] = field(default_factory=set)
    """``"HOST (N KB)"`` of each recorded HTTP exchange over 256 KB."""
    claims: set[str] = field(default_factory=set)
    """The claim files the session made (see ``_paths``): removed at its end."""

    def to_json(self) -> dict[str, Any]:
        """Every field, JSON-ready (sets sorted)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def merge(self, data: dict[str, Any]) -> None:
        """Add another ledger's :meth:`to_json` to this one."""
        for f in dataclasses.fields(self):
            if f.name in data:
                setattr(self, f.name, _merged(getattr(self, f.name), data[f.name]))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Counter):
        return dict(value)
    return value


def _merged(mine: Any, theirs: Any) -> Any:
    if isinstance(mine, set):
        return mine | set(theirs)
    if isinstance(mine, Counter):
        return mine + Counter(theirs)
    if isinstance(mine, list):
        return [*mine, *theirs]
    if isinstance(mine, bool):
        return mine or bool(theirs)
    raise TypeError(f"a Ledger field holds {type(mine).__name__}, which has no merge rule")
