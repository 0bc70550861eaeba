"""The compiled helpers (agui_replay/_speedups.c): their answers against the definition of a
plain JSON value written out in Python here, and the StateManager with them against the
StateManager without them (the path of an install without a C compiler)."""

from __future__ import annotations

import collections
import copy
import enum
import math
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay import _compiled
from agui_replay.errors import PatchError
from agui_replay.patch import MAX_DEPTH
from agui_replay.state import Delta, Snapshot, StateManager, Unchanged
from agui_replay.strategies import json_documents, json_values

speedups = pytest.importorskip(
    "agui_replay._speedups",
    reason="agui_replay._speedups is not built (no C compiler where the package was "
    "installed): the StateManager runs its pure-Python paths, which the other state tests test",
)

SETTINGS = settings(max_examples=150, deadline=None, database=None)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


class Name(str):
    pass


class Items(list):  # type: ignore[type-arg]
    pass


def is_plain(value: Any, room: int) -> bool:
    """The definition: only dict (str keys), list, tuple, str, int, bool, None and finite
    float, exactly those types, at most ``room`` containers deep."""
    kind = type(value)
    if kind in (str, int, bool) or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind not in (dict, list, tuple) or room <= 0:
        return False
    if kind is dict:
        return all(type(key) is str and is_plain(item, room - 1) for key, item in value.items())
    return all(is_plain(item, room - 1) for item in value)


INTRUDERS = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        Color.RED,
        Level.ONE,
        Name("n"),
        uuid.UUID(int=7),
        Decimal("1.5"),
        b"bytes",
        {1, 2},
        collections.OrderedDict(a=1),
        Items([1]),
        {1: "an int key"},
        {Name("k"): "a key of a str subclass"},
    ]
)


def almost_json(max_depth: int = 4) -> st.SearchStrategy[Any]:
    """JSON values, tuples among the arrays, and now and then a value that is not JSON."""
    scalars = json_values(max_depth=0)
    return st.recursive(
        st.one_of(scalars, scalars, scalars, INTRUDERS),  # an intruder one leaf in four
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=4).map(tuple),
            st.dictionaries(st.text(max_size=3), inner, max_size=4),
        ),
        max_leaves=24,
    )


def containers(value: Any) -> Iterator[Any]:
    if type(value) in (dict, list, tuple):
        yield value
        for item in value.values() if type(value) is dict else value:
            yield from containers(item)


def leaves(value: Any) -> Iterator[Any]:
    if type(value) in (dict, list, tuple):
        for item in value.values() if type(value) is dict else value:
            yield from leaves(item)
    else:
        yield value


@SETTINGS
@given(value=almost_json(), room=st.sampled_from([0, 1, 2, 3, MAX_DEPTH]))
def test_is_plain_and_plain_copy_answer_as_the_definition(value: Any, room: int) -> None:
    plain = is_plain(value, room)
    assert speedups.is_plain(value, room) is plain
    copied = speedups.plain_copy(value, room)
    if not plain:
        assert copied is None
        return
    # The same JSON, tuples as lists, keys in their order; new containers, the same leaves.
    assert orjson.dumps(copied) == orjson.dumps(value)
    assert all(type(c) in (dict, list) for c in containers(copied))
    assert not {id(c) for c in containers(copied)} & {id(c) for c in containers(value)}
    assert all(a is b for a, b in zip(leaves(copied), leaves(value), strict=True))


def test_the_depth_counts_containers() -> None:
    deep: Any = 1
    for level in range(MAX_DEPTH):
        deep = [deep] if level % 2 else {"k": deep}
    assert speedups.is_plain(deep, MAX_DEPTH)
    assert speedups.plain_copy(deep, MAX_DEPTH) == deep
    assert not speedups.is_plain([deep], MAX_DEPTH)
    assert speedups.plain_copy([deep], MAX_DEPTH) is None
    assert speedups.is_plain(1.5, 0)
    assert not speedups.is_plain([], 0)


def test_bad_arguments_are_refused_with_their_reason() -> None:
    with pytest.raises(TypeError, match=r"takes a value and a depth \(1 arguments given\)"):
        speedups.is_plain({})
    with pytest.raises(ValueError, match="depth must be between 0 and 1000, not -1"):
        speedups.plain_copy({}, -1)
    with pytest.raises(ValueError, match="not 1001"):
        speedups.is_plain({}, 1001)
    with pytest.raises(TypeError):
        speedups.is_plain({}, "deep")


@contextmanager
def helpers(built: bool) -> Iterator[None]:
    """The StateManager's paths with the compiled helpers, or without them (as where they
    are not built), whatever AGUI_REPLAY_PURE_PYTHON says."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_compiled, "is_plain", speedups.is_plain if built else None)
        patch.setattr(_compiled, "plain_copy", speedups.plain_copy if built else None)
        yield


def outcome(states: StateManager, value: Any) -> Any:
    try:
        result = states.publish(value)
    except PatchError as exc:
        return ("refused", str(exc))
    if isinstance(result, Delta):
        return ("delta", result.ops)
    if isinstance(result, Snapshot):
        return ("snapshot", orjson.dumps(result.value))
    assert isinstance(result, Unchanged)
    return ("unchanged",)


def blob(number: int) -> str:
    """A member that takes the state past 32 KB, where snapshots stay bytes: another one for
    each new document, so that a new document is a snapshot there too."""
    return str(number % 10) * 40_000


@settings(max_examples=80, deadline=None, database=None)
@given(
    first=json_documents(max_depth=3, max_leaves=40),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["fresh", "fresh and intrude", "edit", "intrude", "again"]),
            json_documents(max_depth=3, max_leaves=40),
            st.text(max_size=4),
            almost_json(max_depth=2),
        ),
        min_size=1,
        max_size=8,
    ),
    large=st.booleans(),
)
def test_the_state_manager_decides_the_same_with_and_without_the_helpers(
    first: dict[str, Any], steps: list[tuple[str, dict[str, Any], str, Any]], large: bool
) -> None:
    # The same publishes, fresh documents, edits in place, values that are not JSON, given to
    # two managers: every outcome, refusal message and published state must be the same.
    mine, theirs = StateManager(), StateManager()
    state = dict(first, blob=blob(0)) if large else first
    for number, (kind, document, key, value) in enumerate(steps, 1):
        if kind.startswith("fresh"):  # another document: mostly a snapshot
            state = dict(document, blob=blob(number)) if large else document
            if kind == "fresh and intrude":
                state[key] = value
        elif kind in ("edit", "intrude"):
            state[key] = value if kind == "intrude" else orjson.loads(orjson.dumps(document))
        twin = copy.deepcopy(state)
        with helpers(built=True):
            got = outcome(mine, state)
        with helpers(built=False):
            want = outcome(theirs, twin)
        assert got == want
        assert orjson.dumps(mine.published) == orjson.dumps(theirs.published)
        if got[0] == "refused":  # not JSON: take it out again, as a caller would
            state.pop(key, None)


def test_a_small_snapshot_keeps_a_copy_the_caller_cannot_reach() -> None:
    # Under 32 KB the snapshot keeps the compiled copy, whose leaves are the caller's own
    # strings: changing the caller's containers afterwards must not reach it.
    doc: dict[str, Any] = {"items": [{"name": "a", "tags": ["x"]}], "meta": {"n": 1}}
    doc["pad"] = "p" * 300  # so that the patch below is shorter than the state
    states = StateManager()
    with helpers(built=True):
        assert isinstance(states.publish(doc), Snapshot)
    assert type(states._baseline) is dict  # the copy, not the bytes
    doc["items"][0]["tags"].append("y")
    doc["items"].append({"name": "b", "tags": ()})
    doc["meta"]["n"] = 2
    before = {"items": [{"name": "a", "tags": ["x"]}], "meta": {"n": 1}, "pad": "p" * 300}
    assert states.published == before
    assert states.publish(doc) == Delta(
        [
            {"op": "add", "path": "/items/0/tags/1", "value": "y"},
            {"op": "add", "path": "/items/1", "value": {"name": "b", "tags": []}},
            {"op": "replace", "path": "/meta/n", "value": 2},
        ]
    )
    assert orjson.dumps(states.published) == orjson.dumps(doc)


def test_the_environment_variable_turns_the_helpers_off() -> None:
    # As a user would: AGUI_REPLAY_PURE_PYTHON=1 in the environment of a new interpreter.
    code = (
        "from agui_replay import _compiled; from agui_replay.state import StateManager; "
        "s = StateManager(); s.publish({'a': 1}); s.publish({'a': 2}); "
        "print(_compiled.BUILT, _compiled.is_plain, _compiled.plain_copy)"
    )
    for value, expected in (("1", "True None None"), ("0", "True <built-in")):
        env = dict(os.environ, AGUI_REPLAY_PURE_PYTHON=value)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.startswith(expected), out


def test_with_the_compiled_check_a_sketch_keeps_its_strings() -> None:
    # marshal tracks a string referenced twice as a shared object, so without the compiled
    # check the sketch of a state over 32 KB hashes its strings before the same object is
    # checked again. The compiled check counts no references: the strings stay, unhashed.
    doc = {"items": [{"name": f"item {i}", "note": f"note {i} " * 5} for i in range(700)]}
    states = StateManager()
    with helpers(built=True):
        assert isinstance(states.publish(doc), Snapshot)
        assert states._sketch is not None
        assert states._sketch.values
        doc["items"][5]["name"] = "renamed"
        assert states.publish(doc) == Delta(
            [{"op": "replace", "path": "/items/5/name", "value": "renamed"}]
        )
        assert states._sketch is not None
        assert states._sketch.values
    with helpers(built=False):
        hashed = StateManager()
        hashed.publish(doc)
        doc["items"][5]["name"] = "again"
        hashed.publish(doc)
        assert hashed._sketch is not None
        assert not hashed._sketch.values
