"""Markers for the tests that are slow or need something beyond the venv.

``pytest -m "not slow"`` is the inner loop: it leaves out every test below. The README's test
command runs everything.

* ``slow``: implied by each marker below, by every test that runs pytest itself (the
  ``pytester`` fixture: a whole inner pytest run per test), and by the modules below that run
  whole commands in subprocesses, long property runs or benchmarks;
* ``node``: needs Node.js and packages from npm (the reference TypeScript client);
* ``browser``: needs Chromium;
* ``netns``: replays inside a network namespace (``unshare -n``, root);
* ``build``: builds the package's wheel;
* ``fuzz``: thousands of generated examples.
"""

from __future__ import annotations

import os
import sys

import httpcore  # noqa: F401
import httpcore2  # noqa: F401
import httpx  # noqa: F401
import httpx2  # noqa: F401
import pytest

# The suite starts hundreds of Python processes (pytest runs in subprocesses, the command line,
# servers), and each compiles agui_replay and the modules it imports afresh unless bytecode is
# cached: where PYTHONDONTWRITEBYTECODE is set, this suite and its children cache it anyway.
# (Read at start-up, before the workers of ``-n 2`` are started, since this is an initial
# conftest.)
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# pytester's in-process runs drop the modules first imported inside them. Were httpcore first
# imported there, a later import would make a second copy of it, and httpx, bound to the first,
# would stop turning the second copy's errors into its own (an httpcore.RemoteProtocolError
# would reach a test expecting httpx's): imported here, before any pytester run, they are one.
# The same holds for httpcore2 under httpx2 (the tape's own client while it records).

# The modules whose every test needs one of the environments above.
MODULE_MARKERS = {
    "test_reference_client": "node",
    "test_cli_serve_ts": "node",
    "test_viewer_browser": "browser",
    "test_offline_namespace": "netns",
    "test_build": "build",
    "test_fuzz_entry_points": "fuzz",
    # whole pytest or agui-replay runs in subprocesses, long property runs, benchmarks
    "test_cli_examples": "slow",
    "test_cli_examples_skipped": "slow",
    "test_subagent_properties": "slow",
    "test_properties": "slow",
    "test_bench_state": "slow",
    "test_state_lazy": "slow",
    "test_endpoint_hardening": "slow",
    "test_strategies_appliers": "slow",
    "test_patch_probe": "slow",
    "test_cli_capture": "slow",
}
KINDS = {
    "slow": "slow, or needs more than the venv: left out by -m 'not slow'",
    "node": "needs Node.js and npm packages (implies slow)",
    "browser": "needs Chromium (implies slow)",
    "netns": "replays in a network namespace, needs unshare and root (implies slow)",
    "build": "builds the wheel (implies slow)",
    "fuzz": "thousands of generated examples (implies slow)",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, doc in KINDS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        kind = MODULE_MARKERS.get(module)
        if kind is not None:
            item.add_marker(getattr(pytest.mark, kind))
        if kind is not None or "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
