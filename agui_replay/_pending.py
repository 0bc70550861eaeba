"""Where a pending change lives: the new events a replay kept beside its cassette.

The recording session writes ``NAME.json.pending`` when only a run's events changed, and
``agui-replay review`` finds and applies them; both name the file through this module.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PENDING_SUFFIX", "pending_path"]

PENDING_SUFFIX = ".pending"
"""The suffix of a pending change beside its cassette."""


def pending_path(cassette: Path) -> Path:
    """Where the pending change of ``cassette`` is kept (``NAME.json.pending``)."""
    return cassette.with_name(cassette.name + PENDING_SUFFIX)
