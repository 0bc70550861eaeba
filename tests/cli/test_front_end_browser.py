"""A real front end against ``agui-replay serve``: a page on ``@ag-ui/client`` in headless Chromium.

The page (``tests/js/front_end.html`` and ``front_end.mjs``) is a minimal chat: a prompt, the
user and assistant messages, the agent state as JSON, an Approve button for a pending interrupt
and an error line. ``tests/js/drive_front_end.mjs`` serves it from a loopback port of its own (so
every call to the replay is cross-origin, with a real CORS preflight) and drives it with
Playwright (npm ``playwright-core``) in the system Chromium (``executablePath``): it types, clicks
and reads what the page shows. The served recordings are the shipped recipe cassettes, a folder:
the typed "carbonara" streams a recipe into the state and stops on an approval interrupt, and
Approve resumes it.

The page script is bundled with npm ``esbuild`` rather than loaded through an import map:
``@ag-ui/client`` pulls in rxjs, zod, uuid, ``fast-json-patch`` (CommonJS) and the protobuf
packages, and an import map would have to name each of their entry files and could not load the
CommonJS one at all; a bundle is one file that runs as the npm package does in a front end's own
build. The npm packages are pinned in ``tests/js/package.json`` and installed on first use
(``tests/support/js_packages.py``). Without Node and npm, a registry, or Chromium, the tests skip
and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_replay.cassette import load_cassette
from agui_replay.client import Session
from tests.support.js_packages import JS_SOURCE, installed_js_packages
from tests.support.serve_cli import serving

# Marked as tests/conftest.py marks its browser modules: they need Chromium (and here Node too),
# so `pytest -m "not slow"` leaves them out.
pytestmark = [pytest.mark.browser, pytest.mark.node, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "cassettes" / "test_recipe_cassettes"
APPROVED = RECIPES / "test_confirming_then_approving_the_recipe.json"
BOARD = ROOT / "cassettes" / "test_task_board_cassettes" / "test_adding_two_tasks.json"


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled page in a folder of its own, and what drives it."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    packages = installed_js_packages("front_end.mjs", "drive_front_end.mjs")
    folder = tmp_path_factory.mktemp("front_end")
    shutil.copyfile(JS_SOURCE / "front_end.html", folder / "index.html")
    built = subprocess.run(
        [
            str(packages / "node_modules" / ".bin" / "esbuild"),
            "front_end.mjs",
            "--bundle",
            "--format=iife",
            "--platform=browser",
            "--log-level=warning",
            f"--outfile={folder / 'front_end.js'}",
        ],
        cwd=packages,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    return {"browser": browser, "packages": packages, "folder": folder}


def drive(page: dict[str, Any], url: str, scenario: str, prompt: str) -> list[dict[str, Any]]:
    """What the page shows after each step of the scenario."""
    done = subprocess.run(
        [
            "node",
            "drive_front_end.mjs",
            page["browser"],
            str(page["folder"]),
            url,
            scenario,
            prompt,
        ],
        cwd=page["packages"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    steps: list[dict[str, Any]] = shown["steps"]
    return steps


def test_the_page_shows_the_recorded_conversation(page: dict[str, Any]) -> None:
    cassette = load_cassette(APPROVED)
    final = Session(state=cassette.runs[1].input.get("state")).apply_all(cassette.runs[1].events)
    with serving(str(RECIPES), "--quiet") as server:
        asked, approved = drive(page, server.url, "conversation", "carbonara")
    # Run 1: the recipe streamed into the state, and the approval question.
    assert asked["status"] == "interrupted", asked
    assert asked["question"] == "Apply this recipe? Approve to keep it, reject to go back."
    assert asked["state"]["recipe"]["title"] == "Classic Pasta Carbonara"
    assert asked["messages"] == [["user", "carbonara"]]
    # Run 2, the resume: the assistant's text and the recorded final state.
    assert approved["status"] == "done", approved
    assert approved["error"] == ""
    assert approved["messages"] == [
        ["user", "carbonara"],
        ["assistant", "Here's a classic carbonara: guanciale, egg yolks and Pecorino, no cream."],
    ]
    assert approved["state"] == final.state


def test_a_cut_connection_shows_the_error(page: dict[str, Any]) -> None:
    with serving(str(RECIPES), "--cut-after", "4", "--quiet") as server:
        (asked,) = drive(page, server.url, "ask", "carbonara")
    assert asked["status"] == "failed", asked
    assert asked["error"] == "network error"  # Chromium's fetch, cut mid-stream


def test_a_run_error_and_an_unmatched_input_show_their_messages(page: dict[str, Any]) -> None:
    with serving(str(APPROVED), "--error-after", "4", "--quiet") as server:
        (asked,) = drive(page, server.url, "ask", "carbonara")
    assert asked["status"] == "failed", asked
    assert asked["error"].startswith("INJECTED_FAULT: agui-replay serve --error-after 4")

    with serving(str(BOARD), "--quiet") as server:
        (asked,) = drive(page, server.url, "ask", "carbonara")
    assert asked["status"] == "failed", asked
    assert asked["error"].startswith("HTTP 404: ")
    answer = json.loads(asked["error"].removeprefix("HTTP 404: "))
    assert answer["code"] == "NO_MATCHING_RUN"
    assert answer["closestRun"] == "run 0"
    assert answer["difference"].startswith("/messages/0/content: posted 'carbonara', recorded")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
