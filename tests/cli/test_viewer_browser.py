"""The ``agui-replay view`` page in a real headless Chromium: it renders, and ``#event=N`` shows
the state as it stood after event N (not a later one)."""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agui_replay.cli import main
from tests.cli.test_cli import record_board

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    folder = tmp_path_factory.mktemp("viewer")
    cassette = record_board(folder / "board.json")
    target = folder / "board.html"
    assert main(["view", str(folder / "board.json"), "-o", str(target)]) == 0
    return {"browser": browser, "folder": folder, "html": target, "events": cassette.events}


def run_chromium(page: dict[str, Any], *flags: str, url: str) -> subprocess.CompletedProcess[str]:
    profile = page["folder"] / f"profile-{len(list(page['folder'].glob('profile-*')))}"
    return subprocess.run(
        [page["browser"], *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, url],
        capture_output=True,
        text=True,
        timeout=60,
    )


def state_pane(dom: str) -> tuple[str, str]:
    """The text of the state pane in a dumped DOM, and the event it says it shows."""
    found = re.search(r'<pre id="state-view"([^>]*)>(.*?)</pre>', dom, re.S)
    assert found is not None, dom[:2000]
    attrs, inner = found.groups()
    event = re.search(r'data-event="(\d+)"', attrs)
    return html.unescape(re.sub(r"<[^>]+>", "", inner)), event.group(1) if event else ""


def test_the_page_shows_the_state_after_the_event_in_the_url(page: dict[str, Any]) -> None:
    events = page["events"]
    snapshots = [i for i, e in enumerate(events) if e["type"] == "STATE_SNAPSHOT"]
    first, second = snapshots[0], snapshots[1]
    # What the recording says the client held after each of the first two publishes.
    assert [t["title"] for t in events[first]["snapshot"]["tasks"]] == ["alpha"]
    assert [t["title"] for t in events[second]["snapshot"]["tasks"]] == ["alpha", "beta"]
    url = page["html"].resolve().as_uri()

    done = run_chromium(
        page, "--virtual-time-budget=2000", "--dump-dom", url=f"{url}#event={first}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text, shown = state_pane(done.stdout)
    assert shown == str(first)
    assert '"alpha"' in text
    assert '"beta"' not in text  # added by a later event

    done = run_chromium(
        page, "--virtual-time-budget=2000", "--dump-dom", url=f"{url}#event={second}"
    )
    text, shown = state_pane(done.stdout)
    assert shown == str(second)
    assert '"alpha"' in text
    assert '"beta"' in text
    # The task this event added is highlighted as changed.
    pane = re.search(r'<pre id="state-view".*?</pre>', done.stdout, re.S)
    assert pane is not None
    changed = re.findall(r'data-path="([^"]*)" class="chg"', pane.group(0))
    assert sorted(changed) == ["/next_id", "/tasks/1"]


def test_a_screenshot_of_the_page(page: dict[str, Any]) -> None:
    shot = page["folder"] / "view.png"
    url = page["html"].resolve().as_uri() + "#event=14"
    done = run_chromium(
        page,
        f"--screenshot={shot}",
        "--window-size=1400,900",
        "--hide-scrollbars",
        "--virtual-time-budget=2000",
        url=url,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 900)
    # A blank page compresses to a few KB; three filled panes of text do not.
    assert len(data) > 40_000
