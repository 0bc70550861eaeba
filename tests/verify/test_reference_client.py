"""Differential test: our client mode against the reference client itself, under Node.

tests/js/reference_verdicts.mjs runs each stream through @ag-ui/client 1.0's own stages (the
inbound compatibility boundary, enforceEvents, transformChunks, verifyEvents,
defaultApplyEvents) and reports: accepted or not, the index of the refused event, the state,
the messages and the pending interrupts. Streams: valid ones with subagents from
``event_streams(subagents=...)`` and every corruption kind of tests/support/corruptions.py. Ours
must agree on every one: the verdict, the event, and (accepted streams) the state, messages and
pending interrupts of a ``Session``.

Runs where Node and the reference client are installed (the folder tests/cli/test_cli_serve_ts.py
installs into, ``$AGUI_REPLAY_JS_CACHE`` or ``~/.cache/agui-replay/js-<hash>``); skips with the
reason otherwise. It never installs anything itself: the default suite needs no network.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agui_replay.client import Session
from agui_replay.errors import ProtocolViolation
from agui_replay.strategies import event_streams
from agui_replay.strategies._appliers import js_number_view
from agui_replay.strategies._event_streams import STREAM_ITEM_KINDS
from tests.support.corruptions import REFERENCE_RULES, corruptions
from tests.support.js_packages import installed_js_packages

KINDS = [*STREAM_ITEM_KINDS, "text", "text", "tool", "tool"]
STREAMS = event_streams(subagents=3, min_items=1, max_items=4, max_runs=2, kinds=KINDS)


@pytest.fixture(scope="module")
def reference() -> Path:
    return installed_js_packages("reference_verdicts.mjs")


def _verdicts(folder: Path, streams: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["node", "reference_verdicts.mjs"],
        cwd=folder,
        input=json.dumps(streams),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    verdicts: list[dict[str, Any]] = json.loads(done.stdout)
    return verdicts


def _collect(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn


def _ours(stream: list[dict[str, Any]]) -> dict[str, Any]:
    session = Session()
    try:
        session.apply_all(stream)
    except ProtocolViolation as error:
        return {"ok": False, "index": error.index, "error": str(error)}
    return {
        "ok": True,
        "index": None,
        "state": session.state,
        "messages": session.messages,
        "pendingInterrupts": session.pending_interrupts,
    }


def _compare(streams: list[list[dict[str, Any]]], folder: Path) -> None:
    theirs = _verdicts(folder, streams)
    disagreements = []
    for stream, ref in zip(streams, theirs, strict=True):
        ours = _ours(stream)
        same = ours["ok"] == ref["ok"] and ours["index"] == ref["index"]
        if same and ours["ok"]:
            # JavaScript has one number type: compare numbers as the reference holds them.
            keys = ("state", "messages", "pendingInterrupts")
            same = js_number_view([ours[k] for k in keys]) == js_number_view([ref[k] for k in keys])
        if not same:
            disagreements.append((stream, ours, ref))
    if disagreements:
        stream, ours, ref = disagreements[0]
        pytest.fail(
            f"{len(disagreements)} of {len(streams)} streams differ from @ag-ui/client; first:\n"
            f"stream: {json.dumps(stream)}\nours: {json.dumps(ours)[:2000]}\n"
            f"reference: {json.dumps(ref)[:2000]}"
        )


def test_valid_streams_with_subagents_agree(reference: Path) -> None:
    _compare(_collect(STREAMS, 150), reference)


@pytest.mark.parametrize("kind", sorted(REFERENCE_RULES))
def test_corruptions_agree(reference: Path, kind: str) -> None:
    cases = _collect(corruptions(STREAMS, kind), 20)
    _compare([stream for stream, _, _ in cases], reference)
