"""The baseline after a snapshot: the bytes just encoded, decoded only when a delta needs them.

Decoding a state costs several times encoding it (``orjson.loads`` of many small objects is
the dearest step of a publish, and grows faster than the state), and after a snapshot the next
publish often does not need the decoded baseline: the same state again, or another whole
document. So a snapshot keeps only the compact JSON it sent, and the object it was given (the
hint). The next publish compares bytes for "unchanged"; for another document it walks from the
hint, read only, to the point where the patch is sure to reach the new state's size, and trusts
that verdict only if the hint's JSON is still the snapshot's bytes (the caller may have changed
it since). Anything else, a delta above all, decodes the bytes once, and from then on the
baseline is a private decoded copy patched in place.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from .._limits import dumps_known
from ..patch import diff_exceeds
from ._plain import is_plain

__all__ = ["LazyBaseline"]


class LazyBaseline:
    """The compact JSON of the last snapshot (``encoded``; ``loadable``: orjson reads it back,
    no integers beyond 64 bits), and the object published last while its JSON is that."""

    __slots__ = ("encoded", "hint", "loadable")

    def __init__(self, encoded: bytes, loadable: bool, hint: Any) -> None:
        self.encoded, self.loadable, self.hint = encoded, loadable, hint

    def decoded(self) -> Any:
        """A new decoded copy of the baseline."""
        return orjson.loads(self.encoded) if self.loadable else json.loads(self.encoded)

    def unchanged(self, state: Any, encoded: bytes) -> bool:
        """Whether ``state`` (compact JSON ``encoded``) is the baseline again, exactly."""
        if encoded != self.encoded or not is_plain(state, encoded):
            return False
        self.hint = state
        return True

    def snapshot_due(self, state: Any, encoded: bytes) -> bool:
        """Whether the patch from the baseline to ``state`` is sure to be no shorter than
        ``encoded``, shown from the hint (``False``: not shown)."""
        hint = self.hint
        if hint is state:
            return False
        try:
            if not diff_exceeds(hint, state, len(encoded)):
                return False
            return dumps_known(hint) == self.encoded
        except Exception:  # the caller may have put anything in it since
            return False
