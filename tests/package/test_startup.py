"""What every pytest run of a user pays for the plugin, and that hypothesis is optional.

The plugin (entry point ``pytest11: agui_replay``) loads in every pytest run of an environment
with agui_replay installed, so its load imports none of the heavy libraries: no hypothesis (the
``strategies`` extra), no HTTP client, no provider SDK, no Starlette. A user without the
``strategies`` extra runs their suite with the plugin working; only ``agui_replay.strategies``
says which extra to install.

Each check runs in a fresh interpreter: this process has imported everything already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAVY = ("hypothesis", "httpx", "httpx2", "openai", "anthropic", "starlette")

_LOADED = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # -I: no PYTHON* variables, no user site and no current folder on sys.path, so what is
    # imported is what the installed package imports.
    return subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("module", ["agui_replay", "agui_replay.pytest_plugin"])
def test_loading_imports_no_heavy_library(module: str, tmp_path: Path) -> None:
    code = f"import {module}; " + _LOADED.format(heavy=set(HEAVY))
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"`import {module}` imported {result.stdout.strip()}"


def test_plugin_load_imports_no_engine(tmp_path: Path) -> None:
    # ag_ui.core is pydantic's event models, slow to import, imported with the engine (recording,
    # cassette, assertions) when a test uses it: never by the plugin's load.
    code = (
        "import sys, agui_replay.pytest_plugin; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in {'ag_ui', 'pydantic', 'orjson'}"
        " or m.startswith(('agui_replay.recording', 'agui_replay.cassette',"
        " 'agui_replay.assertions', 'agui_replay.providers', 'agui_replay.strategies'))))"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


# Runs pytest in a fresh interpreter where hypothesis cannot be imported, as for a user who
# installed agui-replay without the strategies extra: a finder ahead of every other one refuses
# `hypothesis` (and its helper modules `_hypothesis_*`), whichever sys.path entry holds it, as
# a missing package does. hypothesis's own pytest plugin is turned off: that user has none.
# (`sys.modules["hypothesis"] = None` would do for the imports, but pytest's assertion rewriter
# walks sys.modules and fails on a None entry.)
_WITHOUT_HYPOTHESIS = textwrap.dedent(
    """
    import sys


    class NoHypothesis:
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top == "hypothesis" or top.startswith("_hypothesis"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, NoHypothesis())
    import pytest

    sys.exit(pytest.main(sys.argv[1:]))
    """
)

_USER_SUITE = textwrap.dedent(
    """
    import sys

    import pytest


    def test_x():
        pass


    def test_agui_fixture_is_available(agui):
        assert agui.mode is not None
        assert agui.runs == []


    def test_fake_provider_fixture_is_available(fake_provider):
        assert fake_provider is not None


    def test_strategies_name_the_extra():
        with pytest.raises(ImportError, match=r"agui-replay\\[strategies\\]"):
            import agui_replay.strategies  # noqa: F401


    def test_the_chunk_helpers_need_no_hypothesis():
        from agui_replay.providers import by_size, by_word

        assert by_word("a b") == ["a", " b"]
        assert by_size("abc", 2) == ["ab", "c"]



    def test_hypothesis_never_loaded():
        assert sys.modules.get("hypothesis") is None
    """
)


def test_user_suite_runs_without_hypothesis(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=_USER_SUITE)
    result = pytester.run(
        sys.executable,
        "-c",
        _WITHOUT_HYPOTHESIS,
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:cacheprovider",
        "-q",
        timeout=300,
    )
    # The plugin loads from its entry point, as in a user's run: the agui fixture test proves it.
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*6 passed*"])
