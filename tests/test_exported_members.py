"""The public surface: what `agui_replay` exports, and what importing it costs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import agui_replay
from agui_replay import pytest_plugin, recording


def _imported_by(code: str, modules: list[str]) -> str:
    """Run ``code`` in a fresh interpreter; which of ``modules`` it left in sys.modules."""
    probe = f"{code}; import sys; print(','.join(m for m in {modules!r} if m in sys.modules))"
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_all_is_sorted_unique_and_resolves() -> None:
    names = agui_replay.__all__
    assert names == sorted(names), "keep __all__ sorted"
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(agui_replay, name), f"agui_replay.__all__ names {name!r}, which is missing"


def test_every_public_attribute_is_in_all() -> None:
    # dir(), not vars(): the package imports its names on first use, so vars() shows only the
    # ones used so far.
    public = {
        name
        for name in dir(agui_replay)
        # submodules, `from __future__ import annotations`, and pytest's assertion-rewrite helpers
        # (pytest rewrites this package because its plugin lives in it) are not API
        if name[0].isalpha()
        and name != "annotations"
        and not isinstance(getattr(agui_replay, name), ModuleType)
    }
    assert public == set(agui_replay.__all__) - {"__version__"}


def test_the_lazy_table_matches_the_type_checking_imports() -> None:
    # mypy and IDEs read the `if TYPE_CHECKING:` imports, the runtime reads the table: a name
    # added to one only would type-check but fail at run time (or the other way round).
    tree = ast.parse(Path(agui_replay.__file__).read_text(encoding="utf-8"))
    guard = next(node for node in tree.body if isinstance(node, ast.If))
    declared = {
        alias.name: node.module
        for node in guard.body
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }
    assert declared == agui_replay._LAZY
    assert set(declared) == set(agui_replay.__all__) - {"__version__"}


def test_importing_the_package_pulls_in_no_test_or_http_library() -> None:
    heavy = ["pytest", "hypothesis", "syrupy", "starlette", "httpx", "httpx2", "openai", "uvicorn"]
    out = _imported_by("import agui_replay, agui_replay.server", heavy)
    assert out == "", f"import agui_replay imported {out}"


def test_importing_the_package_alone_imports_no_submodule_nor_ag_ui() -> None:
    out = _imported_by("import agui_replay", ["ag_ui", "pydantic", "agui_replay.client"])
    assert out == "", f"import agui_replay imported {out}"
    # ...and a name still imports what it needs.
    out = _imported_by("from agui_replay import Session", ["ag_ui", "agui_replay.client"])
    assert out == "ag_ui,agui_replay.client"


def test_loading_the_pytest_plugin_imports_no_engine() -> None:
    # pytest loads the plugin in every run where agui_replay is installed; the engine
    # (ag_ui.core's pydantic models) is imported only by the tests that use its fixtures.
    engine = ["ag_ui", "agui_replay.recording", "agui_replay.cassette", "agui_replay.assertions"]
    out = _imported_by("import pytest, agui_replay.pytest_plugin", engine)
    assert out == "", f"loading the pytest plugin imported {out}"


def test_the_plugin_constants_equal_the_engine() -> None:
    # Copied into the plugin so registering its options imports no engine.
    assert tuple(mode.value for mode in recording.RecordMode) == pytest_plugin.RECORD_MODES
    assert pytest_plugin.DEFAULT_UPSTREAM == recording.DEFAULT_UPSTREAM


def test_providers_names_all_resolve_lazily() -> None:
    import agui_replay.providers as providers

    for name in providers.__all__:
        assert getattr(providers, name) is not None, name
    code = (
        "import sys, agui_replay.pytest_plugin._provider_fixtures; "
        "print(','.join(m for m in ('agui_replay.providers._fake', 'httpx2', 'http.server') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing the provider fixtures imported {out}"
