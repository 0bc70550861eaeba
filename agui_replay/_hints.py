"""The record commands that a cassette's error messages suggest.

Private infrastructure shared by ``cassette`` (its loader writes these into a
:class:`~agui_replay.errors.CassetteError`) and ``recording`` (a ``CassetteSession`` puts the
test's own command in their place). No unit re-exports them.
"""

from __future__ import annotations

__all__ = ["RECORD_HINT", "UNNAMED_RECORD_COMMAND"]

RECORD_HINT = "Record it by running the test with `pytest --agui-record`."
"""What a missing cassette's message says, unless the caller gives its own hint."""

UNNAMED_RECORD_COMMAND = (
    "`pytest path/to/test_file.py::test_name --agui-record` (the test that uses this file)"
)
"""The re-record command a broken cassette's message shows when the file does not say which
test wrote it; the pytest plugin puts the test's own command in its place."""
