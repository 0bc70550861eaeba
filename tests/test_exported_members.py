"""The public surface: what `agui_replay` exports, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import agui_replay


def test_all_is_sorted_unique_and_resolves() -> None:
    names = agui_replay.__all__
    assert names == sorted(names), "keep __all__ sorted"
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(agui_replay, name), f"agui_replay.__all__ names {name!r}, which is missing"


def test_every_public_attribute_is_in_all() -> None:
    public = {
        name
        for name, value in vars(agui_replay).items()
        # submodules, `from __future__ import annotations`, and pytest's assertion-rewrite helpers
        # (pytest rewrites this package because its plugin lives in it) are not API
        if name[0].isalpha() and name != "annotations" and not isinstance(value, ModuleType)
    }
    assert public == set(agui_replay.__all__) - {"__version__"}


def test_importing_the_package_pulls_in_no_test_or_http_library() -> None:
    heavy = ["pytest", "hypothesis", "syrupy", "starlette", "httpx", "httpx2", "openai", "uvicorn"]
    code = (
        "import sys, agui_replay, agui_replay.server; "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"import agui_replay imported {out}"
