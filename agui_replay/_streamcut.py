"""The signal that drops a planned HTTP response's connection where it stands.

Used by ``providers``: a planned response's body (a fake or recorded model stream, a tape
entry, a ``cut`` fault) raises :class:`StreamCut` at the point the connection should drop,
and each in-process transport catches it and fails the read the way its HTTP library does.
It never reaches a user, so it is not in :mod:`agui_replay.errors`.
"""

from __future__ import annotations

from agui_replay.errors import AguiReplayError

__all__ = ["StreamCut"]


class StreamCut(AguiReplayError):
    """Raised by a planned response's body: drop the connection here instead of ending it."""

    code = "STREAM_CUT"
