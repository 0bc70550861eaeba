"""Facades whose names load on first use, and that show their public path.

A facade (``agui_replay.providers``, ``agui_replay.server``, ...) lists where each of its names
is defined; :func:`lazy_names` returns the module's ``__getattr__`` and ``__dir__`` (PEP 562),
so ``from agui_replay.providers import FakeProvider`` imports the private module that defines it
only then. The pytest plugin is loaded in every pytest run, so a facade it touches must not pull
in the HTTP clients or pydantic's event models before a test uses them.

:func:`claim` sets ``__module__`` of the classes and functions a facade exports to the facade's
name, so reprs, tracebacks and the docs show ``agui_replay.providers.FakeProvider`` rather than
the private module it lives in.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["claim", "lazy_names", "moved_errors"]


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


def lazy_names(
    facade: str, homes: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``facade``, whose names live in ``homes``.

    ``homes`` maps each lazily loaded name to the dotted module that defines it. A loaded name
    is not cached in the facade's globals: it is read from its module each time, so a module
    imported afresh (pytester drops the modules an inner run imported) never leaves the facade
    handing out its old classes beside the new ones.
    """
    listed = sorted(set(public))

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {facade!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        claim(facade, [value])
        return value

    def __dir__() -> list[str]:
        return listed

    return __getattr__, __dir__


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
