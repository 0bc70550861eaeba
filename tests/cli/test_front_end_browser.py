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
from tests.support.langgraph_turns import ANSWERS, ASKED, capture_live, record_with_pytest
from tests.support.serve_cli import serving

# Marked as tests/conftest.py marks its browser modules: they need Chromium (and here Node too),
# so `pytest -m "not slow"` leaves them out.
pytestmark = [pytest.mark.browser, pytest.mark.node, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "cassettes" / "test_recipe_cassettes"
APPROVED = RECIPES / "test_confirming_then_approving_the_recipe.json"
BOARD = ROOT / "cassettes" / "test_task_board_cassettes" / "test_adding_two_tasks.json"
# Two turns of the LangGraph example (ag-ui-langgraph): a tool call, an answer, and a
# MESSAGES_SNAPSHOT ending each run.
CONVERTER = (
    ROOT / "cassettes" / "test_langgraph_agent" / "test_a_second_conversion_on_the_same_thread.json"
)


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


def drive(
    page: dict[str, Any], url: str, scenario: str, prompt: str, fault: str = ""
) -> list[dict[str, Any]]:
    """What the page shows after each step of the scenario (each run with ``fault``)."""
    done = subprocess.run(
        [
            "node",
            "drive_front_end.mjs",
            page["browser"],
            str(page["folder"]),
            url,
            scenario,
            prompt,
            fault,
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


def test_a_conversation_keeps_the_pages_messages_turn_after_turn(page: dict[str, Any]) -> None:
    """Each run ends on a MESSAGES_SNAPSHOT naming the page's own messages by the ids the
    page gave them: the history is the recorded one, in order, after every turn."""
    asked = [run.input["messages"][-1]["content"] for run in load_cassette(CONVERTER).runs]
    with serving(str(CONVERTER)) as server:
        first, second = drive(page, server.url, "turns", "|".join(asked))
    assert server.returncode == 0, server.err
    assert [first["status"], second["status"]] == ["done", "done"], (first, second)
    assert first["messages"] == [["user", asked[0]], ["assistant", "That makes 356.00 F."]]
    assert second["messages"] == [
        *first["messages"],
        ["user", asked[1]],
        ["assistant", "That makes 5.51 lb."],
    ]
    assert "404" not in server.err


@pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated")
def test_three_langgraph_turns_from_pytest_and_from_capture(
    page: dict[str, Any], tmp_path: Path
) -> None:
    """The three-turn LangGraph conversation (a tool call each turn, a MESSAGES_SNAPSHOT ending
    each run), recorded by pytest and captured from HttpAgent, plays whole in the page."""
    recorded = record_with_pytest(tmp_path)
    captured, _ = capture_live(installed_js_packages("converse.mjs"), tmp_path)
    shown = [["user", ASKED[0]], ["assistant", ANSWERS[0]]]
    expected = [
        shown,
        [*shown, ["user", ASKED[1]], ["assistant", ANSWERS[1]]],
        [*shown, ["user", ASKED[1]], ["assistant", ANSWERS[1]], ["user", ASKED[2]],
         ["assistant", ANSWERS[2]]],
    ]  # fmt: skip
    for path in (recorded, captured):
        with serving(str(path)) as server:
            steps = drive(page, server.url, "turns", "|".join(ASKED))
        assert [step["status"] for step in steps] == ["done"] * 3, (path, steps)
        assert [step["messages"] for step in steps] == expected, path
        assert "404" not in server.err


def test_a_cut_always_leaves_the_events_before_it(page: dict[str, Any]) -> None:
    """20 times over: the page shows the words sent before the cut, then the error."""
    run = load_cassette(CONVERTER).runs[0]
    types = [e["type"] for e in run.events]
    first = types.index("TEXT_MESSAGE_CONTENT")
    said = run.input["messages"][-1]["content"]
    with serving(str(CONVERTER), "--quiet") as server:
        steps = drive(page, server.url, "again:20", said, f"cut-after={first + 1}")
    assert len(steps) == 20
    for n, shown in enumerate(steps):
        assert shown["status"] == "failed", (n, shown)
        assert shown["error"] == "network error", (n, shown)
        assert shown["messages"] == [["user", said], ["assistant", run.events[first]["delta"]]], n


def test_each_protocol_fault_shows_what_the_page_got(page: dict[str, Any]) -> None:
    run = load_cassette(CONVERTER).runs[0]
    types = [e["type"] for e in run.events]
    start, first = types.index("TEXT_MESSAGE_START"), types.index("TEXT_MESSAGE_CONTENT")
    said = run.input["messages"][-1]["content"]
    answer = "That makes 356.00 F."
    shown: dict[str, dict[str, Any]] = {}
    with serving(str(CONVERTER), "--quiet") as server:
        for fault in (
            f"error-after={first + 1}",
            "delay=0.5",
            f"drop={start}",
            f"duplicate={first}",
            f"garble={first}",
        ):
            (shown[fault],) = drive(page, server.url, "ask", said, fault)
    error = shown[f"error-after={first + 1}"]
    assert error["error"].startswith("INJECTED_FAULT: agui-replay serve error-after=")
    assert error["messages"] == [["user", said], ["assistant", "That"]]
    assert shown["delay=0.5"]["messages"] == [["user", said], ["assistant", answer]]
    dropped = shown[f"drop={start}"]
    assert "No active text message found" in dropped["error"], dropped
    assert dropped["messages"] == [["user", said]]
    assert shown[f"duplicate={first}"]["messages"] == [["user", said], ["assistant", answer]]
    garbled = shown[f"garble={first}"]
    assert garbled["status"] == "failed"
    assert "JSON" in garbled["error"], garbled
    assert garbled["messages"] == [["user", said]]


HOWTO = ROOT / "docs" / "howto" / "test-your-front-end.md"
SPEC_CONFIG = """
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: ".",
  workers: 1,
  reporter: "line",
  timeout: 120000,
  use: {
    baseURL: process.env.PAGE_URL,
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic"],
    },
  },
});
"""


def test_the_howtos_playwright_specs_pass_against_the_test_page(
    page: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The how-to's Playwright Test specs, as they are printed, run in Chromium against the
    test page (it has the prompt, Send, Approve and the alert they use, and passes ``?fault=``
    on to HttpAgent's headers) and the how-to's own cassettes, made by its Python blocks."""
    from tests.package.test_docs import extract_blocks

    blocks = extract_blocks(HOWTO)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "howto"}
    for block in blocks:
        if block.lang == "python" and block.file is None:
            exec(compile(block.text, str(HOWTO), "exec"), namespace)
    specs = [b.text for b in blocks if b.lang == "ts" and 'test("' in b.text]
    assert len(specs) == 2, "the how-to's specs: a deploy and its cut, the fault loop"
    folder = page["packages"] / "howto_specs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "playwright.config.mjs").write_text(SPEC_CONFIG, encoding="utf-8")
    pages = _serve_folder(page["folder"])
    try:
        with serving(str(tmp_path / "cassettes"), "--quiet") as server:
            for n, spec in enumerate(specs):
                served = spec.replace("http://127.0.0.1:8765/", server.url)
                (folder / f"howto_{n}.spec.ts").write_text(served, encoding="utf-8")
            done = subprocess.run(
                [
                    "node",
                    "node_modules/@playwright/test/cli.js",
                    "test",
                    "--config",
                    str(folder / "playwright.config.mjs"),
                ],
                cwd=page["packages"],
                capture_output=True,
                text=True,
                timeout=600,
                env={
                    **os.environ,
                    "PAGE_URL": f"http://127.0.0.1:{pages.server_address[1]}/",
                    "CHROMIUM": page["browser"],
                    "SUPPRESS_TRANSFORMATION_WARNINGS": "true",
                },
            )
    finally:
        pages.shutdown()
        pages.server_close()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout, done.stdout[-2000:]


def _serve_folder(folder: Path) -> Any:
    """A static server for the page's folder on a free loopback port (``/`` is index.html)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
