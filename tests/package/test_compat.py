"""The package on every supported ag-ui-protocol release (0.1.19+ and 1.x).

This module runs in the main venv (1.x) and, in ``.ci/run``, in the Agent Framework venv where pip
resolves ag-ui-protocol 0.1.x: what 0.1.x lacks is handled on wire dicts.
"""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path
from typing import Any

from agui_replay._compat import LEGACY_PROTOCOL, RunFinishedCancelledOutcome, input_model
from agui_replay.events import EVENT_TYPES, parse_event, to_wire
from agui_replay.recording import CassetteSession
from agui_replay.server import RunContext, run_agent_sync, run_input

PACKAGE = Path(__file__).resolve().parents[2] / "agui_replay"

# What ag-ui-protocol 0.1.19 exports from ag_ui.core (read off its __init__): nothing outside
# this list may be imported unguarded.
_CORE_0_1_19_NAMES = (
    """ActivityDeltaEvent ActivityMessage ActivitySnapshotEvent AgentCapabilities AssistantMessage
    AudioInputContent AudioInputPart BaseEvent BaseMessage BinaryInputContent Context CustomEvent
    DeveloperMessage DocumentInputContent DocumentInputPart Event EventType ExecutionCapabilities
    FunctionCall HumanInTheLoopCapabilities IdentityCapabilities ImageInputContent ImageInputPart
    InputContent InputContentDataSource InputContentPart InputContentSource InputContentUrlSource
    Interrupt Message MessagesSnapshotEvent MultiAgentCapabilities MultimodalCapabilities
    MultimodalInputCapabilities MultimodalOutputCapabilities OutputCapabilities RawEvent
    ReasoningCapabilities ReasoningEncryptedValueEvent ReasoningEncryptedValueSubtype
    ReasoningEndEvent ReasoningMessage ReasoningMessageChunkEvent ReasoningMessageContentEvent
    ReasoningMessageEndEvent ReasoningMessageRole ReasoningMessageStartEvent ReasoningStartEvent
    ResumeEntry ResumeStatus Role RunAgentInput RunErrorEvent RunFinishedEvent
    RunFinishedInterruptOutcome RunFinishedOutcome RunFinishedSuccessOutcome RunStartedEvent State
    StateCapabilities StateDeltaEvent StateSnapshotEvent StepFinishedEvent StepStartedEvent
    SubAgentInfo SystemMessage TextInputContent TextMessageChunkEvent TextMessageContentEvent
    TextMessageEndEvent TextMessageStartEvent Tool ToolCall ToolCallArgsEvent ToolCallChunkEvent
    ToolCallEndEvent ToolCallResultEvent ToolCallStartEvent ToolMessage ToolsCapabilities
    TransportCapabilities UserMessage VideoInputContent VideoInputPart events types"""
)
CORE_0_1_19 = frozenset(_CORE_0_1_19_NAMES.split())


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """An import inside ``try: ... except ImportError`` or ``if TYPE_CHECKING:``."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers
        ):
            return True
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def test_nothing_is_imported_from_ag_ui_core_that_0_1_19_lacks() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "ag_ui.core":
                for alias in node.names:
                    if alias.name not in CORE_0_1_19 and not _guarded(node, parents):
                        offenders.append(
                            f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {alias.name}"
                        )
    assert offenders == [], "import these through agui_replay._compat: " + ", ".join(offenders)


def test_the_event_types_are_the_31_of_agui_1_0_whatever_is_installed() -> None:
    assert len(EVENT_TYPES) == 31
    assert {"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"} <= EVENT_TYPES
    assert not any(kind.startswith("THINKING_") for kind in EVENT_TYPES)


def test_subagent_events_and_a_cancelled_outcome_round_trip() -> None:
    for wire in (
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}},
    ):
        assert to_wire(parse_event(wire)) == wire


def test_an_input_without_the_fields_1_0_made_optional_validates() -> None:
    model = input_model({"threadId": "t", "runId": "r", "messages": []})
    # 1.x leaves the missing lists unset (None); 0.1.x needs lists and gets empty ones.
    assert not model.tools
    assert not model.context
    assert model.state is None


def test_an_agent_cancelled_by_its_outcome_ends_with_a_cancelled_run_finished() -> None:
    events = run_agent_sync(lambda ctx: RunFinishedCancelledOutcome(), run_input("t", "r"))
    last = to_wire(events[-1])
    assert last["type"] == "RUN_FINISHED"
    assert last["outcome"] == {"type": "cancelled"}


def _agent(ctx: RunContext[Any]) -> None:
    with ctx.reasoning() as reasoning:  # REASONING_MESSAGE_START needs its role on 0.1.x
        reasoning.delta("thinking")
    ctx.say("hello")


def test_agui_run_with_a_dict_input_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    run_input_dict = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    }
    with CassetteSession(path, mode="rewrite") as agui:
        recorded = agui.run(_agent, run_input_dict)
    with CassetteSession(path, mode="none") as agui:
        replayed = agui.run(_agent, run_input_dict)
    assert recorded == replayed
    assert recorded[-1]["type"] == "RUN_FINISHED"


def test_the_installed_release_is_one_we_support() -> None:
    version = importlib.metadata.version("ag-ui-protocol")
    major_minor = tuple(int(part) for part in version.split(".")[:2])
    assert major_minor >= (0, 1)
    legacy = major_minor < (1, 0)
    assert legacy is LEGACY_PROTOCOL
    if legacy:
        patch = int("".join(c for c in version.split(".")[2] if c.isdigit()) or 0)
        assert patch >= 19, f"ag-ui-protocol 0.1.19 or later is supported, not {version}"
