"""Refresh: re-derive a cassette's AG-UI events from its recorded provider interactions.

When only the agent's own logic changed (how it turns the same model answer into events), the
provider chunks already in the cassette are enough to update it: the agent runs offline
against them, exactly as in a replay, and where its provider requests (and run inputs) still
equal the recorded ones, its new events replace the stored ones. The interactions are kept as
they were, byte for byte. A request or input that differs means the model would have been asked
something else: nothing is written, and the failure says that a real re-record is needed.

One difference in an input is not a different question: the names normalization gives ids.
When the rule that names them changes (one raw id kept one name in every role, say), a run
whose input was built from the run before carries the new names while the cassette stores the
old ones. An input equal to the recorded one up to a renaming of normalized names
(:func:`same_but_names`) is refreshed, and the cassette then stores it with the new names.

The pytest plugin's ``--agui-refresh`` turns this on; :class:`CassetteSession` takes
``refresh=True`` for scripts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agui_replay._files import atomic_write_text
from agui_replay._normalizing import ID_KINDS
from agui_replay._pending import PENDING_SUFFIX, pending_path
from agui_replay.cassette import Cassette

__all__ = [
    "PENDING_SUFFIX",
    "pending_path",
    "refresh_refused",
    "refreshed_cassette",
    "same_but_names",
    "write_pending",
]

_NAME = re.compile(rf".+-(?:{'|'.join(ID_KINDS)})-[0-9]+")


def refresh_refused(path: Any, index: int, what: str, detail: str, command: str) -> str:
    """The message of a run that cannot be refreshed offline: ``what`` changed."""
    return (
        f"{path}: run #{index} cannot be refreshed from its recorded provider interactions: "
        f"{what}.\n{detail}\nThe model would be asked something it was not asked when the "
        f"cassette was recorded, so a real re-record is needed: `{command}` (against the real "
        "provider). Nothing was written."
    )


def same_but_names(recorded: Any, now: Any) -> bool:
    """Whether ``now`` equals ``recorded`` once its normalized names (``run-1-msg-2``) are
    renamed: every other value equal (``1``, ``1.0`` and ``true`` apart), every differing string
    a name on both sides, and each recorded name read as one name now. Two recorded names may
    become one: a rule that gives one raw id one name in every role merges the names its roles
    had."""
    forward: dict[str, str] = {}
    pending: list[tuple[Any, Any]] = [(recorded, now)]
    while pending:
        a, b = pending.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif isinstance(a, str) and _NAME.fullmatch(a) and _NAME.fullmatch(b):
            if forward.setdefault(a, b) != b:
                return False
        elif a != b:
            return False
    return True


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
