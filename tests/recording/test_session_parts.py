"""The parts a ``CassetteSession`` composes, each on its own: what a replayed run is judged on,
the inputs a refresh stores, and when a pending change is kept or dropped."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.recording import CassetteSession, RunRecord
from agui_replay.recording._comparison import check_replayed, matches_recording
from agui_replay.recording._pending_change import PendingChange
from agui_replay.recording._refresh import stored_inputs
from agui_replay.recording._runs import PendingRun, canonical, run_input_of

STARTED = {"type": "RUN_STARTED", "threadId": "thread", "runId": "run-1"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "thread", "runId": "run-1"}


def _fake(**fields: Any) -> Any:
    """A stand-in for the fake that served a replay: what the judgement reads of it."""
    return SimpleNamespace(
        **{"errors": [], "unserved": [], "requests": [1], "turns": [1], **fields}
    )


def _replayed(recorded: list[dict[str, Any]], now: list[dict[str, Any]]) -> tuple[Any, RunRecord]:
    model, wire = run_input_of("hi", 0)
    pending = PendingRun(0, True, model, wire, recorded=CassetteRun(wire, recorded))
    pending.expected = canonical(recorded)
    record = RunRecord(0, "replayed", wire, now, now)
    return pending, record


def test_a_run_whose_events_alone_changed_is_told_to_refresh() -> None:
    said = {"type": "CUSTOM", "name": "note", "value": 1}
    pending, record = _replayed([STARTED, FINISHED], [STARTED, said, FINISHED])
    same = matches_recording(pending, record, [])
    assert not same
    found = check_replayed(
        "c.json",
        pending,
        record,
        _fake(),
        same,
        record_command="pytest --agui-record",
        kept_in="c.json.pending",
    )
    assert found is not None
    assert found.events_only
    message = str(found.error)
    assert "pytest --agui-refresh" in message
    assert "c.json.pending" in message


def test_a_run_whose_requests_changed_is_told_to_re_record() -> None:
    pending, record = _replayed([STARTED, FINISHED], [STARTED, FINISHED])
    found = check_replayed(
        "c.json",
        pending,
        record,
        _fake(errors=["request #0: body differs"]),
        True,
        record_command="pytest --agui-record",
        kept_in=None,
    )
    assert found is not None
    assert not found.events_only
    assert "re-record with `pytest --agui-record`" in str(found.error)


def test_a_run_that_replays_as_recorded_has_no_mismatch() -> None:
    pending, record = _replayed([STARTED, FINISHED], [STARTED, FINISHED])
    assert matches_recording(pending, record, [])
    assert (
        check_replayed("c.json", pending, record, _fake(), True, record_command="x", kept_in=None)
        is None
    )


def test_a_refresh_stores_the_recorded_inputs_but_those_read_with_new_names() -> None:
    recorded = [CassetteRun({"runId": "a"}), CassetteRun({"runId": "b"})]
    runs = [
        RunRecord(n, "replayed", {"runId": "raw"}, [], [], normalized_input={"runId": f"new-{n}"})
        for n in range(2)
    ]
    assert stored_inputs(recorded, runs, {1}) == [{"runId": "a"}, {"runId": "new-1"}]
    assert stored_inputs(recorded, runs[:1], {1}) == [{"runId": "a"}, {"runId": "b"}]


def test_a_change_kept_before_is_dropped_once_every_run_replays_as_recorded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.json"
    cassette = Cassette(runs=[CassetteRun({"runId": "a"}, [STARTED, FINISHED])])
    save_cassette(cassette, path)
    kept = tmp_path / "c.json.pending"
    kept.write_text("{}", encoding="utf-8")
    runs = [RunRecord(0, "replayed", {}, [], [STARTED, FINISHED])]
    change = PendingChange(path, keep=True)
    assert change.settle(None, cassette, runs, renamed=set(), secrets=[], blocked=False) is None
    assert not kept.exists()


def test_a_change_of_the_events_is_kept_beside_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    cassette = Cassette(runs=[CassetteRun({"runId": "a"}, [STARTED, FINISHED])])
    save_cassette(cassette, path)
    said = {"type": "CUSTOM", "name": "note", "value": 1}
    runs = [RunRecord(0, "replayed", {}, [], [STARTED, said, FINISHED])]
    change = PendingChange(path, keep=True)
    change.events_changed = True
    kept = change.settle(None, cassette, runs, renamed=set(), secrets=[], blocked=False)
    assert kept == tmp_path / "c.json.pending"
    doc = json.loads(kept.read_text(encoding="utf-8"))
    assert doc["runs"] == [0]
    assert '"name": "note"' in doc["cassette_text"]
    # a connection the guard refused keeps nothing
    kept.unlink()
    assert change.settle(None, cassette, runs, renamed=set(), secrets=[], blocked=True) is None
    assert not kept.exists()


def _say(ctx: Any) -> None:
    ctx.say("hello")


def test_a_session_records_then_replays_through_its_parts(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with CassetteSession(path, mode="once") as agui:
        agui.run(_say, "hi")
    assert agui.outcome == "recorded"
    written = path.read_bytes()
    with CassetteSession(path, mode="none") as agui:
        agui.run(_say, "hi")
        agui.check_complete()
    assert agui.outcome == "replayed"
    assert [r.normalized for r in agui.runs] == [json.loads(written)["runs"][0]["events"]]
    assert path.read_bytes() == written


def test_a_replay_leaves_the_frameworks_own_payloads_out_unless_asked() -> None:
    from agui_replay.recording._comparison import compared

    said = {"type": "TEXT_MESSAGE_END", "messageId": "m", "rawEvent": {"prompt": "old"}}
    raw = {"type": "RAW", "source": "langgraph", "event": {"input": "old"}}
    now = [dict(said, rawEvent={"prompt": "new"}), dict(raw, event={"input": "new"})]
    assert compared([said, raw]) == compared(now)
    assert compared([said, raw]) == [
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RAW", "source": "langgraph"},
    ]
    assert compared([said, raw], raw=True) != compared(now, raw=True)
    # the payload is left out, the event is not: one RAW event more is a difference
    assert compared([said, raw]) != compared([said, raw, raw])
    # a replay that matched so hands the recorded events on (what a snapshot then stores)
    recorded = [STARTED, said, raw, FINISHED]
    pending, record = _replayed(recorded, [STARTED, *now, FINISHED])
    pending.expected = canonical(compared(recorded))  # as the replay part notes it
    assert matches_recording(pending, record, [])
    assert record.normalized == recorded
    pending, record = _replayed(recorded, [STARTED, *now, FINISHED])
    assert not matches_recording(pending, record, [], raw=True)
