"""Hypothesis strategies for testing AG-UI state sync and event handling.

Importing this module imports ``hypothesis``, which the ``strategies`` extra installs
(``pip install "agui-replay[strategies]"``); nothing else in ``agui_replay`` does.

The round trip a front end relies on, checked for your own state type::

    from agui_replay.strategies import check_state_round_trip

    def test_my_state_syncs():
        check_state_round_trip(MyState)          # runs its own hypothesis search

or inside your own ``@given`` test::

    @given(states=state_sequences(MyState))
    def test_my_state_syncs(states):
        assert_state_round_trip(states)

Strategies: :func:`json_scalars`, :func:`json_keys`, :func:`mutations`,
:func:`state_sequences`, :func:`event_streams`, :func:`chunk_splits`.
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import enum
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

import orjson

try:
    import hypothesis  # noqa: F401  (only to say which extra is missing)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by test_startup
    raise ImportError(
        "agui_replay.strategies needs hypothesis: install agui-replay[strategies] "
        '(pip install "agui-replay[strategies]")',
        name=exc.name,
    ) from exc

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from agui_replay._facades import claim
from agui_replay.client import Session
from agui_replay.errors import InvalidArgumentError
from agui_replay.events import to_wire
from agui_replay.patch import json_equal
from agui_replay.state import StateManager, encode_state
from agui_replay.strategies import _documents
from agui_replay.strategies._appliers import Applier, get_applier, js_number_view
from agui_replay.strategies._documents import chunk_splits, json_keys, json_scalars, mutations
from agui_replay.strategies._event_streams import event_streams

__all__ = [
    "assert_state_round_trip",
    "check_state_round_trip",
    "chunk_splits",
    "event_streams",
    "json_keys",
    "json_scalars",
    "mutations",
    "state_sequences",
]

T = TypeVar("T")

# -- typed state ----------------------------------------------------------------------------


def _is_pydantic_model(tp: Any) -> bool:
    try:
        from pydantic import BaseModel
    except ImportError:  # pragma: no cover - pydantic is a dependency
        return False
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a type annotation, JSON-friendly where hypothesis' default is not
    (finite floats, JS-safe integers, models built field by field)."""
    if tp is Any or tp is object:
        return _documents.json_values(max_depth=2, max_leaves=9)
    if tp is None or tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(
            min_value=-_documents.MAX_SAFE_INTEGER, max_value=_documents.MAX_SAFE_INTEGER
        )
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is str:
        return st.text(max_size=12)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _strategy_for(args[0])
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return st.one_of(*(_strategy_for(a) for a in args))
    if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence):
        return st.lists(_strategy_for(args[0] if args else Any), max_size=4)
    if origin in (set, frozenset, collections.abc.Set):
        return st.frozensets(_strategy_for(args[0] if args else str), max_size=4).map(origin)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(_strategy_for(args[0]), max_size=4).map(tuple)
        return st.tuples(*(_strategy_for(a) for a in args))
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        key_type, value_type = args if args else (str, Any)
        keys = json_keys() if key_type is str else _strategy_for(key_type)
        return st.dictionaries(keys, _strategy_for(value_type), max_size=4)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if _is_pydantic_model(tp) or dataclasses.is_dataclass(tp) or typing.is_typeddict(tp):
        return st.deferred(lambda: _state_models(tp))
    return st.from_type(tp)


def _build_pydantic(model_type: Any) -> st.SearchStrategy[Any]:
    from pydantic import ValidationError

    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, field in model_type.model_fields.items():
        key = field.alias or name
        strategy = _strategy_for(field.annotation)
        (required if field.is_required() else optional)[key] = strategy

    def validate(data: dict[str, Any]) -> Any:
        try:
            return model_type.model_validate(data)
        except ValidationError:
            reject()  # a constraint (ge=, max_length=, a validator) the types do not express

    return st.fixed_dictionaries(required, optional=optional).map(validate)


def _build_dataclass(cls: Any) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls, include_extras=True)
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        strategy = _strategy_for(hints.get(field.name, Any))
        (optional if has_default else required)[field.name] = strategy

    def build(kwargs: dict[str, Any]) -> Any:
        try:
            return cls(**kwargs)
        except (TypeError, ValueError):
            reject()  # refused by __post_init__

    return st.fixed_dictionaries(required, optional=optional).map(build)


def _build_typeddict(cls: Any) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    required_keys = getattr(cls, "__required_keys__", frozenset(hints))
    required = {k: _strategy_for(t) for k, t in hints.items() if k in required_keys}
    optional = {k: _strategy_for(t) for k, t in hints.items() if k not in required_keys}
    return st.fixed_dictionaries(required, optional=optional)


def _state_models(model_type: type[T] | Any) -> st.SearchStrategy[T]:
    """Instances of a state type: a pydantic model, a dataclass, a TypedDict, or any type
    ``st.from_type`` knows. Fields are filled JSON-friendly (finite floats, JS-safe ints,
    awkward keys); values a field validator refuses are skipped.

    ``dict`` / ``Any`` give JSON objects.
    """
    if model_type is dict or model_type is Any:
        return typing.cast(st.SearchStrategy[T], _documents.json_documents())
    if _is_pydantic_model(model_type):
        return _build_pydantic(model_type)
    if dataclasses.is_dataclass(model_type) and isinstance(model_type, type):
        return _build_dataclass(model_type)
    if typing.is_typeddict(model_type):
        return _build_typeddict(model_type)
    return typing.cast(st.SearchStrategy[T], _strategy_for(model_type))


def _replace_field(value: Any, fresh: Any, name: str) -> Any:
    if _is_pydantic_model(type(value)):
        return value.model_copy(update={name: getattr(fresh, name)})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{name: getattr(fresh, name)})
    if isinstance(value, dict) and isinstance(fresh, dict):
        changed = dict(value)
        if name in fresh:
            changed[name] = fresh[name]
        else:
            changed.pop(name, None)
        return changed
    return fresh


def _field_names(value: Any) -> list[str]:
    if _is_pydantic_model(type(value)):
        return list(type(value).model_fields)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f.name for f in dataclasses.fields(value) if f.init]
    if isinstance(value, dict):
        return list(value)
    return []


@st.composite
def state_sequences(draw: st.DrawFn, state_type: Any, *, max_steps: int = 8) -> list[Any]:
    """Successive values of a state type, as an agent would publish them: each step changes
    one field (the usual case), repeats the value, or starts over with a new instance."""
    models = _state_models(state_type)
    if state_type is dict or state_type is Any:
        return draw(_documents.mutation_sequences(models, max_steps=max_steps))
    current = draw(models)
    sequence = [current]
    for _ in range(draw(st.integers(0, max_steps))):
        how = draw(st.sampled_from(["field", "field", "field", "same", "fresh"]))
        fresh = draw(models)
        names = _field_names(current)
        if how == "field" and names:
            current = _replace_field(current, fresh, draw(st.sampled_from(names)))
        elif how == "fresh":
            current = fresh
        sequence.append(current)
    return sequence


# -- round trip -----------------------------------------------------------------------------


def _as_json(value: Any) -> Any:
    """The JSON a state value goes on the wire as (what a STATE_SNAPSHOT of it would carry)."""
    return encode_state(value)


def _show(value: Any, limit: int = 400) -> str:
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def assert_state_round_trip(
    states: Sequence[Any], *, verify: bool = True, appliers: Sequence[str] = ("session",)
) -> Session:
    """Publish every value through a :class:`~agui_replay.state.StateManager`, apply the events
    with a :class:`~agui_replay.client.Session`, and check after every step that the client's
    state equals the value just published, JSON-strictly (``1``, ``1.0`` and ``true`` differ).

    ``appliers`` adds other clients' JSON Patch appliers, each keeping its own document from
    the snapshots and every published delta: ``"jsonpatch"`` (the Python package) and
    ``"fast-json-patch"`` (the TypeScript client's, run by Node; compared with JavaScript's
    single number type), or ``"available"`` for every one that is installed. Each must rebuild
    the same document after every step.

    Raises ``AssertionError`` naming the step, the event that was sent, what was published and
    what the client holds. Returns the session (its ``state`` is the last value's JSON).
    """
    others = _appliers(appliers)
    docs: dict[str, Any] = dict.fromkeys(others)
    manager = StateManager()
    session = Session(verify=verify)
    session.apply({"type": "RUN_STARTED", "threadId": "round-trip", "runId": "round-trip"})
    sent: list[str] = []
    for step, value in enumerate(states):
        published = manager.publish(value)
        event = published.to_event()
        if event is not None:
            session.apply(event)
        sent.append(f"  step {step}: {type(published).__name__} {_show(event, 160)}")
        expected = _as_json(value)
        if event is not None:
            wire = to_wire(event)
            for name, apply in others.items():
                docs[name] = _other_apply(name, apply, docs[name], wire, step, sent)
                _check_other(name, docs[name], expected, step, len(states), sent)
        if session.errors or not json_equal(session.state, expected):
            problem = (
                f"the client could not apply it: {session.errors[-1]}"
                if session.errors
                else "the client's state differs"
            )
            raise AssertionError(
                f"state round trip broke at step {step} of {len(states)}: {problem}\n"
                f"published: {_show(expected)}\n"
                f"client has: {_show(session.state)}\n"
                f"events sent:\n" + "\n".join(sent[-8:])
            )
    session.apply({"type": "RUN_FINISHED", "threadId": "round-trip", "runId": "round-trip"})
    return session.finish()


def _appliers(names: Sequence[str]) -> dict[str, Applier]:
    if isinstance(names, str):
        names = [names]
    chosen: dict[str, Applier] = {}
    for name in names:
        if name == "session":
            continue
        if name == "available":
            for other in ("jsonpatch", "fast-json-patch"):
                with contextlib.suppress(InvalidArgumentError):
                    chosen[other] = get_applier(other)
            continue
        chosen[name] = get_applier(name)
    return chosen


def _other_apply(
    name: str, apply: Applier, doc: Any, event: dict[str, Any], step: int, sent: list[str]
) -> Any:
    if event["type"] == "STATE_SNAPSHOT":
        return orjson.loads(orjson.dumps(event["snapshot"]))
    try:
        return apply(doc, event["delta"])
    except Exception as exc:  # each applier raises its own kind
        raise AssertionError(
            f"state round trip broke at step {step}: {name} could not apply the delta: "
            f"{type(exc).__name__}: {exc}\nevents sent:\n" + "\n".join(sent[-8:])
        ) from None


def _check_other(
    name: str, doc: Any, expected: Any, step: int, steps: int, sent: list[str]
) -> None:
    if name == "fast-json-patch":
        same = json_equal(js_number_view(doc), js_number_view(expected))
    else:
        same = json_equal(doc, expected)
    if not same:
        raise AssertionError(
            f"state round trip broke at step {step} of {steps}: {name} rebuilt another "
            f"document from the same events\npublished: {_show(expected)}\n"
            f"{name} has: {_show(doc)}\nevents sent:\n" + "\n".join(sent[-8:])
        )


def check_state_round_trip(
    state_type: Any,
    data: st.DataObject | None = None,
    *,
    max_steps: int = 8,
    max_examples: int = 100,
    appliers: Sequence[str] = ("session",),
) -> None:
    """Check the StateManager -> Session round trip for ``state_type`` (pydantic model,
    dataclass, TypedDict, ``dict``).

    Inside your own ``@given(data=st.data())`` test, pass ``data``; called with no ``data``
    it runs its own hypothesis search of ``max_examples`` sequences (up to ``max_steps``
    changes each).
    """
    sequences = state_sequences(state_type, max_steps=max_steps)
    if data is not None:
        assert_state_round_trip(data.draw(sequences, label="states"), appliers=appliers)
        return

    @settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(sequences)
    def run(states: list[Any]) -> None:
        assert_state_round_trip(states, appliers=appliers)

    run()


claim(__name__, [globals()[name] for name in __all__ if name in globals()])
