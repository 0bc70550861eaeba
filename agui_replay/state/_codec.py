"""Typed states in and out: ``RunAgentInput.state`` decoded into your type, and a typed state
encoded as JSON (re-exported by :mod:`agui_replay.state`)."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from .._limits import JSONValue
from ..errors import StateDecodeError

__all__ = ["decode_state", "encode_state"]

S = TypeVar("S")


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    try:
        return _ADAPTERS[kind]
    except KeyError:
        adapter: TypeAdapter[Any] = TypeAdapter(kind)
        _ADAPTERS[kind] = adapter
        return adapter
    except TypeError:  # an unhashable type form: build it each time
        return TypeAdapter(kind)


def _type_label(state_type: Any) -> str:
    return getattr(state_type, "__qualname__", None) or repr(state_type)


def decode_state(raw: Any, state_type: type[S]) -> S:
    """``RunAgentInput.state`` as a ``state_type`` (pydantic model, dataclass, TypedDict, dict).

    ``None`` or ``{}`` mean "no state yet" and give ``state_type()``; anything else is validated
    with pydantic, and a value that does not fit raises :class:`StateDecodeError`
    (``code == "SERIALIZATION"``).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Counter:
    ...     clicks: int = 0
    >>> decode_state(None, Counter), decode_state({"clicks": 3}, Counter)
    (Counter(clicks=0), Counter(clicks=3))
    """
    label = _type_label(state_type)
    if raw is None or (isinstance(raw, dict) and not raw):
        try:
            return state_type()
        except (TypeError, ValidationError) as exc:
            raise StateDecodeError(
                f"the client sent no state (null or {{}}), and {label}() cannot be built "
                f"without arguments ({_first_line(exc)}); give every field of {label} a default"
            ) from None
    try:
        adapter = _adapter(state_type)
    except PydanticUserError as exc:  # includes "unable to generate a schema"
        raise StateDecodeError(
            f"{label} cannot be used as a state type: {_first_line(exc)}; use a pydantic model, "
            "a dataclass, a TypedDict (typing_extensions before Python 3.12) or dict"
        ) from None
    try:
        return cast(S, adapter.validate_python(raw))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "(the whole state)"
        got = repr(error.get("input"))
        if len(got) > 60:
            got = got[:57] + "..."
        raise StateDecodeError(
            f"RunAgentInput.state does not fit {label}: field {field}: {error['msg']} "
            f"(got {got}); send a state shaped like {label}, or null / {{}} for its defaults"
        ) from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def encode_state(value: Any) -> JSONValue:
    """A state as JSON: pydantic models and dataclasses are dumped (``mode="json"``, by alias, so
    that :func:`decode_state` reads back what was published); plain JSON values pass through.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Board:
    ...     tasks: list[str]
    >>> encode_state(Board(tasks=["ship it"]))
    {'tasks': ['ship it']}
    """
    if value is None or isinstance(value, (dict, list, tuple, str, int, float)):
        return value
    try:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True)
        # Dataclasses, TypedDict-shaped objects, and whatever else pydantic knows how to dump.
        return _adapter(type(value)).dump_python(value, mode="json", by_alias=True)
    except (PydanticSerializationError, PydanticUserError, ValueError, TypeError) as exc:
        raise StateDecodeError(
            f"cannot encode a {type(value).__name__} as JSON state: {_first_line(exc)}; "
            "publish a pydantic model, a dataclass, or plain dicts/lists"
        ) from None
