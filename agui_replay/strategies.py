"""Hypothesis strategies for testing AG-UI state sync and event handling.

Importing this module imports ``hypothesis`` (install the ``test`` extra); nothing else in
``agui_replay`` does.

The round trip a front end relies on, checked for your own state type::

    from agui_replay.strategies import check_state_round_trip

    def test_my_state_syncs():
        check_state_round_trip(MyState)          # runs its own hypothesis search

or inside your own ``@given`` test::

    @given(states=st.lists(state_models(MyState), min_size=1))
    def test_my_state_syncs(states):
        assert_state_round_trip(states)

Strategies: :func:`json_values`, :func:`json_documents`, :func:`mutations`,
:func:`mutation_sequences`, :func:`state_models`, :func:`state_sequences`,
:func:`event_streams`, :func:`chunk_splits`, :func:`resplit`.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

import orjson
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from agui_replay.errors import InvalidArgumentError

from .client import Session
from .events import to_wire
from .patch import json_equal
from .state import StateManager, encode_state

__all__ = [
    "AWKWARD_KEYS",
    "STREAM_ITEM_KINDS",
    "assert_state_round_trip",
    "check_state_round_trip",
    "chunk_splits",
    "event_streams",
    "json_documents",
    "json_keys",
    "json_scalars",
    "json_values",
    "mutation_sequences",
    "mutations",
    "resplit",
    "state_models",
    "state_sequences",
]

T = TypeVar("T")

MAX_SAFE_INTEGER = 2**53 - 1
"""Integers beyond this do not survive a JavaScript client, so they are not generated."""

AWKWARD_KEYS: tuple[str, ...] = (
    "",
    "~",
    "/",
    "~0",
    "~1",
    "~01",
    "0",
    "01",
    "1",
    "-",
    "a/b",
    "m~n",
    " ",
    "1e2",
    "é",
    "e\u0301",
    "键",
    "🙂",
    "__proto__",
)
"""Object keys that trip JSON Pointer escaping (``~``, ``/``), array-index look-alikes and
unicode normalization."""


# -- JSON -----------------------------------------------------------------------------------


def json_keys() -> st.SearchStrategy[str]:
    """Object keys: the :data:`AWKWARD_KEYS` half the time, short unicode text otherwise."""
    return st.one_of(st.sampled_from(AWKWARD_KEYS), st.text(max_size=6))


def json_scalars() -> st.SearchStrategy[Any]:
    """``null``, booleans, integers (JS-safe), finite floats and unicode strings.

    ``0``, ``1``, ``0.0``, ``1.0``, ``-0.0``, ``true`` and ``false`` come up often, because
    Python's ``==`` confuses them and JSON does not.
    """
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, 1, 0.0, 1.0, -0.0, 2, 2.0]),
        st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
    )


def _width(max_depth: int, max_leaves: int) -> int:
    """The largest container length w with w ** max_depth <= max_leaves (at least 1)."""
    width = 1
    while (width + 1) ** max_depth <= max_leaves:
        width += 1
    return width


def json_values(*, max_depth: int = 3, max_leaves: int = 64) -> st.SearchStrategy[Any]:
    """Any JSON value, nested at most ``max_depth`` containers deep, with at most
    ``max_leaves`` scalars (each list or object holds at most ``max_leaves ** (1/max_depth)``
    items).

    >>> from hypothesis import given
    >>> @given(json_values(max_depth=1, max_leaves=3))
    ... def test(value): assert not isinstance(value, list) or len(value) <= 3
    >>> test()
    """
    if max_depth < 0 or max_leaves < 1:
        raise InvalidArgumentError("json_values needs max_depth >= 0 and max_leaves >= 1")
    scalars = json_scalars()
    if max_depth == 0:
        return scalars
    width = _width(max_depth, max_leaves)
    keys = json_keys()
    value = scalars
    for _ in range(max_depth):
        value = st.one_of(
            scalars,
            st.lists(value, max_size=width),
            st.dictionaries(keys, value, max_size=width),
        )
    return value


def json_documents(
    *, max_depth: int = 3, max_leaves: int = 64
) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object (the usual shape of an agent's state) of :func:`json_values`."""
    if max_depth < 1:
        raise InvalidArgumentError("json_documents needs max_depth >= 1")
    width = _width(max_depth, max_leaves)
    inner = json_values(max_depth=max_depth - 1, max_leaves=max(1, max_leaves // width))
    return st.dictionaries(json_keys(), inner, max_size=width)


# -- mutations ------------------------------------------------------------------------------

Path = tuple[Any, ...]


def _copy(value: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        import copy

        return copy.deepcopy(value)


def _nodes(doc: Any) -> list[tuple[Path, Any]]:
    """Every node of a document with its path, root first (iterative: no recursion limit)."""
    out: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [((), doc)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        if isinstance(node, list):
            stack.extend(((*path, i), child) for i, child in enumerate(node))
        elif isinstance(node, dict):
            stack.extend(((*path, k), child) for k, child in node.items())
    out.sort(key=lambda item: len(item[0]))
    return out


def _get(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _set(doc: Any, path: Path, value: Any) -> Any:
    """``doc`` with the node at ``path`` replaced (in place below the root; returns the root)."""
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _type_twins(value: Any) -> list[Any]:
    """Values of another JSON type that Python may think equal or that look alike."""
    if isinstance(value, bool):
        return [int(value), float(value), None, "true" if value else "false", [value]]
    if isinstance(value, int):
        twins: list[Any] = [str(value), None, [value]]
        if abs(value) <= MAX_SAFE_INTEGER:
            twins.append(float(value))
        if value in (0, 1):
            twins.append(bool(value))
        return twins
    if isinstance(value, float):
        twins = [repr(value), None]
        if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
            twins.append(int(value))
            if value in (0.0, 1.0):
                twins.append(bool(value))
        return twins
    if value is None:
        return [0, 0.0, False, "", [], {}]
    if isinstance(value, str):
        return [None, [value], {value: value}, len(value)]
    if isinstance(value, list):
        # A list turned into an object with digit keys looks the same to a JSON Pointer.
        return [{str(i): v for i, v in enumerate(value)}, None, *value[:1]]
    if isinstance(value, dict):
        return [list(value.values()), None, *list(value.values())[:1]]
    return [None]


@st.composite
def mutations(
    draw: st.DrawFn,
    doc: Any,
    *,
    values: st.SearchStrategy[Any] | None = None,
    allow_root_replace: bool = False,
) -> Any:
    """A copy of ``doc`` with one random change (``doc`` itself is never modified).

    Changes: insert / remove / move / replace an item of a list; add / remove / rename /
    change a key of an object; change a node's type (``1`` -> ``1.0`` -> ``true`` -> ``"1"``,
    list -> object with digit keys, ...). New values come from ``values`` (default: small
    :func:`json_values`). The root is replaced only with ``allow_root_replace``.
    """
    values = values if values is not None else json_values(max_depth=2, max_leaves=9)
    new = _copy(doc)
    nodes = _nodes(new)
    candidates = [n for n in nodes if n[0] or allow_root_replace or isinstance(n[1], (list, dict))]
    if not candidates:
        # A scalar root that may not be replaced: nothing to change.
        return new
    path, node = draw(st.sampled_from(candidates))
    ops: list[str] = []
    if path or allow_root_replace:
        ops += ["replace", "retype"]
    if isinstance(node, list):
        ops += ["insert"] + (["remove"] if node else []) + (["move"] if len(node) > 1 else [])
    elif isinstance(node, dict):
        ops += ["add"] + (["delete", "rename"] if node else [])
    op = draw(st.sampled_from(ops))
    if op == "replace":
        return _set(new, path, draw(values))
    if op == "retype":
        return _set(new, path, _copy(draw(st.sampled_from(_type_twins(node)))))
    if isinstance(node, list):
        if op == "insert":
            node.insert(draw(st.integers(0, len(node))), draw(values))
        elif op == "remove":
            del node[draw(st.integers(0, len(node) - 1))]
        else:
            item = node.pop(draw(st.integers(0, len(node) - 1)))
            node.insert(draw(st.integers(0, len(node))), item)
        return new
    assert isinstance(node, dict)
    if op == "add":
        node[draw(json_keys())] = draw(values)
    elif op == "delete":
        del node[draw(st.sampled_from(sorted(node)))]
    else:
        old = draw(st.sampled_from(sorted(node)))
        node[draw(json_keys())] = node.pop(old)
    return new


@st.composite
def mutation_sequences(
    draw: st.DrawFn,
    doc_strategy: st.SearchStrategy[Any] | None = None,
    *,
    max_steps: int = 8,
    allow_root_replace: bool = False,
) -> list[Any]:
    """Successive full documents: a start from ``doc_strategy`` (default
    :func:`json_documents`), then each step one to three :func:`mutations` of the previous
    document, an unchanged copy, or now and then an unrelated new document."""
    docs = doc_strategy if doc_strategy is not None else json_documents()
    current = draw(docs)
    sequence = [current]
    for _ in range(draw(st.integers(0, max_steps))):
        how = draw(st.sampled_from(["mutate", "mutate", "mutate", "mutate", "same", "fresh"]))
        if how == "same":
            current = _copy(current)
        elif how == "fresh":
            current = draw(docs)
        else:
            for _ in range(draw(st.integers(1, 3))):
                current = draw(mutations(current, allow_root_replace=allow_root_replace))
        sequence.append(current)
    return sequence


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
        return json_values(max_depth=2, max_leaves=9)
    if tp is None or tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
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
        return st.deferred(lambda: state_models(tp))
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


def state_models(model_type: type[T] | Any) -> st.SearchStrategy[T]:
    """Instances of a state type: a pydantic model, a dataclass, a TypedDict, or any type
    ``st.from_type`` knows. Fields are filled JSON-friendly (finite floats, JS-safe ints,
    awkward keys); values a field validator refuses are skipped.

    ``dict`` / ``Any`` give :func:`json_documents`.
    """
    if model_type is dict or model_type is Any:
        return typing.cast(st.SearchStrategy[T], json_documents())
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
    models = state_models(state_type)
    if state_type is dict or state_type is Any:
        return draw(mutation_sequences(models, max_steps=max_steps))
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


def assert_state_round_trip(states: Sequence[Any], *, verify: bool = True) -> Session:
    """Publish every value through a :class:`~agui_replay.state.StateManager`, apply the events
    with a :class:`~agui_replay.client.Session`, and check after every step that the client's
    state equals the value just published, JSON-strictly (``1``, ``1.0`` and ``true`` differ).

    Raises ``AssertionError`` naming the step, the event that was sent, what was published and
    what the client holds. Returns the session (its ``state`` is the last value's JSON).
    """
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


def check_state_round_trip(
    state_type: Any,
    data: st.DataObject | None = None,
    *,
    max_steps: int = 8,
    max_examples: int = 100,
) -> None:
    """Check the StateManager -> Session round trip for ``state_type`` (pydantic model,
    dataclass, TypedDict, ``dict``).

    Inside your own ``@given(data=st.data())`` test, pass ``data``; called with no ``data``
    it runs its own hypothesis search of ``max_examples`` sequences (up to ``max_steps``
    changes each).
    """
    sequences = state_sequences(state_type, max_steps=max_steps)
    if data is not None:
        assert_state_round_trip(data.draw(sequences, label="states"))
        return

    @settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(sequences)
    def run(states: list[Any]) -> None:
        assert_state_round_trip(states)

    run()


# -- text re-chunking -----------------------------------------------------------------------


@st.composite
def chunk_splits(
    draw: st.DrawFn, text: str, *, max_chunks: int | None = None, allow_empty: bool = False
) -> list[str]:
    """Ways to cut ``text`` into consecutive pieces (joined, they give ``text`` back).

    Cuts fall between code points, so a grapheme (an emoji with a modifier, a letter with a
    combining accent) may be split, as providers do. ``allow_empty`` adds empty pieces, which
    AG-UI allows as deltas. ``""`` splits into ``[]`` (or empty pieces).
    """
    n = len(text)
    limit = max_chunks if max_chunks is not None else max(1, n) + (3 if allow_empty else 0)
    if limit < 1:
        raise InvalidArgumentError("max_chunks must be at least 1")
    if allow_empty:
        cuts = draw(st.lists(st.integers(0, n), max_size=limit - 1))
        cuts.sort()
    else:
        if n == 0:
            return []
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=limit - 1))) if n > 1 else []
    pieces = []
    start = 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def resplit(
    chunks: Sequence[str], *, max_chunks: int | None = None, allow_empty: bool = False
) -> st.SearchStrategy[list[str]]:
    """Other chunkings of the same text: :func:`chunk_splits` of ``"".join(chunks)``."""
    return chunk_splits("".join(chunks), max_chunks=max_chunks, allow_empty=allow_empty)


# -- event streams --------------------------------------------------------------------------

STREAM_ITEM_KINDS: tuple[str, ...] = (
    "text",
    "tool",
    "step",
    "reasoning",
    "custom",
    "raw",
    "activity",
    "messages_snapshot",
    "text_chunks",
    "tool_chunks",
    "reasoning_chunks",
)
"""What a run of :func:`event_streams` is made of."""

_words = st.text(max_size=12)


class _Ids:
    """Run-id-derived ids, like the seeds' emitter: ``run-1-msg-3``, ``run-1-call-2``."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.counts: dict[str, int] = {}

    def __call__(self, what: str) -> str:
        n = self.counts[what] = self.counts.get(what, 0) + 1
        return f"{self.run_id}-{what}-{n}"


Thread = tuple[list[dict[str, Any]], bool]  # (events in order, must stay contiguous)


def _text_thread(draw: st.DrawFn, ids: _Ids, chunks: bool) -> Thread:
    mid = ids("msg")
    pieces = draw(chunk_splits(draw(_words), allow_empty=True, max_chunks=4))
    if chunks:
        first: dict[str, Any] = {"type": "TEXT_MESSAGE_CHUNK", "messageId": mid}
        if draw(st.booleans()):
            first["role"] = "assistant"
        events = [first]
        for i, piece in enumerate(pieces or [""]):
            if i == 0:
                first["delta"] = piece
                continue
            chunk = {"type": "TEXT_MESSAGE_CHUNK", "delta": piece}
            if draw(st.booleans()):
                chunk["messageId"] = mid  # repeating the id continues the same message
            events.append(chunk)
        return events, True
    role = draw(st.sampled_from(["assistant", "assistant", "user", "system", "developer"]))
    start = {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": role}
    content = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": piece} for piece in pieces
    ]
    return [start, *content, {"type": "TEXT_MESSAGE_END", "messageId": mid}], False


def _encrypted_value(draw: st.DrawFn, subtype: str, entity: str) -> dict[str, Any]:
    return {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": subtype,
        "entityId": entity,
        "encryptedValue": draw(st.text(alphabet="abcdef0123456789", min_size=1)),
    }


def _tool_thread(draw: st.DrawFn, ids: _Ids, parents: list[str], chunks: bool) -> Thread:
    call_id = ids("call")
    name = draw(st.sampled_from(["search", "get_weather", "write_file", "ask_user"]))
    args = orjson.dumps(draw(json_documents(max_depth=2, max_leaves=4))).decode()
    pieces = draw(chunk_splits(args, max_chunks=4))
    parent = draw(st.sampled_from([None, *parents])) if parents else None
    result: list[dict[str, Any]] = []
    if draw(st.booleans()):
        result.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": ids("msg"),
                "toolCallId": call_id,
                "content": draw(_words),
                "role": "tool",
            }
        )
    if chunks:
        first: dict[str, Any] = {
            "type": "TOOL_CALL_CHUNK",
            "toolCallId": call_id,
            "toolCallName": name,
            "delta": pieces[0] if pieces else "",
        }
        if parent is not None:
            first["parentMessageId"] = parent
        rest = [{"type": "TOOL_CALL_CHUNK", "delta": p} for p in pieces[1:]]
        return [first, *rest, *result], True
    start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent is not None:
        start["parentMessageId"] = parent
    events = [start]
    if draw(st.booleans()):
        events.append(_encrypted_value(draw, "tool-call", call_id))
    events += [{"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": p} for p in pieces]
    events.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
    return events + result, False


def _reasoning_thread(draw: st.DrawFn, ids: _Ids, chunks: bool) -> Thread:
    block = ids("msg")
    # The same id may name the block and its message (PROTOCOL-NOTES §2, rule 8).
    mid = block if draw(st.booleans()) else ids("msg")
    pieces = draw(chunk_splits(draw(_words), max_chunks=3))
    events: list[dict[str, Any]] = [{"type": "REASONING_START", "messageId": block}]
    if chunks:
        events.append({"type": "REASONING_MESSAGE_CHUNK", "messageId": mid, "delta": ""})
        events += [{"type": "REASONING_MESSAGE_CHUNK", "delta": p} for p in pieces]
    else:
        events.append({"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"})
        events += [
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": p} for p in pieces
        ]
        events.append({"type": "REASONING_MESSAGE_END", "messageId": mid})
        if draw(st.booleans()):
            events.append(_encrypted_value(draw, "message", mid))
    events.append({"type": "REASONING_END", "messageId": block})
    return events, chunks


def _state_thread(draw: st.DrawFn, max_steps: int) -> Thread:
    manager = StateManager()
    events: list[dict[str, Any]] = []
    for doc in draw(
        mutation_sequences(json_documents(max_depth=2, max_leaves=9), max_steps=max_steps)
    ):
        event = manager.publish(doc).to_event()
        if event is not None:
            events.append(to_wire(event))
    return events, False


def _run_end(
    draw: st.DrawFn, ids: _Ids, thread_id: str, run_errors: bool, interrupts: bool
) -> dict[str, Any]:
    choices = ["success", "success", "plain"]
    if interrupts:
        choices.append("interrupt")
    if run_errors:
        choices.append("error")
    how = draw(st.sampled_from(choices))
    if how == "error":
        return {"type": "RUN_ERROR", "message": "the agent failed", "code": "AGENT_ERROR"}
    end: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": ids.run_id}
    if how == "success":
        end["outcome"] = {"type": "success"}
        end["result"] = draw(json_values(max_depth=1, max_leaves=3))
    elif how == "interrupt":
        end["outcome"] = {
            "type": "interrupt",
            "interrupts": [
                {"id": ids("interrupt"), "reason": "confirm"}
                for _ in range(draw(st.integers(1, 2)))
            ],
        }
    return end


@st.composite
def event_streams(
    draw: st.DrawFn,
    *,
    max_runs: int = 3,
    min_items: int = 0,
    max_items: int = 8,
    kinds: Sequence[str] | None = None,
    chunks: bool = True,
    state: bool = True,
    interrupts: bool = True,
    run_errors: bool = True,
    thread_id: str = "thread-1",
) -> list[dict[str, Any]]:
    """Random VALID AG-UI streams (wire dicts), accepted by the verifier in both modes.

    One to ``max_runs`` runs in one stream; in each, up to ``max_items`` text messages, tool
    calls (with arguments, results, parents), steps, reasoning blocks, activity, CUSTOM / RAW
    and MESSAGES_SNAPSHOT events, interleaved at random (a chunked message is sent
    contiguously, as the chunk rules need), plus a STATE_SNAPSHOT / STATE_DELTA sequence from
    a real :class:`~agui_replay.state.StateManager`. A run ends with RUN_FINISHED (success,
    plain or interrupt outcome) or RUN_ERROR.

    ``kinds`` picks the items a run is made of, from :data:`STREAM_ITEM_KINDS` (default: all;
    ``chunks=False`` leaves out the ``*_chunks`` ones); every run has ``min_items`` to
    ``max_items`` of them.
    """
    if kinds is None:
        kinds = [k for k in STREAM_ITEM_KINDS if chunks or not k.endswith("_chunks")]
    unknown = set(kinds) - set(STREAM_ITEM_KINDS)
    if unknown or not kinds:
        raise InvalidArgumentError(
            f"event_streams(kinds=...) takes a non-empty selection of {STREAM_ITEM_KINDS}, "
            f"got {sorted(unknown) or 'nothing'}"
        )
    stream: list[dict[str, Any]] = []
    for run in range(draw(st.integers(1, max_runs))):
        ids = _Ids(f"run-{run + 1}")
        threads: list[Thread] = []
        parents: list[str] = []
        items = st.lists(st.sampled_from(list(kinds)), min_size=min_items, max_size=max_items)
        for kind in draw(items):
            if kind in ("text", "text_chunks"):
                thread = _text_thread(draw, ids, kind == "text_chunks")
                if kind == "text":
                    parents.append(thread[0][0]["messageId"])
            elif kind in ("tool", "tool_chunks"):
                thread = _tool_thread(draw, ids, parents, kind == "tool_chunks")
            elif kind in ("reasoning", "reasoning_chunks"):
                thread = _reasoning_thread(draw, ids, kind == "reasoning_chunks")
            elif kind == "step":
                name = ids("step")
                thread = (
                    [
                        {"type": "STEP_STARTED", "stepName": name},
                        {"type": "STEP_FINISHED", "stepName": name},
                    ],
                    False,
                )
            elif kind == "custom":
                value = draw(json_values(max_depth=1, max_leaves=3))
                thread = ([{"type": "CUSTOM", "name": ids("custom"), "value": value}], False)
            elif kind == "raw":
                event = draw(json_values(max_depth=1, max_leaves=3))
                thread = ([{"type": "RAW", "event": event, "source": "provider"}], False)
            elif kind == "activity":
                mid = ids("activity")
                kind_name = draw(st.sampled_from(["progress", "plan"]))
                thread = (
                    [
                        {
                            "type": "ACTIVITY_SNAPSHOT",
                            "messageId": mid,
                            "activityType": kind_name,
                            "content": {"done": 0},
                        },
                        {
                            "type": "ACTIVITY_DELTA",
                            "messageId": mid,
                            "activityType": kind_name,
                            "patch": [{"op": "replace", "path": "/done", "value": 1}],
                        },
                    ],
                    False,
                )
            else:
                user = {"id": ids("user"), "role": "user", "content": draw(_words)}
                thread = ([{"type": "MESSAGES_SNAPSHOT", "messages": [user]}], False)
            threads.append(thread)
        if state and draw(st.booleans()):
            threads.append(_state_thread(draw, max_steps=4))
        slots = [
            i
            for i, (events, atomic) in enumerate(threads)
            for _ in (events[:1] if atomic else events)
        ]
        order = draw(st.permutations(slots))
        positions = [0] * len(threads)
        stream.append({"type": "RUN_STARTED", "threadId": thread_id, "runId": ids.run_id})
        for i in order:
            events, atomic = threads[i]
            if atomic:
                stream.extend(events)
            else:
                stream.append(events[positions[i]])
                positions[i] += 1
        stream.append(_run_end(draw, ids, thread_id, run_errors, interrupts))
    return stream
