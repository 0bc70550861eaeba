"""A ``RunAgentInput`` read from what a caller hands over: a model, or a wire mapping.

Shared by ``server`` (the run driver and the HTTP endpoint read the request with it) and
``recording`` (a test's ``agui.run(agent, input)`` turns its input into the same model). A bad
input is an :class:`~agui_replay.errors.InvalidArgumentError` naming the first wrong field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import ValidationError

from agui_replay._compat import input_model
from agui_replay.errors import InvalidArgumentError

__all__ = ["coerce_input", "describe_validation_error"]


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
