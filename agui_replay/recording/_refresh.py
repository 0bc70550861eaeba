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
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agui_replay._normalizing import ID_KINDS
from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.recording._modes import ReplayMismatchError

if TYPE_CHECKING:
    from agui_replay.providers import FakeProvider
    from agui_replay.recording._runs import RunRecord

__all__ = [
    "Refresh",
    "refresh_refused",
    "refreshed_cassette",
    "same_but_names",
    "stored_inputs",
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
    anew. ``inputs`` are the inputs to store (see :func:`stored_inputs`).
    """
    runs = [
        dataclasses.replace(run, input=inputs[n], events=list(events[n]))
        for n, run in enumerate(old.runs)
    ]
    return Cassette(runs=runs, name=old.name, meta=old.meta, recorded_at=old.recorded_at)


def stored_inputs(
    recorded: Sequence[CassetteRun], runs: Sequence[RunRecord], renamed: set[int]
) -> list[dict[str, Any]]:
    """The inputs a refreshed cassette stores: the recorded ones, except those of the runs in
    ``renamed`` (read with new id names), stored as the run normalized them now."""
    return [
        runs[n].stored_input if n in renamed and n < len(runs) else run.input
        for n, run in enumerate(recorded)
    ]


class Refresh:
    """A refresh under way: the runs whose events it changes, and whether it may write."""

    def __init__(self, path: Path, record_command: str) -> None:
        self.path = path
        self.record_command = record_command
        self.refreshed: list[int] = []
        """The runs whose events changed (written at the session's end)."""
        self.renamed_inputs: set[int] = set()
        """The runs whose input is stored with new id names."""
        self.refused = False
        """Nothing may be written: a run could not be refreshed, or the test failed."""

    def refuse(self, index: int, what: str, detail: str) -> ReplayMismatchError:
        """Refuse to write, with the error of run ``index`` whose ``what`` changed."""
        self.refused = True
        return ReplayMismatchError(
            refresh_refused(self.path, index, what, detail, self.record_command)
        )

    def judge(self, index: int, fake: FakeProvider, same: bool) -> None:
        """A refreshed run: its provider traffic must be the recorded one; new events are
        kept for :meth:`save`."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if fake.errors or fake.unserved:
            if fake.errors:
                text = str(fake.errors[0])
                field = getattr(fake.errors[0], "field", None)
                what = "its provider requests differ from the recorded ones" + (
                    f" (first differing field: {field})" if field else ""
                )
            else:
                text = "never requested: " + "; ".join(fake.unserved)
                what = (
                    f"it made {len(fake.requests)} provider request(s) where the recording has "
                    f"{len(fake.turns)}"
                )
            detail = "\n".join(f"  {line}" for line in text.splitlines())
            raise self.refuse(index, what, detail)
        if not same:
            self.refreshed.append(index)

    def save(
        self,
        cassette: Cassette,
        runs: Sequence[RunRecord],
        secrets: list[str],
        *,
        blocked: bool,
    ) -> Path | None:
        """Write the refreshed cassette when every recorded run was refreshed and one
        changed (``blocked``: a connection was refused, nothing is written)."""
        if not self.refreshed or self.refused or blocked:
            return None
        if len(runs) != len(cassette.runs):
            return None  # check_complete says why
        inputs = stored_inputs(cassette.runs, runs, self.renamed_inputs)
        refreshed = refreshed_cassette(cassette, [r.normalized for r in runs], inputs)
        refreshed.http = cassette.http
        return save_cassette(refreshed, self.path, secrets=secrets)
