"""``agui-replay serve`` against the reference TypeScript client.

``@ag-ui/client``'s ``HttpAgent`` (from npm, run by Node) runs each recorded run against the
served cassette, and must end with the state and messages our client ``Session`` rebuilds from
the same recording. The npm packages are installed once into a cache folder outside the
repository (``$AGUI_REPLAY_JS_CACHE``, default ``~/.cache/agui-replay/js-<hash>``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_replay.cassette import Cassette, load_cassette
from tests.cli.test_cli import CLEAR_INTERRUPT, ROOT, record_board, replay_run
from tests.support.js_packages import installed_js_packages
from tests.support.serve_cli import serving


@pytest.fixture(scope="module")
def js_client() -> Path:
    folder = installed_js_packages("run_agent.mjs", "play_conversation.mjs")
    installed = json.loads(
        (folder / "node_modules" / "@ag-ui" / "client" / "package.json").read_text("utf-8")
    )
    assert installed["version"].startswith("1.0"), installed["version"]
    return folder


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Cassette]]:
    """The board cassette, served by the installed console script on a free loopback port."""
    path = tmp_path_factory.mktemp("served") / "board.json"
    cassette = record_board(path)
    with serving(str(path)) as server:
        yield server.url, cassette
    assert server.returncode == 0, server.err


def node(
    folder: Path, script: str, url: str, given: Any, tmp: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``node SCRIPT URL FILE`` in the client folder, FILE holding ``given`` as JSON."""
    request = tmp / "input.json"
    request.write_text(json.dumps(given), encoding="utf-8")
    return subprocess.run(
        ["node", script, url, str(request)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )


def run_reference_client(folder: Path, url: str, body: dict[str, Any], tmp: Path) -> Any:
    done = node(folder, "run_agent.mjs", url, body, tmp)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_reference_client_ends_with_the_recorded_state_and_messages(
    js_client: Path, served: tuple[str, Cassette], tmp_path: Path
) -> None:
    url, cassette = served
    # Without --run the n-th request gets the n-th run: the conversation plays in order.
    for n, run in enumerate(cassette.runs):
        seen = run_reference_client(js_client, url, run.input, tmp_path)
        expected = replay_run(cassette, n)
        assert seen["errors"] == []
        assert seen["state"] == expected.state, f"run {n}"
        assert seen["messages"] == expected.messages, f"run {n}"
        assert seen["pendingInterrupts"] == expected.pending_interrupts, f"run {n}"
    # The last run stopped on the clear confirmation; the client is holding it.
    assert [i["id"] for i in seen["pendingInterrupts"]] == [CLEAR_INTERRUPT]
    # And the board the client shows is the recorded one: alpha done, beta open.
    assert [(t["title"], t["done"]) for t in seen["state"]["tasks"]] == [
        ("alpha", True),
        ("beta", False),
    ]


BOARD_CASSETTES = ROOT / "cassettes" / "test_task_board_cassettes"
HITL = BOARD_CASSETTES / "test_clearing_is_declined_then_approved.json"


def test_a_front_end_with_ids_of_its_own_gets_each_recorded_run(
    js_client: Path, tmp_path: Path
) -> None:
    """Five runs, two of them resumes: one HttpAgent, its own thread, run and message ids, and
    the interrupt ids the stream gave it. Each run is answered by the one it matches."""
    cassette = load_cassette(HITL)
    inputs = [run.input for run in cassette.runs]
    with serving(str(HITL), "--quiet") as server:
        done = node(js_client, "play_conversation.mjs", server.url, inputs, tmp_path, 120)
    assert done.returncode == 0, done.stderr
    seen = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(seen) == len(cassette.runs)
    for n, ended in enumerate(seen):
        expected = replay_run(cassette, n)
        assert ended["errors"] == [], f"run {n}"
        assert ended["state"] == expected.state, f"run {n}"
        said = [(m["role"], m.get("content")) for m in ended["messages"]]
        assert said == [(m["role"], m.get("content")) for m in expected.messages], f"run {n}"
    # Declined, asked again, approved: the board is empty at the end.
    assert seen[-1]["state"]["tasks"] == []


def test_a_cut_connection_fails_the_reference_client(js_client: Path, tmp_path: Path) -> None:
    cassette = load_cassette(HITL)
    with serving(str(HITL), "--cut-after", "3", "--quiet") as server:
        done = node(js_client, "run_agent.mjs", server.url, cassette.runs[0].input, tmp_path)
    # Not a quiet end of the stream: the client's fetch fails and runAgent rejects.
    assert done.returncode != 0
    assert "TypeError: terminated" in done.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
