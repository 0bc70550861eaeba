"""The npm packages some tests run under Node: installed once, by the tests themselves.

``tests/js/package.json`` pins them (``@ag-ui/client``, the reference TypeScript client,
``fast-json-patch``, what it applies STATE_DELTA with, ``esbuild`` and ``playwright-core``,
which bundle a page with that client and drive it in the system Chromium, and ``@playwright/test``,
which runs the front-end how-to's specs against that page). They are installed
into a cache folder outside the checkout, keyed by that file (a new pin installs afresh), the
first time a test asks for them — so the README's test command installs everything the tests
need, on a clean machine too. A lock keeps two pytest-xdist workers from installing at once.
Without Node and npm, or without a registry, the tests that need them skip with the reason; a
failed install fails.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

JS_SOURCE = Path(__file__).resolve().parents[1] / "js"
NETWORK_TROUBLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network")


def _pinned_packages() -> list[str]:
    """The package names tests/js/package.json pins (each must be installed)."""
    manifest = json.loads((JS_SOURCE / "package.json").read_text(encoding="utf-8"))
    return sorted(manifest["dependencies"])


def js_folder() -> Path:
    """Where the packages are installed (``$AGUI_REPLAY_JS_CACHE`` if set)."""
    manifest = (JS_SOURCE / "package.json").read_bytes()
    digest = hashlib.sha256(manifest).hexdigest()[:12]
    default = Path.home() / ".cache" / "agui-replay" / f"js-{digest}"
    return Path(os.environ.get("AGUI_REPLAY_JS_CACHE", default))


def installed_js_packages(*scripts: str) -> Path:
    """The folder with the pinned packages installed (and ``scripts`` from tests/js copied in)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run the reference TypeScript client")
    folder = js_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others wait, then reuse
        shutil.copyfile(JS_SOURCE / "package.json", folder / "package.json")
        if not all(
            (folder / "node_modules" / name / "package.json").exists()
            for name in _pinned_packages()
        ):
            done = subprocess.run(
                [
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--no-package-lock",
                    "--loglevel=error",
                ],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode != 0:
                output = done.stdout + done.stderr
                if any(word in output for word in NETWORK_TROUBLE):
                    pytest.skip(f"the npm registry cannot be reached: {output.strip()[-300:]}")
                pytest.fail(f"npm install in {folder} failed:\n{output}")
    for script in scripts:
        shutil.copyfile(JS_SOURCE / script, folder / script)
    return folder
