"""The field schema of every AG-UI event, checked the way the reference client checks it.

``@ag-ui/client`` 1.0 parses each event with its generated schema before anything else reads
it: a missing required field, a value of the wrong type or an explicit ``null`` on an optional
field rejects the stream; fields the protocol does not describe are stripped (and accepted).
A few pre-1.0 nulls are read as absent first (its compatibility boundary): ``rawEvent``,
``result`` on RUN_FINISHED / SUBAGENT_FINISHED, ``parentMessageId`` on TOOL_CALL_START /
TOOL_CALL_CHUNK and ``outcome`` on RUN_FINISHED.

The table is derived from the ``ag_ui.core`` models at import time (field names, which are
required, and their types); plain fields are checked by hand, at C speed, and the nested ones
(patches, messages, outcomes, run input) through the models. An event type the installed
``ag_ui.core`` has no model for is not checked.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ag_ui.core import events as _core_events
from pydantic import TypeAdapter, ValidationError

from agui_replay._eventtypes import TEXT_DELTA_TYPES
from agui_replay.errors import SchemaViolation

__all__ = ["SchemaViolation", "check_schema"]

_SAFE_INT = 2**53 - 1
_MISSING: Any = object()
_LEGACY_NULLS: dict[str, frozenset[str]] = {
    "RUN_FINISHED": frozenset({"rawEvent", "result", "outcome"}),
    "SUBAGENT_FINISHED": frozenset({"rawEvent", "result"}),
    "TOOL_CALL_START": frozenset({"rawEvent", "parentMessageId"}),
    "TOOL_CALL_CHUNK": frozenset({"rawEvent", "parentMessageId"}),
}
_RAW_ONLY = frozenset({"rawEvent"})
# Fields the reference schema requires although the Python model gives them a default:
# REASONING_MESSAGE_START's role is `z.literal("reasoning")` there, with no default.
_REQUIRED_THERE: dict[str, frozenset[str]] = {"REASONING_MESSAGE_START": frozenset({"role"})}


# A checker returns None when the value fits, else a short phrase saying what it must be.
_Check = Callable[[Any], "str | None"]


def _is_str(value: Any) -> str | None:
    return None if type(value) is str else "a string"


def _is_bool(value: Any) -> str | None:
    return None if type(value) is bool else "true or false"


def _is_int(value: Any) -> str | None:
    kind = type(value)
    if kind is int:
        return None if -_SAFE_INT <= value <= _SAFE_INT else "an integer within 2**53"
    if kind is float and value.is_integer() and abs(value) <= _SAFE_INT:
        return None  # JSON has one number type: 5.0 is the integer 5 to the reference
    return "an integer"


def _is_object(value: Any) -> str | None:
    return None if type(value) is dict else "a JSON object"


def _anything(value: Any) -> str | None:
    return None


def _literal(values: tuple[Any, ...]) -> _Check:
    allowed = frozenset(values)
    shown = " or ".join(repr(v) for v in values)

    def check(value: Any) -> str | None:
        return None if type(value) is str and value in allowed else f"one of {shown}"

    return check


def _modelled(annotation: Any) -> _Check:
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)

    def check(value: Any) -> str | None:
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"] if not isinstance(p, str) or p)
            return f"valid ({where or 'value'}: {first['msg']})"
        return _no_nested_nulls(value)

    return check


def _no_nested_nulls(value: Any) -> str | None:
    """Messages and interrupts with ``subagentRunId: null`` (the reference: "omit it")."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict):
            if "subagentRunId" in item and item["subagentRunId"] is None:
                return "free of 'subagentRunId: null' (the field is optional: omit it)"
            nested = item.get("interrupts") or item.get("messages")
            if isinstance(nested, list) and _no_nested_nulls(nested) is not None:
                return "free of 'subagentRunId: null' (the field is optional: omit it)"
    return None


def _checker(annotation: Any) -> tuple[_Check, bool]:
    """(checker, nullable-in-Python) for one model field's annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _checker(args[0])[0], True
    if annotation is str:
        return _is_str, False
    if annotation is bool:
        return _is_bool, False
    if annotation is int:
        return _is_int, False
    if annotation is Any:
        return _anything, False
    if origin is typing.Literal:
        return _literal(typing.get_args(annotation)), False
    if origin is dict:
        return _is_object, False
    return _modelled(annotation), False


def _role_models() -> dict[str, Any]:
    import ag_ui.core as core

    models: dict[str, Any] = {}
    for name in dir(core):
        cls = getattr(core, name)
        fields = getattr(cls, "model_fields", None)
        if name.endswith("Message") and fields and "role" in fields:
            role = fields["role"].default
            if isinstance(role, str):
                models[role] = cls
    return models


_ROLE_MODELS = _role_models()


def _messages(value: Any) -> str | None:
    """A list of messages: each of a known role must fit its model, with no optional null;
    one of an unknown role is stripped by the reference, so it passes."""
    if type(value) is not list:
        return "a list of messages"
    for at, item in enumerate(value):
        if type(item) is not dict:
            return f"a list of message objects (item {at} is not one)"
        role = item.get("role")
        model = _ROLE_MODELS.get(role) if type(role) is str else None
        if model is None:
            continue
        try:
            model.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return f"valid messages (item {at}, {where}: {first['msg']})"
        for key, info in model.model_fields.items():
            alias = info.alias or key
            if alias in item and item[alias] is None and not info.is_required():
                return f"valid messages (item {at}: {alias} is null; leave it out)"
    return None


_OP_NEEDS = {
    "add": ("value",),
    "replace": ("value",),
    "test": ("value",),
    "remove": (),
    "move": ("from",),
    "copy": ("from",),
}


def _operations(value: Any) -> str | None:
    """A JSON Patch: known operations need their fields; unknown ones are stripped."""
    if type(value) is not list:
        return "a list of JSON Patch operations"
    for at, op in enumerate(value):
        if type(op) is not dict:
            return f"a list of operation objects (item {at} is not one)"
        name = op.get("op")
        needs = _OP_NEEDS.get(name) if type(name) is str else None
        if needs is None:
            continue
        if type(op.get("path")) is not str:
            return f"a list of JSON Patch operations (item {at} needs a string path)"
        for key in needs:
            if key not in op or (key == "from" and type(op[key]) is not str):
                return f"a list of JSON Patch operations (item {at} needs {key})"
    return None


def _outcome(annotation: Any) -> _Check:
    """An outcome union: a member of an unknown ``type`` is stripped by the reference (so the
    event passes, without its outcome); a known one must fit its model."""
    members: list[Any] = []
    pending = [annotation]
    while pending:
        current = pending.pop()
        if hasattr(current, "model_fields"):
            members.append(current)
        else:
            pending.extend(typing.get_args(current))
    tags = {getattr(m.model_fields.get("type"), "default", None): m for m in members}
    checks = {tag: _modelled(model) for tag, model in tags.items() if isinstance(tag, str)}

    def check(value: Any) -> str | None:
        if type(value) is not dict:
            return "a JSON object"
        tag = value.get("type")
        known = checks.get(tag) if type(tag) is str else None
        return None if known is None else known(value)

    return check


def _run_input(value: Any) -> str | None:
    """RUN_STARTED's ``input``: a RunAgentInput, its messages read like a snapshot's."""
    if type(value) is not dict:
        return "a JSON object (a RunAgentInput)"
    problem = _messages(value.get("messages", []))
    if problem is not None:
        return problem
    return _RUN_INPUT({**value, "messages": []})


_RUN_INPUT = _modelled(_core_events.RunAgentInput)

_SPECIAL: dict[str, _Check] = {
    "messages": _messages,
    "delta": _operations,
    "patch": _operations,
    "input": _run_input,
}

_Field = tuple[str, bool, _Check]  # (wire name, required, checker)


def _build() -> dict[str, tuple[_Field, ...]]:
    table: dict[str, tuple[_Field, ...]] = {}
    base = _core_events.BaseEvent
    for value in vars(_core_events).values():
        if not (isinstance(value, type) and issubclass(value, base) and value is not base):
            continue
        type_field = value.model_fields.get("type")
        default = getattr(type_field, "default", None)
        kind = getattr(default, "value", default)
        if not isinstance(kind, str):
            continue
        fields: list[_Field] = []
        for name, info in value.model_fields.items():
            if name == "type":
                continue
            alias = info.alias or name
            check = _SPECIAL.get(alias) if kind not in TEXT_DELTA_TYPES else None
            if alias == "outcome":
                check = _outcome(info.annotation)
            if check is None:
                check, _ = _checker(info.annotation)
            required = info.is_required() or alias in _REQUIRED_THERE.get(kind, ())
            fields.append((alias, required, check))
        table[kind] = tuple(fields)
    return table


_TABLE = _build()


def _compile(kind: str, fields: tuple[_Field, ...]) -> Callable[[Mapping[str, Any]], bool]:
    """A fast yes/no check of one event type (True: it fits); the slow path says why not.

    Generated once per type, like ``dataclasses`` does, so that a plain event costs a few
    dict lookups and class comparisons.
    """
    names: dict[str, Any] = {"M": _MISSING}
    lines = ["def fits(e):", "    get = e.get"]
    required = 0
    optional: list[str] = []
    nullable = _LEGACY_NULLS.get(kind, _RAW_ONLY)
    for at, (name, is_required, check) in enumerate(fields):
        names[f"C{at}"] = check
        if is_required:
            required += 1
            if check is _is_str:
                lines.append(f"    if get({name!r}).__class__ is not str: return False")
            elif check is _anything:
                lines.append(f"    if {name!r} not in e: return False")
            else:
                lines.append(f"    v = get({name!r}, M)")
                lines.append(f"    if v is M or C{at}(v) is not None: return False")
            continue
        optional.append(f"        v = get({name!r}, M)")
        optional.append("        if v is not M:")
        optional.append(
            f"            if v is None: {'pass' if name in nullable else 'return False'}"
        )
        if check is _is_str:
            optional.append("            elif v.__class__ is not str: return False")
        elif check is not _anything:
            optional.append(f"            elif C{at}(v) is not None: return False")
    if optional:
        lines.append(f"    if len(e) > {required + 1}:")
        lines.extend(optional)
    lines.append("    return True")
    exec("\n".join(lines), names)  # our own generated source, no input in it
    fits: Callable[[Mapping[str, Any]], bool] = names["fits"]
    return fits


_FITS = {kind: _compile(kind, fields) for kind, fields in _TABLE.items()}


def check_schema(event: Mapping[str, Any], kind: str, index: int) -> None:
    """Raise :class:`SchemaViolation` when ``event`` does not fit its type's schema."""
    fits = _FITS.get(kind)
    if fits is None or fits(event):
        return
    _explain(event, kind, index, _TABLE[kind])


def _explain(event: Mapping[str, Any], kind: str, index: int, fields: tuple[_Field, ...]) -> None:
    """The slow path: find the first field that does not fit and raise for it."""
    get = event.get
    for name, required, check in fields:
        value = get(name, _MISSING)
        if value is _MISSING:
            if required:
                must = check(_MISSING)  # a literal says its value: role "reasoning"
                value_hint = f" ({must})" if must and must.startswith("one of ") else ""
                raise _violation(
                    kind, index, name, "is missing", f"add {name}{value_hint} to this {kind}"
                )
            continue
        if value is None:
            if required and check is _anything:
                continue
            if name in _LEGACY_NULLS.get(kind, _RAW_ONLY):
                continue
            if name == "subagentRunId":
                raise _violation(
                    kind,
                    index,
                    name,
                    "is null; the field is optional: omit it entirely",
                    f"leave subagentRunId out of this {kind} (an event of the parent agent "
                    "has none)",
                )
            if not required:
                raise _violation(
                    kind,
                    index,
                    name,
                    "is null; an optional field is left out, never null",
                    f"leave {name} out of this {kind} instead of sending null",
                )
        problem = check(value)
        if problem is not None:
            shown = type(value).__name__ if value is not None else "null"
            raise _violation(
                kind,
                index,
                name,
                f"must be {problem}, got {shown}",
                f"send {name} as {problem.split(' (', 1)[0]} in this {kind}",
            )


def _violation(kind: str, index: int, field: str, what: str, hint: str) -> SchemaViolation:
    return SchemaViolation(
        event_type=kind,
        index=index,
        field=field,
        detail=f"field {field} {what} (the reference client's schema rejects the stream here)",
        hint=hint,
    )
