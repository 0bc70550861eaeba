"""What every command shares: the exit codes, the usage error, choosing runs by number."""

from __future__ import annotations

from agui_replay.cassette import RecordedRun, Recording
from agui_replay.errors import AguiReplayError

__all__ = [
    "EXIT_DIFFERENT",
    "EXIT_OK",
    "EXIT_USAGE",
]

EXIT_OK = 0
EXIT_DIFFERENT = 1
"""A protocol violation (``verify``) or a difference (``diff``)."""
EXIT_USAGE = 2
"""A wrong command line or an input file that cannot be read."""


class _UsageError(AguiReplayError):
    code = "USAGE"


def _select_runs(recording: Recording, run: int | None) -> list[RecordedRun]:
    if run is None:
        return recording.runs
    count = len(recording.runs)
    if not -count <= run < count:
        raise _UsageError(
            f"--run {run} is out of range: {recording.path} has {count} run(s), 0–{count - 1}"
        )
    return [recording.runs[run]]
