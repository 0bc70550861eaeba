"""Pending changes: a replay whose provider requests all matched but whose events changed keeps
what a refresh would write beside the cassette (``NAME.json.pending``), for ``agui-replay
review``; a cassette written or replayed as recorded drops the one kept before."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agui_replay._files import atomic_write_text, pending_path
from agui_replay.cassette import Cassette, dumps_cassette
from agui_replay.recording._refresh import refreshed_cassette, stored_inputs
from agui_replay.recording._runs import canonical

if TYPE_CHECKING:
    from agui_replay.recording._runs import RunRecord

__all__ = ["PendingChange", "write_pending"]

_log = logging.getLogger("agui_replay.session")


class PendingChange:
    """Whether a session keeps its replay's changed events, and whether they changed."""

    def __init__(self, path: Path, *, keep: bool) -> None:
        self.path = path
        self.keep = keep
        self.events_changed = False
        """A replayed run's events differed while every provider request matched."""

    @property
    def kept_in(self) -> str | None:
        """Where a change is kept, for a failure message (``None``: changes are not kept)."""
        return str(pending_path(self.path)) if self.keep else None

    def settle(
        self,
        written: Path | None,
        cassette: Cassette | None,
        runs: Sequence[RunRecord],
        *,
        renamed: set[int],
        secrets: list[str],
        blocked: bool,
    ) -> Path | None:
        """At the session's end: keep the change (returns its path) when the events changed
        and the cassette was not written; else drop a change kept before once it is out of
        date (the cassette changed, or every run replayed as recorded)."""
        if self.events_changed and self.keep and written is None:
            if cassette is None or blocked or not self.path.exists():
                return None
            return self._save(cassette, runs, renamed=renamed, secrets=secrets)
        replayed_all = (
            bool(runs)
            and all(r.action == "replayed" for r in runs)
            and cassette is not None
            and len(runs) == len(cassette.runs)
        )
        if written is not None or replayed_all:
            with contextlib.suppress(OSError):
                pending_path(self.path).unlink()
        return None

    def _save(
        self,
        cassette: Cassette,
        runs: Sequence[RunRecord],
        *,
        renamed: set[int],
        secrets: list[str],
    ) -> Path:
        """What a refresh would write: the runs replayed so far with their new events, the
        runs not reached as recorded."""
        recorded = cassette.runs
        reached = len(runs)
        events = [r.normalized for r in runs] + [run.events for run in recorded[reached:]]
        changed_cassette = refreshed_cassette(
            cassette, events, stored_inputs(recorded, runs, renamed)
        )
        changed_cassette.http = cassette.http
        text = dumps_cassette(changed_cassette, secrets=secrets)
        changed = [
            n
            for n, r in enumerate(runs)
            if n < len(recorded) and canonical(r.normalized) != canonical(recorded[n].events)
        ]
        written = write_pending(self.path, text, changed)
        _log.debug("%s: the changed events are kept in %s", self.path, written)
        return written


def write_pending(cassette: Path, refreshed_text: str, runs: Sequence[int]) -> Path:
    """Keep what a refresh would write over ``cassette`` (``refreshed_text``, the file text of
    :func:`~agui_replay.recording._refresh.refreshed_cassette`) beside it, for ``agui-replay
    review``.

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
