"""patch.diff_in_place, the StateManager's diff: the document it patches in place is the new
value's JSON, its patch is diff's, a type change that ``==`` hides is found, and a limit it
reaches leaves the document as it was."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.patch import apply_patch, diff, diff_in_place
from agui_replay.patch._json import compact_json
from agui_replay.state import Delta, StateManager

PAD = "p" * 400  # a long member, so that small patches are shorter than the document


def strict(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def doc() -> dict[str, Any]:
    return {
        "meta": {"title": "t", "count": 3},
        "log": [{"n": n, "text": f"entry {n}"} for n in range(4)],
        "tags": ["a", "b"],
        "pad": PAD,
    }


def diffed(old: Any, new: Any) -> tuple[list[dict[str, Any]], Any]:
    """The diff of a private copy of ``old`` to ``new`` in place, checked."""
    new_bytes = orjson.dumps(new)
    baseline = orjson.loads(orjson.dumps(old))
    result = diff_in_place(baseline, new, new_json=new_bytes, limit=len(new_bytes))
    assert result is not None, "the patch came out longer than the document"
    ops, patched = result
    assert patched is baseline
    assert strict(patched) == strict(new)
    assert strict(apply_patch(old, ops)) == strict(new)
    assert len(compact_json(ops)) == len(compact_json(diff(old, new)))
    return ops, patched


def _append_two(d: dict[str, Any]) -> None:
    d["log"] += [{"n": 4, "text": "x"}, {"n": 5, "text": "y"}]


def _one_tag(d: dict[str, Any]) -> None:
    d["tags"] = ["a"]


def _one_setting(d: dict[str, Any]) -> None:
    d["meta"] = {"k": 1}


def _twin_entries(d: dict[str, Any]) -> None:
    d["log"] = [{"n": 1}, {"n": 1}]


def _one_twin(d: dict[str, Any]) -> None:
    d["meta"], d["other"] = {"k": 1}, {"k": 1, "z": 2}


Change = Callable[[dict[str, Any]], object]

# name: (what the old document is made into first, or None; the change to the new one)
SHAPES: dict[str, tuple[Change | None, Change]] = {
    "replace a member": (None, lambda d: d["meta"].update(title="u")),
    "replace a number by one it begins": (None, lambda d: d["meta"].update(count=34)),
    "replace in two objects": (None, lambda d: (d["log"][1].update(text="x"), d.update(pad="q"))),
    "replace an item": (None, lambda d: d["tags"].__setitem__(1, "c")),
    "append an item": (None, lambda d: d["log"].append({"n": 4, "text": "entry 4"})),
    "append two items": (None, _append_two),
    "insert an item first": (None, lambda d: d["log"].insert(0, {"n": -1, "text": "first"})),
    "insert an item inside": (None, lambda d: d["log"].insert(2, {"n": 9, "text": "inside"})),
    "remove the first item": (None, lambda d: d["log"].pop(0)),
    "remove an inner item": (None, lambda d: d["log"].pop(2)),
    "remove the last item": (None, lambda d: d["log"].pop()),
    "remove the only item": (_one_tag, lambda d: d["tags"].pop()),
    "add a member": (None, lambda d: d["meta"].update(extra=[1, 2])),
    "add a member to the root": (None, lambda d: d.update(step=1)),
    "remove the first member": (None, lambda d: d["meta"].pop("title")),
    "remove the last member": (None, lambda d: d["meta"].pop("count")),
    "remove the only member": (_one_setting, lambda d: d["meta"].pop("k")),
    # the bracket or braces around the old bytes make them occur once
    "append after an item that occurs twice": (_twin_entries, _append_two),
    "remove the only member, also in another object": (_one_twin, lambda d: d["meta"].pop("k")),
    # replacements and an edit in the same container
    "replace an item and append": (None, lambda d: (d["log"].__setitem__(0, "x"), _append_two(d))),
    "replace a member and add one": (None, lambda d: d["meta"].update(title="v", new=1)),
}


def _pair(prepare: Change | None, change: Change) -> tuple[dict[str, Any], dict[str, Any]]:
    old = doc()
    if prepare is not None:
        prepare(old)
    new = copy.deepcopy(old)
    change(new)
    return old, new


@pytest.mark.parametrize(("prepare", "change"), SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_patches_the_document_into_the_new_value(
    prepare: Change | None, change: Change
) -> None:
    old, new = _pair(prepare, change)
    diffed(old, new)


@pytest.mark.parametrize(("prepare", "change"), SHAPES.values(), ids=SHAPES.keys())
def test_a_type_change_that_equality_hides_is_found(prepare: Change | None, change: Change) -> None:
    # [1.0, True] -> [True, 1.0]: == takes them for equal, and the length does not change
    old, new = _pair(prepare, change)
    old["hidden"] = [1.0, True]
    new["hidden"] = [True, 1.0]
    ops, _ = diffed(old, new)
    assert {"op": "replace", "path": "/hidden/0", "value": True} in ops


def _the_texts_and_the_count(d: dict[str, Any]) -> None:
    for item in d["log"]:
        item["text"] = "z"
    d["meta"]["count"] = 9


OTHER_SHAPES: dict[str, Change] = {
    "two additions to one object": lambda d: d["meta"].update(a=1, b=2),
    "two removals from one list": lambda d: (d["log"].pop(0), d["log"].pop()),
    "five replacements": _the_texts_and_the_count,
    "every item removed": lambda d: d["log"].clear(),
    "a member removed from an item, an item appended": lambda d: (
        d["log"][0].pop("text"),
        d["log"].append({"n": 9}),
    ),
}


@pytest.mark.parametrize("change", OTHER_SHAPES.values(), ids=OTHER_SHAPES.keys())
def test_more_places_and_other_edits(change: Change) -> None:
    diffed(*_pair(None, change))


def test_an_addition_to_an_empty_container() -> None:
    assert diffed({"list": [], "pad": PAD}, {"list": [1], "pad": PAD})[0] == [
        {"op": "add", "path": "/list/0", "value": 1}
    ]
    assert diffed({"map": {}, "pad": PAD}, {"map": {"k": 1}, "pad": PAD})[0] == [
        {"op": "add", "path": "/map/k", "value": 1}
    ]


def test_a_replacement_whose_old_bytes_occur_twice() -> None:
    old = {"a": {"k": "same"}, "b": {"k": "same"}, "pad": PAD}
    new = copy.deepcopy(old)
    new["b"]["k"] = "other"
    ops, _ = diffed(old, new)
    assert ops == [{"op": "replace", "path": "/b/k", "value": "other"}]


def test_a_removal_that_equality_hides_a_type_change_in_is_exact() -> None:
    # == takes {"n":0} for {"n":0.0}: the walk keeps the first three items and removes the
    # last one, {"n":0.0}, whose bytes (with the comma before them) are also those of the
    # second; the result's bytes are not the new state's, and the strict diff settles it.
    zero, other = {"n": 0.0}, {"n": 0}
    old = {"items": [{"n": 1}, zero, other, zero], "pad": PAD}
    new = {"items": [{"n": 1}, other, zero], "pad": PAD}
    diffed(old, new)
    states = StateManager()
    states.publish(old)
    states.publish({**old, "pad": PAD + "!"})  # a delta: the baseline is decoded from here on
    client = {**copy.deepcopy(old), "pad": PAD + "!"}
    result = states.publish({**new, "pad": PAD + "!"})
    assert isinstance(result, Delta)
    assert strict(apply_patch(client, result.ops)) == strict({**new, "pad": PAD + "!"})


def test_a_state_manager_appending_to_a_log_sends_each_entry_as_a_delta() -> None:
    state = doc()
    states = StateManager()
    client = copy.deepcopy(state)
    states.publish(state)
    for n in range(4, 40):
        state["log"].append({"n": n, "text": f"entry {n}"})
        if n % 3 == 0:
            state["meta"]["count"] = n
        result = states.publish(state)
        assert isinstance(result, Delta), result
        client = apply_patch(client, result.ops)
        assert strict(client) == strict(state)
    assert strict(states.published) == strict(state)


# ---------------------------------------------------------------------------------- property

LEAVES = st.sampled_from([0, 1, 1.0, True, False, None, "", "a", "entry 1", -0.0, 0.0])


def _mutate(rng: random.Random, value: dict[str, Any], leaves: list[Any]) -> None:
    containers: list[Any] = [value]
    for node in containers:
        children = node.values() if isinstance(node, dict) else node
        containers += [c for c in children if isinstance(c, (dict, list))]
    for _ in range(rng.randint(1, 3)):
        node = rng.choice(containers)
        action = rng.choice(["set", "add", "remove", "retype"])
        if isinstance(node, dict):
            keys = sorted(k for k in node if k != "pad")
            if action == "add" or not keys:
                node[rng.choice(["x", "y", "n", "text"])] = rng.choice(leaves)
            elif action == "remove" and node is not value:
                del node[rng.choice(keys)]
            else:
                key = rng.choice(keys)
                old = node[key]
                node[key] = _retyped(old) if action == "retype" else rng.choice(leaves)
        elif action == "add" or not node:
            node.insert(rng.randint(0, len(node)), rng.choice(leaves))
        elif action == "remove":
            node.pop(rng.randrange(len(node)))
        else:
            i = rng.randrange(len(node))
            node[i] = _retyped(node[i]) if action == "retype" else rng.choice(leaves)


def _retyped(value: Any) -> Any:
    swaps = [(1, True), (True, 1.0), (1.0, 1), (0, False), (False, 0.0)]  # == for == (a dict
    # would take them for one key)
    for old, new in swaps:
        if type(value) is type(old) and value == old:
            return new
    return value


def _start(rng: random.Random, leaves: list[Any]) -> dict[str, Any]:
    return {
        "items": [
            {"n": rng.choice(leaves), "text": rng.choice(leaves), "l": [rng.choice(leaves)]}
            for _ in range(rng.randint(0, 5))
        ],
        "flags": [rng.choice(leaves) for _ in range(rng.randint(0, 3))],
        "pad": PAD,
    }


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), leaves=st.lists(LEAVES, min_size=1, max_size=6))
def test_property_the_patched_document_is_the_new_value_or_untouched(
    seed: int, leaves: list[Any]
) -> None:
    rng = random.Random(seed)
    old = _start(rng, leaves)
    new = copy.deepcopy(old)
    _mutate(rng, new, leaves)
    if len(compact_json(diff(old, new))) >= len(orjson.dumps(new)):
        # Many edits can outgrow the document: then the walk must stop (a snapshot).
        baseline = orjson.loads(orjson.dumps(old))
        assert diff_in_place(baseline, new, limit=len(orjson.dumps(new))) is None
        assert strict(baseline) == strict(old)  # and leave the baseline as it was
        return
    diffed(old, new)
