"""What every facade does to the names it exports.

:func:`claim` sets ``__module__`` of the classes and functions a facade exports to the facade's
name, so reprs, tracebacks and the docs show ``agui_replay.providers.FakeProvider`` rather than
the private module it lives in. :func:`moved_errors` keeps an exception a facade used to export
importable, with a :class:`DeprecationWarning`, for one release. Facades import their names
plainly; only ``server`` loads its HTTP endpoint on first use, since starlette is an extra.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["claim", "moved_errors"]


def claim(facade: str, values: Iterable[Any]) -> None:
    """Give each class and function in ``values`` that a private module defines the public
    module ``facade``."""
    for value in values:
        if isinstance(value, type) or (callable(value) and hasattr(value, "__code__")):
            module = getattr(value, "__module__", "") or ""
            # Only what a private module of this package defines: a name re-exported from
            # another public module (an error from agui_replay.errors) keeps its own path.
            if module.startswith("agui_replay.") and "._" in module:
                with contextlib.suppress(AttributeError, TypeError):  # a frozen type
                    value.__module__ = facade


def moved_errors(facade: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A facade's ``__getattr__`` for exceptions it used to export: each still resolves, from
    :mod:`agui_replay.errors`, with a :class:`DeprecationWarning` naming that import (every
    exception has that one home)."""
    moved = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {facade!r} has no attribute {name!r}")
        import warnings

        warnings.warn(
            f"import {name} from agui_replay.errors: {facade}.{name} goes in the next release "
            "(every exception the package raises has that one home)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("agui_replay.errors"), name)

    return __getattr__
