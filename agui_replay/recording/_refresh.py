"""Refresh: re-derive a cassette's AG-UI events from its recorded provider interactions.

When only the agent's own logic changed (how it turns the same model answer into events), the
provider chunks already in the cassette are enough to update it: the agent runs offline
against them, exactly as in a replay, and where its provider requests (and run inputs) still
equal the recorded ones, its new events replace the stored ones. The interactions are kept as
they were, byte for byte. A request or input that differs means the model would have been asked
something else: nothing is written, and the failure says that a real re-record is needed.

The pytest plugin's ``--agui-refresh`` turns this on; :class:`CassetteSession` takes
``refresh=True`` for scripts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agui_replay._pending import PENDING_SUFFIX, pending_path
from agui_replay.cassette import Cassette, atomic_write_text

__all__ = [
    "PENDING_SUFFIX",
    "pending_path",
    "refresh_refused",
    "refreshed_cassette",
    "write_pending",
]


def refresh_refused(path: Any, index: int, what: str, detail: str, command: str) -> str:
    """The message of a run that cannot be refreshed offline: ``what`` changed."""
    return (
        f"{path}: run #{index} cannot be refreshed from its recorded provider interactions: "
        f"{what}.\n{detail}\nThe model would be asked something it was not asked when the "
        f"cassette was recorded, so a real re-record is needed: `{command}` (against the real "
        "provider). Nothing was written."
    )


def refreshed_cassette(
    old: Cassette,
    events: Sequence[list[dict[str, Any]]],
    inputs: Sequence[dict[str, Any]],
) -> Cassette:
    """``old`` with each run's events replaced by ``events`` (one list per run, in order).

    The interactions stay the very objects that were loaded (written again they give the same
    bytes), and so do ``recorded_at`` and the provider meta: only the events were derived
    anew. ``inputs`` are the inputs to store: the recorded ones, except that a format-1
    cassette (raw inputs) gets them normalized as format 2 stores them.
    """
    runs = [
        dataclasses.replace(run, input=inputs[n], events=list(events[n]))
        for n, run in enumerate(old.runs)
    ]
    return Cassette(runs=runs, name=old.name, meta=old.meta, recorded_at=old.recorded_at)


def write_pending(cassette: Path, refreshed_text: str, runs: Sequence[int]) -> Path:
    """Keep what a refresh would write over ``cassette`` (``refreshed_text``, the file text of
    :func:`refreshed_cassette`) beside it, for ``agui-replay review``.

    The file is JSON: ``agui_replay_pending`` (its format, 1), ``cassette`` (the file name),
    ``cassette_sha256`` (of the cassette's bytes now: a pending change of a cassette that
    changed since is refused), ``runs`` (the runs whose events changed) and ``cassette_text``
    (the text accepting it writes, byte for byte).
    """
    digest = hashlib.sha256(cassette.read_bytes()).hexdigest()
    doc = {
        "agui_replay_pending": 1,
        "cassette": cassette.name,
        "cassette_sha256": digest,
        "runs": list(runs),
        "cassette_text": refreshed_text,
    }
    target = pending_path(cassette)
    atomic_write_text(target, [json.dumps(doc, ensure_ascii=False, indent=1), "\n"])
    return target
