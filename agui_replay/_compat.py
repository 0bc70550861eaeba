"""What differs between the ``ag-ui-protocol`` releases this package runs on.

The package supports ``ag-ui-protocol>=0.1.19`` (what agent-framework-ag-ui pins, ``<0.2``)
as well as 1.x (what ADK, Strands and CrewAI need). Everything else works on wire dicts; the few
places that build or parse ``ag_ui.core`` models go through this module, which knows what the
installed release lacks:

* ``RunFinishedCancelledOutcome`` (1.0): defined here with the same wire shape
  (``{"type": "cancelled"}``) when the library has none;
* the ``SUBAGENT_*`` events (0.1.22 and 1.0) and a ``RUN_FINISHED`` whose outcome the installed
  ``RunFinishedEvent`` cannot hold: parsed into :class:`WireEventModel`, a ``BaseEvent`` that
  keeps every wire field as it came;
* models of 0.1.x dump their unset optional fields as ``null``; 1.0 omits them. :func:`dump`
  omits them on both.

It also reads a ``RunAgentInput`` from what a caller hands over, a model or a wire mapping
(:func:`coerce_input`): the run driver and the HTTP endpoint of ``server`` read the request with
it, and ``recording`` a test's ``agui.run(agent, input)``; a bad input is an
:class:`~agui_replay.errors.InvalidArgumentError` naming the first wrong field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ag_ui.core import BaseEvent, EventType, RunAgentInput, RunFinishedEvent
from pydantic import BaseModel, ConfigDict, ValidationError

from agui_replay.errors import InvalidArgumentError

__all__ = [
    "HAS_CANCELLED_OUTCOME",
    "LEGACY_PROTOCOL",
    "LIBRARY_EVENT_TYPES",
    "RunFinishedCancelledOutcome",
    "WireEventModel",
    "coerce_input",
    "describe_validation_error",
    "dump",
    "input_model",
    "run_finished",
]

LIBRARY_EVENT_TYPES: frozenset[str] = frozenset(t.value for t in EventType)
"""The event types the installed ``ag_ui.core`` has models for."""

if TYPE_CHECKING:
    from ag_ui.core import RunFinishedCancelledOutcome

    HAS_CANCELLED_OUTCOME: bool
else:
    try:
        from ag_ui.core import RunFinishedCancelledOutcome

        HAS_CANCELLED_OUTCOME = True
    except ImportError:  # ag-ui-protocol 0.1.x

        class RunFinishedCancelledOutcome(BaseModel):
            """``{"type": "cancelled"}``: the run was stopped before it completed (AG-UI 1.0)."""

            model_config = ConfigDict(extra="forbid")
            type: Literal["cancelled"] = "cancelled"

        HAS_CANCELLED_OUTCOME = False

LEGACY_PROTOCOL: bool = not HAS_CANCELLED_OUTCOME
"""True under ``ag-ui-protocol`` 0.1.x."""


class WireEventModel(BaseEvent):
    """An AG-UI 1.0 event that the installed ``ag_ui.core`` has no model for.

    Only built under ``ag-ui-protocol`` 0.1.x, for ``SUBAGENT_*`` events and cancelled
    outcomes. Every wire field is kept as an extra field and dumped back unchanged.
    """

    model_config = ConfigDict(extra="allow")
    type: str  # type: ignore[assignment]  # a 1.0 type name the installed enum lacks


def dump(event: BaseEvent) -> dict[str, Any]:
    """The camelCase wire dict of a model, unset optional fields left out (as 1.0 does)."""
    if isinstance(event, WireEventModel):
        wire: dict[str, Any] = {"type": event.type, **(event.model_extra or {})}
        if event.timestamp is not None:
            wire["timestamp"] = event.timestamp
        if event.raw_event is not None:
            wire["rawEvent"] = event.raw_event
        return wire
    dumped: dict[str, Any] = event.model_dump(
        by_alias=True, mode="json", exclude_none=LEGACY_PROTOCOL
    )
    return dumped


def run_finished(thread_id: str, run_id: str, outcome: BaseModel | None) -> BaseEvent:
    """A RUN_FINISHED event; on 0.1.x a cancelled outcome travels in a :class:`WireEventModel`."""
    if LEGACY_PROTOCOL and isinstance(outcome, RunFinishedCancelledOutcome):
        return WireEventModel.model_validate(
            {
                "type": "RUN_FINISHED",
                "threadId": thread_id,
                "runId": run_id,
                "outcome": {"type": "cancelled"},
            }
        )
    held: Any = outcome
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=held)


def input_model(data: Mapping[str, Any]) -> RunAgentInput:
    """Validate a wire ``RunAgentInput`` the way 1.0 reads it, on any supported release.

    1.0 made ``tools``, ``context``, ``state`` and ``forwardedProps`` optional; 0.1.x requires
    the keys (``messages`` both require). On 0.1.x a missing one is filled as 1.0 assumes
    (empty lists, ``null``); dumped with ``exclude_none`` as the package does, both give the
    same wire input.
    """
    if LEGACY_PROTOCOL:
        filled = dict(data)
        for wire, snake, empty in _LEGACY_REQUIRED:
            if wire not in filled and snake not in filled:
                filled[wire] = empty() if callable(empty) else empty
        data = filled
    return RunAgentInput.model_validate(dict(data))


# Fields 1.0 made optional that 0.1.x requires: (wire name, python name, what 1.0 assumes).
_LEGACY_REQUIRED: tuple[tuple[str, str, Any], ...] = (
    ("tools", "tools", list),
    ("context", "context", list),
    ("state", "state", None),
    ("forwardedProps", "forwarded_props", None),
)


def describe_validation_error(error: ValidationError) -> str:
    """``field messages: Field required`` (plus how many more problems there are)."""
    problems = error.errors()
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "(body)"
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return f"field {where}: {first['msg']}{more}"


def coerce_input(input: RunAgentInput | Mapping[str, Any]) -> RunAgentInput:
    """A ``RunAgentInput`` from a model or a wire mapping (camelCase or snake_case keys)."""
    if isinstance(input, RunAgentInput):
        return input
    if not isinstance(input, Mapping):
        raise InvalidArgumentError(
            f"expected a RunAgentInput or a mapping, got {type(input).__name__}"
        )
    try:
        return input_model(input)
    except ValidationError as error:
        raise InvalidArgumentError(
            f"not a valid RunAgentInput: {describe_validation_error(error)}"
        ) from None
