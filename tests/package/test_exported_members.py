"""The public surface: what `agui_replay` exports, and what importing it costs."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import agui_replay
from agui_replay import recording
from agui_replay.pytest_plugin import _options


def _imported_by(code: str, modules: list[str]) -> str:
    """Run ``code`` in a fresh interpreter; which of ``modules`` it left in sys.modules."""
    probe = f"{code}; import sys; print(','.join(m for m in {modules!r} if m in sys.modules))"
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()


ROOT = Path(agui_replay.__file__).resolve().parent


def public_modules() -> list[str]:
    """Every module of the package whose dotted path has no private part (cli aside)."""
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("agui_replay", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] != "__main__" and not any(part.startswith("_") for part in parts[1:]):
            names.append(".".join(parts))
    return names


def test_the_top_level_holds_only_the_version() -> None:
    assert agui_replay.__all__ == ["__version__"]
    public = {name for name in vars(agui_replay) if name[0].isalpha() and name != "annotations"}
    names = {n for n in public if not isinstance(getattr(agui_replay, n), ModuleType)}
    assert names == set()


def test_each_facade_all_is_sorted_unique_and_resolves() -> None:
    for name in public_modules():
        module = importlib.import_module(name)
        exported = list(getattr(module, "__all__", []))
        assert len(exported) == len(set(exported)), name
        for attr in exported:
            assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which is missing"


def test_what_a_facade_hands_out_shows_a_public_module() -> None:
    hidden = []
    for name in public_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            value = getattr(module, attr)
            home = getattr(value, "__module__", None)
            ours = isinstance(home, str) and home.startswith("agui_replay")
            if (inspect.isclass(value) or inspect.isfunction(value)) and ours and "._" in home:
                hidden.append(f"{name}.{attr} shows {home}")
    assert hidden == []


def test_the_public_surface_does_not_grow() -> None:
    # The number of distinct public names (a ratchet: lower it as names go private).
    names = {
        attr
        for name in public_modules()
        for attr in getattr(importlib.import_module(name), "__all__", [])
    }
    assert len(names) <= PUBLIC_NAMES_CEILING, sorted(names)


# 156: verify.Mode, the type of every mode argument (a user annotates with it);
# providers.DEFAULT_DROP_HOSTS (the drop list a marker adds to) and providers.HttpTape (the
# tape the plugin's session cassette records with).
PUBLIC_NAMES_CEILING = 156


def test_importing_the_package_pulls_in_no_test_or_http_library() -> None:
    heavy = ["pytest", "hypothesis", "syrupy", "starlette", "httpx", "httpx2", "openai", "uvicorn"]
    out = _imported_by("import agui_replay, agui_replay.server", heavy)
    assert out == "", f"import agui_replay imported {out}"


def test_importing_the_package_alone_imports_no_submodule_nor_ag_ui() -> None:
    out = _imported_by("import agui_replay", ["ag_ui", "pydantic", "agui_replay.client"])
    assert out == "", f"import agui_replay imported {out}"
    # ...and a facade still imports what it needs.
    out = _imported_by("from agui_replay.client import Session", ["ag_ui", "agui_replay.client"])
    assert out == "ag_ui,agui_replay.client"


def test_loading_the_pytest_plugin_imports_no_engine() -> None:
    # pytest loads the plugin in every run where agui_replay is installed; the engine
    # (ag_ui.core's pydantic models) is imported only by the tests that use its fixtures.
    engine = ["ag_ui", "agui_replay.recording", "agui_replay.cassette", "agui_replay.assertions"]
    out = _imported_by("import pytest, agui_replay.pytest_plugin", engine)
    assert out == "", f"loading the pytest plugin imported {out}"


def test_the_plugins_default_upstream_is_the_engines() -> None:
    # The ini default, which registering the options needs before any engine is imported;
    # the recording session treats it as "no upstream configured" only while the two agree.
    assert _options.DEFAULT_UPSTREAM == recording._modes.DEFAULT_UPSTREAM


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
