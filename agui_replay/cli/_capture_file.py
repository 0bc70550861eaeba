"""``agui-replay capture``: the cassette the captured runs go into.

Every completed run is appended and the whole cassette is written again at once, atomically
(``save_cassette``: a temporary file, fsync, rename), so the file on disk is always a whole
cassette holding every run completed so far. A write that fails for the file system's sake (a
full disk, a folder made read-only) keeps the run in memory and is tried again with the next run
and once more when the proxy stops; a run the cassette cannot hold is dropped, with its reason.
Secrets taken from the forwarded request headers are scrubbed wherever they occur.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agui_replay._secrets import MIN_SECRET_LENGTH, header_value_secrets
from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.errors import CassetteError
from agui_replay.scrub import DEFAULT_SECRET_HEADERS

__all__: list[str] = []

_log = logging.getLogger("agui_replay.capture")


class _CaptureFile:
    """The cassette at ``path``: runs appended one by one, each followed by a whole write."""

    def __init__(
        self,
        path: Path,
        cassette: Cassette,
        *,
        warn: Callable[[str], None],
    ) -> None:
        self.path = path
        self.cassette = cassette
        self.warn = warn
        self.recorded = 0
        self.secrets: set[str] = set()
        self.unsaved = False
        self._lock = asyncio.Lock()

    def note_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        """Remember the secrets of forwarded headers: they go to the agent, never to the file."""
        for name, value in headers:
            if name.lower() in DEFAULT_SECRET_HEADERS:
                self.secrets.update(header_value_secrets(name, value))

    def note_secret(self, secret: str) -> None:
        if len(secret) >= MIN_SECRET_LENGTH:
            self.secrets.add(secret)

    async def record(self, posted: dict[str, Any], events: list[dict[str, Any]]) -> int | str:
        """Append a run and write the cassette: the run's number, or why it is not recorded."""
        async with self._lock:
            run = CassetteRun(input=posted, events=events)
            self.cassette.runs.append(run)
            try:
                await asyncio.to_thread(self._save)
            except CassetteError as exc:
                # The run itself cannot be stored (a value JSON cannot hold): leave it out, or
                # every later write would fail on it too.
                self.cassette.runs.remove(run)
                return f"the cassette cannot hold it: {exc}"
            except OSError as exc:
                self.recorded += 1
                self.unsaved = True
                _log.debug("writing %s failed", self.path, exc_info=True)
                self.warn(
                    f"cannot write {self.path}: {exc.strerror or exc}; the run is kept in memory "
                    "and the next write tries again"
                )
            else:
                self.recorded += 1
                self.unsaved = False
            return len(self.cassette.runs) - 1

    def _save(self) -> None:
        # When the file was written: the last run's end, not the proxy's start.
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.cassette.recorded_at = now.replace("+00:00", "Z")
        save_cassette(self.cassette, self.path, secrets=sorted(self.secrets))

    def flush(self) -> bool:
        """At the end: write runs a failed write left in memory; False when that fails too."""
        if not self.unsaved:
            return True
        try:
            self._save()
        except (OSError, CassetteError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.warn(f"cannot write {self.path}: {why}; the captured runs are lost")
            return False
        self.unsaved = False
        return True
