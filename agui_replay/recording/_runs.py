"""A session's run as a test reads it (:class:`RunRecord`), and what one run carries from its
start to its end (:class:`PendingRun`), shared by the parts that record and replay it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from agui_replay._compat import coerce_input
from agui_replay.events import WireEvent

if TYPE_CHECKING:
    from ag_ui.core import RunAgentInput

    from agui_replay.cassette import CassetteRun
    from agui_replay.providers import FakeProvider

__all__ = ["PendingRun", "RunRecord", "canonical", "run_input_of"]


@dataclass
class RunRecord:
    """One run of a session, as it happened."""

    index: int
    action: Literal["recorded", "replayed"]
    input: dict[str, Any]
    events: list[WireEvent]
    """The events as the agent produced them now (raw ids and timestamps)."""
    normalized: list[WireEvent]
    """The events after normalization and scrubbing (what the cassette stores / compares)."""
    interactions: list[dict[str, Any]] = field(default_factory=list)
    """The run's provider interactions: the ones recorded, or, on replay, the recorded ones it
    was served from (a copy), so a test reads the same in both modes."""
    normalized_input: dict[str, Any] | None = None
    """The input after normalization and scrubbing (what the cassette stores / compares)."""

    @property
    def stored_input(self) -> dict[str, Any]:
        """The input as a cassette stores it (normalized and scrubbed when the session did)."""
        return self.normalized_input if self.normalized_input is not None else self.input


@dataclass
class PendingRun:
    """One run between its start and its end."""

    index: int
    replay: bool
    input: RunAgentInput
    wire_input: dict[str, Any]
    recorded: CassetteRun | None = None
    """The recorded run a replay serves (``None`` while recording)."""
    first_interaction: int = 0
    """Where this run's interactions start in the recorder's list (recording)."""
    violations_before: int = 0
    tape_errors_before: int = 0
    normalized_input: dict[str, Any] | None = None
    fake: FakeProvider | None = None
    """The fake that served this replayed run (set at its end)."""
    expected: bytes = b""
    """The recorded events as canonical bytes (replay)."""
    same: bool = False
    """Whether the new stream already equals the recorded one, byte for byte (replay)."""


def canonical(value: Any) -> bytes:
    """JSON bytes with sorted keys, and 1 / 1.0 / true kept apart, as JSON sees them."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def run_input_of(value: Any, index: int) -> tuple[RunAgentInput, dict[str, Any]]:
    """The input of run ``index`` from what a test passes to ``run``, and its wire dict."""
    from agui_replay.server import run_input

    run_id = f"run-{index + 1}"
    if value is None:
        model = run_input("thread", run_id)
    elif isinstance(value, str):
        model = run_input("thread", run_id, messages=[value])
    else:
        if isinstance(value, Mapping):
            # A test writes the fields it cares about; the rest of RunAgentInput is empty.
            defaults: dict[str, Any] = {"messages": [], "tools": [], "context": [], "state": None}
            value = {**defaults, "forwardedProps": None, **value}
        model = coerce_input(value)
    wire: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model, wire
