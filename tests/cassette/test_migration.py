"""Older cassette formats are migrated as they are loaded: the rest of the package sees only the
current format, saving writes it, and a cassette that is only replayed stays on disk as it was."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agui_replay.cassette import Cassette, dumps_cassette, loads_cassette
from agui_replay.cassette._format import FORMAT_VERSION
from agui_replay.recording import CassetteSession

ASKED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}
ASKED_END = {
    "type": "RUN_FINISHED",
    "threadId": "t",
    "runId": "r1",
    "outcome": {"type": "interrupt", "interrupts": [{"id": "r1-interrupt-1", "reason": "ok?"}]},
}
RESUMED = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2"},
]
RAW_ID = "3f1c9a7e-5b2d-4c8e-9f0a-1b2c3d4e5f60"


def _format_1() -> dict[str, Any]:
    """Two runs as format 1 stored them: raw inputs (the resume names the interrupt by the
    raw id the agent gave it, a message keeps its random id), normalized events, and
    interactions that name no provider."""
    interaction = {
        "request": {"method": "POST", "path": "/v1/chat/completions", "body": {"model": "m"}},
        "response": {"status": 200, "chunks": [{"offset": 0, "data": "data: [DONE]\n\n"}]},
    }
    first = {"threadId": "t", "runId": "r1", "messages": [{"id": "u1", "role": "user"}]}
    second = {
        "threadId": "t",
        "runId": "r2",
        "messages": [{"id": "u1", "role": "user"}, {"id": RAW_ID, "role": "assistant"}],
        "resume": [{"interruptId": "ask-approval", "status": "resolved"}],
    }
    return {
        "version": 1,
        "runs": [
            {"input": first, "interactions": [interaction], "events": [ASKED, ASKED_END]},
            {
                "input": second,
                "interactions": [{"provider": "openai", **interaction}],
                "events": RESUMED,
            },
        ],
    }


def test_a_format_1_cassette_loads_as_the_current_format() -> None:
    loaded = loads_cassette(json.dumps(_format_1()), validate="shape")
    assert loaded.version == FORMAT_VERSION
    first, second = loaded.runs
    # an interaction that named no provider answers any: a "default" one does the same
    assert first.interactions[0]["provider"] == "default"
    assert second.interactions[0]["provider"] == "openai"  # a tag is kept
    # the resume answers the interrupt the run before left open, by the events' name for it
    assert second.input["resume"] == [{"interruptId": "r1-interrupt-1", "status": "resolved"}]
    # inputs are normalized as the current format stores them: a random id is a placeholder,
    # an id the test wrote stays
    assert [m["id"] for m in second.input["messages"]] == ["u1", "<id-1>"]
    assert '"version": 3,' in dumps_cassette(loaded)


def test_the_migration_leaves_the_document_it_read_alone() -> None:
    doc = _format_1()
    before = copy.deepcopy(doc)
    Cassette.from_dict(doc, validate="shape")
    assert doc == before


def test_a_current_cassette_loads_unchanged() -> None:
    doc = _format_1()
    doc["version"] = FORMAT_VERSION
    loaded = loads_cassette(json.dumps(doc), validate="shape")
    assert [run.input for run in loaded.runs] == [run["input"] for run in doc["runs"]]
    assert "provider" not in loaded.runs[0].interactions[0]


def _approval_agent(ctx: Any) -> Any:
    if not ctx.input.resume:
        ctx.say("may I?")
        return ctx.interrupt({"id": "ask-approval", "reason": "confirm", "message": "ok?"})
    ctx.say(f"resumed with {ctx.input.resume[0].status}")
    return None


def _resume(interrupt_id: str) -> dict[str, Any]:
    return {
        "threadId": "thread",
        "runId": "run-2",
        "resume": [{"interruptId": interrupt_id, "status": "resolved"}],
    }


def _as_format_1(path: Path) -> bytes:
    """The cassette at ``path`` as format 1 stored it: the resume names the raw interrupt id."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["version"] = 1
    doc["runs"][1]["input"]["resume"][0]["interruptId"] = "ask-approval"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path.read_bytes()


def test_a_format_1_cassette_replays_and_stays_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    with CassetteSession(path, mode="once") as agui:
        agui.run(_approval_agent, "do it")
        agui.run(_approval_agent, _resume("ask-approval"))
    before = _as_format_1(path)
    with CassetteSession(path, mode="none") as agui:
        agui.run(_approval_agent, "do it")
        agui.run(_approval_agent, _resume("ask-approval"))
        agui.check_complete()
    assert [r.action for r in agui.runs] == ["replayed", "replayed"]
    assert path.read_bytes() == before  # only replayed: not rewritten


def test_a_format_1_cassette_saved_again_is_of_the_current_format(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    with CassetteSession(path, mode="once") as agui:
        agui.run(_approval_agent, "do it")
        agui.run(_approval_agent, _resume("ask-approval"))
    _as_format_1(path)
    with CassetteSession(path, mode="new") as agui:  # replays both, records a third run
        agui.run(_approval_agent, "do it")
        agui.run(_approval_agent, _resume("ask-approval"))
        agui.run(_approval_agent, "again")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == FORMAT_VERSION
    asked = doc["runs"][0]["events"][-1]["outcome"]["interrupts"][0]["id"]
    assert doc["runs"][1]["input"]["resume"][0]["interruptId"] == asked != "ask-approval"
