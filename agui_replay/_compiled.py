"""The optional compiled helpers (``agui_replay/_speedups.c``), or ``None`` in their place.

The wheel built on a machine with a C compiler carries them; without one the build leaves them
out (the extension is optional) and the StateManager takes its pure-Python paths, which give
the same outcomes at a higher cost for small states (see docs/architecture.md, "The compiled
helpers"). Setting the environment variable ``AGUI_REPLAY_PURE_PYTHON=1`` before the import
leaves them out too, to compare the two or to rule the extension out when hunting a bug.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["BUILT", "PURE_PYTHON_VARIABLE", "is_plain", "plain_copy"]

PURE_PYTHON_VARIABLE = "AGUI_REPLAY_PURE_PYTHON"

is_plain: Callable[[Any, int], bool] | None = None
"""Whether a value holds only exact JSON types, no NaN or infinity, at most ``depth`` deep."""

plain_copy: Callable[[Any, int], Any] | None = None
"""A copy of a value's containers sharing its (immutable) leaves; ``None`` if not plain."""

BUILT = False
"""Whether the extension was built and imports (even if the variable above turns it off)."""

try:
    from . import _speedups
except ImportError:  # not built: no compiler where the package was installed
    pass
else:
    BUILT = True
    if os.environ.get(PURE_PYTHON_VARIABLE, "") in ("", "0"):
        is_plain, plain_copy = _speedups.is_plain, _speedups.plain_copy
