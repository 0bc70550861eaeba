"""The in-process pytest run the pytester suites of tests/plugin share."""

from __future__ import annotations

import pytest


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in ``pytester``'s project with ``args``, without the cache and without
    hypothesis's plugin (these runs do not use it, and it slows every in-process run down)."""
    return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)
