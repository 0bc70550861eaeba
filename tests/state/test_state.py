"""StateManager (snapshot / delta / unchanged), the variants' events, and input-state decoding."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import orjson
import pytest
from ag_ui.core import StateDeltaEvent, StateSnapshotEvent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from agui_replay.errors import AguiReplayError, PatchError, StateDecodeError
from agui_replay.events import to_wire
from agui_replay.patch import MAX_DEPTH, apply_patch, diff, json_equal
from agui_replay.state import (
    Delta,
    Snapshot,
    StateManager,
    Unchanged,
    decode_state,
    encode_state,
)
from tests.support.state_rule import compact_json

# A smaller copy of test_patch's generators (test modules are not importable from each other).
KEYS = st.sampled_from(["", "~", "/", "~1", "0", "é", "a"]) | st.text(max_size=3)
TRAPS = st.sampled_from([0, 1, 0.0, -0.0, 1.0, True, False, None, "1", 2**64])
JSON = st.recursive(
    TRAPS | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=25,
)


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return bool(value) if value in (0, 1) else float(value) if abs(value) < 2**53 else value
    if isinstance(value, float) and value.is_integer():
        return -value if value == 0 else int(value)
    return value


@st.composite
def _mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with a few in-place edits: set, insert, remove, or a type-only change."""
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(1, 4))):
        containers = [value] if isinstance(value, (dict, list)) else []
        for node in containers:  # grows while iterating: a breadth-first walk
            children = node.values() if isinstance(node, dict) else node
            containers += [c for c in children if isinstance(c, (dict, list))]
        if not containers:
            return draw(JSON)
        node = draw(st.sampled_from(containers))
        action = draw(st.sampled_from(["set", "insert", "remove", "retype"]))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) if node and action != "insert" else KEYS)
            if action == "remove" and key in node:
                del node[key]
            elif action == "retype" and key in node:
                node[key] = _retyped(node[key])
            else:
                node[key] = draw(JSON)
        elif action == "insert" or not node:
            node.insert(draw(st.integers(0, len(node))), draw(JSON))
        else:
            index = draw(st.integers(0, len(node) - 1))
            if action == "remove":
                node.pop(index)
            elif action == "retype":
                node[index] = _retyped(node[index])
            else:
                node[index] = draw(JSON)
    return value


NOTES = "the document the user is editing, at some length"


def strict(value: Any) -> bytes:
    """Type-strict bytes: 1, 1.0 and true differ, key order does not."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


# ------------------------------------------------------------------------------ the basic outcomes


def test_first_publish_is_a_snapshot_then_delta_then_unchanged() -> None:
    states = StateManager()
    first = states.publish({"step": 1, "notes": NOTES})
    assert isinstance(first, Snapshot)
    assert first == Snapshot({"step": 1, "notes": NOTES})
    assert states.publish({"step": 2, "notes": NOTES}) == Delta(
        [{"op": "replace", "path": "/step", "value": 2}]
    )
    assert states.publish({"step": 2, "notes": NOTES}) == Unchanged()


def test_small_document_replaced_whole_is_a_snapshot() -> None:
    small = StateManager()
    small.publish({"a": 1})
    # patch [remove /a, add /b 2] is 56 bytes, the state {"b":2} is 7
    assert small.publish({"b": 2}) == Snapshot({"b": 2})


def test_first_publish_is_a_snapshot_whatever_its_size() -> None:
    for value in [{}, [], None, 0, "x", {"big": NOTES * 100}]:
        assert StateManager().publish(value) == Snapshot(value)


def test_reset_forgets_the_baseline() -> None:
    states = StateManager()
    states.publish({"step": 1, "notes": NOTES})
    states.reset()
    assert states.published is None
    assert states.publish({"step": 1, "notes": NOTES}) == Snapshot({"step": 1, "notes": NOTES})


def test_size_rule_is_strictly_smaller() -> None:
    patch = [{"op": "replace", "path": "/k", "value": 2}]
    # pad an unchanged member until the new state is exactly as long as the patch
    pad = "p" * (len(compact_json(patch)) - len(compact_json({"k": 2, "pad": ""})))
    states = StateManager()
    states.publish({"k": 1, "pad": pad})
    assert len(compact_json(patch)) == len(compact_json({"k": 2, "pad": pad}))
    assert states.publish({"k": 2, "pad": pad}) == Snapshot({"k": 2, "pad": pad})
    # one more byte of unchanged state tips it to a delta
    states = StateManager()
    states.publish({"k": 1, "pad": pad + "p"})
    assert states.publish({"k": 2, "pad": pad + "p"}) == Delta(patch)


# ----------------------------------------------------------------------- JSON strictness, copies


@pytest.mark.parametrize(
    ("old", "new"), [(1, 1.0), (1, True), (0, False), (1.0, True), (0.0, -0.0), (None, False)]
)
def test_type_only_changes_are_never_unchanged(old: Any, new: Any) -> None:
    for wrap in (
        lambda v: v,
        lambda v: {"v": v, "pad": NOTES},
        lambda v: {"l": [v, 2], "p": NOTES},
    ):
        states = StateManager()
        states.publish(wrap(old))
        result = states.publish(wrap(new))
        assert not isinstance(result, Unchanged), (old, new)
        assert json_equal(states.published, wrap(new))
        if isinstance(result, Delta):
            assert json_equal(apply_patch(wrap(old), result.ops), wrap(new))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ([1, 2], [1.0, 2]),
        ([1, 2], [True, 2]),
        ([1, 1.0], [1.0, 1]),  # the same length: only the bytes themselves tell
        ([1.0, True], [True, 1.0]),
        ([0.0, -0.0], [-0.0, 0.0]),
    ],
)
def test_a_type_change_that_equality_hides_beside_a_real_change(old: Any, new: Any) -> None:
    # The walk compares the short list with ==, which takes 1.0 for 1; the replacement beside
    # it is checked by splicing it into the baseline's bytes (patch._splice), and the hidden
    # change must still reach the client.
    def doc(hidden: Any, name: str) -> dict[str, Any]:
        return {"list": hidden, "name": name, "pad": NOTES * 4}

    states = StateManager()
    states.publish(doc(old, "a"))
    assert isinstance(states.publish(doc(old, "b")), Delta)  # the baseline is decoded now
    result = states.publish(doc(new, "c"))
    assert isinstance(result, Delta), result
    assert strict(apply_patch(doc(old, "b"), result.ops)) == strict(doc(new, "c"))
    assert strict(states.published) == strict(doc(new, "c"))
    assert states.publish(doc(new, "c")) == Unchanged()


def test_a_replacement_whose_old_bytes_occur_twice_is_still_exact() -> None:
    # "name":"same" is in both objects: the splice cannot tell which one changed, so the
    # patched baseline is encoded whole; a hidden True for 1 is caught either way.
    doc = {"a": {"name": "same", "n": [1]}, "b": {"name": "same", "n": [1]}, "pad": NOTES}
    states = StateManager()
    states.publish(doc)
    doc["pad"] = NOTES + "!"
    states.publish(doc)  # decoded from here on
    doc["b"]["name"] = "other"
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/b/name", "value": "other"}])
    doc["a"]["name"], doc["b"]["n"] = "renamed", [True]
    result = states.publish(doc)
    assert isinstance(result, Delta)
    assert strict(states.published) == strict(doc)
    assert {op["path"] for op in result.ops} == {"/a/name", "/b/n/0"}


def test_key_order_alone_is_unchanged() -> None:
    states = StateManager()
    states.publish({"a": 1, "b": [1, {"c": 2, "d": 3}]})
    assert states.publish({"b": [1, {"d": 3, "c": 2}], "a": 1}) == Unchanged()


def test_baseline_is_independent_of_the_callers_object() -> None:
    doc = {"step": 1, "notes": [NOTES], "deep": {"x": [1]}}
    states = StateManager()
    first = states.publish(doc)
    doc["deep"]["x"].append(2)  # mutate in place after publishing
    doc["notes"].append("more")
    assert states.published == {"step": 1, "notes": [NOTES], "deep": {"x": [1]}}
    assert isinstance(first, Snapshot)
    assert first.value == {"step": 1, "notes": [NOTES], "deep": {"x": [1]}}
    result = states.publish(doc)
    assert isinstance(result, Delta)
    assert json_equal(apply_patch(first.value, result.ops), doc)
    # mutating what publish returned, or what published gave, cannot reach the baseline
    result.ops.clear()
    states.published["deep"]["x"].clear()  # type: ignore[index]
    assert states.publish(doc) == Unchanged()


def test_delta_values_are_copies() -> None:
    doc: dict[str, Any] = {"pad": NOTES, "items": []}
    states = StateManager()
    states.publish(doc)
    doc["items"].append({"title": "a"})
    result = states.publish(doc)
    assert result == Delta([{"op": "add", "path": "/items/0", "value": {"title": "a"}}])
    doc["items"][0]["title"] = "changed"
    assert isinstance(result, Delta)
    assert result.ops[0]["value"] == {"title": "a"}


def test_unchanged_detects_in_place_mutation() -> None:
    doc = {"items": [{"n": i} for i in range(50)]}
    states = StateManager()
    states.publish(doc)
    doc["items"][17]["n"] = True  # was 17: also different from the baseline
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/items/17/n", "value": True}])
    doc["items"][17]["n"] = 1  # True -> 1: == in Python, another JSON value
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/items/17/n", "value": 1}])
    doc["items"][3:5] = [{"n": 3.0}, {"n": 4}]  # 3 -> 3.0 hidden inside an "equal" object
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/items/3/n", "value": 3.0}])


def test_bad_values_raise_patch_error_and_keep_the_baseline() -> None:
    states = StateManager()
    states.publish({"a": 1, "pad": NOTES})
    nested: Any = 1
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    for bad, reason in [
        ({"a": float("nan"), "pad": NOTES}, "NaN"),
        ({"a": [float("inf")], "pad": NOTES}, "inf"),
        ({"a": {1: 2}, "pad": NOTES}, "JSON keys are strings"),
        ({"a": object(), "pad": NOTES}, "object is not a JSON value"),
        ({"a": nested, "pad": NOTES}, f"MAX_DEPTH={MAX_DEPTH}"),
    ]:
        with pytest.raises(PatchError, match=reason):
            states.publish(bad)
    assert states.published == {"a": 1, "pad": NOTES}
    for bad in [float("nan"), {"a": float("nan")}, [nested]]:
        with pytest.raises(PatchError):
            StateManager().publish(bad)


@pytest.mark.parametrize("extra", [0, 5, 100])
def test_too_deep_after_a_delta_is_refused_as_a_delta_or_as_a_snapshot(extra: int) -> None:
    # After a delta the baseline is decoded and the next state is diffed from it: nesting
    # deeper than MAX_DEPTH is refused whether the outcome would be a delta (the operation's
    # value) or a snapshot, up to depths that orjson itself writes without complaint (254).
    nested: Any = 1
    for _ in range(MAX_DEPTH + extra):  # with the object and the list around it: 2 more
        nested = [nested]
    states = StateManager()
    states.publish({"a": 1, "pad": NOTES})
    assert isinstance(states.publish({"a": 2, "pad": NOTES}), Delta)  # decodes the baseline
    small = {"a": [nested], "pad": NOTES}  # a patch shorter than the state: a delta's copy
    whole = {"b": [nested], "other": NOTES[::-1] * 3}  # a new document: a snapshot
    for bad in (small, whole):
        with pytest.raises(PatchError, match=f"MAX_DEPTH={MAX_DEPTH}"):
            states.publish(bad)
        assert states.published == {"a": 2, "pad": NOTES}
    # MAX_DEPTH levels are still fine, in both outcomes
    fine: Any = 1
    for _ in range(MAX_DEPTH - 2):
        fine = [fine]
    assert isinstance(states.publish({"a": [fine], "pad": NOTES}), Delta)
    assert isinstance(states.publish({"a": 2, "pad": NOTES}), Delta)
    assert isinstance(states.publish({"b": [fine], "other": NOTES[::-1] * 3}), Snapshot)


def test_nan_behind_an_equal_null_is_refused() -> None:
    states = StateManager()
    states.publish({"a": None, "pad": NOTES})
    with pytest.raises(PatchError, match="NaN"):
        states.publish({"a": float("nan"), "pad": NOTES})  # same bytes as the baseline


def test_a_long_list_shifted_between_two_insertions_diffs_only_that_stretch() -> None:
    items = [{"id": i, "name": f"item {i}", "done": i % 3 == 0} for i in range(300)]
    shifted = [{"id": -1}, *items[:40], {"id": -2}, *items[40:]]
    states = StateManager()
    states.publish({"items": items})
    result = states.publish({"items": copy.deepcopy(shifted)})
    assert isinstance(result, Delta)
    assert result.ops == diff({"items": items}, {"items": shifted})
    assert max(int(op["path"].split("/")[2]) for op in result.ops) == 41
    assert json_equal(states.published, {"items": shifted})


@pytest.mark.parametrize("variant", ["scalars", "retyped", "nested"])
def test_many_objects_changed_member_by_member_keep_the_per_object_order(variant: str) -> None:
    items = [{"id": i, "n": i, "f": 0.5, "s": "x", "tags": ["a"]} for i in range(100)]
    states = StateManager()
    states.publish({"pad": NOTES * 600, "items": items})
    new = copy.deepcopy(items)
    for item in new:
        # 1 -> True is == in Python: a type-only change
        item["n"] = bool(item["n"] % 2) if variant == "retyped" else item["n"] + 1000
        item["s"] = "y"
        item["f"] = 1.5
    if variant == "nested":  # one member that is not a scalar
        new[7]["tags"].append("b")
    result = states.publish({"pad": NOTES * 600, "items": new})
    assert isinstance(result, Delta)
    expected = diff({"pad": NOTES * 600, "items": items}, {"pad": NOTES * 600, "items": new})
    assert result.ops == expected
    assert [op["path"] for op in result.ops[:4]] == [
        "/items/0/n",
        "/items/0/f",
        "/items/0/s",
        "/items/1/n",
    ]
    assert json_equal(states.published, {"pad": NOTES * 600, "items": new})


@pytest.mark.parametrize("changes", [1, 2])
@pytest.mark.parametrize("keys", ["reordered", "renamed"])
def test_many_objects_with_their_keys_in_other_orders_diff_as_each_alone(
    changes: int, keys: str
) -> None:
    # The members of many changed objects are compared a key at a time across all of them;
    # objects whose keys come in another order (or are other keys, as many) must still get
    # their operations in their own key order, as the full diff gives them.
    items = [{"id": i, "n": i, "s": "x", "pad": NOTES * 3} for i in range(100)]
    states = StateManager()
    states.publish({"items": items})
    new = copy.deepcopy(items)
    for item in new:
        item["n"] += 1000
        if changes == 2:
            item["s"] = "y"
    for index in (0, 5, 50):
        if keys == "reordered":
            new[index] = dict(reversed(list(new[index].items())))
        else:
            new[index] = {"id": index, "m": 1, "s": new[index]["s"], "pad": NOTES * 3}
    result = states.publish({"items": new})
    assert isinstance(result, Delta)
    assert result.ops == diff({"items": items}, {"items": new})
    assert json_equal(states.published, {"items": new})


def test_a_bad_float_in_a_long_list_names_its_place_and_keeps_the_baseline() -> None:
    items = [{"id": i, "score": 0.5} for i in range(100)]
    states = StateManager()
    states.publish({"pad": NOTES * 100, "items": items})
    new = copy.deepcopy(items)
    for item in new:
        item["score"] = 2.5
    new[60]["score"] = float("inf")
    with pytest.raises(PatchError, match="/items/60/score"):
        states.publish({"pad": NOTES * 100, "items": new})
    assert states.published == {"pad": NOTES * 100, "items": items}


def test_after_a_snapshot_the_previous_object_only_helps_while_its_json_is_unchanged() -> None:
    items = [{"id": i, "name": f"item {i}"} for i in range(200)]
    first = {"items": copy.deepcopy(items)}
    states = StateManager()
    assert isinstance(states.publish(first), Snapshot)
    # The published object is rewritten into another document: the baseline is still the old one.
    for item in first["items"]:
        item["name"] = "renamed"
    close = {"items": copy.deepcopy(items)}
    close["items"][5]["name"] = "five"
    assert states.publish(close) == Delta(
        [{"op": "replace", "path": "/items/5/name", "value": "five"}]
    )
    # Snapshot after snapshot, from distinct objects left alone: each one diffs from the last.
    other = {"items": [{"id": -i, "name": f"other {i}"} for i in range(200)]}
    assert states.publish(other) == Snapshot(other)
    assert states.publish({"items": copy.deepcopy(items)}) == Snapshot({"items": items})
    assert states.publish(copy.deepcopy(other)) == Snapshot(other)
    assert states.publish(copy.deepcopy(other)) == Unchanged()
    assert states.published == other


def test_tuples_that_encode_as_the_baseline_lists_do_not_force_a_snapshot() -> None:
    """A tuple is never ``==`` the list it encodes as: the walk's early "a snapshot is due"
    count must not take such members for changes. Four long notes change in 400 objects whose
    tuple members encode as the baseline's lists: a delta of four replacements, after a
    snapshot (the baseline is the previous object) and after a delta (a decoded baseline)."""

    def items(*, tuples: bool, long_notes: bool) -> dict[str, Any]:
        pair: Any = ("a", "b") if tuples else ["a", "b"]
        return {
            "items": [
                {"id": i, "tags": pair, "note": "y" * 300 if long_notes and i < 4 else "x"}
                for i in range(400)
            ]
        }

    expected = Delta(
        [{"op": "replace", "path": f"/items/{i}/note", "value": "y" * 300} for i in range(4)]
    )
    after_snapshot = StateManager()
    after_snapshot.publish(items(tuples=False, long_notes=False))
    assert after_snapshot.publish(items(tuples=True, long_notes=True)) == expected
    after_delta = StateManager()
    first = items(tuples=False, long_notes=False)
    after_delta.publish(first)
    first["items"][0]["note"] = "y" * 300
    assert isinstance(after_delta.publish(first), Delta)
    assert after_delta.publish(items(tuples=True, long_notes=True)) == Delta(expected.ops[1:])


def test_snapshots_of_tuples_enums_and_uuids() -> None:
    import enum
    import uuid

    class Level(enum.IntEnum):
        HIGH = 3

    class Color(enum.Enum):
        RED = "red"

    states = StateManager()
    assert states.publish({"p": (1, 2), "n": Level.HIGH, "pad": NOTES}) == Snapshot(
        {"p": [1, 2], "n": 3, "pad": NOTES}
    )
    assert states.publish({"p": [1, 2, 3], "n": 3, "pad": NOTES}) == Delta(
        [{"op": "add", "path": "/p/2", "value": 3}]
    )
    for bad in ({"c": Color.RED, "pad": NOTES}, {"u": uuid.uuid4(), "pad": NOTES}):
        with pytest.raises(PatchError, match="not a JSON value"):
            StateManager().publish(bad)
        with pytest.raises(PatchError, match="not a JSON value"):
            states.publish(bad)
    assert states.published == {"p": [1, 2, 3], "n": 3, "pad": NOTES}


# ------------------------------------------------------------------------- typed states, events


class Doc(BaseModel):
    step: int = 0
    notes: list[str] = Field(default_factory=list)
    label: str = Field(default="x", alias="Label")


@dataclasses.dataclass
class Board:
    tasks: list[str] = dataclasses.field(default_factory=list)


def test_publish_accepts_pydantic_models_and_dataclasses() -> None:
    states = StateManager()
    assert states.publish(Doc(step=1, notes=[NOTES])) == Snapshot(
        {"step": 1, "notes": [NOTES], "Label": "x"}  # aliases: what decode_state reads back
    )
    assert states.publish(Doc(step=2, notes=[NOTES])) == Delta(
        [{"op": "replace", "path": "/step", "value": 2}]
    )
    boards = StateManager()
    assert boards.publish(Board()) == Snapshot({"tasks": []})
    assert boards.publish(Board(tasks=["ship it"])) == Snapshot({"tasks": ["ship it"]})


def test_encode_state() -> None:
    plain = {"a": [1]}
    assert encode_state(plain) is plain
    assert encode_state(Board(tasks=["t"])) == {"tasks": ["t"]}
    assert encode_state(Doc(Label="y")) == {"step": 0, "notes": [], "Label": "y"}
    with pytest.raises(StateDecodeError) as info:
        encode_state(object())
    assert info.value.code == "SERIALIZATION"
    assert isinstance(info.value, AguiReplayError)


def test_to_event_gives_the_state_events() -> None:
    snapshot = Snapshot({"a": [1, None]}).to_event()
    assert isinstance(snapshot, StateSnapshotEvent)
    assert to_wire(snapshot) == {"type": "STATE_SNAPSHOT", "snapshot": {"a": [1, None]}}
    ops = [
        {"op": "replace", "path": "/a", "value": None},
        {"op": "move", "from": "/b", "path": "/c"},
        {"op": "add", "path": "/d", "value": 1.0},
    ]
    delta = Delta(ops).to_event()
    assert isinstance(delta, StateDeltaEvent)
    assert to_wire(delta) == {"type": "STATE_DELTA", "delta": ops}
    assert Unchanged().to_event() is None


def test_variant_equality_is_json_strict() -> None:
    assert Snapshot(1) != Snapshot(True)
    assert Snapshot(1) != Snapshot(1.0)
    assert Snapshot({"a": 1, "b": 2}) == Snapshot({"b": 2, "a": 1})
    assert Delta([{"op": "add", "path": "/a", "value": 1}]) != Delta(
        [{"op": "add", "path": "/a", "value": True}]
    )
    assert Unchanged() == Unchanged()
    assert Snapshot(None) != Unchanged()
    assert Snapshot([]) != Delta([])
    assert repr(Delta([])) == "Delta([])"


def test_variants_support_match() -> None:
    match StateManager().publish({"a": 1}):
        case Snapshot(value):
            assert value == {"a": 1}
        case _:
            pytest.fail("expected a snapshot")


# ----------------------------------------------------------------------------------- decode_state


class Counter(BaseModel):
    clicks: int = 0


@dataclasses.dataclass
class DataCounter:
    clicks: int = 0


class DictCounter(TypedDict, total=False):
    clicks: int


class Required(BaseModel):
    name: str


@pytest.mark.parametrize("state_type", [Counter, DataCounter, DictCounter, dict])
@pytest.mark.parametrize("raw", [None, {}])
def test_no_state_gives_the_default(state_type: Any, raw: Any) -> None:
    assert decode_state(raw, state_type) == state_type()


@pytest.mark.parametrize(
    ("state_type", "expected"),
    [
        (Counter, Counter(clicks=3)),
        (DataCounter, DataCounter(clicks=3)),
        (DictCounter, {"clicks": 3}),
    ],
)
def test_a_fitting_state_decodes(state_type: Any, expected: Any) -> None:
    assert decode_state({"clicks": 3}, state_type) == expected


@pytest.mark.parametrize("state_type", [Counter, DataCounter, DictCounter])
def test_a_state_that_does_not_fit_is_a_serialization_error(state_type: Any) -> None:
    with pytest.raises(StateDecodeError) as info:
        decode_state({"clicks": "three"}, state_type)
    error = info.value
    assert error.code == "SERIALIZATION"
    message = str(error)
    assert state_type.__name__ in message
    assert "clicks" in message
    assert "'three'" in message
    assert "null / {} for its defaults" in message


def test_nested_field_is_named() -> None:
    class Outer(BaseModel):
        inner: Counter = Field(default_factory=Counter)

    with pytest.raises(StateDecodeError, match=r"field inner\.clicks"):
        decode_state({"inner": {"clicks": [1]}}, Outer)
    with pytest.raises(StateDecodeError, match="field"):
        decode_state([1, 2], Outer)


def test_a_type_pydantic_cannot_handle_is_a_clear_error() -> None:
    class Opaque:
        def __init__(self, clicks: int = 0) -> None:
            self.clicks = clicks

    with pytest.raises(StateDecodeError, match="Opaque cannot be used as a state type"):
        decode_state({"clicks": 1}, Opaque)


def test_a_type_without_defaults_says_how_to_fix() -> None:
    with pytest.raises(StateDecodeError, match="give every field of Required a default"):
        decode_state(None, Required)
    assert decode_state({"name": "n"}, Required) == Required(name="n")


# -------------------------------------------------------------------------------------- property


@pytest.mark.parametrize("pad", [0, 300])  # 300: a long member beside, so deltas are common
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), start=JSON)
def test_property_published_sequence_replays_to_the_last_state(
    data: st.DataObject, start: Any, pad: int
) -> None:
    states = StateManager()
    client: Any = None
    doc = start
    for step in range(data.draw(st.integers(1, 6))):
        if step:
            doc = data.draw(_mutated(doc) | JSON)
        current = {"doc": doc, "pad": "p" * pad} if pad else doc
        sent = copy.deepcopy(current)
        result = states.publish(current)
        match result:
            case Snapshot(value):
                client = value
            case Delta(ops):
                assert ops
                assert len(compact_json(ops)) < len(compact_json(current))
                client = apply_patch(client, ops)
            case Unchanged():
                assert step > 0
        assert json_equal(client, current), (result, client, current)
        assert json_equal(states.published, current)
        assert json_equal(current, sent)  # publish never touches the caller's value


def test_encode_then_decode_keeps_fields_of_a_camel_case_model() -> None:
    from pydantic import ConfigDict
    from pydantic.alias_generators import to_camel

    class Board(BaseModel):
        model_config = ConfigDict(alias_generator=to_camel)
        next_id: int = 0

    encoded = encode_state(Board(nextId=3))
    assert encoded == {"nextId": 3}
    assert decode_state(encoded, Board).next_id == 3
