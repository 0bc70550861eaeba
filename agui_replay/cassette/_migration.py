"""Older cassette formats brought to the current one as they are loaded.

This module is the only one that knows what the format numbers mean; everything that reads a
loaded :class:`~agui_replay.cassette.Cassette` sees the current format, and saving one writes
it. Loading never writes: a cassette that is only replayed stays on disk as it was.

* Format 1 stored each run's input raw (the ids of the run that recorded it, those an earlier
  run minted included) while its events were normalized, and its interactions named no
  provider. Migrated, each interaction names ``"default"`` (the provider of
  ``agui.provider.base_url``, which answers any provider that has no exchange of its own: what
  an untagged one did), and inputs and events are normalized as format 2 stores them: one
  :class:`~agui_replay.normalize.Normalizer` reads each run's input, then its events. A resume
  entry naming an interrupt by a raw id the events never show answers the open interrupt at
  its position in the run before, and takes that interrupt's name.
* Format 2 is format 3 without binary chunks: nothing to change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agui_replay.normalize import Normalizer

if TYPE_CHECKING:
    from agui_replay.cassette._format import Cassette, CassetteRun

__all__ = ["FORMAT_VERSION", "SUPPORTED_FORMAT_VERSIONS", "migrate"]

FORMAT_VERSION = 3
"""The cassette format this version of agui-replay writes (2: each interaction names its
provider; 3: a chunk of a binary stream is stored as ``{"offset", "data": base64, "encoding":
"base64"}``, text chunks are as in 2)."""


def _from_1(cassette: Cassette) -> None:
    names = Normalizer()
    open_interrupts: list[str] = []
    for run in cassette.runs:
        run.interactions = [
            i if "provider" in i else {"provider": "default", **i} for i in run.interactions
        ]
        run.input = names.input(_resuming(run.input, open_interrupts))
        run.events = names.events(run.events)
        open_interrupts = _open_interrupts(run)


def _from_2(cassette: Cassette) -> None:
    """Format 3 only added base64 chunks, which a format-2 file does not hold."""


_STEPS: dict[int, Callable[[Cassette], None]] = {1: _from_1, 2: _from_2}

SUPPORTED_FORMAT_VERSIONS: frozenset[int] = frozenset({*_STEPS, FORMAT_VERSION})
"""The cassette formats this version of agui-replay reads."""


def migrate(cassette: Cassette) -> None:
    """Bring a loaded ``cassette`` of a supported format to :data:`FORMAT_VERSION`, in place
    (its runs' lists are replaced, never changed: the document it was built from stays)."""
    while cassette.version != FORMAT_VERSION:
        _STEPS[cassette.version](cassette)
        cassette.version += 1


def _resuming(run_input: dict[str, Any], open_interrupts: list[str]) -> dict[str, Any]:
    """``run_input`` whose resume entries name the interrupts they answer as the events do."""
    resume = run_input.get("resume")
    if not open_interrupts or not isinstance(resume, list):
        return run_input
    answers = []
    for n, entry in enumerate(resume):
        ident = entry.get("interruptId") if isinstance(entry, dict) else None
        if isinstance(ident, str) and ident not in open_interrupts and n < len(open_interrupts):
            entry = {**entry, "interruptId": open_interrupts[n]}
        answers.append(entry)
    return {**run_input, "resume": answers}


def _open_interrupts(run: CassetteRun) -> list[str]:
    """The ids of the interrupts the run's last RUN_FINISHED left open."""
    finished = [e for e in run.events if e.get("type") == "RUN_FINISHED"]
    outcome = finished[-1].get("outcome") if finished else None
    interrupts = outcome.get("interrupts") if isinstance(outcome, dict) else None
    if not isinstance(interrupts, list):
        return []
    return [str(i["id"]) for i in interrupts if isinstance(i, dict) and "id" in i]
