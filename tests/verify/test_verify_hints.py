"""ProtocolViolation.hint: every rule the verifier raises says how to fix it."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import agui_replay.errors as errors
import agui_replay.verify._attribution as attribution_module
import agui_replay.verify._chunks as chunks_module
import agui_replay.verify._schema as schema_module
import agui_replay.verify._verifier as verify_module
from agui_replay.errors import ProtocolViolation
from agui_replay.verify import Verifier
from tests.support.verify_events import (
    STATE,
    chunk,
    feed_all,
    reasoning,
    run_error,
    run_finished,
    run_started,
    step,
    subagent,
    text,
    tool,
    violation,
)

# -- hints: how to fix each violation ---------------------------------------------------------

# (rule, stream whose last event breaks it - or, with None last, whose finish() does -, mode,
# what the hint must name: the event to emit/drop or the id involved)
HINT_CASES: list[tuple[str, list[Any], str, list[str]]] = [
    ("not-started", [text("START", "m")], "client", ["RUN_STARTED", "TEXT_MESSAGE_START"]),
    ("duplicate-run-started", [run_started(), run_started("r2")], "client", ["RUN_FINISHED"]),
    (
        "run-ended",
        [run_started(), run_finished(), step("STARTED", "s")],
        "client",
        ["STEP_STARTED", "RUN_STARTED"],
    ),
    ("run-ended", [run_started(), run_error(), STATE], "client", ["STATE_DELTA", "RUN_STARTED"]),
    (
        "open-at-finish",
        [run_started(), subagent("STARTED", "s9"), run_finished()],
        "client",
        ['SUBAGENT_FINISHED "s9"'],
    ),
    (
        "duplicate-start",
        [run_started(), reasoning("START", "b1"), reasoning("START", "b1")],
        "client",
        ['REASONING_END for "b1"'],
    ),
    (
        "not-open",
        [run_started(), reasoning("MESSAGE_CONTENT", "rm")],
        "client",
        ['REASONING_MESSAGE_START for "rm"'],
    ),
    ("not-open", [run_started(), step("FINISHED", "plan")], "client", ['STEP_STARTED for "plan"']),
    (
        "not-open",
        [run_started(), tool("START", "c"), tool("END", "c"), tool("END", "c")],
        "client",
        ["TOOL_CALL_END", '"c"', "#2"],
    ),
    (
        "not-open",
        [run_started(), text("START", "m"), text("END", "m"), text("CONTENT", "m")],
        "client",
        ['"m"', "#2", "TEXT_MESSAGE_START"],
    ),
    ("unknown-id", [run_started(), tool("RESULT", "c9")], "strict", ["TOOL_CALL_START", '"c9"']),
    (
        "out-of-order",
        [run_started(), tool("START", "c1"), tool("RESULT", "c1")],
        "strict",
        ['TOOL_CALL_END for "c1"'],
    ),
    ("incomplete", [None], "strict", ["RUN_STARTED"]),
    (
        "incomplete",
        [run_started(), text("START", "m7"), None],
        "strict",
        ['TEXT_MESSAGE_END "m7"', "RUN_FINISHED"],
    ),
    (
        "chunk-without-id",
        [run_started(), chunk("REASONING_MESSAGE")],
        "client",
        ["messageId", "REASONING_MESSAGE_CHUNK"],
    ),
    (
        "chunk-without-name",
        [run_started(), chunk("TOOL_CALL", "c3")],
        "client",
        ["toolCallName", '"c3"'],
    ),
    (
        "chunk-after-start",
        [run_started(), reasoning("MESSAGE_START", "rm"), chunk("REASONING_MESSAGE", "rm")],
        "client",
        ["REASONING_MESSAGE_CHUNK", '"rm"'],
    ),
    (
        "chunk-mismatch",
        [run_started(), chunk("TEXT_MESSAGE", "m"), chunk("TEXT_MESSAGE", None, role="user")],
        "client",
        ["role", "TEXT_MESSAGE_CHUNK", "messageId"],
    ),
    (
        "chunk-ambiguous",
        [
            run_started(),
            chunk("TOOL_CALL", "c1", toolCallName="f", subagentRunId="s1"),
            chunk("TOOL_CALL", "c2", toolCallName="f", subagentRunId="s2"),
            chunk("TOOL_CALL", None),
        ],
        "client",
        ["subagentRunId", "TOOL_CALL_CHUNK"],
    ),
    (
        "subagent-mismatch",
        [run_started(), text("START", "m"), {**text("END", "m"), "subagentRunId": "s9"}],
        "client",
        ["TEXT_MESSAGE_END", "subagentRunId"],
    ),
    (
        "subagent-reused",
        [
            run_started(),
            subagent("STARTED", "x"),
            subagent("FINISHED", "x"),
            subagent("STARTED", "x"),
        ],
        "client",
        ["subagentRunId"],
    ),
    (
        "unknown-subagent",
        [run_started(), {**subagent("STARTED", "x"), "parentSubagentRunId": "p"}],
        "client",
        ["SUBAGENT_STARTED", "'p'"],
    ),
    (
        "schema",
        [run_started(), {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": 7}],
        "client",
        ["toolCallName", "TOOL_CALL_START"],
    ),
]


def _violation_of(events: list[Any], mode: str) -> ProtocolViolation:
    if events[-1] is not None:
        return violation(events, mode)
    verifier = Verifier(mode)  # type: ignore[arg-type]
    feed_all(verifier, events[:-1])
    with pytest.raises(ProtocolViolation) as info:
        verifier.finish()
    return info.value


@pytest.mark.parametrize(
    ("rule", "events", "mode", "names"),
    HINT_CASES,
    ids=[f"{case[0]}-{i}" for i, case in enumerate(HINT_CASES)],
)
def test_every_violation_says_how_to_fix_it(
    rule: str, events: list[Any], mode: str, names: list[str]
) -> None:
    error = _violation_of(events, mode)
    assert error.rule == rule
    assert error.hint.strip()
    assert "\n" not in error.hint
    for name in names:
        assert name in error.hint, (name, error.hint)
    # The hint is kept out of the pinned message.
    assert error.hint not in str(error)


def test_the_hint_cases_cover_every_rule_the_verifier_raises() -> None:
    sources = [
        inspect.getsource(module)
        for module in (verify_module, chunks_module, attribution_module, schema_module, errors)
    ]
    raised = set(re.findall(r'rule="([a-z-]+)"', "".join(sources)))
    assert len(raised) >= 18
    assert raised == {case[0] for case in HINT_CASES}


def test_exact_hints_for_the_common_mistakes() -> None:
    # Arguments for a call that was never opened.
    error = violation([run_started(), tool("ARGS", "r-call-2")], "client")
    assert (
        str(error)
        == 'TOOL_CALL_ARGS #1 breaks rule not-open: tool call "r-call-2" was never opened'
    )
    assert error.hint == (
        'emit TOOL_CALL_START for "r-call-2" before its arguments, or use the id of a call '
        "that is open"
    )
    # RUN_FINISHED with a step and a call inside it open: close the inner one first.
    error = violation(
        [run_started(), step("STARTED", "plan"), tool("START", "c1"), run_finished()], "client"
    )
    assert error.hint == (
        'emit TOOL_CALL_END "c1", STEP_FINISHED "plan" before RUN_FINISHED, or end the run '
        "with RUN_ERROR instead"
    )
    # ag-ui issue 161: a chunk on a message opened with an explicit START.
    error = violation([run_started(), text("START", "m1"), chunk("TEXT_MESSAGE", "m1")], "client")
    assert error.hint == (
        "use either TEXT_MESSAGE_START/CONTENT/END or TEXT_MESSAGE_CHUNK events for text message "
        '"m1", not both (ag-ui issue 161)'
    )
    error = violation([run_started(), tool("START", "c1"), tool("RESULT", "c1")], "strict")
    assert error.hint == 'emit TOOL_CALL_END for "c1" before its TOOL_CALL_RESULT'


def test_a_long_open_at_finish_hint_is_cut_short() -> None:
    opened = [tool("START", f"c{i}") for i in range(7)]
    error = violation([run_started(), *opened, run_finished()], "client")
    assert error.ids == tuple(f"c{i}" for i in range(7))
    assert error.hint.startswith('emit TOOL_CALL_END "c6", TOOL_CALL_END "c5"')
    assert "and 3 more END event(s)" in error.hint
    assert '"c2"' not in error.hint


def test_an_end_after_chunks_is_told_the_chunks_end_themselves() -> None:
    error = violation([run_started(), chunk("TEXT_MESSAGE", "m"), text("END", "m")], "client")
    assert error.hint.startswith("drop this TEXT_MESSAGE_END")
    assert "chunks" in error.hint
