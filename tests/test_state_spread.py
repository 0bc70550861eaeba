"""The StateManager after a snapshot, for a change spread over a long list of objects: the
objects whose bytes changed are found by splitting both encodings of the list between its
objects (patch._spread), and only those are decoded and diffed. Every outcome must be the
seeds' rule's, from the full type-strict diff, whether the bytes could tell or not."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from state_rule import check

from agui_replay.patch._spread import changed, fits
from agui_replay.state import _LAZY, StateManager


def copied(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def board(items: int, note: str = "note") -> dict[str, Any]:
    """A state whose list is most of it, past 32 KB from 500 objects."""
    return {
        "meta": {"title": "board"},
        "items": [
            {"id": i, "name": f"item {i:04}", "note": f"{note} {i} ~~~~~~~~~~~~~~~~~~~~"}
            for i in range(items)
        ],
    }


def test_a_change_spread_over_the_list_keeps_the_baseline_bytes_once() -> None:
    # The first spread change after a snapshot is diffed from the changed objects alone and
    # the baseline stays bytes; the second decodes it, once for the deltas after it.
    doc = board(700)
    states = StateManager()
    client = states.publish(doc).value
    previous = copied(doc)
    for index in range(3, 700, 100):
        doc["items"][index]["note"] = f"changed {index}"
    doc["items"][650]["id"] = True  # a type change == would hide (1 == True) is seen too
    client = check(states, client, previous, doc, exact=True)
    assert states._baseline is _LAZY
    previous = copied(doc)
    for index in range(5, 700, 100):
        doc["items"][index]["name"] = None
    check(states, client, previous, doc, exact=True)
    assert states._baseline is not _LAZY


def whole(old: list[Any], new: list[Any]) -> Any:
    """:func:`changed` of two lists, each encoded alone."""
    old_bytes, new_bytes = orjson.dumps(old), orjson.dumps(new)
    return changed(old_bytes, new_bytes, new, 0, len(new_bytes), len(old_bytes))


@pytest.mark.parametrize("where", [[7, 31], [0, 39], [0, 1, 2], [38, 39], [5, 6, 20, 21]])
def test_the_changed_objects_are_found_from_the_bytes(where: list[int]) -> None:
    old = board(40)["items"]
    new = copy.deepcopy(old)
    for index in where:  # longer, shorter, at either end, next to each other
        new[index]["note" if index % 2 else "id"] = "x" * (index % 3) if index % 2 else 1.0
    found = whole(old, new)
    assert found is not None
    indexes, olds, old_part, new_part = found
    assert indexes == where
    assert olds == [old[i] for i in where]
    assert old_part == orjson.dumps([old[i] for i in where])
    assert new_part == orjson.dumps([new[i] for i in where])


def test_the_changed_objects_of_a_list_inside_a_document() -> None:
    old = {"meta": {"v": 1}, "items": board(40)["items"], "after": [1]}
    new = copy.deepcopy(old)
    new["items"][12]["name"] = "x"
    old_bytes, new_bytes = orjson.dumps(old), orjson.dumps(new)
    start = new_bytes.index(b"[{")
    stop = new_bytes.index(b"}]") + 2
    end = old_bytes.index(b"}]") + 2
    found = changed(old_bytes, new_bytes, new["items"], start, stop, end)
    assert found is not None
    assert found[0] == [12]
    assert found[1] == [old["items"][12]]


def test_the_bytes_do_not_tell_when_a_string_holds_what_lies_between_objects() -> None:
    # In the new list: more pieces than objects. In the old one: as many pieces as the new
    # list has, but one object is cut in two, and its parts are not objects.
    old = board(40)["items"]
    new = copy.deepcopy(old)
    new[9]["note"] = "a},{b"
    assert whole(old, new) is None
    old[9]["note"] = "a},{b"
    new = copy.deepcopy(old)
    del new[9]["note"]
    new.insert(20, {"id": 99})
    assert whole(old, new) is None


def test_the_bytes_do_not_tell_for_other_items_or_lengths() -> None:
    old = board(40)["items"]
    assert not fits([*old, "x"])
    assert not fits(old[:1])
    assert whole(old, old[:-1]) is None
    assert whole(["x", *old[1:]], old) is None


def test_a_spread_change_the_bytes_cannot_tell_follows_the_rule() -> None:
    # Each is diffed from the decoded baseline instead, with the same outcome.
    for edit in ("separator", "key order", "length", "separator before"):
        doc = board(700)
        states = StateManager()
        client = states.publish(doc).value
        previous = copied(doc)
        for index in range(0, 700, 100):
            doc["items"][index]["note"] = "changed"
        if edit == "separator":
            doc["items"][333]["name"] = "},{"
        elif edit == "key order":
            doc["items"][100] = dict(reversed(list(doc["items"][100].items())))
        elif edit == "length":
            doc["items"].append({"id": 700})
        else:  # another object, where a string held what lies between two
            doc["items"][0]["name"] = "},{"
        check(states, client, previous, doc, exact=True)


def test_removals_follow_the_key_order_the_client_holds() -> None:
    # The last object's keys are reversed (no operation: the client and the baseline keep
    # their order), then it is paired with an object that has only its first key: its other
    # members are removed in the order the client holds, not in the caller's new order.
    doc = board(600)
    states = StateManager()
    client = states.publish(doc).value
    previous = copied(doc)
    items = doc["items"]
    for index in range(0, 600, 50):
        items[index]["note"] = "changed"
    items[-1] = dict(reversed(list(items[-1].items())))
    client = check(states, client, previous, doc, exact=True)
    previous = copied(doc)
    items.pop(-2)
    items.append({"id": 0})
    check(states, client, previous, doc, exact=True)


TRICKY = st.sampled_from(["a", "},{", '"},{"', "}", ",{", "x},{y", "", "é"])


@settings(max_examples=60, deadline=None, database=None)
@given(data=st.data(), size=st.integers(500, 650))
def test_spread_changes_after_snapshots_follow_the_rule(data: st.DataObject, size: int) -> None:
    # Long lists (past 32 KB) of objects whose strings may hold the bytes between two
    # objects, changed at a drawn share of the objects, now and then with objects added,
    # removed or with their keys in another order, or a fresh document (a snapshot) between.
    values = TRICKY | st.sampled_from([0, 1, 1.0, True, None, ["x"], {"k": "},{"}])
    states = StateManager()
    doc = board(size, note=data.draw(TRICKY))
    client = states.publish(doc).value
    previous = copied(doc)
    for _ in range(data.draw(st.integers(1, 4))):
        if data.draw(st.integers(0, 4)) == 0:
            doc = board(size, note=f"fresh {data.draw(TRICKY)}")
        else:
            items = doc["items"]
            step = data.draw(st.sampled_from([7, 50, 150, 300]))
            for index in range(data.draw(st.integers(0, step - 1)), len(items), step):
                items[index][data.draw(st.sampled_from(["id", "name", "note"]))] = data.draw(
                    values
                )
            edit = data.draw(st.sampled_from(["none", "none", "append", "pop", "order"]))
            if edit == "append":
                items.append({"id": data.draw(values)})
            elif edit == "pop":
                items.pop(data.draw(st.integers(0, len(items) - 1)))
            elif edit == "order":
                index = data.draw(st.integers(0, len(items) - 1))
                items[index] = dict(reversed(list(items[index].items())))
        client = check(states, client, previous, doc, exact=True)
        previous = copied(doc)
